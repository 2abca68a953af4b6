"""ASGI entry point: HTTP through Django, websockets through Channels.

Websockets get the session user (Channels' AuthMiddlewareStack, with chat.routing.SignedInUser
for its AuthMiddleware) and must come from the site's own origin
(nexus.origins), so another site, or another port of this host, cannot open a socket with a
user's cookie.
"""

import os

import django
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
django.setup(set_prefix=False)


class OneHopASGIHandler(ASGIHandler):
    """Django's ASGI handler with a request's middleware and view run in one thread hop.

    Nexus's views and middleware are synchronous (WhiteNoise can only be), so Django's async
    chain crossed between the event loop and the request's thread several times per request:
    around WhiteNoise, back for the async-capable middleware inside it, again for each
    process_view hook and for the view. Built synchronous and entered once, the chain does the
    same work in the same thread, and a request costs about a tenth less CPU."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)


django_asgi_app = OneHopASGIHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402 - Django must be set up first
from channels.sessions import CookieMiddleware, SessionMiddleware  # noqa: E402

from chat.dispatch import bind_server_loop  # noqa: E402
from chat.engine import prepare_executor  # noqa: E402
from chat.routing import SignedInUser, websocket_urlpatterns  # noqa: E402
from nexus.access_log import install as mask_access_log  # noqa: E402
from nexus.heap import freeze_startup_objects, load_pages  # noqa: E402
from nexus.origins import SameOriginValidator  # noqa: E402
from nexus.request_limits import install as limit_request_bodies  # noqa: E402

router = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(
            CookieMiddleware(SessionMiddleware(SignedInUser(URLRouter(websocket_urlpatterns))))
        ),
    }
)
limit_request_bodies()
mask_access_log()
load_pages()
if settings.NEXUS_RUN_BACKEND == "embedded":
    prepare_executor()  # runs execute in this process; it freezes what it loaded
else:
    freeze_startup_objects()


async def application(scope, receive, send):  # type: ignore[no-untyped-def]
    """Remember the server's event loop, so embedded runs execute on it (see chat.dispatch)."""
    bind_server_loop()
    await router(scope, receive, send)
