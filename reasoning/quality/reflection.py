"""The reflection agent: after a run, what worked, what did not, and what to do next time.

A run reflects only when there is something to learn: it escalated, something failed, the
answer it had to keep fell short of its threshold with parts missing, or (later, from the
host) the person gave feedback. An honest refusal teaches nothing: an answer that says
plainly the information is not available, which the evaluator agrees more work would not
change (its meaning of "a deeper strategy would not help"). The summary it
reflects on is built from what the run recorded, so lessons can only cite what happened.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from reasoning.agent import summarize
from reasoning.config import ReasoningConfig
from reasoning.events import Emitter, Sink
from reasoning.llm.base import LLMClient
from reasoning.quality.outputs import REFLECTION
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import EvaluationResult, ExecutionStrategy

if TYPE_CHECKING:
    from reasoning.context import RunContext

TRIGGERS = ("escalation", "failure", "low_quality", "feedback")
# An answer saying the information is not available ("I found nothing in the documents").
UNAVAILABLE = re.compile(
    r"\b(found nothing|nothing (was )?found|no (documents?|results?|matches|records?|data) (found|match\w*|"
    r"about|on|for)|not (available|found|documented|in (the|your|our) (documents?|docs))|"
    r"(can'?t|cannot|could ?n'?t|unable to|don'?t have|do not have|have no) (find|answer|access|know|"
    r"information|data|details|a record))",
    re.IGNORECASE,
)
RESULT_PREVIEW_CHARS = 200


def reflection_trigger(
    ctx: RunContext, evaluation: EvaluationResult | None, escalations: int, kind: str, answer: str = ""
) -> str | None:
    """Why this run is worth reflecting on, or None when it went as expected."""
    tracker = ctx.tracker
    if escalations:
        return "escalation"
    failed_steps = [s for s in tracker.plan.steps if s.status == "failed"] if tracker and tracker.plan else []
    failed_tools = [t for t in tracker.tool_executions if not t.success] if tracker else []
    if ctx.degraded or failed_steps or failed_tools:
        return "failure"
    if kind != "answer":
        return "low_quality"
    # An answer kept below its threshold with parts missing; an honest "this cannot be known"
    # (nothing missing that more work could add) teaches nothing.
    if evaluation is not None and not evaluation.is_complete and evaluation.missing_aspects:
        honest = not evaluation.deeper_would_help and UNAVAILABLE.search(answer)
        return None if honest else "low_quality"
    return None


def run_summary(
    tracker: ResearchProgressTracker,
    *,
    final_strategy: ExecutionStrategy | None,
    evaluation: EvaluationResult | None,
    escalations: int,
    degraded: list[str],
    answer: str = "",
) -> dict[str, Any]:
    """What the run did, from its own records: the input of a reflection."""
    attempts = [
        {
            "strategy": a.strategy.value,
            "status": a.status,
            "quality": a.quality_score,
            "missing": list(a.evaluation.missing_aspects) if a.evaluation else [],
        }
        for a in tracker.attempts
    ]
    if evaluation is None:
        last = next((a for a in reversed(tracker.attempts) if a.evaluation), None)
        evaluation = last.evaluation if last else None
    return {
        "strategies": " → ".join(a.strategy.value for a in tracker.attempts) or "none",
        "quality": "n/a" if evaluation is None else f"{evaluation.confidence:.2f}",
        "escalations": escalations,
        "attempts": attempts,
        "missing": list(evaluation.missing_aspects) if evaluation else [],
        "steps": [
            {"status": s.status, "description": s.description}
            for s in (tracker.plan.steps if tracker.plan else [])
        ],
        "tools": [
            {
                "tool": t.tool_name,
                "success": t.success,
                "error": t.error,
                "result": summarize(t.result or "", RESULT_PREVIEW_CHARS),
            }
            for t in tracker.tool_executions
        ],
        "tools_used": [t.tool_name for t in tracker.tool_executions if t.success],
        "degraded": ", ".join(degraded),
        "final_strategy": final_strategy.value if final_strategy else "",
        "answer": summarize(answer, 600),
    }


class ReflectionAgent:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("reflection")

    async def reflect(
        self, query: str, summary: dict[str, Any], *, trigger: str, feedback: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        steps = (
            "\n".join(f"- [{s['status']}] {s['description']}" for s in summary.get("steps", []))
            or "(no plan)"
        )
        tools = (
            "\n".join(
                f"- {t['tool']}: "
                + (
                    f"returned: {t['result'] or '(nothing)'}"
                    if t["success"]
                    else "failed: " + (t["error"] or "")
                )
                for t in summary.get("tools", [])
            )
            or "(no tool calls)"
        )
        attempts = (
            "\n".join(
                f"- {a['strategy']}: {a['status']}, quality "
                + ("n/a" if a["quality"] is None else f"{a['quality']:.2f}")
                + (f"; missing: {'; '.join(a['missing'])}" if a["missing"] else "")
                for a in summary.get("attempts", [])
            )
            or "(none)"
        )
        system, prompt = self.run.prompt(
            "reasoning/reflection.txt",
            query=query,
            trigger=trigger,
            strategies=summary["strategies"],
            attempts=attempts,
            quality=summary["quality"],
            escalations=summary["escalations"],
            steps=steps,
            tools=tools,
            degraded=summary["degraded"] or "none",
            feedback=_feedback_text(feedback),
        )
        return await self.llm.structured(
            REFLECTION,
            system=system,
            prompt=prompt,
            max_tokens=1200,
            hints={"query": query, **summary, "trigger": trigger, "feedback": feedback},
        )


def _feedback_text(feedback: dict[str, Any] | None) -> str:
    if not feedback:
        return "(none)"
    rating = {"up": "helpful (thumbs up)", "down": "not helpful (thumbs down)"}.get(
        str(feedback.get("rating")), str(feedback.get("rating") or "no rating")
    )
    comment = str(feedback.get("comment") or "").strip()
    return f"{rating}" + (f': "{comment[:2000]}"' if comment else "")


async def reflect_on_feedback(
    llm: LLMClient,
    config: ReasoningConfig,
    *,
    question: str,
    tracker_state: dict[str, Any],
    feedback: dict[str, Any],
    sink: Sink | None = None,
    start_sequence: int = 1,
) -> dict[str, Any]:
    """Reflect on a finished run because the person gave feedback on its answer.

    For the host to call when feedback arrives (`feedback` = {"rating": "up" | "down",
    "comment": "..."}); emits `reflection.completed` with trigger "feedback" and returns the
    reflection. Raises what the model call raises: the host decides how to report it."""
    from reasoning.context import ModelSet, RunContext

    tracker = ResearchProgressTracker.from_dict(tracker_state)
    ctx = RunContext(
        config=config, models=ModelSet(llm, config), emitter=Emitter(sink, start_sequence=start_sequence)
    )
    last = tracker.attempts[-1] if tracker.attempts else None
    summary = run_summary(
        tracker,
        final_strategy=last.strategy if last else None,
        evaluation=last.evaluation if last else None,
        escalations=sum(1 for a in tracker.attempts if a.status == "escalated"),
        degraded=[],
        answer=(last.response or "") if last else "",
    )
    reflection = await ReflectionAgent(ctx).reflect(question, summary, trigger="feedback", feedback=feedback)
    await ctx.emit(
        "reflection.completed", "Reflection", reflection=reflection, trigger="feedback", feedback=feedback
    )
    return reflection
