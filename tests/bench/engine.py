"""Engine benchmarks: how close each strategy gets to the time its model calls must take.

A fake model answers every call after a fixed latency. The critical path is the time during
which at least one model call is in flight (the union of call intervals); wall time above it
is the engine's own overhead. DEEP with four independent steps is run with the steps in
parallel and one by one, measured side by side.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from reasoning import AdaptiveReasoningLoop, ExecutionStrategy, ListSink, ReasoningConfig
from reasoning.llm.base import LLMRequest, LLMResponse
from reasoning.llm.scripted import ScriptedClient
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.reasoning.helpers import analysis, complete, critique, meta, plan, quality, tool

LIVE_OK = {"should_continue": True, "should_deepen": False, "confidence_adjustment": 0.1, "feedback": "fine"}
REFLECTION = {"insights": [], "lessons": ["Keep steps independent."], "improvements": [], "confidence": 0.7}

LATENCY = 0.05


class TimedClient(ScriptedClient):
    """A scripted model that takes LATENCY per call and records when each call ran."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(latency=LATENCY, **kwargs)
        self._state.intervals = []  # type: ignore[attr-defined]

    async def stream(self, request: LLMRequest):
        started = time.perf_counter()
        try:
            async for item in super().stream(request):
                yield item
        finally:
            self._state.intervals.append((started, time.perf_counter()))  # type: ignore[attr-defined]

    @property
    def intervals(self) -> list[tuple[float, float]]:
        return self._state.intervals  # type: ignore[attr-defined]


def union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def scripts(strategy: str, steps: int = 4) -> dict[str, list[Any]]:
    """Replies for every model call of a run, quality layers included."""
    layers = {"critic": [critique(0.9)], "meta": [meta(0.9)] + [LIVE_OK] * steps, "reflection": [REFLECTION]}
    if strategy == "direct":
        return {
            "analysis": [analysis("simple")],
            "agent": [tool("calculator", expression="2+2"), "4"],
            "evaluation": [quality(True, 0.95)],
            "reflection": [REFLECTION],
        }
    if strategy == "light":
        return {
            "analysis": [analysis("medium")],
            "planning": [plan("Part one", "Part two")],
            "agent": ["one", "two"],
            "synthesis": ["one and two"],
            "evaluation": [quality(True, 0.9)],
            **layers,
        }
    parts = [f"Independent part {n}" for n in range(1, steps + 1)]
    return {
        "analysis": [analysis("complex")],
        "planning": [plan(*parts)],
        "evaluation": [complete(True), quality(True, 0.9)],
        "filter": [{"kept": [{"id": n, "relevance": 9} for n in range(1, steps + 1)]}],
        "synthesis": ["all parts"],
        **layers,
    }


class ByStep(TimedClient):
    """Agent replies keyed by the step's question, so concurrent steps get their own script."""

    def __init__(self, steps: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rounds: dict[str, int] = {}

    async def stream(self, request: LLMRequest):
        if request.component != "agent":
            async for item in super().stream(request):
                yield item
            return
        started = time.perf_counter()
        self.history.append(request)
        await asyncio.sleep(LATENCY)
        step = request.hints.get("step", "")
        number = step.split("_")[-1]
        turn = self.rounds.get(step, 0)
        self.rounds[step] = turn + 1
        if turn == 0:
            response = self._to_response(tool("calculator", expression=f"{number}*{number}"), request)
        else:
            response = LLMResponse(text=f"part {number} done")
        self.intervals.append((started, time.perf_counter()))
        yield response


async def run_once(strategy: str, *, parallel: bool = True) -> tuple[float, float, ListSink]:
    replies = scripts(strategy)
    llm: TimedClient = (
        ByStep(4, by_component={k: v for k, v in replies.items() if k != "agent"})
        if strategy == "deep"
        else TimedClient(by_component=replies)
    )
    config = ReasoningConfig(max_parallel_steps=4 if parallel else 1)
    engine = AdaptiveReasoningLoop(llm, ToolRegistry([builtin_provider()]), config)
    sink = ListSink()
    force = ExecutionStrategy.parse(strategy)
    started = time.perf_counter()
    result = await engine.run(f"benchmark {strategy}", sink=sink, force_strategy=force)
    wall = time.perf_counter() - started
    assert result.answer, "the run produced an answer"
    assert not sink.of("component.degraded"), [e.payload for e in sink.of("component.degraded")]
    return wall, union(llm.intervals), sink


def step_phase(sink: ListSink) -> float:
    started = [e.time for e in sink.of("step.started")]
    finished = [e.time for e in sink.of("step.completed")]
    return max(finished) - min(started)


async def main(repeats: int = 5) -> list[str]:
    lines = [f"engine: fake model latency {LATENCY * 1000:.0f} ms per call, median of {repeats} runs"]
    results: list[str] = []
    for strategy in ("direct", "light", "deep"):
        runs = sorted([await run_once(strategy) for _ in range(repeats)], key=lambda r: r[0] / r[1])
        wall, critical, _ = runs[len(runs) // 2]
        ratio = wall / critical
        verdict = "ok" if ratio <= 1.05 else "OVER 1.05"
        lines.append(
            f"  {strategy:<7} wall {wall * 1000:7.1f} ms  critical path {critical * 1000:7.1f} ms  "
            f"wall/critical = {ratio:.3f}  [{verdict}]"
        )
        results.append(verdict)
    parallel = [await run_once("deep", parallel=True) for _ in range(repeats)]
    sequential = [await run_once("deep", parallel=False) for _ in range(repeats)]
    p_wall = statistics.median(r[0] for r in parallel)
    s_wall = statistics.median(r[0] for r in sequential)
    p_steps = statistics.median(step_phase(r[2]) for r in parallel)
    s_steps = statistics.median(step_phase(r[2]) for r in sequential)
    verdict = "ok" if p_steps / s_steps <= 0.5 else "OVER 0.5"
    lines.append(
        f"  deep, 4 independent steps: plan execution parallel {p_steps * 1000:.1f} ms vs one by one "
        f"{s_steps * 1000:.1f} ms  parallel/sequential = {p_steps / s_steps:.3f}  [{verdict}]"
    )
    lines.append(
        f"  deep, 4 independent steps: whole run parallel {p_wall * 1000:.1f} ms vs one by one "
        f"{s_wall * 1000:.1f} ms  parallel/sequential = {p_wall / s_wall:.3f}  (analysis, plan, "
        "evaluation, filter, synthesis and quality check stay sequential)"
    )
    results.append(verdict)
    return lines + ([] if all(r == "ok" for r in results) else ["  SOME ENGINE TARGETS MISSED"])


if __name__ == "__main__":
    print("\n".join(asyncio.run(main())))
