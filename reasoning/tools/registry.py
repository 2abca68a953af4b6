"""The tool registry: pluggable providers, one list of tools, execution with a timeout.

A provider is a small class with three methods (list, call, close). The registry asks
each provider for its tools, keeps going when one provider is broken (its error is kept
for the trace), and runs calls with a timeout so a hung tool cannot hang a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from reasoning.llm.base import ToolDef

logger = logging.getLogger(__name__)

CachePolicy = Literal["cache", "no-cache"]
# Told a long tool's progress: (progress, total or None, message or None).
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
# Asked when a server wants input from the person during a call: (message, JSON schema, URL
# to open: "" for a form) -> (action "accept" | "decline" | "cancel", content when accepted).
ElicitCallback = Callable[[str, dict[str, Any], str], Awaitable[tuple[str, dict[str, Any] | None]]]
# Asked when a server wants a completion from Nexus's model during a call (MCP sampling):
# (system, messages as role/text dicts, max_tokens) -> (text, model) or None when refused.
SampleCallback = Callable[[str, list[dict[str, str]], int], Awaitable[tuple[str, str] | None]]


class CallClock:
    """A tool call's time budget that stands still while a person is being asked (a server's
    request for input or for an approved completion): the person has their own, longer
    budget, and a call that waits for them is not a hung tool."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self._spent = 0.0
        self._since = time.monotonic()
        self._asking = 0

    def remaining(self) -> float | None:
        """Seconds left, or None while a person is being asked (the clock stands still)."""
        if self._asking:
            return None
        return self.budget - self._spent - (time.monotonic() - self._since)

    def asking(self, ask: Callable[..., Awaitable[Any]] | None) -> Any:
        """`ask`, with the clock stopped while it waits (on the loop that runs `run`)."""
        if ask is None:
            return None

        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            if not self._asking:
                self._spent += time.monotonic() - self._since
            self._asking += 1
            try:
                return await ask(*args, **kwargs)
            finally:
                self._asking -= 1
                if not self._asking:
                    self._since = time.monotonic()

        wrapped.asker = getattr(ask, "asker", None)  # type: ignore[attr-defined]
        return wrapped

    async def run(self, awaitable: Awaitable[Any]) -> Any:
        """Await `awaitable` within the budget; TimeoutError (and the call cancelled) when
        it runs out with nobody being asked."""
        task = asyncio.ensure_future(awaitable)
        try:
            while True:
                left = self.remaining()
                if left is not None and left <= 0:
                    task.cancel()
                    task.add_done_callback(lambda t: t.cancelled() or t.exception())
                    raise TimeoutError
                done, _ = await asyncio.wait({task}, timeout=0.25 if left is None else left)
                if done:
                    return task.result()
        except asyncio.CancelledError:
            task.cancel()
            raise


@dataclass(frozen=True)
class ToolSpec:
    name: str  # what the model sees; unique across providers
    description: str
    input_schema: dict[str, Any]
    server: str = "local"
    tool: str = ""  # the provider's own name for it
    cache_policy: CachePolicy = "cache"
    # Seconds a call may take; None means the registry's default.
    timeout: float | None = None
    # Whether a call runs on its own ("auto"), needs a person's approval ("ask") or never runs.
    approval: str = "auto"
    # The same for the server's requests for a completion from our model (sampling).
    sampling_approval: str = "ask"

    def definition(self) -> ToolDef:
        return ToolDef(self.name, self.description, self.input_schema)

    @property
    def provider_tool(self) -> str:
        return self.tool or self.name


@dataclass
class ToolOutput:
    text: str
    is_error: bool = False
    # What the chat shows beside the text (images, downloads, links), as JSON-safe dicts.
    parts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolOutcome:
    success: bool
    content: str
    error: str | None = None
    duration_ms: float = 0.0
    truncated: bool = False
    cached: bool = False
    # What went wrong in full, for staff auditing the run, when `error` (what the user and the
    # model see) is only the public part: a tool server's own words may quote its secrets.
    detail: str | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)

    def for_model(self) -> str:
        return self.content if self.success else f"Error: {self.error}"


class ToolError(Exception):
    """A tool call failed in a way the model should hear about (not a crash of the run)."""


class ToolProvider(ABC):
    """A source of tools: the in-process callables, or an MCP server."""

    name: str = "provider"

    @abstractmethod
    async def list_tools(self) -> list[ToolSpec]: ...

    @abstractmethod
    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutput: ...

    async def call_tool_with_progress(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        on_progress: ProgressCallback,
        on_elicit: ElicitCallback | None = None,
        on_sample: SampleCallback | None = None,
    ) -> ToolOutput:
        """A call whose progress notifications reach `on_progress`, whose requests for the
        person's input reach `on_elicit` and for a completion `on_sample`; providers that
        have none of these simply call."""
        return await self.call_tool(spec, arguments)

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; providers without any keep the default."""

    def refused_now(self) -> Exception | None:
        """Why a call would be refused at once (a server paused after repeated failures), so
        nobody is asked to approve it; None for providers that never refuse so."""
        return None


@dataclass
class ToolRegistry:
    providers: list[ToolProvider] = field(default_factory=list)
    timeout: float = 30.0
    max_result_chars: int = 20_000
    # The most tools offered to the model at once (OpenAI's limit for one request).
    max_tools: int = 128
    _specs: dict[str, tuple[ToolSpec, ToolProvider]] = field(default_factory=dict)
    # Per broken provider: what anyone may see, and the detail for staff (tool servers redact
    # their secrets from it, but it may still quote the server's own output).
    errors: dict[str, str] = field(default_factory=dict)
    error_details: dict[str, str] = field(default_factory=dict)
    _loaded: bool = False
    # Asked before a call whose tool's approval policy is "ask" (reasoning.tools.approval).
    approver: Any = None

    def register_provider(self, provider: ToolProvider) -> None:
        self.providers.append(provider)
        self._loaded = False

    async def refresh(self) -> None:
        """Ask every provider for its tools; a failing provider is recorded, not fatal."""
        specs: dict[str, tuple[ToolSpec, ToolProvider]] = {}
        errors: dict[str, str] = {}
        details: dict[str, str] = {}
        results = await asyncio.gather(
            *(self._list(provider) for provider in self.providers), return_exceptions=True
        )
        for provider, result in zip(self.providers, results, strict=True):
            if isinstance(result, BaseException):
                details[provider.name] = _describe(result)
                errors[provider.name] = getattr(result, "public", None) or details[provider.name]
                continue
            for spec in result:
                specs.setdefault(spec.name, (spec, provider))
        if len(specs) > self.max_tools:
            # Every request carries every tool offered, and OpenAI refuses one with more than
            # 128: a few large servers together failed every run of every user. The first
            # providers' (the host's own server comes first) are kept.
            left_out = list(specs)[self.max_tools :]
            logger.warning(
                "the tool servers list %d tools; only the first %d are offered (left out: %s)",
                len(specs),
                self.max_tools,
                ", ".join(left_out[:20]) + (" …" if len(left_out) > 20 else ""),
            )
            specs = dict(list(specs.items())[: self.max_tools])
        self._specs, self.errors, self.error_details, self._loaded = specs, errors, details, True

    async def _list(self, provider: ToolProvider) -> list[ToolSpec]:
        return await asyncio.wait_for(provider.list_tools(), timeout=self.timeout)

    async def ensure_loaded(self) -> None:
        if not self._loaded:
            await self.refresh()

    def specs(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._specs.values()]

    def names(self) -> list[str]:
        return list(self._specs)

    def definitions(self) -> list[ToolDef]:
        return [spec.definition() for spec in self.specs()]

    def spec(self, name: str) -> ToolSpec | None:
        entry = self._specs.get(name)
        return entry[0] if entry else None

    def refused_now(self, name: str) -> ToolOutcome | None:
        """The outcome of a call to `name` that its provider would refuse at once, if it would."""
        entry = self._specs.get(name)
        refused = entry[1].refused_now() if entry else None
        return None if refused is None else self._failed(refused, time.perf_counter())

    def cache_policy(self, name: str) -> CachePolicy:
        spec = self.spec(name)
        return spec.cache_policy if spec else "cache"

    async def execute(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_elicit: ElicitCallback | None = None,
        on_sample: SampleCallback | None = None,
    ) -> ToolOutcome:
        """Run one tool call. Never raises: failures come back as an unsuccessful outcome."""
        started = time.perf_counter()
        entry = self._specs.get(name)
        if entry is None:
            known = ", ".join(sorted(self._specs)) or "none"
            return ToolOutcome(False, "", f"unknown tool {name!r}; available tools: {known}")
        spec, provider = entry
        limit = spec.timeout or timeout or self.timeout
        clock = CallClock(limit)
        try:
            call = (
                provider.call_tool_with_progress(
                    spec, arguments, on_progress, clock.asking(on_elicit), clock.asking(on_sample)
                )
                if on_progress is not None
                else provider.call_tool(spec, arguments)
            )
            output = await clock.run(call)
        except TimeoutError:
            return self._outcome(False, "", f"{name} timed out after {limit:g}s", started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool's failure is data for the model, not a crash
            return self._failed(exc, started)
        if output.is_error:
            return self._outcome(False, "", output.text or "the tool reported an error", started)
        outcome = self._outcome(True, output.text, None, started)
        outcome.parts = list(output.parts)
        return outcome

    def _failed(self, error: Exception, started: float) -> ToolOutcome:
        """A failed call's outcome: what anyone may see (a tool server's public words), and
        for staff the whole error when that differs."""
        detail = _describe(error)
        public = getattr(error, "public", None)
        return self._outcome(False, "", public or detail, started, detail=detail if public else None)

    def _outcome(
        self, success: bool, content: str, error: str | None, started: float, *, detail: str | None = None
    ) -> ToolOutcome:
        truncated = False
        if len(content) > self.max_result_chars:
            dropped = len(content) - self.max_result_chars
            content = content[: self.max_result_chars] + f"\n[... truncated {dropped} characters]"
            truncated = True
        if error and len(error) > 2000:
            error = error[:2000] + " [...]"
        if detail and len(detail) > 2000:
            detail = detail[:2000] + " [...]"
        elapsed = (time.perf_counter() - started) * 1000
        return ToolOutcome(success, content, error, elapsed, truncated, detail=detail)

    async def close(self) -> None:
        for provider in self.providers:
            with contextlib.suppress(Exception):  # closing is best effort
                await provider.close()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
