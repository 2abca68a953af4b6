import asyncio
import logging
from typing import Any

from channels.auth import AuthMiddleware
from channels.generic.websocket import WebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError
from django.urls import path, re_path

from chat.consumers import HANDSHAKE_DATABASE_WAIT, SessionConsumer

logger = logging.getLogger(__name__)


class SignedInUser(AuthMiddleware):
    """Channels' AuthMiddleware, through a database that is away as the socket opens (its
    session and user are read from it): the socket is handled as one that could not be
    checked (`scope["database_away"]`, which the consumer closes as "unavailable for a moment",
    4503) instead of an exception out of the application, a 500 and a traceback in the log;
    so is one that does not answer within HANDSHAKE_DATABASE_WAIT."""

    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        try:
            await asyncio.wait_for(super().resolve_scope(scope), HANDSHAKE_DATABASE_WAIT)
        except (DatabaseError, TimeoutError) as exc:
            logger.warning("websocket opened while the database is away: %s", exc or "no answer in time")
            scope["user"]._wrapped = AnonymousUser()
            scope["database_away"] = True


class NoSuchSocket(WebsocketConsumer):
    """Any other websocket path is refused as a socket is (403), not raised out of the router:
    "ws/sessions/-1/" answered a 500 and logged a traceback, for anyone, as often as asked."""

    def connect(self) -> None:
        self.close(code=4404)


websocket_urlpatterns = [
    path("ws/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
