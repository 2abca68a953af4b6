"""Tools, resources and prompts from MCP servers, through the `mcp` SDK.

One connection per server per process, shared by every run (`mcp_pool`); a server that dies
is reconnected on the next call, a server that cannot start or keeps failing is reported
with a clear error and the run goes on without it. Everything a server returns is kept:
text for the model, and images, binary resources and resource links as parts the chat
shows (images checked and size-capped, blobs offered as downloads, links kept as links).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextvars
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from reasoning.text import shorten
from reasoning.tools.approval import POLICIES, SAMPLING, default_approval
from reasoning.tools.mcp_config import (
    SEPARATOR,
    MCPCannotAsk,
    MCPRequestError,
    MCPServerConfig,
    MCPUnavailable,
    MCPUnreadable,
)
from reasoning.tools.mcp_pool import (
    CircuitBreaker,
    MCPConnection,
    MCPConnectionPool,
    _retrieve,
    connection_lost,
    kill_children,
    redacted,
)
from reasoning.tools.registry import (
    CachePolicy,
    CallClock,
    ElicitCallback,
    ProgressCallback,
    SampleCallback,
    ToolOutput,
    ToolProvider,
    ToolSpec,
)

__all__ = [
    "SEPARATOR",
    "CircuitBreaker",
    "MCPConnection",
    "MCPConnectionPool",
    "MCPRequestError",
    "MCPServerConfig",
    "MCPToolProvider",
    "MCPUnavailable",
    "kill_children",
]

# Images the chat may show: raster formats only (an SVG can carry script), at most this big.
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
MAX_IMAGE_BYTES = 1_000_000
MAX_BLOB_BYTES = 2_000_000
# All the images and downloads of one result together: each is stored with the tool execution.
MAX_RESULT_PART_BYTES = 5_000_000
# Magic numbers: an image is shown only when its bytes are what its type says.
IMAGE_SIGNATURES = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
IMAGE_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}


def image_bytes_match(mime: str, raw: bytes) -> bool:
    """Whether `raw` is an image of the raster type `mime` says (a WebP is a RIFF file of the
    WEBP form: "RIFF" alone is also a WAV or an AVI)."""
    if mime not in IMAGE_TYPES or not raw.startswith(IMAGE_SIGNATURES[mime]):
        return False
    return mime != "image/webp" or raw[8:12] == b"WEBP"


ProgressFn = Callable[[float, float | None, str | None], Awaitable[None] | None]


def _size(n: int) -> str:
    return f"{n / 1000:.0f} KB" if n >= 1000 else f"{n} bytes"


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


# Where a server's binary content goes: beside a tool result the chat shows images and offers
# downloads; a /command's prompt or an @resource is text the question carries, nothing more.
NOT_ATTACHED = "not attached: only text reaches the question"


def _holds_secret(raw: bytes, redact: Callable[[str], str]) -> bool:
    """Whether bytes a server returns hold one of its secrets in a form `redact` finds (as
    written, in any letter case, quoted, base64- or hex-encoded). Bytes cannot be redacted
    the way text is: holding one, they are not passed on at all."""
    for text in (raw.decode("latin-1"), raw.decode("utf-8", "replace")):
        text = text.replace("\x00", " ")  # redact's own NUL replacement is no secret
        if redact(text) != text:
            return True
    return False


def _image_part(
    mime: str, data: str, *, offer: bool = True, redact: Callable[[str], str] = str
) -> tuple[str, dict[str, Any] | None]:
    raw = _decode(data)
    mime = (mime or "").lower()
    if raw is None:
        return f"[{mime or 'image'} image that is not valid base64; not shown]", None
    if mime not in IMAGE_TYPES:
        return (
            f"[{mime or 'unknown'} image, {_size(len(raw))}; not shown: only PNG, JPEG, GIF and WebP]",
            None,
        )
    if not image_bytes_match(mime, raw):
        # Said as it is: "only PNG, JPEG, GIF and WebP" under a GIF read as a contradiction.
        name = IMAGE_NAMES[mime]
        return f"[{mime} image, {_size(len(raw))}; not shown: its bytes are not a {name} image]", None
    if not offer:
        return f"[{mime} image, {_size(len(raw))}; {NOT_ATTACHED}]", None
    if len(raw) > MAX_IMAGE_BYTES:
        return (
            f"[{mime} image, {_size(len(raw))}; too large to show (at most {_size(MAX_IMAGE_BYTES)})]",
            None,
        )
    if _holds_secret(raw, redact):
        return f"[{mime} image, {_size(len(raw))}; not shown: it holds a secret of the server]", None
    part = {"type": "image", "mime_type": mime, "data": data, "bytes": len(raw)}
    return f"[{mime} image, {_size(len(raw))}, shown to the user]", part


def _blob_part(
    uri: str, mime: str | None, data: str, *, offer: bool = True, redact: Callable[[str], str] = str
) -> tuple[str, dict[str, Any] | None]:
    raw = _decode(data)
    mime = mime or "application/octet-stream"
    if raw is None:
        return f"[binary resource {uri} ({mime}) that is not valid base64]", None
    if not offer:
        return f"[binary resource {uri} ({mime}, {_size(len(raw))}); {NOT_ATTACHED}]", None
    if len(raw) > MAX_BLOB_BYTES:
        return f"[binary resource {uri} ({mime}, {_size(len(raw))}); too large to offer]", None
    if _holds_secret(raw, redact):
        said = f"[binary resource {uri} ({mime}, {_size(len(raw))}); not offered: it holds a secret"
        return f"{said} of the server]", None
    part = {"type": "blob", "uri": uri, "mime_type": mime, "data": data, "bytes": len(raw)}
    return f"[binary resource {uri} ({mime}, {_size(len(raw))}), offered to the user as a download]", part


def content_of(
    content: list[Any], redact: Callable[[str], str], *, offer: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """The text the model reads and the parts the chat shows, for a list of MCP content
    blocks; server-given strings are redacted. `offer`: whether the chat will show the parts
    (a tool result) or only the text goes on (a prompt), which the text must then say."""
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    attached = 0
    for block in content or []:
        kind = getattr(block, "type", "")
        part: dict[str, Any] | None = None
        if kind == "text":
            text = block.text
        elif kind == "image":
            text, part = _image_part(block.mime_type, block.data, offer=offer, redact=redact)
        elif kind == "audio":
            text = f"[{block.mime_type} audio; not played here]"
        elif kind == "resource_link":
            uri, name = redact(str(block.uri)), redact(block.name or str(block.uri))
            description = redact(block.description or "")
            text = f"[resource link: {name} <{uri}>{f' ({description})' if description else ''}]"
            part = {"type": "link", "uri": uri, "name": name, "mime_type": block.mime_type or ""}
        elif kind == "resource":
            resource = block.resource
            if getattr(resource, "text", None) is not None:
                text = resource.text
            else:
                text, part = _blob_part(
                    redact(str(resource.uri)), resource.mime_type, resource.blob, offer=offer, redact=redact
                )
        else:
            text = f"[{kind or 'unknown'} content]"
        if part is not None and part.get("bytes", 0) + attached > MAX_RESULT_PART_BYTES:
            text, part = _past_the_total(part, attached), None
        texts.append(redact(text))
        if part is not None:
            attached += part.get("bytes", 0)
            parts.append(part)
    return "\n".join(texts), parts


def _past_the_total(part: dict[str, Any], attached: int) -> str:
    """What an image or download past the result's total becomes: its description."""
    why = f"this result's pictures and downloads already come to {_size(attached)}"
    if part["type"] == "image":
        return f"[{part['mime_type']} image, {_size(part['bytes'])}; not shown: {why}]"
    return (
        f"[binary resource {part['uri']} ({part['mime_type']}, {_size(part['bytes'])}); not offered: {why}]"
    )


async def call_on(
    connection: MCPConnection,
    tool: str,
    arguments: dict[str, Any],
    meta: dict[str, Any] | None,
    on_progress: ProgressFn | None = None,
    on_elicit: ElicitCallback | None = None,
    on_sample: SampleCallback | None = None,
) -> ToolOutput:
    """One tool call on the pool's loop; failures are results the model hears about."""
    from mcp import MCPError

    config = connection.config
    client = await connection.ensure()
    # The call's own budget stands still while the person is asked (they have theirs); the
    # SDK's limit is only a ceiling above both.
    clock = CallClock(config.call_timeout)
    on_elicit, on_sample = clock.asking(on_elicit), clock.asking(on_sample)
    ceiling = config.call_timeout + (config.elicitation_timeout if on_elicit or on_sample else 0)
    if on_elicit is not None:
        connection.elicitors.append(on_elicit)
    if on_sample is not None:
        connection.samplers.append(on_sample)

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if on_progress is not None:
            outcome = on_progress(value, total, config.redact(message) if message else message)
            if outcome is not None:
                await outcome

    timed_out = f"{tool} on {config.name} timed out after {config.call_timeout:g}s"
    try:
        result = await clock.run(
            connection.renewed(
                client,
                lambda live: live.call_tool(
                    tool,
                    arguments,
                    read_timeout_seconds=ceiling,
                    progress_callback=progress if on_progress else None,
                    meta=meta or None,
                ),
            )
        )
    except TimeoutError:
        connection.timed_out(timed_out)
        return ToolOutput(timed_out, is_error=True)
    except MCPError as exc:
        text = config.redact(str(exc))
        if "timed out" in text:
            connection.timed_out(timed_out)
            return ToolOutput(timed_out, is_error=True)
        if connection.client is None or connection_lost(exc):
            connection.failed(f"{tool} failed: {text}", broken=True)
            # Users and the model hear that the server is unavailable; staff get what it said.
            raise MCPUnavailable(
                f"the {config.name} server failed during {tool} ({text}); "
                "it will be restarted for the next call",
                server=config.name,
            ) from None
        if (whom := _cannot_ask(text)) is not None:
            raise MCPCannotAsk(
                f"{tool} on {config.name}: {text}",
                public=f"{tool} on {config.name} needed to ask {whom} something while it ran, "
                "which this server cannot do over its connection",
            ) from None
        # An error the live server answered with ("status 404"): this call's outcome, not the
        # server's health. Its session and every other call on it carry on.
        return ToolOutput(f"{tool} on {config.name} answered with an error: {text}", is_error=True)
    except MCPUnavailable:  # reconnecting for a session the server forgot did not succeed
        raise
    except Exception as exc:
        # The SDK could not read the answer (structured content its output schema refuses, a
        # malformed result): its words quote the answer, secrets and all, so staff get them
        # redacted and everyone else a plain sentence.
        raise MCPUnreadable(
            config.redact(f"{type(exc).__name__}: {exc}"),
            public=f"{tool} on {config.name} answered with a result Nexus could not read",
        ) from None
    finally:
        _forget(connection, on_elicit, on_sample)
    connection.succeeded()
    text, parts = content_of(result.content, config.redact)
    if not text and result.structured_content is not None:
        text = config.redact(json.dumps(result.structured_content, ensure_ascii=False))
    return ToolOutput(text, is_error=bool(result.is_error), parts=parts)


# The SDK's words (its NoBackChannelError) when a server cannot send a request mid-call.
_NO_BACK_CHANNEL = re.compile(r"Cannot send '([^']+)': this transport context has no back-channel")
_ASKED = {"elicitation/create": "the user", "sampling/createMessage": "the model"}


def _cannot_ask(text: str) -> str | None:
    """Whom a tool failed to ask mid-call (the user, the model), if that is why it failed."""
    found = _NO_BACK_CHANNEL.search(text)
    return None if found is None else _ASKED.get(found.group(1), "Nexus")


def _forget(connection: MCPConnection, on_elicit: Any, on_sample: Any) -> None:
    if on_elicit is not None and on_elicit in connection.elicitors:
        connection.elicitors.remove(on_elicit)
    if on_sample is not None and on_sample in connection.samplers:
        connection.samplers.remove(on_sample)


async def request_on(
    connection: MCPConnection, method: str, *args: Any, budget: float | None = None, **kwargs: Any
) -> Any:
    """Any other client request (resources, prompts), bounded by the call budget, or by a
    shorter `budget` a person waits out (a /command expanded as the message is sent)."""
    from mcp import MCPError

    client = await connection.ensure()
    config = connection.config
    limit = min(config.call_timeout, budget) if budget else config.call_timeout
    try:
        request = connection.renewed(client, lambda live: getattr(live, method)(*args, **kwargs))
        return await _bounded(request, limit)
    except TimeoutError:
        if limit >= config.call_timeout:  # a server slower than a person waits is not failing
            connection.failed(f"{method} timed out", broken=False)
        raise MCPRequestError(f"{config.name} did not answer {method} within {limit:g}s") from None
    except MCPError as exc:
        if connection.client is None or connection_lost(exc):
            connection.failed(f"{method} failed: {exc}", broken=True)
        raise MCPRequestError(config.redact(str(exc))) from None


async def _bounded(awaitable: Awaitable[Any], seconds: float) -> Any:
    return await asyncio.wait_for(awaitable, seconds)


def default_cache_policy(annotations: Any) -> CachePolicy:
    """A result is reused within a run only when the server says so in every hint: the tool
    reads (read-only), a closed world (not open-world) and gives the same answer again
    (idempotent). The spec's defaults (not read-only, open world) mean an answer may change
    between calls, so an unannotated tool, or a read-only clock, is never reused."""
    read_only = getattr(annotations, "read_only_hint", None) is True
    closed = getattr(annotations, "open_world_hint", None) is False
    idempotent = getattr(annotations, "idempotent_hint", None) is True
    return "cache" if read_only and closed and idempotent else "no-cache"


def for_models(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's (valid, object) input schema as model APIs take it: with "properties", which
    MCP lets a tool without arguments leave out and OpenAI requires ("object schema missing
    properties" refused the whole request)."""
    schema = dict(schema or {"type": "object"})
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema


def callable_by_us(tool: Any) -> bool:
    """Tools that require task-augmented execution always fail for a client that does not
    run tasks: they are not offered."""
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) != "required"


# What model APIs accept as a tool's name (Anthropic's and OpenAI's rule); MCP also allows
# dots, slashes and longer names, which would get every request refused.
_MODEL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MODEL_NAME_LIMIT = 64


def model_tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>` as a model may be offered it: unchanged when it already may, else
    with other characters made "_" and a short hash of the tool's own name, so that names
    that differ only there, or past the limit, stay apart."""
    name = f"{server}{SEPARATOR}{tool}"
    if len(name) <= MODEL_NAME_LIMIT and not _MODEL_NAME_CHARS.search(name):
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{_MODEL_NAME_CHARS.sub('_', name)[: MODEL_NAME_LIMIT - 9]}_{digest}"


class MCPToolProvider(ToolProvider):
    """One server's tools, named `<server>__<tool>` so two servers can both have `search`."""

    def __init__(
        self,
        pool: MCPConnectionPool,
        config: MCPServerConfig,
        *,
        meta: dict[str, Any] | None = None,
        on_status: Callable[[str, str | None, list[dict[str, str]], float | None], Awaitable[None]]
        | None = None,
    ) -> None:
        self.pool = pool
        self.config = config
        self.name = config.name
        self.meta = meta or {}
        self.on_status = on_status
        self.hidden: list[str] = []

    def refused_now(self) -> MCPUnavailable | None:
        return self.pool.connection(self.config).paused()

    def _listed_late(self) -> None:
        task = asyncio.ensure_future(self.list_tools())  # on the pool's loop: records the status
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def list_tools(self) -> list[ToolSpec]:
        try:
            tools = await self.pool.tools(self.config, self.meta)
        except MCPUnavailable as exc:
            if self.on_status:
                await self.on_status(self.name, str(exc), [], exc.paused_for)
                # It goes on connecting in the background: once it lists its tools, the status
                # says so (the admin showed "no tools listing after 3s" for servers connected
                # since, until a later run in that very process listed them).
                self.pool.connection(self.config).when_listed("tools", self._listed_late)
            raise
        if self.on_status:
            listed = [
                {
                    "name": tool.name,
                    "approval": self._approval(tool),
                    "cache": self._policy(tool),
                    "description": shorten(" ".join((tool.description or "").split())),
                }
                for tool in tools
            ]
            # A listing served while the server's calls are refused (its circuit open) must not
            # report it connected: the admin showed "connected" for a paused server.
            if (refused := self.refused_now()) is not None:
                await self.on_status(self.name, str(refused), listed, refused.paused_for)
            else:
                await self.on_status(self.name, None, listed, None)
        self.hidden = [tool.name for tool in tools if not callable_by_us(tool)]
        return [
            ToolSpec(
                name=model_tool_name(self.name, tool.name),
                description=(tool.description or tool.name)[:1000],
                input_schema=for_models(tool.input_schema),
                server=self.name,
                tool=tool.name,
                cache_policy=self._policy(tool),
                timeout=self.config.call_timeout + 5,
                approval=self._approval(tool),
                sampling_approval=self._sampling_approval(),
            )
            for tool in tools
            if callable_by_us(tool)
        ]

    def _policy(self, tool: Any) -> CachePolicy:
        chosen = self.config.policy(tool.name)
        if chosen in ("cache", "no-cache"):
            return chosen  # type: ignore[return-value]
        return default_cache_policy(getattr(tool, "annotations", None))

    def _sampling_approval(self) -> str:
        """A server's requests for a completion are asked about unless an admin set
        `sampling` (like a tool name) in its approval policies."""
        chosen = dict(self.config.approval_policies).get(SAMPLING) or "ask"
        return chosen if chosen in POLICIES else "ask"

    def _approval(self, tool: Any) -> str:
        chosen = dict(self.config.approval_policies).get(tool.name) or self.config.default_approval
        if chosen in POLICIES:
            return chosen
        return default_approval(getattr(tool, "annotations", None))

    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutput:
        return await self.pool.call(self.config, spec.provider_tool, arguments, self.meta)

    async def call_tool_with_progress(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        on_progress: ProgressCallback,
        on_elicit: ElicitCallback | None = None,
        on_sample: SampleCallback | None = None,
    ) -> ToolOutput:
        """Progress, elicitation and sampling arrive on the pool's loop; they are handed to the caller's
        loop (progress in order, fire and forget; an elicitation waits for its answer)."""
        loop = asyncio.get_running_loop()
        # Callbacks run in this call's context (the run's), whichever context the shared
        # connection's task that receives the server's message has.
        context = contextvars.copy_context()
        reported: list[Any] = []

        def relay(progress: float, total: float | None, message: str | None) -> None:
            future = context.run(
                asyncio.run_coroutine_threadsafe, on_progress(progress, total, message), loop
            )
            future.add_done_callback(_retrieve)
            reported.append(future)

        async def elicit(
            message: str, schema: dict[str, Any], url: str = "", **refusal: str
        ) -> tuple[str, dict[str, Any] | None]:
            if on_elicit is None:
                return "decline", None
            asking = on_elicit(message, schema, url, **refusal)  # refused=…: declined, to be said
            asked = context.run(asyncio.run_coroutine_threadsafe, asking, loop)
            return await asyncio.wrap_future(asked)

        async def sample(
            system: str, messages: list[dict[str, str]], max_tokens: int
        ) -> tuple[str, str] | None:
            if on_sample is None:
                return None
            answer = context.run(
                asyncio.run_coroutine_threadsafe, on_sample(system, messages, max_tokens), loop
            )
            return await asyncio.wrap_future(answer)

        # Which run's person a request would reach: calls of one run may share a request
        # that cannot say which of them it belongs to.
        elicit.asker = getattr(on_elicit, "asker", None)  # type: ignore[attr-defined]
        sample.asker = getattr(on_sample, "asker", None)  # type: ignore[attr-defined]
        output = await self.pool.call(
            self.config,
            spec.provider_tool,
            arguments,
            self.meta,
            relay,
            elicit if on_elicit else None,
            sample if on_sample else None,
        )
        # Every progress report is shown before the result.
        await asyncio.gather(*(asyncio.wrap_future(f) for f in reported), return_exceptions=True)
        return output

    async def list_resources(self) -> list[Any]:
        result = await self.pool.request(self.config, "list_resources", meta=self.meta or None)
        return redacted(list(result.resources), self.config.redact)

    async def check(self) -> None:
        """Whether the server answers now (MCPUnavailable if not), beyond a cached listing."""
        await self.pool.check(self.config)

    def try_now(self) -> None:
        """Let the next request through a pause after repeated failures (see MCPConnection)."""
        self.pool.connection(self.config).try_now()

    async def read_resource(self, uri: str, *, budget: float | None = None) -> str:
        """A resource's text, as an @mention attaches it; binary contents are named, not sent."""
        result = await self.pool.request(
            self.config, "read_resource", uri, meta=self.meta or None, budget=budget
        )
        texts = [
            contents.text
            if getattr(contents, "text", None) is not None
            else _blob_part(str(contents.uri), contents.mime_type, contents.blob, offer=False)[0]
            for contents in result.contents
        ]
        return self.config.redact("\n".join(texts))

    async def list_prompts(self) -> list[Any]:
        result = await self.pool.request(self.config, "list_prompts", meta=self.meta or None)
        return redacted(list(result.prompts), self.config.redact)

    async def get_prompt(
        self, name: str, arguments: dict[str, str], *, budget: float | None = None
    ) -> list[dict[str, str]]:
        result = await self.pool.request(
            self.config, "get_prompt", name, arguments, meta=self.meta or None, budget=budget
        )
        return [
            {"role": m.role, "content": content_of([m.content], self.config.redact, offer=False)[0]}
            for m in result.messages
        ]
