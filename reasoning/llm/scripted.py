"""A scripted model for tests and benchmarks: queued answers, a history of requests.

Answers can be queued per component ("analysis", "planning", "agent", ...), so a test
reads like the conversation it scripts and stays deterministic when plan steps run
concurrently. Tests assert on `history`: what the model was asked, not only what came out.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from reasoning.llm.base import LLMClient, LLMRequest, LLMResponse, RetryPolicy, ToolCall, Usage

Reply = str | dict[str, Any] | LLMResponse | BaseException | Callable[[LLMRequest], Any]


class ScriptExhausted(AssertionError):
    """The code under test asked the model more often than the script expected."""


class ScriptedClient(LLMClient):
    provider = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        by_component: dict[str, Iterable[Reply]] | None = None,
        default: Reply | None = None,
        model: str = "scripted-model",
        latency: float = 0.0,
        delays: dict[str, float] | None = None,
        chunk: int = 0,
        chunk_delay: float = 0.0,
        usage: Usage | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        """`latency`: seconds before every answer; `delays`: seconds per component instead.
        `chunk`: stream text in pieces of this many characters, `chunk_delay` apart."""
        super().__init__(model, retry=retry or RetryPolicy(max_retries=3, base_delay=0.0, max_delay=0.0))
        self._state = _State(replies, by_component or {}, default)
        self.latency = latency
        self.delays = delays or {}
        self.chunk = chunk
        self.chunk_delay = chunk_delay
        self.usage = usage or Usage(input_tokens=100, output_tokens=20)

    @property
    def history(self) -> list[LLMRequest]:
        return self._state.history

    def requests_for(self, component: str) -> list[LLMRequest]:
        return [r for r in self.history if r.component == component]

    def with_model(self, model: str) -> ScriptedClient:
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.model = model
        return clone

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        self._state.history.append(request)
        delay = self.delays.get(request.component, self.latency)
        if delay:
            await asyncio.sleep(delay)
        reply = self._state.next_for(request)
        response = self._to_response(reply, request)
        text = response.text
        size = self.chunk or len(text)
        for start in range(0, len(text), max(1, size)):
            if start and self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield text[start : start + size]
        yield response

    def _to_response(self, reply: Reply, request: LLMRequest) -> LLMResponse:
        if callable(reply) and not isinstance(reply, BaseException):
            reply = reply(request)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, LLMResponse):
            return reply
        usage = Usage(**self.usage.to_dict())
        if isinstance(reply, str):
            return LLMResponse(text=reply, usage=usage, model=request.model or self.model)
        if isinstance(reply, dict) and "tool" in reply:
            calls = reply["tool"] if isinstance(reply["tool"], list) else [reply]
            tool_calls = [
                ToolCall(id=f"call_{next(self._state.ids)}", name=c["tool"], arguments=c.get("input", {}))
                for c in calls
            ]
            return LLMResponse(
                text=reply.get("text", ""),
                tool_calls=tool_calls,
                stop_reason="tool_use",
                usage=usage,
                model=request.model or self.model,
            )
        if isinstance(reply, dict):
            # A structured answer: reply with the forced tool if one was asked for.
            choice = request.tool_choice or {}
            if choice.get("type") == "tool":
                call = ToolCall(id=f"call_{next(self._state.ids)}", name=choice["name"], arguments=reply)
                return LLMResponse(
                    tool_calls=[call], stop_reason="tool_use", usage=usage, model=request.model or self.model
                )
            return LLMResponse(text=json.dumps(reply), usage=usage, model=request.model or self.model)
        raise TypeError(f"cannot script a reply of type {type(reply).__name__}")


class _State:
    def __init__(
        self, replies: Iterable[Reply], by_component: dict[str, Iterable[Reply]], default: Reply | None
    ) -> None:
        self.queue: deque[Reply] = deque(replies)
        self.queues: defaultdict[str, deque[Reply]] = defaultdict(deque)
        for component, items in by_component.items():
            self.queues[component].extend(items)
        self.default = default
        self.history: list[LLMRequest] = []
        self.ids = itertools.count(1)

    def next_for(self, request: LLMRequest) -> Reply:
        queue = self.queues.get(request.component)
        if queue:
            return queue.popleft()
        if self.queue:
            return self.queue.popleft()
        if self.default is not None:
            return self.default
        raise ScriptExhausted(
            f"no scripted reply left for component {request.component!r} (call {len(self.history)})"
        )
