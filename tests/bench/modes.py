"""The three agent modes on the same mixed questions: model calls, wall time against the
critical path (the time some model call is in flight), and the evaluator's quality.

The offline model plays every component deterministically (with a fixed latency per call),
including the evaluator, so the quality figures are the scripted evaluator's and comparable
between modes, not a judgement of real answers. The questions are the first four of each
level in the router's held-out split, so no mode was tuned on them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from reasoning import ListSink, ReasoningConfig, create_mode
from reasoning.llm.base import LLMRequest, LLMResponse
from reasoning.llm.offline import OfflineClient
from reasoning.memory import InMemoryStore
from reasoning.routing.dataset import load
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.bench.engine import union

LATENCY = 0.02
PER_LEVEL = 4
MODES = ("adaptive", "reasoning_driven", "cognitive")


class TimedOffline(OfflineClient):
    """The offline model, recording when each call was in flight (shared by its clones)."""

    def __init__(self, model: str = "nexus-offline", *, latency: float = LATENCY, intervals=None) -> None:
        super().__init__(model, latency=latency)
        self.intervals: list[tuple[float, float]] = intervals if intervals is not None else []

    def with_model(self, model: str) -> TimedOffline:
        return TimedOffline(model, latency=self.latency, intervals=self.intervals)

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        started = time.perf_counter()
        try:
            async for item in super().stream(request):
                yield item
        finally:
            self.intervals.append((started, time.perf_counter()))


@dataclass
class ModeStats:
    calls: int = 0
    wall: float = 0.0
    critical: float = 0.0
    qualities: list[float] = field(default_factory=list)
    answered: int = 0
    messages: int = 0
    degraded: int = 0
    escalations: int = 0


def mixed_questions() -> list[str]:
    rows = load("heldout")
    return [
        q
        for level in ("simple", "medium", "complex")
        for q in [r.question for r in rows if r.level == level][:PER_LEVEL]
    ]


async def run_mode(name: str, questions: list[str]) -> ModeStats:
    stats = ModeStats()
    for question in questions:
        llm = TimedOffline()
        mode = create_mode(name, llm, ReasoningConfig.from_env({}, provider="offline"))
        sink = ListSink()
        started = time.perf_counter()
        result = await mode.run(
            question, tools=ToolRegistry([builtin_provider()]), sink=sink, memory=InMemoryStore()
        )
        stats.wall += time.perf_counter() - started
        stats.critical += union(llm.intervals)
        stats.calls += result.llm_calls
        stats.answered += bool(result.answer.strip())
        stats.messages += len(sink.of("agent.message"))
        stats.degraded += len(result.degraded)
        stats.escalations += result.escalations
        if result.quality is not None:
            stats.qualities.append(result.quality)
    return stats


async def main() -> list[str]:
    questions = mixed_questions()
    lines = [
        f"modes: {len(questions)} held-out questions ({PER_LEVEL} per level), offline model at "
        f"{LATENCY * 1000:.0f} ms per call"
    ]
    results = {name: await run_mode(name, questions) for name in MODES}
    for name, s in results.items():
        quality = statistics.mean(s.qualities) if s.qualities else float("nan")
        lines.append(
            f"  {name:<17} {s.calls:3d} model calls ({s.calls / len(questions):.1f}/question)  "
            f"wall {s.wall * 1000:7.0f} ms  critical path {s.critical * 1000:7.0f} ms  "
            f"wall/critical {s.wall / s.critical:.3f}  quality {quality:.2f}  "
            f"answered {s.answered}/{len(questions)}"
            + f"  escalations {s.escalations}"
            + (f"  agent messages {s.messages}" if s.messages else "")
            + (f"  degraded {s.degraded}" if s.degraded else "")
        )
    base = results["adaptive"]
    for name in MODES[1:]:
        lines.append(
            f"  {name} vs adaptive: calls x{results[name].calls / base.calls:.2f}, "
            f"wall x{results[name].wall / base.wall:.2f}"
        )
    return lines


if __name__ == "__main__":
    import asyncio

    print("\n".join(asyncio.run(main())))
