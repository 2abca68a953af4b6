"""Instrumented model calls: every call in a run goes through a ComponentLLM.

It picks the component's model, emits an `llm.call` event (tokens, cache, latency, errors),
adds to the run's totals, and passes streamed text on when the caller asks for it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from reasoning.config import ReasoningConfig
from reasoning.events import Emitter
from reasoning.llm.base import LLMClient, LLMError, LLMRequest, LLMResponse, TextSink, ToolDef, Usage
from reasoning.pricing import cost_of
from reasoning.structured import OutputKind, StructuredOutputError


@dataclass
class Totals:
    usage: Usage = field(default_factory=Usage)
    cost: Decimal = Decimal(0)
    calls: int = 0
    # Calls stopped before they finished (a speculative draft that was discarded): they cost
    # input tokens the provider does not report back, so they are counted separately.
    cancelled: int = 0
    by_component: dict[str, int] = field(default_factory=dict)
    # Set by the first call that found the provider down (LLMError.provider_down): the run's
    # later calls fail with it at once. Each component degrades and asks again, so a provider
    # that stopped answering made a run wait out the timeout twice per component (six times
    # at 120 s before the answer call failed).
    down: LLMError | None = None

    def add(self, component: str, model: str, usage: Usage) -> Decimal:
        cost = self.charge(model, usage)
        self.calls += 1
        self.by_component[component] = self.by_component.get(component, 0) + 1
        return cost

    def charge(self, model: str, usage: Usage) -> Decimal:
        """Tokens and their cost, without a call: what a failed call was billed."""
        cost = cost_of(model, usage)
        self.usage = self.usage + usage
        self.cost += cost
        return cost


class ModelSet:
    """One client per component, sharing credentials; the analysis model may be cheaper."""

    def __init__(self, base: LLMClient, config: ReasoningConfig) -> None:
        self.base = base
        self.config = config
        self._by_model: dict[str, LLMClient] = {base.model: base}

    def for_component(self, component: str) -> LLMClient:
        model = self.config.model_for(component)
        if model not in self._by_model:
            self._by_model[model] = self.base.with_model(model)
        return self._by_model[model]


class ComponentLLM:
    def __init__(
        self, config: ReasoningConfig, emitter: Emitter, totals: Totals, component: str, client: LLMClient
    ) -> None:
        self.config = config
        self.emitter = emitter
        self.totals = totals
        self.component = component
        self.client = client

    @property
    def supports_tools(self) -> bool:
        return self.client.supports_tools

    async def complete(self, request: LLMRequest, *, on_text: TextSink | None = None) -> LLMResponse:
        request = replace(
            request,
            component=self.component,
            model=request.model or self.client.model,
            cache_system=request.cache_system and self.config.enable_caching,
            cache_tools=request.cache_tools and self.config.enable_caching,
        )
        down = self.totals.down
        if down is not None:
            raise LLMError(str(down), kind=down.kind, status=down.status, provider=down.provider)
        started = time.perf_counter()
        try:
            response = await self.client.complete(request, on_text=on_text)
        except asyncio.CancelledError:
            self.totals.cancelled += 1
            raise
        except LLMError as error:
            if error.provider_down:
                self.totals.down = error
            cost = self.totals.charge(request.model or "", error.usage)
            await self.emitter.emit(
                "llm.call",
                component=self.component,
                provider=error.provider or self.client.provider,
                model=request.model,
                latency_ms=round((time.perf_counter() - started) * 1000, 1),
                error=str(error),
                error_kind=error.kind,
                retries=error.retries,
                **error.usage.to_dict(),
                cost=str(cost),
            )
            raise
        cost = self.totals.add(self.component, response.model or request.model or "", response.usage)
        await self.emitter.emit(
            "llm.call",
            component=self.component,
            provider=response.provider or self.client.provider,
            model=response.model or request.model,
            latency_ms=round(response.latency_ms, 1),
            stop_reason=response.stop_reason,
            retries=response.retries,
            error=None,
            cost=str(cost),
            **response.usage.to_dict(),
        )
        return response

    async def structured(
        self,
        kind: OutputKind,
        *,
        system: str,
        prompt: str,
        max_tokens: int = 2048,
        temperature: float | None = 0.2,
        hints: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ask for `kind` with a forced tool call; read text leniently if the provider answers in prose."""
        tools_ok = self.supports_tools
        request = LLMRequest(
            messages=[{"role": "user", "content": prompt if tools_ok else _json_instruction(prompt, kind)}],
            system=system,
            tools=[_tool(kind)] if tools_ok else [],
            tool_choice={"type": "tool", "name": kind.name} if tools_ok else None,
            max_tokens=max_tokens,
            temperature=temperature,
            hints={"output": kind.name, "json_mode": not tools_ok, **(hints or {})},
        )
        response = await self.complete(request)
        tool_input = next((c.arguments for c in response.tool_calls if c.name == kind.name), None)
        result = kind.read(tool_input, response.text)
        if result is None:
            preview = (response.text or str(tool_input))[:200]
            raise StructuredOutputError(f"{self.component}: unreadable {kind.name} reply: {preview!r}")
        return result


def _tool(kind: OutputKind) -> ToolDef:
    return ToolDef(kind.name, kind.description, kind.schema)


def _json_instruction(prompt: str, kind: OutputKind) -> str:
    return (
        f"{prompt}\n\nAnswer with one JSON object only, no prose, matching this JSON schema:\n"
        f"{json.dumps(kind.schema)}"
    )


def describe_error(error: BaseException) -> str:
    """An exception as one line for the trace: its type and message, bounded."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text}"[:1000] if text else type(error).__name__
