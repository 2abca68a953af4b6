"""Usage selectors: runs, tokens, cache hits, cost, latency percentiles, escalation rate
and quality distribution, per day, person, model or strategy.

They read the rollup tables (teamops.rollup), aggregated again by the database (GROUP BY):
a month of a busy team is a few thousand rows, never every run. Latency percentiles come
from the rollup's histogram, interpolated within a bucket (exact to the bucket's width)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import F, Q, QuerySet, Sum
from django.utils import timezone

from chat.converters import parse_id
from chat.models import Strategy
from teamops.models import LATENCY_BOUNDS_MS, LATENCY_FIELDS, CallDay, UsageDay

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
            user_id = parse_id(query.get("user"))
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


# Dates a report can ask about; beyond them a day's bounds overflow Python's datetime.
EARLIEST = date(1970, 1, 1)


def _date(value: str | None) -> date | None:
    try:
        day = date.fromisoformat(value) if value else None
    except ValueError:
        return None
    latest = timezone.localdate() + timedelta(days=366)
    return None if day is None else min(max(day, EARLIEST), latest)


def _window(rows: QuerySet[Any], filters: UsageFilters, *, runs: bool = True) -> QuerySet[Any]:
    rows = rows.filter(day__gte=filters.start, day__lte=filters.end)
    if filters.user_id:
        rows = rows.filter(user_id=filters.user_id)
    if filters.model:
        rows = rows.filter(model=filters.model)
    if filters.strategy and runs:
        rows = rows.filter(strategy=filters.strategy)
    return rows


def _sums(names: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {name: Sum(name, default=0) for name in names}


RUN_SUMS = (
    "runs",
    "failed",
    "escalated",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "quality_sum",
    "quality_n",
    *[key for key, _label, _condition in QUALITY_BUCKETS],
    *LATENCY_FIELDS,
)
CALL_SUMS = (
    "calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    *LATENCY_FIELDS,
)


def percentile(row: dict[str, Any], fraction: float) -> float | None:
    """The `fraction` percentile of a latency histogram, interpolated within its bucket."""
    counts = [row[name] for name in LATENCY_FIELDS]
    total = sum(counts)
    if not total:
        return None
    rank = fraction * total
    seen = 0
    lower = 0.0
    for count, upper in zip(counts, [*LATENCY_BOUNDS_MS, None], strict=True):
        top = float(upper) if upper is not None else lower * 1.5
        if count and seen + count >= rank:
            return lower + (top - lower) * (rank - seen) / count
        seen += count
        lower = top
    return lower


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    """Derived figures on an aggregated row (per group, not per run)."""
    row["tokens"] = (
        row["input_tokens"] + row["output_tokens"] + row["cache_read_tokens"] + row["cache_write_tokens"]
    )
    prompt = row["input_tokens"] + row["cache_read_tokens"] + row["cache_write_tokens"]
    row["cache_hit_rate"] = row["cache_read_tokens"] / prompt if prompt else 0.0
    row["cost"] = row["cost"] or 0
    row["latency_p50"] = percentile(row, 0.5)
    row["latency_p95"] = percentile(row, 0.95)
    if "runs" in row:
        row["escalation_rate"] = row["escalated"] / row["runs"] if row["runs"] else 0.0
        row["quality_avg"] = row["quality_sum"] / row["quality_n"] if row["quality_n"] else None
    return row


GROUPS = {"day": "day", "user": "user__username", "model": "model", "strategy": "strategy"}


def strategy_label(value: Any) -> str:
    """A strategy as the pages' filters name it ("light_planning" → "Light planning")."""
    return dict(Strategy.choices).get(value, value)


def breakdown(filters: UsageFilters, dimension: str) -> list[dict[str, Any]]:
    """One row per day, person, model or strategy, with every figure."""
    if dimension not in GROUPS:
        raise ValueError(f"unknown dimension {dimension!r}")
    rows = (
        _window(UsageDay.objects.all(), filters)
        .annotate(key=F(GROUPS[dimension]))
        .values("key")
        .annotate(cost=Sum("cost"), **_sums(RUN_SUMS))
        .order_by("key")
    )
    return [_finish(row) for row in rows]


def totals(filters: UsageFilters) -> dict[str, Any]:
    return _finish(_window(UsageDay.objects.all(), filters).aggregate(cost=Sum("cost"), **_sums(RUN_SUMS)))


def model_calls(filters: UsageFilters) -> list[dict[str, Any]]:
    """Per model actually called (analysis, evaluation and answering models differ)."""
    rows = (
        _window(CallDay.objects.all(), filters, runs=False)
        .values("model")
        .annotate(cost=Sum("cost"), **_sums(CALL_SUMS))
        .order_by("model")
    )
    return [_finish(row) for row in rows]


def choices(filters: UsageFilters) -> dict[str, list[Any]]:
    """What the filter menus offer: people and models that have runs in the window."""
    window = UsageDay.objects.filter(day__gte=filters.start, day__lte=filters.end)
    return {
        "users": list(window.values_list("user_id", "user__username").distinct().order_by("user__username")),
        "models": list(window.exclude(model="").values_list("model", flat=True).distinct().order_by("model")),
    }
