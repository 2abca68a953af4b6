"""Procedural memory: lessons from earlier runs' reflections, for the planner of a new run."""

from __future__ import annotations

from chat.models import ReasoningRun


def lessons_for(run: ReasoningRun) -> list[str]:
    """The few most relevant lessons for `run` (filled in by the reflection layer)."""
    return []
