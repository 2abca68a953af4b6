"""Keep secrets out of logs: known secret values are replaced before a record is written.

Known secrets are the keys and passwords in this process's environment and every tool server
secret this process has loaded (`secrets_register`). Records from the MCP SDK may quote what
a server printed, so their exception details are reduced to the exception's type.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

SECRET_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "SECRET_KEY",
    "NEXUS_SECRETS_KEY",
    "NEXUS_ADMIN_PASSWORD",
)
URL_VARIABLES = ("DATABASE_URL", "REDIS_URL")
MIN_SECRET_CHARS = 6
_KEY_PATTERN = re.compile(r"\b(sk-(?:ant-)?[A-Za-z0-9_-]{8})[A-Za-z0-9_-]+")
# A share link's token, which opens the shared chat to any account (Django logs the path of a
# request for one revoked or mistyped; daphne's access log, every request's: nexus.access_log).
# In a request line every segment after /shared/ is one; in other log lines only what looks like
# a token (secrets.token_urlsafe(32): 43 characters), so a file path "/mnt/shared/app/x.py" stays.
_SHARE_TOKEN = re.compile(r"(/shared/)[^/?\s\"']+")
_SHARE_TOKEN_IN_TEXT = re.compile(r"(/shared/)[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_.-])")
_QUERY_PART = re.compile(r"([?&])([^=&\s\"]*=)?[^&\s\"]*")
MASK = "[…]"
_registered: set[str] = set()
_guard = threading.Lock()


def secrets_register(values: Iterable[str]) -> None:
    """Remember secret values (a tool server's environment and headers) to redact from logs."""
    with _guard:
        _registered.update(v for v in values if len(v) >= MIN_SECRET_CHARS)


def environment_secrets() -> list[str]:
    """The secret values in this process's environment: keys, and the passwords in URLs."""
    return list(_secrets_in(tuple(os.environ.get(name, "") for name in (*SECRET_VARIABLES, *URL_VARIABLES))))


@functools.lru_cache(maxsize=8)
def _secrets_in(values: tuple[str, ...]) -> tuple[str, ...]:
    """The secrets among the environment's values (parsed once per set of values: every log
    record is checked, and parsing the URLs each time was most of what that cost)."""
    keys, urls = list(values[: len(SECRET_VARIABLES)]), values[len(SECRET_VARIABLES) :]
    for url in urls:
        try:
            keys.append(urlsplit(url).password or "")
        except ValueError:
            continue
    keys += [part for value in keys for part in value.split(",")]  # NEXUS_SECRETS_KEY=new,old
    return tuple(v for v in keys if len(v) >= MIN_SECRET_CHARS)


def redact(text: str, extra: list[str] | None = None) -> str:
    with _guard:
        registered = list(_registered)
    secrets = sorted({*environment_secrets(), *registered, *(extra or [])}, key=len, reverse=True)
    for secret in secrets:
        if len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, "[redacted]")
    return _SHARE_TOKEN_IN_TEXT.sub(rf"\1{MASK}", _KEY_PATTERN.sub(r"\1…[redacted]", text))


def mask_request(request: str) -> str:
    """A request line ("GET /path?query") with its share token and query values masked: a
    query holds what people searched for (the chat search, the admin's searches). Read as the
    server reads it, percent-escapes undone ("/%73hared/…" is a share link too)."""
    request = unquote(request)
    return _QUERY_PART.sub(lambda m: f"{m[1]}{m[2] or ''}{MASK}", _SHARE_TOKEN.sub(rf"\1{MASK}", request))


class RedactSecretsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".")[0] == "mcp" and record.exc_info and record.exc_info[0] is not None:
            # The MCP SDK's exceptions quote what a server sent (a line of its output, say),
            # which may hold a secret in a form no redaction recognises: keep only the type.
            record.msg = f"{record.getMessage()} ({record.exc_info[0].__name__})"
            record.args, record.exc_info, record.exc_text = None, None, None
        if record.name == "django.request" and getattr(record, "status_code", 500) < 500:
            # A refusal (403 for a page someone may not see, 404) is the app working, not a
            # fault: its line stays, the traceback of how it was raised goes.
            record.exc_info, record.exc_text = None, None
        if record.name.startswith("django.security.") and record.levelno >= logging.ERROR:
            # A request refused for a bad Host header (any scanner sends them) or a suspicious
            # operation got its 400: one warning line, not an error with a 27-line traceback.
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class RepeatsThrottled(logging.Filter):
    """The same line from the MCP SDK at most LIMIT times a minute in this process, then one line
    saying how many were left out. A tool server that writes anything but protocol messages on
    its standard output gets one "Failed to parse JSONRPC message" (with its traceback) per
    line: a server printing in a loop wrote 28 MB of the web server's log in 20 seconds."""

    LIMIT = 5
    WINDOW = 60.0

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self._seen: dict[tuple[str, Any], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self._seen.clear()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("mcp."):
            return True
        key = (record.name, record.msg)
        with self._lock:
            started, count = self._seen.get(key, (record.created, 0))
            if record.created - started >= self.WINDOW:
                left_out, previous = count - self.LIMIT, started
                started, count = record.created, 0
                if left_out > 0:
                    record.msg = (
                        f"{record.getMessage()} ({left_out} more like it left out of the log since "
                        f"{time.strftime('%H:%M:%S', time.localtime(previous))})"
                    )
                    record.args = None
            count += 1
            self._seen[key] = (started, count)
            if len(self._seen) > 1000:  # lines that vary (an f-string) are kept a minute at most
                self._seen = {k: v for k, v in self._seen.items() if record.created - v[0] < self.WINDOW}
        if count == self.LIMIT:
            record.msg = (
                f"{record.getMessage()} (more like it in the minute from now on are left out of the log)"
            )
            record.args = None
        return count <= self.LIMIT
