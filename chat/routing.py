from channels.generic.websocket import WebsocketConsumer
from django.urls import path, re_path

from chat.consumers import SessionConsumer


class NoSuchSocket(WebsocketConsumer):
    """Any other websocket path is refused as a socket is (403), not raised out of the router:
    "ws/sessions/-1/" answered a 500 and logged a traceback, for anyone, as often as asked."""

    def connect(self) -> None:
        self.close(code=4404)


websocket_urlpatterns = [
    path("ws/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
