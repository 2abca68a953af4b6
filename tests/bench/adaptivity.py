"""Adaptivity, measured on the router's held-out split and on the unseen set (never trained on).

- Routing: the local router's decision per class with a confusion matrix, and the engine's
  first strategy with the offline model answering for the questions the router is unsure of.
  The unseen set also per round of writing (A: blind; B, C, D: each sealed before a round of
  router changes; E, F, G: written after the last change; see reasoning/routing/dataset.py).
- Model calls per class, routed vs forced DEEP, with the offline model and the same tools the
  web app offers (calculator, clock, team document search), counting every call a run makes
  (reflection and cancelled speculative calls included).
- Escalations, and why.
- Time to the first answer token vs one plain model call at the same fake latency, measured
  side by side.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from reasoning import AdaptiveReasoningLoop, ExecutionStrategy, ListSink, ReasoningConfig
from reasoning.llm.base import LLMRequest
from reasoning.llm.offline import OfflineClient
from reasoning.llm.scripted import ScriptedClient
from reasoning.routing import Router
from reasoning.routing.dataset import UNSEEN_SETS, Labelled, load, load_unseen, score
from reasoning.routing.model import LEVELS
from reasoning.text import keywords
from reasoning.tools.local import LocalToolProvider, builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.reasoning.helpers import analysis, quality

LEVEL_OF = {
    ExecutionStrategy.DIRECT: "simple",
    ExecutionStrategy.LIGHT_PLANNING: "medium",
    ExecutionStrategy.DEEP_REASONING: "complex",
}
TEAM_DOCUMENTS = {
    "Release process": "We release on Tuesdays. Rollback: redeploy the previous tag and tell #ops.",
    "Handbook": "New employees get 25 vacation days. Expense reports are due by the 5th of each month.",
    "On-call": "The on-call engineer rotates weekly; the backup is the previous week's engineer.",
}


def team_documents() -> LocalToolProvider:
    """The web app's document search, over three small documents."""

    def search_documents(query: str, limit: int = 5) -> str:
        wanted = set(keywords(query))
        hits = [f"{title}: {text}" for title, text in TEAM_DOCUMENTS.items() if wanted & set(keywords(text))]
        return "\n\n".join(hits[:limit]) or f"No document matches {query!r}."

    provider = LocalToolProvider("nexus")
    provider.add(
        "search_documents",
        search_documents,
        description="Search the team's documents.",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    return provider


@dataclass
class RunStats:
    level: str
    first: str
    routed_by: str
    calls: int
    tool_rounds: int
    escalations: list[tuple[str, str, str]] = field(default_factory=list)
    honest_stops: int = 0
    checked_locally: bool = False
    components: Counter = field(default_factory=Counter)
    reflects: str | None = None

    @property
    def answer_and_check(self) -> int:
        """The calls that answered and checked the answer: all but the analysis (asked when
        the router was unsure) and a reflection (made when the run had something to learn)."""
        return self.calls - self.components["analysis"] - self.components["reflection"]


async def offline_run(question: str, force: ExecutionStrategy | None = None) -> RunStats:
    config = ReasoningConfig.from_env({}, provider="offline")
    engine = AdaptiveReasoningLoop(
        OfflineClient(), ToolRegistry([builtin_provider(), team_documents()]), config
    )
    sink = ListSink()
    result = await engine.run(question, sink=sink, force_strategy=force)
    escalations = [
        (e.payload["from_strategy"], e.payload["to_strategy"], _why(e.payload)) for e in sink.of("escalation")
    ]
    honest = [
        q
        for q in sink.of("quality.completed")
        if not q.payload["approved"] and not q.payload["deeper_would_help"]
    ]
    return RunStats(
        level=result.analysis.complexity_level.value,
        first=LEVEL_OF[result.initial_strategy],
        routed_by=result.routed_by,
        calls=len(sink.of("llm.call")) + result.cancelled_calls,
        tool_rounds=len(sink.of("tool.called")),
        escalations=escalations,
        honest_stops=len(honest),
        checked_locally=any(q.payload.get("checked_by") == "local" for q in sink.of("quality.completed")),
        components=Counter(e.payload["component"] for e in sink.of("llm.call")),
        reflects=result.reflection_trigger,
    )


def _why(payload: dict) -> str:
    missing = payload.get("missing_aspects") or []
    detail = f"missing {len(missing)} part(s)" if missing else (payload.get("reason") or "")[:60]
    return f"quality {payload['quality']:.2f} < {payload['threshold']:.2f}, {detail}"


ROUTER_SURE = ReasoningConfig().router_min_confidence
# The everyday mix of the issue's first measurement: 13 simple, 10 medium, 8 complex questions.
ISSUE_MIX = {"simple": 13, "medium": 10, "complex": 8}


def routing_lines(rows: list[Labelled]) -> list[str]:
    """The local router alone on `rows`: confusion matrix, accuracy, and how often it is sure."""
    router = Router()
    decisions = {row.question: router.route(row.question) for row in rows}
    local = score(rows, lambda q: decisions[q].level.value)
    sure = [row for row in rows if decisions[row.question].confidence >= ROUTER_SURE]
    right = sum(1 for row in sure if decisions[row.question].level.value == row.level)
    lines = [
        f"  routing by the local router alone ({len(sure)} of {len(rows)} decided without any model call, "
        f"{right / max(1, len(sure)):.1%} of those right):"
    ]
    return lines + ["    " + line for line in local.lines()]


async def calls_lines(rows: list[Labelled], label: str) -> tuple[list[str], dict[str, RunStats]]:
    """The engine on `rows` with the offline model: its first strategy, and its model calls
    routed vs forced DEEP per class."""
    routed = {row.question: await offline_run(row.question) for row in rows}
    engine_scores = score(rows, lambda q: routed[q].first)
    by = Counter(stats.routed_by for stats in routed.values())
    lines = [
        "  first strategy chosen by the engine (offline model for unsure questions; "
        + ", ".join(f"{k}: {v}" for k, v in sorted(by.items()))
        + "):"
    ]
    lines += ["    " + line for line in engine_scores.lines()]
    deep = {row.question: await offline_run(row.question, ExecutionStrategy.DEEP_REASONING) for row in rows}
    lines.append("  model calls per question, routed vs forced DEEP (offline model; reflection included):")
    totals = [0, 0]
    for level in LEVELS:
        questions = [row.question for row in rows if row.level == level]
        mine = [routed[q].calls for q in questions]
        forced = [deep[q].calls for q in questions]
        totals[0] += sum(mine)
        totals[1] += sum(forced)
        lines.append(
            f"    {level:<8} routed {statistics.mean(mine):5.2f} (max {max(mine)})  forced DEEP "
            f"{statistics.mean(forced):5.2f}  routed/forced = {sum(mine) / sum(forced):.2f}"
        )
    ratio = totals[0] / totals[1]
    verdict = "ok" if ratio <= 0.5 else "OVER 0.5"
    mix = Counter(row.level for row in rows)
    lines.append(
        f"    all      routed {totals[0]} calls vs forced DEEP {totals[1]}: routed/forced = {ratio:.2f}, "
        f"{1 - ratio:.0%} fewer  [{verdict}] ({label}: {mix['simple']} simple, {mix['medium']} medium, "
        f"{mix['complex']} complex)"
    )
    means = {
        level: [
            statistics.mean(runs[row.question].calls for row in rows if row.level == level)
            for runs in (routed, deep)
        ]
        for level in LEVELS
    }
    weighted = [sum(ISSUE_MIX[level] * means[level][i] for level in LEVELS) for i in (0, 1)]
    lines.append(
        f"    weighted to the issue's everyday mix (13 simple, 10 medium, 8 complex): routed/forced = "
        f"{weighted[0] / weighted[1]:.2f} (complex questions cost about the same either way, so the "
        "ratio follows the share of complex work)"
    )
    lines += simple_lines([routed[row.question] for row in rows if row.level == "simple"])
    return lines, routed


def simple_lines(runs: list[RunStats]) -> list[str]:
    """What every simple question cost: answer and evaluation (the goal: at most 2), and what
    came on top (the analysis when the router was unsure, a reflection when there was
    something to learn)."""
    spread = Counter(min(run.answer_and_check, 3) for run in runs)
    over = sum(1 for run in runs if run.answer_and_check > 2)
    unsure = sum(1 for run in runs if run.components["analysis"])
    reflected = Counter(run.reflects for run in runs if run.components["reflection"])
    tools = [run for run in runs if run.tool_rounds]
    checked = sum(1 for run in tools if run.checked_locally)
    why = ", ".join(f"{k}: {v}" for k, v in sorted(reflected.items())) or "none"
    costs = ", ".join(
        f"{count} cost {'3+' if calls == 3 else calls}" for calls, count in sorted(spread.items())
    )
    return [
        f"    every simple question ({len(runs)}), answer + evaluation: {costs} call(s)  "
        f"[{'ok' if not over else f'{over} OVER 2'}]; {sum(1 for run in runs if run.escalations)} escalated",
        f"      on top: an analysis call for {unsure} (router unsure), a reflection for "
        f"{sum(reflected.values())} ({why}); "
        f"{len(tools)} used a tool, {checked} of those approved by the local check without a model call",
    ]


async def routing_and_calls() -> list[str]:
    rows = load("heldout")
    lines = [f"adaptivity on the held-out split: {len(rows)} questions the router was never trained on"]
    lines += routing_lines(rows)
    calls, routed = await calls_lines(rows, "held-out split")
    lines += calls + escalation_lines(routed)
    unseen = load_unseen()
    lines.append(
        f"adaptivity on the unseen set: {len(unseen)} questions written apart from the training data "
        "(reasoning/routing/unseen_*.jsonl; training never reads them)"
    )
    router = Router()
    for name in UNSEEN_SETS:
        part = score(load_unseen((name,)), lambda q: router.route(q).level.value)
        lines.append(
            f"  set {name.upper()}: {part.accuracy:.1%} of {part.total}, "
            f"complex routed DIRECT: {part.complex_as_simple}"
        )
    lines += routing_lines(unseen)
    calls, routed = await calls_lines(unseen, "unseen set")
    lines += calls + escalation_lines(routed)
    return lines


def escalation_lines(routed: dict[str, RunStats]) -> list[str]:
    escalated = [(q, e) for q, stats in routed.items() for e in stats.escalations]
    honest = sum(stats.honest_stops for stats in routed.values())
    lines = [
        f"  escalations when routed: {len(escalated)} in {len(routed)} runs; {honest} answer(s) below "
        "threshold kept because the evaluator said a deeper strategy would not help (honest refusals)"
    ]
    reasons: dict[str, list[str]] = defaultdict(list)
    for question, (source, target, why) in escalated:
        reasons[f"{source} → {target}"].append(f"{why}: {question[:70]}")
    for step, items in sorted(reasons.items()):
        lines.append(f"    {step}: {len(items)}")
        lines += [f"      {item}" for item in items[:5]]
    return lines


# --- time to first token ---------------------------------------------------------------------

LATENCY = 0.1
ANSWER = "Paris is the capital of France, and has been for most of its history. " * 3


def streaming_client() -> ScriptedClient:
    return ScriptedClient(
        by_component={
            "analysis": [analysis("simple")] * 50,
            "agent": [ANSWER] * 50,
            "evaluation": [quality(True, 0.9)] * 50,
        },
        latency=LATENCY,
        chunk=16,
        chunk_delay=0.005,
    )


class FirstToken:
    def __init__(self, started: float) -> None:
        self.started = started
        self.first: float | None = None

    async def delta(self, text: str) -> None:
        if self.first is None:
            self.first = time.perf_counter() - self.started

    async def reset(self) -> None:
        pass

    async def __call__(self, event) -> None:
        if event.kind == "answer.delta" and self.first is None:
            self.first = time.perf_counter() - self.started


async def plain_call() -> float:
    watch = FirstToken(time.perf_counter())
    await streaming_client().complete(
        LLMRequest(messages=[{"role": "user", "content": "What is the capital of France?"}]), on_text=watch
    )
    return watch.first or float("inf")


async def engine_first_token(**config: object) -> float:
    engine = AdaptiveReasoningLoop(
        streaming_client(), ToolRegistry(), ReasoningConfig(enable_reflection=False, **config)
    )
    watch = FirstToken(time.perf_counter())
    await engine.run("What is the capital of France?", sink=watch)
    return watch.first or float("inf")


async def first_token(repeats: int = 5) -> list[str]:
    cases = {
        "router sure (no analysis call)": {},
        "router unsure, speculative DIRECT start": {"router_min_confidence": 1.0},
        "router unsure, no speculation (for contrast)": {
            "router_min_confidence": 1.0,
            "speculative_direct": False,
        },
    }
    ratios: dict[str, list[float]] = {name: [] for name in cases}
    plain_times = []
    for _ in range(repeats):
        for name, config in cases.items():
            plain = await plain_call()
            plain_times.append(plain)
            ratios[name].append(await engine_first_token(**config) / plain)
    lines = [
        f"  time to first answer token vs one plain call, fake model {LATENCY * 1000:.0f} ms to first token, "
        f"{repeats} runs side by side (plain call median {statistics.median(plain_times) * 1000:.0f} ms):"
    ]
    for index, (name, values) in enumerate(ratios.items()):
        median = statistics.median(values)
        target = "" if index == 2 else ("  [ok]" if median <= 1.3 else "  [OVER 1.3]")
        lines.append(
            f"    {name:<46} ratio median {median:.2f} (range {min(values):.2f}–{max(values):.2f}){target}"
        )
    return lines


async def main() -> list[str]:
    lines = await routing_and_calls()
    lines += await first_token()
    return lines


def misses() -> list[str]:
    """The held-out questions the router gets wrong (for reading, not for tuning)."""
    router = Router()
    scores = score(load("heldout"), lambda q: router.route(q).level.value)
    return [f"{row.level} → {predicted}: {row.question}" for row, predicted in scores.misses]


if __name__ == "__main__":
    print("\n".join(asyncio.run(main())))
    print(re.sub(r"^", "  ", "\n".join(misses()), flags=re.MULTILINE))
