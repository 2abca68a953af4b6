"""The parts a question spells out, and the light plan made of them (no planning call)."""

from __future__ import annotations

from typing import Any

from reasoning.foresight import earlier_results_in, expression_in
from reasoning.routing.features import split_asks
from reasoning.text import as_ask, distinct, under_heading
from reasoning.types import ResearchPlan, SubTask

MAX_LIGHT_PARTS = 3


def combine(results: list[dict[str, Any]]) -> str:
    """Findings under their steps as headings (Markdown-safe: a step may contain `2**16`)."""
    return "\n\n".join(under_heading(r["query"], r["result"]) for r in results)


def question_parts(question: str) -> list[str]:
    """The separate asks a question spells out, when there are two or three of them. A one-word
    piece is no ask, unless it is a calculation ("2+2 and 3+3": "3+3" was left out of the plan)."""
    parts = distinct([part for part in split_asks(question) if len(part.split()) >= 2 or expression_in(part)])
    # "…and what is 2,340 minus that?": the step computes with the result of the one before.
    parts = earlier_results_in(parts)
    return parts if 2 <= len(parts) <= MAX_LIGHT_PARTS else []


def parts_plan(question: str, parts: list[str], lessons: list[str]) -> ResearchPlan:
    """A light plan of one step per part (each step also sees the whole question)."""
    return ResearchPlan(
        original_query=question,
        subtasks=[
            SubTask(id=f"step_{index}", query=as_ask(part), priority=1) for index, part in enumerate(parts, 1)
        ],
        estimated_complexity="medium",
        strategy_summary="One step per part of the question: its parts are clear, so no planning call.",
        lessons_used=list(lessons),
        confidence=0.8,
    )
