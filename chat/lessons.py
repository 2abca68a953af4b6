"""Procedural memory: lessons from earlier runs' reflections, for the planner of a new run.

Lessons are ranked by how similar the run they came from (and the lesson itself) is to the
new question. A user's planner learns from that user's own runs, plus the lessons staff
reviewed and promoted to the team (TeamLesson, an admin action on reflections): with a real
model an unreviewed lesson may carry someone's data or injected instructions.
NEXUS_LESSONS_SCOPE=team shares every unreviewed lesson too (a team that trusts all its
sources).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django.conf import settings

from chat.models import ReasoningRun, Reflection, TeamLesson
from reasoning.text import keywords

CANDIDATES = 200


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


# Longer texts (a question can be 20,000 characters) are read each time, so the cache stays small.
CACHED_CHARS = 2000


@lru_cache(maxsize=4096)
def _cached_words(text: str) -> frozenset[str]:
    return frozenset(keywords(text))


def _words(text: str) -> frozenset[str]:
    """The keywords of a stored query or lesson, kept: every run weighs the same few hundred
    of them again, and finding their words anew was half or more of what choosing a run's
    lessons cost with 200 reflections."""
    return _cached_words(text) if len(text) <= CACHED_CHARS else frozenset(keywords(text))


def lessons_for(run: ReasoningRun) -> list[str]:
    limit = settings.NEXUS_REASONING.max_lessons
    if not limit or not settings.NEXUS_REASONING.enable_reflection:
        return []
    question = frozenset(keywords(run.query or run.user_message.content))
    # Only the two columns wanted: whole runs would bring each one's tracker state along.
    reflections = Reflection.objects.exclude(run=run).order_by("-created_at")
    if settings.NEXUS_LESSONS_SCOPE == "user":
        reflections = reflections.filter(run__session__owner_id=run.session.owner_id)
    sources = [
        (query, lessons or [])
        for query, lessons in reflections.values_list("run__query", "lessons")[:CANDIDATES]
    ]
    promoted = TeamLesson.objects.order_by("-promoted_at").values_list("source_run__query", "text")
    sources += [(query or "", [text]) for query, text in promoted[:CANDIDATES]]
    scored: dict[str, float] = {}
    for origin_query, lessons in sources:
        origin = _words(origin_query or "")
        if not isinstance(lessons, list):
            continue
        for lesson in lessons:
            if not isinstance(lesson, str):  # a reflection stored by hand or by an older Nexus
                continue
            score = _similarity(question, origin | _words(lesson))
            if score > 0 and score > scored.get(lesson, 0):
                scored[lesson] = score
    ranked = sorted(scored, key=lambda lesson: -scored[lesson])
    return ranked[:limit]


def lessons_promote(*, reflections: Iterable[Reflection], by: Any) -> int:
    """Make the reviewed reflections' lessons every user's (staff do this in the admin);
    returns how many lessons were new to the team."""
    added = 0
    for reflection in reflections:
        for text in reflection.lessons or []:
            if not TeamLesson.objects.filter(text=text).exists():
                TeamLesson.objects.create(text=text, source_run_id=reflection.run_id, promoted_by=by)
                added += 1
    return added
