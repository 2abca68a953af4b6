"""Which pages may open a websocket: the same origins Django's CSRF check lets post a form.

Channels' AllowedHostsOriginValidator compares only the Origin's host with ALLOWED_HOSTS, so
a page served from another port or over plain HTTP on the same host (any other service on the
team's Nexus host name) could open a socket with a person's cookie and read their chats. Here
the Origin must be the socket request's own scheme, host and port, or one of
CSRF_TRUSTED_ORIGINS, as for Django's CSRF check of a POST.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin1")
    return None


def _secure(scope: dict[str, Any]) -> bool:
    """Whether the socket came over TLS, as Django decides it for a request: the scheme, or
    the proxy's header when SECURE_PROXY_SSL_HEADER says to believe it."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, secure_value = proxy
        header = name.removeprefix("HTTP_").lower().replace("_", "-").encode()
        value = _header(scope, header)
        return value is not None and value.split(",")[0].strip() == secure_value
    return False


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the socket's Origin may open it (see the module's docstring)."""
    origin, host = _header(scope, b"origin"), _header(scope, b"host")
    if not origin or origin == "null" or not host:
        return False
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    if origin == f"{'https' if _secure(scope) else 'http'}://{host}":
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    parsed = urlsplit(origin)
    return any(
        "*" in trusted
        and urlsplit(trusted).scheme == parsed.scheme
        and is_same_domain(parsed.netloc, urlsplit(trusted).netloc.removeprefix("*"))
        for trusted in settings.CSRF_TRUSTED_ORIGINS
    )


class SameOriginValidator:
    """ASGI middleware: websockets whose Origin `origin_allowed` refuses are denied (403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
