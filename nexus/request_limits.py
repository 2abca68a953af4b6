"""A limit on request bodies, where daphne takes them in.

Daphne (Twisted underneath) reads a request's whole body, into a temporary file past 100 KB,
before the application sees the request: Django's size checks, the sign-in check and the rate
limits all came after the body was on disk. Anyone, signed in or not, could stream a body of
any size at /accounts/login/ and fill the server's temporary disk. Daphne has no setting for
this, so its request class is replaced by one that answers 413 as soon as the declared length,
or the body received so far, passes NEXUS_MAX_REQUEST_BYTES, and closes the connection.
"""

from __future__ import annotations

import io
from typing import Any

from daphne import http_protocol
from django.conf import settings

REFUSAL = b"The request is too large for Nexus.\n"


class LimitedRequest(http_protocol.WebRequest):
    """Daphne's request, refusing a body past the limit before it is stored."""

    received = 0
    refused = False

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > settings.NEXUS_MAX_REQUEST_BYTES:
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self.received += len(data)
        if self.received > settings.NEXUS_MAX_REQUEST_BYTES:  # sent without a length (chunked)
            self._refuse()
            return
        super().handleContentChunk(data)

    def process(self) -> Any:
        if self.refused:  # the rest of the body may still have come in: it goes nowhere
            return None
        return super().process()

    def _refuse(self) -> None:
        self.refused = True
        self.content = io.BytesIO()
        head = (
            "HTTP/1.1 413 Content Too Large\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(REFUSAL)}\r\n"
            "Connection: close\r\n\r\n"
        )
        self.channel.transport.write(head.encode("ascii") + REFUSAL)
        self.channel.transport.loseConnection()


def install() -> None:
    """Make daphne build LimitedRequest for every HTTP request (it looks the class up by name
    in its module each time it builds a connection)."""
    http_protocol.WebRequest = LimitedRequest
