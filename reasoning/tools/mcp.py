"""Tools, resources and prompts from MCP servers, through the `mcp` SDK.

One connection per server per process, shared by every run: connections live on a private
event loop thread owned by the pool (the SDK's task groups must be entered and left by
the same task), and callers on any loop reach them through thread-safe futures. A server
that dies is reconnected on the next call; a server that cannot start is reported with a
clear error and the run goes on without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar
from urllib.parse import quote, quote_plus

from reasoning.tools.registry import ToolOutput, ToolProvider, ToolSpec

T = TypeVar("T")
SEPARATOR = "__"
STDERR_TAIL = 2000
MIN_SECRET_CHARS = 6


class MCPUnavailable(Exception):
    """The server could not be reached or started; the message says why (for staff: it may
    quote the server's own output, with its secrets redacted). `public` is what anyone may see."""

    def __init__(self, detail: str, *, server: str = "") -> None:
        super().__init__(detail)
        self.public = f"tool server {server} is unavailable" if server else "a tool server is unavailable"


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
    tool_policies: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """Identity of the connection: a changed command or URL means a new connection."""
        material = json.dumps(
            [self.name, self.transport, self.command, self.args, self.env, self.cwd, self.url, self.headers],
            sort_keys=True,
        )
        return hashlib.sha256(material.encode()).hexdigest()[:16]

    def policy(self, tool: str) -> str:
        return dict(self.tool_policies).get(tool, "cache")

    def redact(self, text: str) -> str:
        """`text` from the server with every secret it was given replaced by [redacted], and
        NUL characters (which PostgreSQL cannot store) by U+FFFD."""
        for secret in self._secrets():
            text = text.replace(secret, "[redacted]")
        return text.replace("\x00", "\ufffd")

    def _secrets(self) -> list[str]:
        # Whole values, and the long words in them (the token of "Bearer <token>"), as written
        # and as JSON or a URL would quote them; values shorter than MIN_SECRET_CHARS would
        # garble ordinary output and protect nothing.
        found: set[str] = set()
        for value in self.secret_values:
            for secret in (value, *(word for word in value.split() if len(word) >= 8)):
                found.update(
                    (
                        secret,
                        json.dumps(secret)[1:-1],
                        json.dumps(secret, ensure_ascii=False)[1:-1],
                        quote(secret, safe=""),
                        quote_plus(secret),
                    )
                )
        return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def _text_of(content: list[Any]) -> str:
    parts = []
    for block in content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(block.resource.text)
        elif kind:
            parts.append(f"[{kind} content]")
    return "\n".join(parts)


class MCPConnection:
    """A live session with one server, owned by a task on the pool's loop."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.client: Any = None
        self.tools: list[Any] = []
        self.error: str | None = None
        self._lock = asyncio.Lock()
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115

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

    async def ensure(self) -> Any:
        async with self._lock:
            if self.client is not None and self._task is not None and not self._task.done():
                return self.client
            await self._start()
            return self.client

    async def _start(self) -> None:
        from mcp import Client

        self.client = None
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        transport = self._transport()

        async def own() -> None:
            try:
                async with Client(
                    transport, cache=None, read_timeout_seconds=self.config.call_timeout
                ) as client:
                    listing = await client.list_tools()
                    self.tools = list(listing.tools)
                    ready.set_result(client)
                    await self._stop.wait()  # type: ignore[union-attr]
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
            finally:
                self.client = None

        self._task = asyncio.create_task(own(), name=f"mcp:{self.config.name}")
        try:
            self.client = await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout)
            self.error = None
        except BaseException as exc:
            self.error = self._describe_failure(exc)
            await self.close()
            raise MCPUnavailable(self.error, server=self.config.name) from None

    def _transport(self) -> Any:
        if self.config.transport == "http":
            if not self.config.url:
                raise MCPUnavailable(f"MCP server {self.config.name!r} has no URL", server=self.config.name)
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=dict(self.config.headers), timeout=self.config.call_timeout)
            return streamable_http_client(self.config.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if not self.config.command:
            raise MCPUnavailable(f"MCP server {self.config.name!r} has no command", server=self.config.name)
        params = StdioServerParameters(
            command=self.config.command,
            args=list(self.config.args),
            env=dict(self.config.env) or None,
            cwd=self.config.cwd,
        )
        return stdio_client(params, errlog=self._stderr)

    def _describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError):
            reason = f"did not answer within {self.config.connect_timeout:g}s"
        elif isinstance(exc, FileNotFoundError | PermissionError):
            reason = f"cannot start {self.config.command!r}: {exc.strerror or exc}"
        elif isinstance(exc, BaseExceptionGroup):
            reason = "; ".join(_short(e) for e in exc.exceptions)
        else:
            reason = _short(exc)
        tail = self.config.redact(self.stderr_tail())
        if tail:
            reason += f" (server said: {tail.splitlines()[-1][:300]})"
        return self.config.redact(f"MCP server {self.config.name!r} is unavailable: {reason}")

    async def call(self, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> ToolOutput:
        from mcp import MCPError

        client = await self.ensure()
        try:
            result = await client.call_tool(
                tool, arguments, read_timeout_seconds=self.config.call_timeout, meta=meta or None
            )
        except MCPError as exc:
            text = self.config.redact(str(exc))
            if "timed out" in text:
                return ToolOutput(
                    f"{tool} on {self.config.name} timed out after {self.config.call_timeout:g}s",
                    is_error=True,
                )
            await self.close()
            return ToolOutput(
                f"the {self.config.name} server failed during {tool} ({text}); it will be "
                "restarted for the next call",
                is_error=True,
            )
        text = _text_of(result.content)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)
        return ToolOutput(self.config.redact(text), is_error=bool(result.is_error))

    async def request(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Any other client request (resources, prompts), reconnecting if needed."""
        from mcp import MCPError

        client = await self.ensure()
        try:
            return await getattr(client, method)(*args, **kwargs)
        except MCPError as exc:
            if self.client is None or (self._task is not None and self._task.done()):
                await self.close()
            raise MCPRequestError(self.config.redact(str(exc))) from None

    async def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 10)
        self._task = None
        self.client = None


class MCPConnectionPool:
    """The process's connections, on a private loop thread shared by every caller."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connections: dict[str, MCPConnection] = {}
        self._guard = threading.Lock()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="nexus-mcp", daemon=True).start()
            return self._loop

    async def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._ensure_loop())
        return await asyncio.wrap_future(future)

    def connection(self, config: MCPServerConfig) -> MCPConnection:
        with self._guard:
            connection = self._connections.get(config.key)
            if connection is None:
                connection = MCPConnection(config)
                self._connections[config.key] = connection
            return connection

    async def tools(self, config: MCPServerConfig) -> list[Any]:
        connection = self.connection(config)
        await self._run(connection.ensure())
        return list(connection.tools)

    async def call(
        self,
        config: MCPServerConfig,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None = None,
    ) -> ToolOutput:
        return await self._run(self.connection(config).call(tool, arguments, meta))

    async def request(self, config: MCPServerConfig, method: str, *args: Any, **kwargs: Any) -> Any:
        return await self._run(self.connection(config).request(method, *args, **kwargs))

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        if self._loop is not None and not self._loop.is_closed():
            for connection in connections:
                with contextlib.suppress(BaseException):
                    await self._run(connection.close())

    def close_sync(self, timeout: float = 15) -> None:
        """Shut every connection down from synchronous code (process exit)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            with contextlib.suppress(BaseException):
                asyncio.run_coroutine_threadsafe(connection.close(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)


class MCPToolProvider(ToolProvider):
    """One server's tools, named `<server>__<tool>` so two servers can both have `search`."""

    def __init__(
        self,
        pool: MCPConnectionPool,
        config: MCPServerConfig,
        *,
        meta: dict[str, Any] | None = None,
        on_status: Callable[[str, str | None, int], Awaitable[None]] | None = None,
    ) -> None:
        self.pool = pool
        self.config = config
        self.name = config.name
        self.meta = meta or {}
        self.on_status = on_status

    async def list_tools(self) -> list[ToolSpec]:
        try:
            tools = await self.pool.tools(self.config)
        except MCPUnavailable as exc:
            if self.on_status:
                await self.on_status(self.name, str(exc), 0)
            raise
        if self.on_status:
            await self.on_status(self.name, None, len(tools))
        return [
            ToolSpec(
                name=f"{self.name}{SEPARATOR}{tool.name}"[:64],
                description=(tool.description or tool.name)[:1000],
                input_schema=tool.input_schema or {"type": "object", "properties": {}},
                server=self.name,
                tool=tool.name,
                cache_policy="no-cache" if self.config.policy(tool.name) == "no-cache" else "cache",
                timeout=self.config.call_timeout + 5,
            )
            for tool in tools
        ]

    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutput:
        return await self.pool.call(self.config, spec.provider_tool, arguments, self.meta)

    async def list_resources(self) -> list[Any]:
        result = await self.pool.request(self.config, "list_resources", meta=self.meta or None)
        return list(result.resources)

    async def read_resource(self, uri: str) -> str:
        result = await self.pool.request(self.config, "read_resource", uri, meta=self.meta or None)
        return self.config.redact("\n".join(getattr(c, "text", "") or "" for c in result.contents))

    async def list_prompts(self) -> list[Any]:
        result = await self.pool.request(self.config, "list_prompts", meta=self.meta or None)
        return list(result.prompts)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[dict[str, str]]:
        result = await self.pool.request(self.config, "get_prompt", name, arguments, meta=self.meta or None)
        return [
            {"role": m.role, "content": self.config.redact(_text_of([m.content]))} for m in result.messages
        ]


def _short(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__
