"""Usage selectors: runs, tokens, cache hits, cost, latency percentiles, escalation rate
and quality distribution, per day, person, model or strategy. Every figure is aggregated by
the database (GROUP BY); nothing here iterates over runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Avg, Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from chat.models import LLMCall, ReasoningRun, Strategy
from teamops.aggregates import Percentile

DIMENSIONS = {
    "day": "Day",
    "user": "Person",
    "model": "Model",
    "strategy": "Strategy",
}
# Quality buckets of the final evaluator score, lowest first.
QUALITY_BUCKETS = (
    ("q_low", "below 0.5", Q(final_quality__lt=0.5)),
    ("q_fair", "0.5–0.7", Q(final_quality__gte=0.5, final_quality__lt=0.7)),
    ("q_good", "0.7–0.85", Q(final_quality__gte=0.7, final_quality__lt=0.85)),
    ("q_high", "0.85 and up", Q(final_quality__gte=0.85)),
    ("q_none", "not scored", Q(final_quality__isnull=True)),
)
FINISHED = (ReasoningRun.Status.SUCCEEDED, ReasoningRun.Status.FAILED)
DEFAULT_DAYS = 30


@dataclass(frozen=True)
class UsageFilters:
    start: date
    end: date
    user_id: int | None = None
    model: str = ""
    strategy: str = ""

    @classmethod
    def from_query(cls, query: Any, *, user_id: int | None = None) -> UsageFilters:
        """Filters from a GET query (bad values fall back to the defaults: last 30 days)."""
        today = timezone.localdate()
        end = _date(query.get("end")) or today
        start = _date(query.get("start")) or end - timedelta(days=DEFAULT_DAYS - 1)
        if start > end:
            start, end = end, start
        if user_id is None:
            raw = query.get("user") or ""
            user_id = int(raw) if raw.isdigit() else None
        strategy = query.get("strategy") or ""
        return cls(
            start=start,
            end=end,
            user_id=user_id,
            model=(query.get("model") or "")[:120],
            strategy=strategy if strategy in Strategy.values else "",
        )

    @property
    def since(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.start, time.min))

    @property
    def until(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.end + timedelta(days=1), time.min))

    def as_query(self) -> dict[str, str]:
        query = {"start": self.start.isoformat(), "end": self.end.isoformat()}
        for key, value in (("user", self.user_id), ("model", self.model), ("strategy", self.strategy)):
            if value:
                query[key] = str(value)
        return query


def _date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def runs_in(filters: UsageFilters) -> QuerySet[ReasoningRun]:
    runs = ReasoningRun.objects.filter(
        created_at__gte=filters.since, created_at__lt=filters.until, status__in=FINISHED
    )
    if filters.user_id:
        runs = runs.filter(session__owner_id=filters.user_id)
    if filters.model:
        runs = runs.filter(model=filters.model)
    if filters.strategy:
        runs = runs.filter(final_strategy=filters.strategy)
    return runs


def _run_figures() -> dict[str, Any]:
    figures: dict[str, Any] = {
        "runs": Count("id"),
        "input_tokens": Coalesce(Sum("input_tokens"), 0),
        "output_tokens": Coalesce(Sum("output_tokens"), 0),
        "cache_read_tokens": Coalesce(Sum("cache_read_tokens"), 0),
        "cache_write_tokens": Coalesce(Sum("cache_write_tokens"), 0),
        "cost": Sum("cost"),
        "latency_p50": Percentile("latency_ms", 0.5),
        "latency_p95": Percentile("latency_ms", 0.95),
        "escalated": Count("id", filter=Q(escalation_count__gt=0)),
        "failed": Count("id", filter=Q(status=ReasoningRun.Status.FAILED)),
        "quality_avg": Avg("final_quality"),
    }
    for key, _label, condition in QUALITY_BUCKETS:
        figures[key] = Count("id", filter=condition)
    return figures


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    """Derived figures on an aggregated row (per group, not per run)."""
    row["tokens"] = (
        row["input_tokens"] + row["output_tokens"] + row["cache_read_tokens"] + row["cache_write_tokens"]
    )
    prompt = row["input_tokens"] + row["cache_read_tokens"] + row["cache_write_tokens"]
    row["cache_hit_rate"] = row["cache_read_tokens"] / prompt if prompt else 0.0
    row["escalation_rate"] = row["escalated"] / row["runs"] if row["runs"] else 0.0
    row["cost"] = row["cost"] or 0
    return row


def breakdown(filters: UsageFilters, dimension: str) -> list[dict[str, Any]]:
    """One row per day, person, model or strategy, with every figure."""
    runs = runs_in(filters)
    if dimension == "day":
        grouped = runs.annotate(key=TruncDate("created_at", tzinfo=timezone.get_current_timezone()))
    elif dimension == "user":
        grouped = runs.annotate(key=F("session__owner__username"))
    elif dimension == "model":
        grouped = runs.annotate(key=F("model"))
    elif dimension == "strategy":
        grouped = runs.annotate(key=F("final_strategy"))
    else:
        raise ValueError(f"unknown dimension {dimension!r}")
    rows = grouped.values("key").annotate(**_run_figures()).order_by("key")
    return [_finish(row) for row in rows]


def totals(filters: UsageFilters) -> dict[str, Any]:
    return _finish(runs_in(filters).aggregate(**_run_figures()))


def model_calls(filters: UsageFilters) -> list[dict[str, Any]]:
    """Per model actually called (analysis, evaluation and answering models differ)."""
    calls = LLMCall.objects.filter(run__in=runs_in(filters))
    rows = (
        calls.values("model")
        .annotate(
            calls=Count("id"),
            input_tokens=Coalesce(Sum("input_tokens"), 0),
            output_tokens=Coalesce(Sum("output_tokens"), 0),
            cache_read_tokens=Coalesce(Sum("cache_read_tokens"), 0),
            cache_write_tokens=Coalesce(Sum("cache_write_tokens"), 0),
            cost=Sum("cost"),
            latency_p50=Percentile("latency_ms", 0.5),
            latency_p95=Percentile("latency_ms", 0.95),
        )
        .order_by("model")
    )
    result = []
    for row in rows:
        row["tokens"] = (
            row["input_tokens"] + row["output_tokens"] + row["cache_read_tokens"] + row["cache_write_tokens"]
        )
        prompt = row["input_tokens"] + row["cache_read_tokens"] + row["cache_write_tokens"]
        row["cache_hit_rate"] = row["cache_read_tokens"] / prompt if prompt else 0.0
        row["cost"] = row["cost"] or 0
        result.append(row)
    return result


def choices(filters: UsageFilters) -> dict[str, list[Any]]:
    """What the filter menus offer: people and models that have runs in the window."""
    window = ReasoningRun.objects.filter(created_at__gte=filters.since, created_at__lt=filters.until)
    return {
        "users": list(
            window.values_list("session__owner_id", "session__owner__username")
            .distinct()
            .order_by("session__owner__username")
        ),
        "models": list(window.exclude(model="").values_list("model", flat=True).distinct().order_by("model")),
    }
