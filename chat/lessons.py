"""Procedural memory: lessons from earlier runs' reflections, for the planner of a new run.

Lessons are ranked by how similar the run they came from (and the lesson itself) is to the
new question. The scope is the team (every user's runs) by default, as the reflection agent
is told to write general lessons without anyone's data; NEXUS_LESSONS_SCOPE=user keeps each
user's lessons to themselves.
"""

from __future__ import annotations

from django.conf import settings

from chat.models import ReasoningRun, Reflection
from reasoning.text import keywords

CANDIDATES = 200


def _similarity(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def lessons_for(run: ReasoningRun) -> list[str]:
    limit = settings.NEXUS_REASONING.max_lessons
    if not limit or not settings.NEXUS_REASONING.enable_reflection:
        return []
    question = set(keywords(run.query or run.user_message.content))
    reflections = Reflection.objects.exclude(run=run).select_related("run").order_by("-created_at")
    if settings.NEXUS_LESSONS_SCOPE == "user":
        reflections = reflections.filter(run__session__owner_id=run.session.owner_id)
    scored: dict[str, float] = {}
    for reflection in reflections[:CANDIDATES]:
        origin = set(keywords(reflection.run.query))
        for lesson in reflection.lessons or []:
            score = _similarity(question, origin | set(keywords(lesson)))
            if score > 0 and score > scored.get(lesson, 0):
                scored[lesson] = score
    ranked = sorted(scored, key=lambda lesson: -scored[lesson])
    return ranked[:limit]
