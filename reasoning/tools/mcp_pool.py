"""Live connections to MCP servers: one per server per process, isolated from each other.

Connections live on a private event loop thread owned by the pool (the SDK's task groups
must be entered and left by the same task); callers on any loop reach them through
thread-safe futures. No caller ever waits on a lock or on a teardown: a connection attempt
is one shared task with its own budget that callers wait on with theirs, and a connection
is shut down in the background. Listings are kept and reused for `listing_ttl`, then
refreshed in the background while the last known one is served. A server that keeps
failing is paused (its circuit opens) and every request fails at once until it is tried
again. Child processes are tracked so none outlives this process, and on Linux each is
started through a launcher that takes it down when this process dies (`launcher.py`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import json
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteReceiveStream

from reasoning.tools.mcp_config import MCPServerConfig, MCPUnavailable, _short

logger = logging.getLogger(__name__)
T = TypeVar("T")
# The notifications that say a listing changed, by the SDK's name for them, and the listing.
LIST_CHANGED = {
    "ToolListChangedNotification": "tools",
    "ResourceListChangedNotification": "resources",
    "PromptListChangedNotification": "prompts",
}
STDERR_TAIL = 2000
# A server's stderr on disk is cut back to its tail past this size, checked every few seconds:
# a noisy server (or one logging a secret on each line) filled /tmp while it ran.
STDERR_KEEP = 256 * 1024
STDERR_CHECK_SECONDS = 5.0
# After asking a session to stop, how long before it is cancelled, and how long its
# transport's own bounded shutdown (close stdin, SIGTERM, SIGKILL) may then take.
STOP_GRACE = 1.0
# After a call timed out, how long the server has to answer a question (its tool list, asked
# past the SDK's cache: MCP removed ping) before it is taken for stuck as a whole (a tool
# blocking its event loop) and started afresh.
LIVENESS_TIMEOUT = 3.0
SHUTDOWN_BUDGET = 8.0
LISTING_KINDS = ("tools", "resources", "prompts")
# A listing is read page by page (the protocol lets any server page it) up to this many pages.
MAX_LISTING_PAGES = 50
# The tools of one server Nexus offers, as listed first. Every model request carries every tool
# offered (OpenAI refuses more than 128), and each listed tool's schema is checked on the
# pool's loop, shared by every server of the process: one server listing 3000 tools held it
# for most of a minute, and every other server's calls timed out meanwhile.
MAX_TOOLS_PER_SERVER = 128


async def every_page(
    client: Any, kind: str, meta: dict[str, Any] | None = None, server: str = ""
) -> list[Any]:
    """All of a server's tools, resources or prompts, following its cursors: read the first
    page alone, a server listing 25 tools in pages of 10 offered 10. Tools whose input schema a
    model API would refuse are left out (and logged by name): one of them in a request got the
    whole request refused, for every run offered that server's tools. A server that does not
    know the listing's method has none of that kind (a server with only resources and prompts
    need not answer tools/list: connecting failed on it, and it was reported unavailable)."""
    from mcp import MCPError
    from mcp_types import METHOD_NOT_FOUND
    from pydantic import ValidationError

    items: list[Any] = []
    refused: list[str] = []
    beyond = 0
    cursor = None
    cursors: set[str] = set()
    for _ in range(MAX_LISTING_PAGES):
        try:
            result = await getattr(client, f"list_{kind}")(cursor=cursor, meta=meta or None)
            page, cursor = getattr(result, kind), result.next_cursor
        except MCPError as exc:
            if cursor is not None or exc.error.code != METHOD_NOT_FOUND:
                raise
            return []
        except ValidationError:
            if kind != "tools" or not hasattr(getattr(client, "session", None), "_dispatcher"):
                raise
            page, cursor, unreadable = await _valid_tools(client, cursor, meta)
            refused += unreadable
        if kind == "tools":
            room = MAX_TOOLS_PER_SERVER - len(items)
            beyond += max(0, len(page) - room)  # neither checked nor offered
            kept = []
            for tool in page[: max(room, 0)]:
                if offerable(tool.input_schema):
                    kept.append(tool)
                else:
                    refused.append(str(tool.name)[:100])
            page = kept
        items += page
        if not cursor or cursor in cursors or beyond:  # a cursor seen before goes round in a circle
            break
        cursors.add(cursor)
    if refused:
        logger.warning(
            "tool server %r lists tools the protocol does not allow, left out: %s", server, ", ".join(refused)
        )
    if beyond:
        logger.warning(
            "tool server %r lists more than %d tools: only the first %d are offered",
            server,
            MAX_TOOLS_PER_SERVER,
            MAX_TOOLS_PER_SERVER,
        )
    # Each once, as first listed: a server listing one twice (on two pages) offered it twice.
    key = "uri" if kind == "resources" else "name"
    first: dict[str, Any] = {}
    for item in items:
        first.setdefault(str(getattr(item, key, id(item))), item)
    return list(first.values())


# Where a schema holds data, not schemas: a "$ref" there is a value, not a reference.
_SCHEMA_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def offerable(schema: Any) -> bool:
    """Whether a tool's input schema may be offered to a model: an object (as MCP and the
    model APIs require), a valid JSON Schema, and every local `$ref` in it found. Anthropic and
    OpenAI refuse a whole request for one malformed tool schema in it."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return False
    return _offerable(key)


@functools.lru_cache(maxsize=4096)
def _offerable(key: str) -> bool:
    """offerable's check of one schema (as JSON), remembered: a server's tools are listed again
    every few minutes and by every process, and checking a schema costs milliseconds of the
    pool loop's time."""
    import jsonschema
    import referencing.exceptions
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    schema = json.loads(key)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
        resource = Resource.from_contents(schema, default_specification=DRAFT202012)
        base = "urn:nexus:tool-input"
        resolver = Registry().with_resource(base, resource).resolver(base_uri=base)
        for ref in _refs(schema):
            resolver.lookup(ref)  # no retriever: a remote $ref is unresolvable too, never fetched
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable, RecursionError, ValueError):
        return False
    return True


def _refs(schema: Any) -> list[str]:
    """Every `$ref` in a schema (not in its data: consts, enums, defaults, examples)."""
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                found.append(node["$ref"])
            stack.extend(value for key, value in node.items() if key not in _SCHEMA_DATA_KEYWORDS)
    return found


async def _valid_tools(
    client: Any, cursor: str | None, meta: dict[str, Any] | None
) -> tuple[list[Any], Any, list[str]]:
    """A page of tools read one tool at a time: one tool the protocol does not allow (an input
    schema that is not an object) made the SDK refuse the whole listing, and the server offered
    nothing. The others are returned (`every_page` checks their schemas) with the names of the
    refused ones. The SDK validates every listing whole, so the page is asked for through its
    raw request (its dispatcher's)."""
    import mcp_types as types
    from pydantic import ValidationError

    params: dict[str, Any] = {}
    if cursor:
        params["cursor"] = cursor
    if meta:
        params["_meta"] = meta
    raw = await client.session._dispatcher.send_raw_request("tools/list", params or None, {})
    tools, refused = [], []
    for item in raw.get("tools") or []:
        try:
            tool = types.Tool.model_validate(item)
        except ValidationError:
            tool = None
        if tool is not None:
            tools.append(tool)
        else:
            refused.append(str(item.get("name") if isinstance(item, dict) else item)[:100])
    # The session keeps each listed tool's output schema, and lists the tools again (the whole,
    # refused listing) before calling one it has none for: it is given the tools kept.
    if absorb := getattr(client.session, "_absorb_tool_listing", None):
        absorb(types.ListToolsResult(tools=tools), complete=False)
    return tools, raw.get("nextCursor"), refused


def _refuses_handshake(exc: BaseException) -> bool:
    """Whether connecting failed because the server refused the initialize handshake as not
    its protocol version (a server that speaks only the 2026-07-28 protocol), however deep
    in the transport's task groups the SDK's error is."""
    from mcp import MCPError
    from mcp_types import UNSUPPORTED_PROTOCOL_VERSION

    if isinstance(exc, BaseExceptionGroup):
        return any(_refuses_handshake(inner) for inner in exc.exceptions)
    return isinstance(exc, MCPError) and exc.error.code == UNSUPPORTED_PROTOCOL_VERSION


def _retrieve(future: asyncio.Future[Any] | concurrent.futures.Future[Any]) -> None:
    """Mark a future's exception as seen: nobody may be left waiting for it, and an unseen
    one is logged as 'Future exception was never retrieved' at garbage collection."""
    if not future.cancelled():
        future.exception()


def load_sdk() -> None:
    """Import the MCP SDK's client now. It is imported on first use so that processes that
    never call a tool do not pay for it; a process that executes runs calls this at start-up
    instead, so its first run does not wait for it and the SDK's objects are among those the
    process keeps for good (see nexus.heap)."""
    import httpx2  # noqa: F401
    import mcp
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401
    import mcp_types  # noqa: F401


# -- child processes ------------------------------------------------------------------------

_CHILDREN: dict[int, Any] = {}
_OWNER: contextvars.ContextVar[_Session | None] = contextvars.ContextVar("nexus_mcp_owner", default=None)


def _track_children() -> None:
    """Record every stdio server process the SDK starts, so none outlives this process even
    when its connection is stuck. The SDK starts each server in a session of its own (a
    signal to our process group does not reach it), and does not expose the process. Its
    output is read through WholeLines from here, the one place the SDK hands the process over."""
    from mcp.client import stdio

    original = stdio._create_platform_compatible_process
    if getattr(original, "nexus_tracked", False):
        return

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        if getattr(process, "_stdout", None) is not None:  # anyio's process (not on Windows)
            process._stdout = WholeLines(process._stdout)
        _CHILDREN[process.pid] = process
        owner = _OWNER.get()
        if owner is not None:
            owner.pids.append(process.pid)
            owner.every_pid.append(process.pid)
        return process

    spawn.nexus_tracked = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = spawn
    atexit.register(kill_children)


class WholeLines(ByteReceiveStream):
    """A stdio server's output, handed on up to the end of its last whole line. The SDK's
    reader adds each chunk it receives to what it holds of the current line and splits it all
    again, so one message of megabytes (a listing of thousands of tools, a huge result) read in
    64 KB chunks took quadratic time: 12 s of the pool loop's CPU for 27 MB, every server of
    the process waiting. Chunks of a line are kept here and joined once, when it ends."""

    def __init__(self, stream: ByteReceiveStream) -> None:
        self.stream = stream
        self.pending: list[bytes] = []

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                chunk = await self.stream.receive(max_bytes)
            except anyio.EndOfStream:
                if not self.pending:
                    raise
                rest, self.pending = b"".join(self.pending), []
                return rest
            end = chunk.rfind(b"\n") + 1
            if not end:
                self.pending.append(chunk)
                continue
            lines = b"".join([*self.pending, chunk[:end]])
            self.pending = [chunk[end:]] if end < len(chunk) else []
            return lines

    async def aclose(self) -> None:
        await self.stream.aclose()

    @property
    def extra_attributes(self) -> Any:
        return self.stream.extra_attributes


LAUNCHER = str(Path(__file__).with_name("launcher.py"))


def launch_command(command: str, args: list[str]) -> tuple[str, list[str]]:
    """The command line that starts an (already allowed) stdio server: on Linux through the
    launcher, so the server and its children die with this process even when it is killed
    with no chance to clean up (SIGKILL, the OOM killer); elsewhere the command itself."""
    if not sys.platform.startswith("linux"):
        return command, args
    return sys.executable, ["-I", "-S", LAUNCHER, str(os.getpid()), command, *args]


def _alive(pid: int) -> bool:
    process = _CHILDREN.get(pid)
    if process is not None and process.returncode is not None:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def kill_children(pids: list[int] | None = None, grace: float = 1.0) -> None:
    """Terminate (then kill) the process groups of the given tool server processes, or of
    every one still running. Each server leads its own process group, so its children go too."""
    targets = [pid for pid in (pids if pids is not None else list(_CHILDREN)) if _alive(pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
        deadline = time.monotonic() + grace
        while targets and time.monotonic() < deadline:
            targets = [pid for pid in targets if _alive(pid)]
            time.sleep(0.02)
        if not targets:
            break
    for pid in pids if pids is not None else list(_CHILDREN):
        if not _alive(pid):
            _CHILDREN.pop(pid, None)


def _url_host(url: str) -> str:
    """The host of a URL a server asks the person to open, "" when it names none that can be
    read (such an address is declined: the card shows the person the host it would open)."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def _one_person(handlers: list[Any]) -> list[Any]:
    """The handlers in flight when they all reach the same person (one, or one run's), else []."""
    askers = {getattr(handler, "asker", None) for handler in handlers}
    if len(handlers) == 1 or (len(askers) == 1 and None not in askers):
        return list(handlers)
    return []


# -- circuit breaker --------------------------------------------------------------------------


@dataclass
class CircuitBreaker:
    """Closed while a server works; open (every request refused at once) for a cooldown after
    `threshold` consecutive failures, doubling while it keeps failing; then one attempt."""

    threshold: int = 3
    cooldown: float = 30.0
    failures: int = 0
    open_until: float = 0.0
    last_error: str = ""
    # Told when the circuit opens (seconds paused, the last error) and when it closes again
    # (None, ""), so the state can be stored where every process and the admin see it.
    listener: Callable[[float | None, str], None] | None = None

    def paused_for(self) -> float | None:
        remaining = self.open_until - time.monotonic()
        return remaining if remaining > 0 else None

    def failure(self, error: str) -> None:
        """Count a failure. One that ends while the circuit is already open is not counted: it
        began before the pause (a call in flight when it opened, a call on the session the
        liveness probe replaced) and is the same outage. Counted, three calls timing out with
        a fourth (or the probe's doing) doubled the first pause."""
        if self.paused_for() is not None:
            return
        self.failures += 1
        self.last_error = error
        if self.failures >= self.threshold:
            doublings = min(self.failures - self.threshold, 4)
            pause = self.cooldown * 2**doublings
            self.open_until = time.monotonic() + pause
            if self.listener is not None:
                self.listener(pause, error)

    def success(self) -> None:
        was_open = self.failures >= self.threshold
        self.failures, self.open_until, self.last_error = 0, 0.0, ""
        if was_open and self.listener is not None:
            self.listener(None, "")


# -- one connection ---------------------------------------------------------------------------


def _redact_strings(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_strings(item, redact) for item in value]
    if isinstance(value, dict):
        return {key: _redact_strings(item, redact) for key, item in value.items()}
    return value


def redacted(items: list[Any], redact: Callable[[str], str]) -> list[Any]:
    """Listed tools, prompts or resources with every secret the server was given replaced in
    their text (descriptions, titles, schemas): a server that writes its token there would
    otherwise show it in people's completions and send it to the model with every request."""
    clean = []
    for item in items:
        data = item.model_dump(mode="json", by_alias=True, exclude_none=True)
        scrubbed = _redact_strings(data, redact)
        clean.append(item if scrubbed == data else type(item).model_validate(scrubbed))
    return clean


def _forgets(session: _Session) -> Callable[[Any], Awaitable[None]]:
    """An HTTP response hook marking `session` forgotten when the server answers a request
    sent on it that it does not know that session: 404, as the spec says; or 400 saying so, as
    servers built on the TypeScript SDK's example do ("No valid session ID provided")."""

    async def hook(response: Any) -> None:
        request = response.request
        if request.method != "POST" or not request.headers.get("mcp-session-id"):
            return
        if response.status_code == 404:
            session.forgotten = True
        elif response.status_code == 400:
            body = await response.aread()
            if b"session" in body[:1000].lower():
                session.forgotten = True

    return hook


# The words the SDK gives the errors it makes up itself for a session that ended: "Connection
# closed" when the stream closed, "SSE stream …" when an HTTP response stream broke off.
_SDK_CLOSED = re.compile(r"Connection closed$|SSE stream ")


def connection_lost(exc: BaseException) -> bool:
    """Whether an SDK error says the session ended (the server's process died, say): the
    connection is then replaced, never asked again. The SDK's code for it, -32000, is also
    the generic "server error" many servers answer a failed call with: by the code alone,
    each such answer restarted the server and counted toward pausing it for everyone."""
    from mcp_types import CONNECTION_CLOSED

    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == CONNECTION_CLOSED and bool(
        _SDK_CLOSED.match(str(getattr(error, "message", "")))
    )


@dataclass
class _Session:
    """One live (or starting) SDK client and the task that owns it."""

    task: asyncio.Task[None] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    scope: Any = None
    client: Any = None
    pids: list[int] = field(default_factory=list)
    # Every process any session of the same connection started (the connection's list).
    every_pid: list[int] = field(default_factory=list)
    # The HTTP server answered a request on this session that it does not know it (it
    # restarted, or expired it): the session is dead, though its transport still runs.
    forgotten: bool = False

    def alive(self) -> bool:
        return self.client is not None and self.task is not None and not self.task.done()


class MCPConnection:
    """A session with one server, owned by a task on the pool's loop."""

    def __init__(
        self,
        config: MCPServerConfig,
        client_options: dict[str, Any] | None = None,
        on_breaker: Callable[[str, float | None, str], None] | None = None,
    ) -> None:
        self.config = config
        self.client_options = client_options or {}
        self.breaker = CircuitBreaker(config.breaker_threshold, config.breaker_cooldown)
        if on_breaker is not None:
            self.breaker.listener = self._tell(on_breaker)
        self.error: str | None = None
        self.listings: dict[str, tuple[float, list[Any]]] = {}
        self._session: _Session | None = None
        self._connecting: asyncio.Task[Any] | None = None
        self.connecting_since = 0.0
        self._refreshing: dict[str, asyncio.Task[list[Any]]] = {}
        # When the server last said a listing changed (`notifications/*/list_changed`).
        self._changed: dict[str, float] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self.pids: list[int] = []
        # The person-facing handlers of calls in flight that may be asked for input.
        self.elicitors: list[Any] = []
        self.samplers: list[Any] = []
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        # An HTTP server's last refusal ("HTTP 403 Forbidden, text/html"): mcp's transport turns
        # every status but 404 into "Server returned an error response" and drops the status.
        self._http_refused = ""
        self._probe: asyncio.Task[None] | None = None
        self._trimmer: asyncio.Task[None] | None = None
        # The session of each live client (by id), to tell which one a failed request was on.
        self._sessions: dict[int, _Session] = {}

    def _tell(
        self, on_breaker: Callable[[str, float | None, str], None]
    ) -> Callable[[float | None, str], None]:
        """The breaker's listener: `on_breaker` (which may write to a database) runs in a
        thread, so the connections' loop never waits for it."""

        def tell(paused_for: float | None, error: str) -> None:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(None, on_breaker, self.config.name, paused_for, error)
            future.add_done_callback(_retrieve)

        return tell

    @property
    def tools(self) -> list[Any]:
        return self.known("tools") or []

    @property
    def client(self) -> Any:
        return self._session.client if self._session is not None and self._session.alive() else None

    def starting(self) -> bool:
        """Whether a connection attempt is under way (an earlier request started it)."""
        return self._connecting is not None and not self._connecting.done()

    def when_listed(self, kind: str, callback: Callable[[], Any]) -> None:
        """Call `callback` (on the pool's loop) once the `kind` listing under way succeeds:
        a request that stopped waiting for it leaves it running in the background."""
        refresh = self._refreshing.get(kind)
        if refresh is not None and not refresh.done():
            refresh.add_done_callback(lambda task: task.cancelled() or task.exception() or callback())

    def known(self, kind: str) -> list[Any] | None:
        """The last listing of `kind` this connection got, however old; None if never."""
        entry = self.listings.get(kind)
        return list(entry[1]) if entry is not None else None

    def stderr_tail(self) -> str:
        with contextlib.suppress(ValueError, OSError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_TAIL))
            tail = self._stderr.read()
            if size > STDERR_TAIL:  # the first line is cut, maybe in the middle of a secret
                tail = tail.partition("\n")[2]
            return tail.strip()
        return ""

    def trim_stderr(self) -> None:
        """Cut the server's stderr file back to its (redacted) tail once it is past
        STDERR_KEEP. The server writes through the same file offset, so it goes on after it."""
        with contextlib.suppress(ValueError, OSError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            if size <= STDERR_KEEP:
                return
            self._stderr.seek(size - 2 * STDERR_TAIL)
            tail = self._stderr.read().partition("\n")[2]
            self._stderr.seek(0)
            self._stderr.truncate()
            self._stderr.write(self.config.redact(tail))
            self._stderr.flush()

    async def _trim_stderr_while_open(self) -> None:
        while True:
            await asyncio.sleep(STDERR_CHECK_SECONDS)
            self.trim_stderr()

    def paused(self) -> MCPUnavailable | None:
        """Why calls are refused now, if the server is paused after repeated failures."""
        paused = self.breaker.paused_for()
        if paused is None:
            return None
        return MCPUnavailable(
            f"MCP server {self.config.name!r} is paused for {paused:.0f}s after "
            f"{self.breaker.failures} failures in a row (last: {self.breaker.last_error})",
            server=self.config.name,
            paused_for=paused,
        )

    def try_now(self) -> None:
        """Let the next request through a pause, as the breaker does once its cooldown ends:
        a person asked whether the server works now (an admin who fixed it waited out pauses of
        up to eight minutes to find out). A failure pauses it again, for twice as long."""
        self.breaker.open_until = 0.0

    def _refuse_if_paused(self) -> None:
        if (refused := self.paused()) is not None:
            raise refused

    async def ensure(self, budget: float | None = None) -> Any:
        """The live client, connecting if needed; waits at most `budget` (default: the connect
        budget) for a connection attempt that others may share and that outlives this wait. A
        paused server is refused at once, connected or not: its calls kept failing."""
        self._refuse_if_paused()
        if (session := self._session) is not None and session.alive():
            # A stdio server whose process exited while idle (killed, out of memory) left a
            # session that fails the next request: started again first, nothing was sent yet.
            if not session.pids or any(_alive(pid) for pid in session.pids):
                return session.client
            self._replace(session)
        if self._trimmer is None:
            self._trimmer = asyncio.create_task(
                self._trim_stderr_while_open(), name=f"mcp-stderr:{self.config.name}"
            )
            self._trimmer.add_done_callback(_retrieve)
        if self._connecting is None or self._connecting.done():
            self.connecting_since = time.monotonic()
            self._connecting = asyncio.create_task(self._connect(), name=f"mcp-connect:{self.config.name}")
            self._connecting.add_done_callback(_retrieve)
        # The attempt is bounded by the connect budget itself; a caller with a shorter budget
        # stops waiting earlier and leaves the attempt running for the next one.
        attempt = self.config.connect_timeout + STOP_GRACE
        limit = min(budget, attempt) if budget else attempt
        try:
            return await asyncio.wait_for(asyncio.shield(self._connecting), limit)
        except TimeoutError:
            raise MCPUnavailable(
                f"MCP server {self.config.name!r} is unavailable: still connecting after {limit:g}s",
                server=self.config.name,
            ) from None

    async def _connect(self) -> Any:
        from mcp import Client

        _track_children()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        ready.add_done_callback(_retrieve)
        session = _Session(every_pid=self.pids)
        transport = self._transport(session)

        async def serve(transport: Any, mode: str) -> None:
            async with Client(
                transport,
                cache=None,
                # Only a backstop: each request has its own budget above it, and the handshake
                # has the connect budget (at a call's, a 0.5 s one failed servers slow to start).
                read_timeout_seconds=max(self.config.call_timeout, self.config.connect_timeout),
                elicitation_callback=self._elicit,
                sampling_callback=self._sample,
                message_handler=self._notified,
                mode=mode,  # type: ignore[arg-type]
                **self.client_options,
            ) as client:
                tools = redacted(
                    await every_page(client, "tools", server=self.config.name), self.config.redact
                )
                self.listings["tools"] = (time.monotonic(), tools)
                session.client = client
                self._sessions[id(client)] = session
                ready.set_result(client)
                await session.stop.wait()

        async def own() -> None:
            import anyio

            _OWNER.set(session)
            try:
                with anyio.CancelScope() as scope:
                    session.scope = scope
                    # The initialize handshake, not "auto": with a server that also speaks
                    # 2026-07-28 (the Python SDK's do) "auto" chose it, where a server may not
                    # ask anything mid-call, and a tool calling ctx.elicit() or create_message()
                    # failed with "this transport context has no back-channel".
                    try:
                        await serve(transport, "legacy")
                    except Exception as exc:
                        # A server that speaks only 2026-07-28 refuses the handshake: it gets
                        # the per-request protocol (a new process, or connection, for it).
                        if ready.done() or not _refuses_handshake(exc):
                            raise
                        await serve(self._transport(session), "auto")
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
            finally:
                session.client = None
                if not ready.done():
                    ready.set_exception(ConnectionError("the server closed the connection"))

        session.task = asyncio.create_task(own(), name=f"mcp:{self.config.name}")
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout)
        except BaseException as exc:
            self.error = self._describe_failure(exc)
            self.breaker.failure(self.error)
            self._retire(session)
            raise MCPUnavailable(self.error, server=self.config.name) from None
        previous, self._session = self._session, session
        if previous is not None:
            self._retire(previous)
        # Not a success for the breaker either: a server that starts and then dies on every
        # call must still be paused (each reconnect reset the count, and it never was).
        self.error = None
        return client

    def _transport(self, session: _Session) -> Any:
        if self.config.transport == "http":
            if not self.config.url:
                raise MCPUnavailable(f"MCP server {self.config.name!r} has no URL", server=self.config.name)
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # Every request's own budget is kept above the transport (a call's clock, a
            # listing's wait): a read timeout in the transport fails the whole session, every
            # other call in flight on it included, so it only backs those budgets up.
            config = self.config
            ceiling = config.call_timeout + config.elicitation_timeout + config.connect_timeout
            timeout = httpx2.Timeout(ceiling, connect=config.connect_timeout)
            http = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=timeout,
                event_hooks={"response": [self._note_response, _forgets(session)]},
            )
            return streamable_http_client(self.config.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if not self.config.command:
            raise MCPUnavailable(f"MCP server {self.config.name!r} has no command", server=self.config.name)
        command, args = launch_command(self.config.command, list(self.config.args))
        params = StdioServerParameters(
            command=command,
            args=args,
            env=dict(self.config.env) or None,
            cwd=self.config.cwd,
        )
        return stdio_client(params, errlog=self._stderr)

    async def renewed(self, client: Any, request: Callable[[Any], Awaitable[T]]) -> T:
        """`request(client)`; made once more on a new session when the server answered that it
        no longer knows `client`'s session (the spec has a client start a new one: the server
        restarted, or expired it). Nothing was done for the refused request, so it is safe to
        make again; kept on the old session, every later request failed the same way."""
        from mcp import MCPError

        try:
            return await request(client)
        except MCPError:
            if not self.forgot(client):
                raise
        return await request(await self.ensure())

    def forgot(self, client: Any) -> bool:
        """Whether the server no longer knows `client`'s session; that session is retired
        (not a failure of the server: it answered) so the next request starts a new one."""
        session = self._sessions.get(id(client))
        if session is None or not session.forgotten:
            return False
        self._replace(session)
        return True

    async def _note_response(self, response: Any) -> None:
        if response.status_code >= 400:
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            said = f"HTTP {response.status_code} {response.reason_phrase}".strip()
            self._http_refused = f"{said}, {kind}" if kind else said

    def _describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError):
            reason = f"did not answer within {self.config.connect_timeout:g}s"
        elif isinstance(exc, FileNotFoundError | PermissionError):
            reason = f"cannot start {self.config.command!r}: {exc.strerror or exc}"
        else:
            reason = _short(exc)
        tail = self.config.redact(self.stderr_tail())
        if tail.splitlines() and tail.splitlines()[-1].startswith("cannot start "):
            reason, tail = tail.splitlines()[-1][:300], ""  # the launcher could not start it
        if tail:
            reason += f" (server said: {tail.splitlines()[-1][:300]})"
        if self._http_refused:
            reason += f" (the URL answered {self._http_refused[:200]})"
            self._http_refused = ""
        return self.config.redact(f"MCP server {self.config.name!r} is unavailable: {reason}")

    async def _notified(self, message: Any) -> None:
        """The server said its tools, resources or prompts changed: the listing kept is stale,
        and a new one is fetched now, so the next run sees the change. It was kept for
        `listing_ttl`, and a tool the server added (once a person signed in to it, say)
        stayed unknown to every run for a minute."""
        kind = LIST_CHANGED.get(type(message).__name__)
        if kind is None:
            return
        self._changed[kind] = time.monotonic()
        entry = self.listings.get(kind)
        if entry is not None:
            self.listings[kind] = (float("-inf"), entry[1])  # served until the new one is in
        refresh = asyncio.create_task(self._fetch(kind, None), name=f"mcp-list:{self.config.name}:{kind}")
        refresh.add_done_callback(_retrieve)
        self._refreshing[kind] = refresh

    def _listed(self, kind: str, items: list[Any], started: float) -> None:
        """Keep a listing fetched from `started` on: stale at once if the server said it
        changed after the fetch began (the answer may predate the change)."""
        stale = self._changed.get(kind, float("-inf")) > started
        self.listings[kind] = (float("-inf") if stale else time.monotonic(), items)

    async def _elicit(self, context: Any, params: Any) -> Any:
        """A server asks for the person's input (a form, or a URL to open): the call in
        flight on this connection asks its person; so do several calls of one run (the same
        person). Calls of different runs: declined, since nothing in the request says whose
        call it belongs to (on stdio the protocol has no such link; over streamable HTTP it
        is the response stream the request came on, which mcp's client transport does not
        pass on to this callback: `ClientRequestContext` has only the request's id and _meta)."""
        import mcp_types

        elicitors = _one_person(self.elicitors)
        if not elicitors:
            return mcp_types.ElicitResult(action="decline")
        if getattr(params, "mode", "form") == "url":
            url = str(params.url)
            redact = self.config.redact
            if not url.lower().startswith(("https://", "http://")) or not _url_host(url):
                # Declined without asking anyone, and said in the run's trace (the server only
                # heard "decline", and nothing showed it had asked).
                refused = "an address that is not a web page (http or https) to open"
                await elicitors[0](redact(params.message), {}, "", refused=refused)
                return mcp_types.ElicitResult(action="decline")
            action, _ = await elicitors[0](redact(params.message), {}, redact(url))
            return mcp_types.ElicitResult(action=action)
        schema = params.requested_schema
        schema = (
            schema.model_dump(by_alias=True, exclude_none=True) if hasattr(schema, "model_dump") else schema
        )
        # The form is the server's words too (titles, descriptions, choices): shown on the card.
        schema = _redact_strings(dict(schema or {}), self.config.redact)
        action, content = await elicitors[0](self.config.redact(params.message), schema, "")
        return mcp_types.ElicitResult(action=action, content=content if action == "accept" else None)

    async def _sample(self, context: Any, params: Any) -> Any:
        """A server asks for a completion: served by the model of the run whose calls are in
        flight on this connection (its approval rules, its tokens and cost); refused when
        calls of several runs are (see `_elicit` for why it cannot tell whose it is)."""
        import mcp_types

        samplers = _one_person(self.samplers)
        if not samplers:
            return mcp_types.ErrorData(code=-1, message="no run of this client can answer this request now")
        messages = []
        for message in params.messages:
            blocks = message.content if isinstance(message.content, list) else [message.content]
            text = "\n".join(
                getattr(block, "text", f"[{getattr(block, 'type', 'non-text')} content]") for block in blocks
            )
            messages.append({"role": message.role, "content": self.config.redact(text)})
        answer = await samplers[0](
            self.config.redact(params.system_prompt or ""), messages, params.max_tokens
        )
        if answer is None:
            return mcp_types.ErrorData(code=-1, message="the user declined this request for a completion")
        text, model = answer
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text=text),
            model=model,
            stop_reason="endTurn",
        )

    def failed(self, error: str, *, broken: bool) -> None:
        """A request failed: count it toward pausing the server; a broken session is replaced
        on the next request."""
        self.breaker.failure(error)
        if broken and self._session is not None:
            self._replace(self._session)

    def succeeded(self) -> None:
        self.breaker.success()

    def timed_out(self, error: str) -> None:
        """A call ran out of time: counted like any failure; and the server is asked whether it
        still answers, since a slow tool leaves it answering while one that blocked its event
        loop leaves it stuck for every later call, until its process is replaced."""
        self.failed(error, broken=False)
        session = self._session
        if session is None or not session.alive() or (self._probe is not None and not self._probe.done()):
            return

        async def probe() -> None:
            if not await self._answers(session):
                self._replace(session)

        self._probe = asyncio.create_task(probe(), name=f"mcp-liveness:{self.config.name}")
        self._probe.add_done_callback(_retrieve)

    async def check(self) -> None:
        """A round trip to the server now (connecting if needed), for a person who asked
        whether it works: a listing may come from the cache while the server is stuck. A
        session the server forgot is replaced and tried again once."""
        for _ in range(2):
            await self.ensure()
            session = self._session
            if session is not None and await self._answers(session):
                return
            if session is None or not self.forgot(session.client):
                break
        if session is not None:
            self._replace(session)
        raise MCPUnavailable(
            f"MCP server {self.config.name!r} did not answer within {LIVENESS_TIMEOUT:g}s; "
            "it will be started again for the next request",
            server=self.config.name,
        )

    async def _answers(self, session: _Session) -> bool:
        """Whether the server answers within LIVENESS_TIMEOUT: any answer counts (an error too);
        no answer, a dead session or the SDK's own timeout does not."""
        from mcp import MCPError

        # Not wait_for: cancelling a request the server never answers can itself wait.
        answer = asyncio.ensure_future(session.client.list_tools(cache_mode="bypass"))
        answer.add_done_callback(_retrieve)
        await asyncio.wait([answer], timeout=LIVENESS_TIMEOUT)
        if not answer.done():
            answer.cancel()
            return False
        failure = answer.exception()
        if session.forgotten:  # it answered, but not on this session: it is gone
            return False
        if failure is None:
            return True
        if isinstance(failure, MCPError):
            return not connection_lost(failure) and "timed out" not in str(failure)
        # A listing the SDK refused to read (one tool it does not allow) still came back.
        return isinstance(failure, ValueError)

    def _replace(self, session: _Session) -> None:
        """Retire a broken or stuck session (if still the current one): the next request
        starts afresh."""
        if self._session is session:
            self._session = None
            self._retire(session)

    async def listing(
        self, kind: str, meta: dict[str, Any] | None = None, budget: float | None = None
    ) -> list[Any]:
        """Tools, resources or prompts: the cached listing while fresh; a stale one at once
        while a refresh runs in the background; else a fetch, waited for at most `budget`."""
        entry = self.listings.get(kind)
        now = time.monotonic()
        if entry is not None and now - entry[0] < self.config.listing_ttl:
            return list(entry[1])
        refresh = self._refreshing.get(kind)
        if refresh is None or refresh.done():
            refresh = asyncio.create_task(self._fetch(kind, meta), name=f"mcp-list:{self.config.name}:{kind}")
            refresh.add_done_callback(_retrieve)
            self._refreshing[kind] = refresh
        if entry is not None:
            return list(entry[1])
        whole = self.config.connect_timeout + self.config.list_timeout
        limit = budget or whole
        # Said in the wait a run gives a server, not in what was left of it when this run
        # asked ("after 0.0297335s"): the same words each time, so the status is written once.
        waited = self.config.start_wait if budget and self.config.start_wait else limit
        try:
            return list(await asyncio.wait_for(asyncio.shield(refresh), limit))
        except TimeoutError:
            raise MCPUnavailable(
                f"MCP server {self.config.name!r} is unavailable: no {kind} listing after {waited:.3g}s",
                server=self.config.name,
            ) from None

    async def _fetch(self, kind: str, meta: dict[str, Any] | None) -> list[Any]:
        from mcp import MCPError

        started = time.monotonic()
        client = await self.ensure()
        if kind == "tools" and self.listings.get("tools", (0.0, []))[0] >= started:
            return self.tools  # connecting just listed them
        try:
            listed = await asyncio.wait_for(
                self.renewed(client, lambda live: every_page(live, kind, meta, self.config.name)),
                self.config.list_timeout,
            )
        except TimeoutError:
            error = (
                f"MCP server {self.config.name!r} did not list its {kind} "
                f"within {self.config.list_timeout:g}s"
            )
            self.failed(error, broken=False)
            raise MCPUnavailable(error, server=self.config.name) from None
        except MCPError as exc:
            if connection_lost(exc):  # not "no such listing": the next request reconnects
                error = self.config.redact(f"MCP server {self.config.name!r} closed the connection ({exc})")
                self.failed(error, broken=True)
                raise MCPUnavailable(error, server=self.config.name) from None
            if kind != "tools":  # a server without resources or prompts answers with an error
                self._listed(kind, [], started)
                return []
            raise MCPUnavailable(self.config.redact(str(exc)), server=self.config.name) from None
        items = redacted(listed, self.config.redact)
        self._listed(kind, items, started)
        # Not a success for the breaker: a server that lists its tools while every call to
        # them hangs must still be paused.
        return items

    def _retire(self, session: _Session) -> None:
        """Shut a session down in the background: callers never wait for a teardown."""
        task = asyncio.create_task(self._shutdown(session), name=f"mcp-close:{self.config.name}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _shutdown(self, session: _Session) -> None:
        session.stop.set()
        if session.task is None:
            return
        done, _ = await asyncio.wait([session.task], timeout=STOP_GRACE)
        if not done:  # stuck before it could listen for the stop (a server that never answers)
            if session.scope is not None:
                session.scope.cancel()
            else:
                session.task.cancel()
            done, _ = await asyncio.wait([session.task], timeout=SHUTDOWN_BUDGET)
        if not done or any(_alive(pid) for pid in session.pids):
            await asyncio.to_thread(kill_children, session.pids)
        for pid in session.pids:
            if not _alive(pid):
                _CHILDREN.pop(pid, None)
        for key in [key for key, known in self._sessions.items() if known is session]:
            del self._sessions[key]

    async def close(self) -> None:
        """Shut down now and wait (bounded) until the server process is gone."""
        if self._session is not None:
            session, self._session = self._session, None
            self._retire(session)
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        if self._trimmer is not None:
            self._trimmer.cancel()
            self._trimmer = None
        for refresh in self._refreshing.values():
            refresh.cancel()
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=STOP_GRACE + SHUTDOWN_BUDGET + 2)
        self._stderr.close()  # what the server wrote (its secrets too) goes with it


class MCPConnectionPool:
    """The process's connections, on a private loop thread shared by every caller."""

    def __init__(
        self,
        client_options: Callable[[MCPServerConfig], dict[str, Any]] | None = None,
        on_breaker: Callable[[str, float | None, str], None] | None = None,
    ) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connections: dict[str, MCPConnection] = {}
        self._guard = threading.Lock()
        # SDK client callbacks (progress, logging, sampling, elicitation) per server.
        self.client_options = client_options
        # Told (server name, seconds paused or None when it works again, last error) whenever
        # a server's circuit opens or closes in this process.
        self.on_breaker = on_breaker

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None or self._loop.is_closed() or not self._loop.is_running():
                self._loop = asyncio.new_event_loop()
                started = threading.Event()
                self._loop.call_soon(started.set)
                threading.Thread(target=self._loop.run_forever, name="nexus-mcp", daemon=True).start()
                started.wait(5)
            return self._loop

    async def check(self, config: MCPServerConfig) -> None:
        """A round trip to the server now; raises MCPUnavailable when it does not answer."""
        await self._run(self.connection(config).check())

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coroutine` on the pool's loop; the future's exception is always retrieved."""
        # A fresh context: the connection's tasks must not keep a caller's context variables
        # (asgiref's executor of a request long gone, for one) for every later caller.
        loop = self._ensure_loop()
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, loop)
        future.add_done_callback(_retrieve)
        return future

    async def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(self.submit(coroutine))

    def connection(self, config: MCPServerConfig) -> MCPConnection:
        with self._guard:
            connection = self._connections.get(config.key)
            if connection is None:
                options = self.client_options(config) if self.client_options else None
                connection = MCPConnection(config, options, self.on_breaker)
                self._connections[config.key] = connection
            else:
                connection.config = config  # the newest timeouts and policies apply
                connection.breaker.threshold = config.breaker_threshold
                connection.breaker.cooldown = config.breaker_cooldown
            return connection

    def retire_all_but(self, keys: set[str]) -> None:
        """Close, in the background, the connections no enabled server uses any more: a server
        disabled or removed, or changed (a new command, address or secret is a new connection),
        whose process would otherwise run on, with its old secret, until this one exits."""
        with self._guard:
            gone = [key for key in self._connections if key not in keys]
            retired = [self._connections.pop(key) for key in gone]
        for connection in retired:
            self.submit(connection.close())

    async def tools(self, config: MCPServerConfig, meta: dict[str, Any] | None = None) -> list[Any]:
        """The server's tools, waiting for a server still starting at most what is left of
        `start_wait` since its start began: a server hung at start costs the runs of its first
        seconds that wait, not every run while it hangs (each one waited the whole wait)."""
        connection = self.connection(config)
        budget = config.start_wait or config.connect_timeout + config.list_timeout
        if config.start_wait and connection.starting() and connection.known("tools") is None:
            left = config.start_wait - (time.monotonic() - connection.connecting_since)
            if left <= 0:
                raise MCPUnavailable(  # the same words for every run: the status is written once
                    f"MCP server {config.name!r} is still starting: it did not answer in the "
                    f"{config.start_wait:.3g}s a run waits for it",
                    server=config.name,
                )
            budget = left
        return await self._run(connection.listing("tools", meta, budget=budget))

    def listings_within(
        self,
        requests: list[tuple[MCPServerConfig, dict[str, Any] | None]],
        kind: str,
        budget: float,
        *,
        patient: bool = False,
    ) -> dict[str, list[Any] | None]:
        """Each server's `kind` listing as known after at most `budget` seconds, from any
        thread: what it answered in time, else its last known listing, else None. Servers
        that did not answer go on refreshing in the background. `patient` waits for servers
        still connecting since an earlier request too (a command about to be refused as
        unknown is worth the wait; a completion as you type is not)."""
        futures: dict[str, tuple[MCPConnection, concurrent.futures.Future[list[Any]]]] = {}
        waiting: list[concurrent.futures.Future[list[Any]]] = []
        for config, meta in requests:
            connection = self.connection(config)
            # A server still connecting since an earlier request (hung, or slow to start) is
            # not waited for again: only a server nobody asked yet gets the budget.
            busy = connection.starting()
            futures[config.name] = (connection, self.submit(connection.listing(kind, meta)))
            if patient or not busy:
                waiting.append(futures[config.name][1])
        concurrent.futures.wait(waiting, timeout=budget)
        found: dict[str, list[Any] | None] = {}
        for name, (connection, future) in futures.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                found[name] = future.result()
            else:
                found[name] = connection.known(kind)
        return found

    async def call(
        self,
        config: MCPServerConfig,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None = None,
        on_progress: Callable[[float, float | None, str | None], Any] | None = None,
        on_elicit: Any = None,
        on_sample: Any = None,
    ) -> Any:
        from reasoning.tools.mcp import call_on

        call = call_on(self.connection(config), tool, arguments, meta, on_progress, on_elicit, on_sample)
        return await self._run(call)

    async def request(self, config: MCPServerConfig, method: str, *args: Any, **kwargs: Any) -> Any:
        from reasoning.tools.mcp import request_on

        return await self._run(request_on(self.connection(config), method, *args, **kwargs))

    async def close(self) -> None:
        with self._guard:
            connections = list(self._connections.values())
            self._connections.clear()
        if self._loop is not None and not self._loop.is_closed():
            for connection in connections:
                with contextlib.suppress(BaseException):
                    await self._run(connection.close())

    def close_sync(self, timeout: float = 12) -> None:
        """Shut every connection down from synchronous code (process exit), all at once and
        bounded; whatever is still running after that is killed."""
        loop = self._loop
        with self._guard:
            connections = list(self._connections.values())
            self._connections.clear()
        if loop is not None and not loop.is_closed() and loop.is_running():
            pids = [pid for connection in connections for pid in connection.pids]

            async def close_all() -> None:
                await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

            with contextlib.suppress(BaseException):
                asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout)
            kill_children(pids)
            loop.call_soon_threadsafe(loop.stop)
        else:
            kill_children([pid for connection in connections for pid in connection.pids])
