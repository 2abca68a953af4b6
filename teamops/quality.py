"""Answer-quality stats: what people said (thumbs) against what Nexus thought of the same
answer (the evaluator's final score against its strategy's threshold, and the confidence
scorer's last decision), per strategy and model, aggregated by the database.

A disagreement is a thumbs down on an answer the evaluator passed, or a thumbs up on one it
did not: the runs where "checked before you see it" and the team's people part ways.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import (
    Avg,
    BooleanField,
    Case,
    CharField,
    Count,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from chat.models import AnswerFeedback, TraceEvent
from reasoning.types import ExecutionStrategy
from teamops.usage import UsageFilters

DISAGREEMENTS_SHOWN = 100


def _passed() -> Case:
    """Whether the evaluator passed the run's final answer (score ≥ its strategy's threshold)."""
    config = settings.NEXUS_REASONING
    return Case(
        *[
            When(
                run__final_strategy=strategy.value,
                then=Q(run__final_quality__gte=config.quality_threshold(strategy)),
            )
            for strategy in ExecutionStrategy
        ],
        default=Value(False),
        output_field=BooleanField(),
    )


def _decision() -> Coalesce:
    """The confidence scorer's last decision on the run (execute, caution, replan…), or "—"."""
    last = (
        TraceEvent.objects.filter(run_id=OuterRef("run_id"), kind="confidence.assessed")
        .order_by("-sequence")
        .annotate(action=KT("payload__action"))
        .values("action")[:1]
    )
    return Coalesce(Subquery(last, output_field=CharField()), Value("—"), output_field=CharField())


def feedback_in(filters: UsageFilters) -> QuerySet[AnswerFeedback]:
    rows = AnswerFeedback.objects.filter(
        run__created_at__gte=filters.since, run__created_at__lt=filters.until
    )
    if filters.user_id:
        rows = rows.filter(run__session__owner_id=filters.user_id)
    if filters.model:
        rows = rows.filter(run__model=filters.model)
    if filters.strategy:
        rows = rows.filter(run__final_strategy=filters.strategy)
    return rows.annotate(passed=_passed(), decision=_decision())


UP, DOWN = AnswerFeedback.Rating.UP, AnswerFeedback.Rating.DOWN
DISAGREE = Q(rating=DOWN, passed=True) | Q(rating=UP, passed=False)


def agreement(filters: UsageFilters, *, by: tuple[str, ...] = ("strategy", "model")) -> list[dict[str, Any]]:
    """One row per group: verdicts, evaluator scores beside them, and how often they disagree."""
    keys = {"strategy": F("run__final_strategy"), "model": F("run__model"), "decision": F("decision")}
    rows = (
        feedback_in(filters)
        .annotate(**{f"g_{name}": keys[name] for name in by})
        .values(*[f"g_{name}" for name in by])
        .annotate(
            verdicts=Count("pk"),
            up=Count("pk", filter=Q(rating=AnswerFeedback.Rating.UP)),
            down=Count("pk", filter=Q(rating=AnswerFeedback.Rating.DOWN)),
            evaluator_passed=Count("pk", filter=Q(passed=True)),
            score_when_up=Avg("run__final_quality", filter=Q(rating=AnswerFeedback.Rating.UP)),
            score_when_down=Avg("run__final_quality", filter=Q(rating=AnswerFeedback.Rating.DOWN)),
            disagreements=Count("pk", filter=DISAGREE),
        )
        .order_by(*[f"g_{name}" for name in by])
    )
    result = []
    for row in rows:
        row["group"] = {name: row.pop(f"g_{name}") for name in by}
        row["agreement_rate"] = 1 - row["disagreements"] / row["verdicts"] if row["verdicts"] else None
        result.append(row)
    return result


def disagreements(filters: UsageFilters) -> list[AnswerFeedback]:
    """The feedback rows that disagree with the evaluator, newest first."""
    return list(
        feedback_in(filters)
        .filter(DISAGREE)
        .select_related("run", "user", "run__session__owner")
        .order_by("-updated_at")[:DISAGREEMENTS_SHOWN]
    )
