"""ASGI entry point: HTTP through Django, websockets through Channels.

Websockets get the session user (AuthMiddlewareStack) and must come from an allowed host
(AllowedHostsOriginValidator), so another site cannot open a socket with a user's cookie.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - Django must be set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat.dispatch import bind_server_loop  # noqa: E402
from chat.routing import websocket_urlpatterns  # noqa: E402

router = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)


async def application(scope, receive, send):  # type: ignore[no-untyped-def]
    """Remember the server's event loop, so embedded runs execute on it (see chat.dispatch)."""
    bind_server_loop()
    await router(scope, receive, send)
