"""How to reach one MCP server, and the errors a server's failure becomes.

Budgets are per server and independent: connecting, listing and calling each have their
own limit, so one slow phase never eats another's time, and a server that keeps failing is
paused (its circuit opens) instead of making every run wait for it again.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote, quote_plus

SEPARATOR = "__"
MIN_SECRET_CHARS = 6


class MCPUnavailable(Exception):
    """The server could not be reached or started; the message says why (for staff: it may
    quote the server's own output, with its secrets redacted). `public` is what anyone may see."""

    def __init__(self, detail: str, *, server: str = "", paused_for: float | None = None) -> None:
        super().__init__(detail)
        self.public = f"tool server {server} is unavailable" if server else "a tool server is unavailable"
        # Seconds until a paused server (its circuit open after repeated failures) is tried again.
        self.paused_for = paused_for


class MCPCallFailed(Exception):
    """A tool call failed in a way whose words (the SDK's, quoting the server) are for staff,
    redacted; `public` is what the user and the model are told."""

    def __init__(self, detail: str, *, public: str) -> None:
        super().__init__(detail)
        self.public = public


class MCPUnreadable(MCPCallFailed):
    """The server answered, but with something the SDK could not read."""


class MCPCannotAsk(MCPCallFailed):
    """A tool needed to ask the user or the model something mid-call, and its server cannot over
    its connection (a stateless HTTP server; the 2026-07-28 protocol): "no back-channel for
    server-initiated requests" helps nobody."""


class MCPRequestError(Exception):
    """A resource or prompt request the server refused; the message is the server's, redacted."""


@dataclass(frozen=True)
class MCPServerConfig:
    name: str
    transport: Literal["stdio", "http"] = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # secrets: never in a repr
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # Values never to repeat from the server's output: its environment and header values for
    # a configured server, the keys and passwords the built-in server inherits.
    secret_values: tuple[str, ...] = field(default=(), repr=False)
    call_timeout: float = 30.0
    connect_timeout: float = 20.0
    # How long a listing (tools, resources, prompts) may take once connected, and how long a
    # listing is reused before it is refreshed in the background.
    list_timeout: float = 10.0
    listing_ttl: float = 60.0
    # How long a run waits for the tools of a server that is not connected yet (0: the connect
    # and list budgets). A run that stops waiting answers without them; the connection attempt
    # goes on for the next run. A server hung at start then costs each run this, not 20 s.
    start_wait: float = 0.0
    # Consecutive failures (no connection, a timed-out or crashed call) that pause the server,
    # and for how long at first (doubling while it keeps failing, at most 16 times as long).
    breaker_threshold: int = 3
    breaker_cooldown: float = 30.0
    # How long a person may take to answer a server's request for input (or to approve its
    # request for a completion) during a call: theirs, not the tool's, budget.
    elicitation_timeout: float = 600.0
    tool_policies: tuple[tuple[str, str], ...] = ()
    # Approval per tool ("auto", "ask", "never"), and for the server's other tools ("" lets
    # each tool's annotations decide).
    approval_policies: tuple[tuple[str, str], ...] = ()
    default_approval: str = ""

    @functools.cached_property
    def key(self) -> str:
        """Identity of the connection: a changed command or URL means a new connection. (Kept:
        every tool call asks, and the built-in server's environment is long to hash.)"""
        material = json.dumps(
            [self.name, self.transport, self.command, self.args, self.env, self.cwd, self.url, self.headers],
            sort_keys=True,
        )
        return hashlib.sha256(material.encode()).hexdigest()[:16]

    def policy(self, tool: str) -> str | None:
        """The admin's cache policy for `tool`, or None when the server's annotations decide."""
        return dict(self.tool_policies).get(tool)

    def redact(self, text: str) -> str:
        """`text` from the server with every secret it was given replaced by [redacted], and
        NUL characters (which PostgreSQL cannot store) by U+FFFD."""
        if self._secret_pattern is not None:
            text = self._secret_pattern.sub("[redacted]", text)
        return text.replace("\x00", "\ufffd")

    @functools.cached_property
    def _secret_pattern(self) -> re.Pattern[str] | None:
        """One pattern for every form of every secret, built once per configuration (every
        tool result passes through it): whole values and the long words in them (the token of
        "Bearer <token>"), as written, as JSON or a URL would quote them, and base64- or
        hex-encoded; in any letter case, since a server that prints a token in capitals
        still prints the token. Values shorter than MIN_SECRET_CHARS would garble ordinary
        output and protect nothing."""
        found: set[str] = set()
        for value in self.secret_values:
            for secret in (value, *(word for word in value.split() if len(word) >= 8)):
                raw = secret.encode()
                found.update(
                    (
                        secret,
                        json.dumps(secret)[1:-1],
                        json.dumps(secret, ensure_ascii=False)[1:-1],
                        quote(secret, safe=""),
                        quote_plus(secret),
                        base64.b64encode(raw).decode(),
                        base64.b64encode(raw).decode().rstrip("="),
                        base64.urlsafe_b64encode(raw).decode(),
                        base64.urlsafe_b64encode(raw).decode().rstrip("="),
                        raw.hex(),
                    )
                )
        secrets = sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)
        if not secrets:
            return None
        return re.compile("|".join(re.escape(s) for s in secrets), re.IGNORECASE)


def _short(exc: BaseException) -> str:
    """An error in a line an operator can act on: the failures inside task groups (anyio
    wraps a transport's error in one or more: "unhandled errors in a TaskGroup (1
    sub-exception)" said nothing), not the groups."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_short(inner) for inner in exc.exceptions))[:500]
    text = str(exc).strip()
    status = getattr(getattr(exc, "response", None), "status_code", None)
    # The SDK reports an HTTP 404 or 405 as an MCP error saying only "Not Found".
    if status in (404, 405) or text in ("Not Found", "Method Not Allowed"):
        text += (
            " (this address does not take streamable HTTP: Nexus connects over stdio or "
            "streamable HTTP, usually at /mcp, not to an SSE-only server's /sse)"
        )
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__
