"""The one async protocol every LLM provider speaks.

Messages use a neutral, Anthropic-shaped format: a message is {"role", "content"} where
content is a string or a list of blocks: {"type": "text"}, {"type": "tool_use", "id",
"name", "input"} and {"type": "tool_result", "tool_use_id", "content", "is_error"}.
Providers translate to and from their own wire format.
"""

from __future__ import annotations

import asyncio
import random
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    input_schema: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model sent arguments that were not a JSON object.
    malformed: str | None = None


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass
class LLMRequest:
    messages: list[dict[str, Any]]
    system: str = ""
    tools: list[ToolDef] = field(default_factory=list)
    # None (model decides), {"type": "any"}, or {"type": "tool", "name": ...}
    tool_choice: dict[str, Any] | None = None
    model: str | None = None
    max_tokens: int = 4096
    temperature: float | None = None
    cache_system: bool = True
    cache_tools: bool = True
    # Which engine component asks; providers ignore it, doubles and the offline model use it.
    component: str = "agent"
    # Free-form hints for the offline model and test doubles (never sent to an API).
    hints: dict[str, Any] = field(default_factory=dict)


@dataclass
class LLMResponse:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "end_turn"
    latency_ms: float = 0.0
    model: str = ""
    provider: str = ""
    retries: int = 0

    def assistant_message(self) -> dict[str, Any]:
        """This response as an assistant turn to append to the conversation."""
        blocks: list[dict[str, Any]] = []
        if self.text:
            blocks.append({"type": "text", "text": self.text})
        for call in self.tool_calls:
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
        return {"role": "assistant", "content": blocks or self.text}


class LLMError(Exception):
    """A provider call failed. `retryable` errors are worth trying again after a pause."""

    RETRYABLE_KINDS = frozenset({"rate_limit", "overloaded", "server", "timeout", "connection"})

    def __init__(
        self,
        message: str,
        *,
        kind: str = "error",
        status: int | None = None,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.provider = provider
        self.retry_after = retry_after
        # How many times the call was retried before this error was final.
        self.retries = 0
        # Tokens the provider reported before the call failed (a stream cut off after its
        # start), over every attempt once the error is final: they are billed all the same.
        self.usage = Usage()

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE_KINDS

    @property
    def provider_down(self) -> bool:
        """A rejected key, or a provider that did not answer in time (twice, each the whole
        timeout): asking it again in the same run, for another component or a fallback, only
        repeats the wait."""
        return self.kind in ("auth", "timeout")

    def user_message(self) -> str:
        """What a person should read: short, specific, without internals."""
        return {
            "rate_limit": "The model provider is rate-limiting requests; try again shortly.",
            "overloaded": "The model provider is overloaded right now; try again shortly.",
            "server": "The model provider had a server error.",
            "timeout": "The model provider did not answer in time.",
            "connection": "Could not reach the model provider.",
            "auth": "The model provider rejected the API key; check the configuration.",
            "not_found": "The model provider does not know the configured model (or address); check "
            f"the model names in the configuration. It said: {self}",
            "too_large": "The request was too large for the model provider: the conversation, its "
            "documents or tool results are too long. Start a new chat or ask about less at once.",
        }.get(self.kind, f"The model call failed: {self}")


def kind_for_status(status: int) -> str:
    """Map an HTTP status to an LLMError kind, the same way for every provider."""
    if status == 429:
        return "rate_limit"
    if status == 529:
        return "overloaded"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server"
    return {404: "not_found", 413: "too_large"}.get(status, "bad_request")


@dataclass
class RetryPolicy:
    """Exponential backoff with full jitter on retryable errors."""

    max_retries: int = 4
    # A timeout has already cost the whole timeout (120 s by default): retried this often.
    max_timeout_retries: int = 1
    base_delay: float = 0.5
    max_delay: float = 20.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, error: LLMError) -> float:
        cap = min(self.max_delay, self.base_delay * (2**attempt))
        wait = self.rng.uniform(cap / 2, cap)
        if error.retry_after is not None:
            wait = max(wait, min(error.retry_after, self.max_delay))
        return wait


class TextSink(Protocol):
    """Where a streaming call delivers its text as it is generated."""

    async def delta(self, text: str) -> None:
        """The next piece of text."""

    async def reset(self) -> None:
        """The call is being retried: the text delivered so far is void."""


class LLMClient(ABC):
    """A provider: a few attributes and one streaming method; `complete` joins the stream."""

    provider: str = "unknown"
    supports_tools: bool = True
    # A line the engine adds once to every final answer (the offline model says what it is).
    answer_notice: str = ""

    def __init__(self, model: str, *, retry: RetryPolicy | None = None) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()

    @abstractmethod
    def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        """Yield text deltas, then exactly one final LLMResponse. Raise LLMError on failure."""

    @abstractmethod
    def with_model(self, model: str) -> LLMClient:
        """The same provider and credentials, talking to another model."""

    async def complete(self, request: LLMRequest, *, on_text: TextSink | None = None) -> LLMResponse:
        """One call with retries. Text deltas go to `on_text` as they arrive (reset before a
        retry); the caller gets the whole answer."""
        request = replace(request, model=request.model or self.model)
        attempt = timeouts = 0
        spent = Usage()  # by attempts that failed part-way and were tried again
        while True:
            started = time.perf_counter()
            delivered = False
            try:
                final: LLMResponse | None = None
                async for item in self.stream(request):
                    if isinstance(item, LLMResponse):
                        final = item
                    elif on_text is not None and item:
                        delivered = True
                        await on_text.delta(item)
                if final is None:
                    raise LLMError(
                        "the stream ended without a final message", kind="connection", provider=self.provider
                    )
                final.latency_ms = (time.perf_counter() - started) * 1000
                final.retries = attempt
                final.usage = final.usage + spent
                final.provider = final.provider or self.provider
                final.model = final.model or request.model or self.model
                return final
            except LLMError as error:
                timeouts += error.kind == "timeout"
                spent = spent + error.usage
                if (
                    not error.retryable
                    or attempt >= self.retry.max_retries
                    or timeouts > self.retry.max_timeout_retries
                ):
                    error.retries = attempt
                    error.usage = spent
                    raise
                if delivered and on_text is not None:
                    await on_text.reset()
                await self.retry.sleep(self.retry.delay(attempt, error))
                attempt += 1
