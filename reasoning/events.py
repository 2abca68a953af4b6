"""Events: how the engine reports every phase to whoever listens.

One vocabulary serves the status line, the trace panel, persistence and tests. The engine
emits; hosts (the web app, the CLI, tests) decide what to do with each event. Every event is
numbered in one gap-free sequence per run.

Streaming answers (payloads; see reasoning/drafts.py):

- `answer.delta` — a batch of draft text, at most one per STREAM_BATCH_MS per draft:
  `{draft: "d3", attempt: 2, strategy: "light_planning", speculative: false, offset: 120,
  text: "..."}`. Fold by draft id: `text` starts at character `offset` of that draft, so a
  batch seen twice is recognised. Draft text is not the answer until approved.
- `answer.discarded` — a draft that will not become the answer:
  `{draft, attempt, strategy, speculative, reason, text}` (`text` clipped to 4,000 chars) with
  `reason` one of `quality` (rejected by the quality check; adds `quality`, `threshold`,
  `missing_aspects`), `speculation` (the speculative DIRECT start, discarded when the analysis
  chose `chosen_strategy`; adds `cancelled_calls`), `tool_call` (the model's text before it
  turned to a tool), `retry` (the call failed mid-stream and was retried), `revised` (the
  reasoning-driven loop wrote a better draft), `failed` (the call failed).
- `quality.completed` carries `draft` (the id of the checked draft, or null when the answer was
  not streamed, e.g. a plan step's finding used as is) and `deeper_would_help`.
- `answer.final` carries `draft` (the shown draft's id, or null), the whole `answer`, which
  may differ from the draft's streamed text (the offline model's notice is added once), and
  `approved` (the quality check passed it; false when the last attempt is shown although it
  fell short; null when nothing checked it).
- `analysis.completed` carries `routed_by` (`router`: decided locally with no model call;
  `analysis`, `cache`, `forced`, `resumed`, `fallback`) and `router` (the local router's
  reading: `level`, `confidence`, `probabilities`, `asks`; null when it was not consulted).
- `strategy.selected` carries `speculative_start` (the attempt continues the speculative draft).
- `run.finished` carries `llm_calls`, `cancelled_calls`, `calls_by_component`, `routed_by` and
  `reflects` (the reflection trigger, when a reflection follows; null otherwise).
- `reflection.completed` carries `reflection` and `trigger` (`escalation`, `low_quality`,
  `failure` or `feedback`; with feedback also `feedback`).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy

KINDS = (
    "run.started",
    "run.finished",
    "run.failed",
    "analysis.started",
    "analysis.completed",
    "strategy.selected",
    "plan.created",
    "plan.refined",
    "step.started",
    "step.completed",
    "critique.completed",
    "confidence.assessed",
    "iteration",
    "tool.called",
    "tool.result",
    "mcp.progress",
    "tool.approval.requested",
    "tool.approval.decided",
    "elicitation.requested",
    "elicitation.answered",
    "llm.call",
    "quality.started",
    "quality.completed",
    "escalation",
    "meta.assessment",
    "reflection.completed",
    "component.degraded",
    "thought",
    "answer.delta",
    "answer.discarded",
    "answer.final",
    # The cognitive mode: one per message between its agents, and what memory recalled.
    "agent.message",
    "memory.recalled",
)

# Events that change the high-level status line; everything else is panel detail.
STATUS_KINDS = frozenset(
    {
        "run.started",
        "analysis.started",
        "strategy.selected",
        "escalation",
        "run.finished",
        "run.failed",
        "answer.final",
        "tool.approval.requested",
        "elicitation.requested",
    }
)


@dataclass(frozen=True)
class Event:
    sequence: int
    time: float
    kind: str
    phase: str
    level: str
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sequence": self.sequence,
            "time": self.time,
            "kind": self.kind,
            "phase": self.phase,
            "level": self.level,
            "payload": self.payload,
        }


Sink = Callable[[Event], Awaitable[None]]


async def null_sink(event: Event) -> None:
    """A sink for callers that do not listen."""


class Emitter:
    """Numbers events without gaps and delivers them to the sink in order.

    Plan steps run concurrently, so emits can interleave; the lock keeps sequence order
    and delivery order the same, which the web client relies on for catch-up.
    """

    def __init__(self, sink: Sink | None = None, *, start_sequence: int = 1) -> None:
        self._sink = sink or null_sink
        self._next = start_sequence
        self._lock = asyncio.Lock()
        self.phase = "Phase 0: Complexity Analysis"

    async def emit(self, kind: str, phase: str | None = None, **payload: Any) -> Event:
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        if phase is not None:
            self.phase = phase
        async with self._lock:
            event = Event(
                sequence=self._next,
                time=time.time(),
                kind=kind,
                phase=self.phase,
                level="status" if kind in STATUS_KINDS else "trace",
                payload=_json_safe(payload),
            )
            self._next += 1
            await self._sink(event)
        return event


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _json_safe(value: Any) -> Any:
    if type(value) in _PLAIN:  # most of a payload: answered before any isinstance check
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_safe(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if hasattr(value, "to_dict"):
        return _json_safe(value.to_dict())
    return str(value)


class ListSink:
    """Collects events; handy for tests and the CLI's --trace."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


class CallbackSink:
    """Adapts events to the seed's callback dict (`on_analysis_start`, ...).

    Callbacks may be plain functions or coroutines; missing ones are skipped, so a host
    can listen to just the phases it cares about.
    """

    def __init__(self, callbacks: dict[str, Callable[..., Any]]) -> None:
        self.callbacks = callbacks

    async def __call__(self, event: Event) -> None:
        p = event.payload
        match event.kind:
            case "analysis.started":
                await self._call("on_analysis_start")
                await self._call("on_analysis")
            case "analysis.completed":
                await self._call("on_analysis_complete", ComplexityAnalysis.from_dict(p["analysis"]))
            case "strategy.selected":
                strategy = ExecutionStrategy(p["strategy"])
                await self._call("on_strategy_selected", strategy, p.get("rationale", ""))
                name = {
                    ExecutionStrategy.DIRECT: "on_direct_execution",
                    ExecutionStrategy.LIGHT_PLANNING: "on_light_planning",
                    ExecutionStrategy.DEEP_REASONING: "on_deep_reasoning",
                }[strategy]
                await self._call(name)
            case "plan.created" | "plan.refined":
                await self._call("on_planning_complete", p["plan"])
            case "iteration":
                await self._call("on_iteration", p["current"], p["total"], p.get("subtask", ""))
            case "tool.called":
                await self._call("on_tool_call", p["tool"], p.get("arguments", {}))
            case "tool.result":
                await self._call("on_tool_result", p["tool"], p.get("summary", ""))
            case "quality.started":
                await self._call("on_quality_check_start")
                await self._call("on_quality_check")
            case "quality.completed":
                await self._call("on_quality_check_complete", EvaluationResult.from_dict(p["evaluation"]))
            case "escalation":
                await self._call(
                    "on_auto_escalation",
                    ExecutionStrategy(p["from_strategy"]),
                    ExecutionStrategy(p["to_strategy"]),
                    p.get("reason", ""),
                    p.get("quality", 0.0),
                )
            case "run.finished":
                await self._call(
                    "on_final_response",
                    ExecutionStrategy(p["final_strategy"]),
                    p["attempts"],
                    p["quality"],
                    p["escalated"],
                )
            case "component.degraded":
                await self._call("on_error", p["component"], p.get("error", ""))

    async def _call(self, name: str, *args: Any) -> None:
        callback = self.callbacks.get(name)
        if callback is None:
            return
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
