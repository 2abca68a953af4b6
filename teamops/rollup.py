"""Rolling finished runs up into UsageDay and CallDay, once each, in the database.

A batch first claims the runs it counts (INSERT … ON CONFLICT DO NOTHING into CountedRun, so
two workers recording the same run count it once), then adds the batch's figures to the
rollup rows with one INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE per table. The same
statements serve one run at its finish and a backfill of a hundred thousand.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.db import close_old_connections, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from chat.models import LLMCall, ReasoningRun
from nexus.errors import DATABASE_LOST
from teamops.models import LATENCY_BOUNDS_MS, LATENCY_FIELDS, CallDay, CountedRun, UsageDay
from teamops.usage import QUALITY_BUCKETS

logger = logging.getLogger(__name__)
# Every run that has ended: a stopped one made model calls before the stop, which the provider
# bills and the budgets count (the usage pages left them out).
FINISHED = (ReasoningRun.Status.SUCCEEDED, ReasoningRun.Status.FAILED, ReasoningRun.Status.CANCELLED)
QUALITY = {key: condition for key, _label, condition in QUALITY_BUCKETS}


def latency_buckets(field: str) -> dict[str, Count]:
    """One COUNT per histogram bucket of `field` (milliseconds)."""
    counts: dict[str, Count] = {}
    lower = None
    for name, upper in zip(LATENCY_FIELDS, [*LATENCY_BOUNDS_MS, None], strict=True):
        condition = Q(**{f"{field}__isnull": False})
        if lower is not None:
            condition &= Q(**{f"{field}__gte": lower})
        if upper is not None:
            condition &= Q(**{f"{field}__lt": upper})
        counts[name] = Count("pk", filter=condition)
        lower = upper
    return counts


def _upsert_statement(
    table: str, keys: list[str], columns: list[str], select: QuerySet[Any]
) -> tuple[str, list[Any]]:
    """INSERT INTO table (columns) <select> ON CONFLICT (keys) DO UPDATE adding the figures."""
    sql, params = select.query.sql_with_params()
    names = ", ".join(columns)
    figures = [column for column in columns if column not in keys]
    additions = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in figures)
    # "WHERE true": SQLite needs it to parse INSERT … SELECT … ON CONFLICT unambiguously.
    # Only our own table and column names are interpolated; values travel as parameters.
    statement = (
        f"INSERT INTO {table} ({names}) SELECT {names} FROM ({sql}) AS batch WHERE true "  # noqa: S608  # nosec B608
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {additions}"
    )
    return statement, list(params)


def _claim(runs: QuerySet[ReasoningRun]) -> str:
    batch = uuid.uuid4().hex
    pending = (
        runs.filter(status__in=FINISHED)
        .exclude(Exists(CountedRun.objects.filter(run_id=OuterRef("pk"))))
        .annotate(batch=Value(batch))
        .values("pk", "batch")
    )
    sql, params = pending.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {CountedRun._meta.db_table} (run_id, batch) "  # noqa: S608  # nosec B608
            f"SELECT * FROM ({sql}) AS pending WHERE true ON CONFLICT DO NOTHING",
            params,
        )
    return batch


def _claim_ids(run_ids: list[int]) -> str:
    """_claim for runs named by id (a run executor's batch): the run's primary key in
    CountedRun is what keeps a run from being counted twice."""
    batch = uuid.uuid4().hex
    marks = ", ".join(["%s"] * len(run_ids))
    ended = ", ".join(["%s"] * len(FINISHED))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {CountedRun._meta.db_table} (run_id, batch) "  # noqa: S608  # nosec B608
            f"SELECT id, %s FROM {ReasoningRun._meta.db_table} WHERE id IN ({marks}) "
            f"AND status IN ({ended}) ON CONFLICT DO NOTHING",
            [batch, *(int(run_id) for run_id in run_ids), *FINISHED],
        )
    return batch


# The two upserts, compiled once per database and time zone with a stand-in for the batch id:
# building them from the ORM took more CPU than the database took to run them, at every run's end.
BATCH_STAND_IN = "nexus-rollup-batch"
_compiled: dict[tuple[str, str, str], list[tuple[str, list[Any]]]] = {}


def _statements(batch: str) -> list[tuple[str, list[Any]]]:
    tz = timezone.get_current_timezone()
    key = (connection.alias, connection.vendor, str(tz))
    if key not in _compiled:
        _compiled[key] = _compile(tz)
    return [
        (statement, [batch if value == BATCH_STAND_IN else value for value in params])
        for statement, params in _compiled[key]
    ]


def _compile(tz: Any) -> list[tuple[str, list[Any]]]:
    claimed = CountedRun.objects.filter(batch=BATCH_STAND_IN)
    batch_runs = ReasoningRun.objects.filter(pk__in=claimed.values("run_id"))
    run_figures: dict[str, Any] = {
        "runs": Count("pk"),
        "failed": Count("pk", filter=Q(status=ReasoningRun.Status.FAILED)),
        "escalated": Count("pk", filter=Q(escalation_count__gt=0)),
        "input_tokens": Coalesce(Sum("input_tokens"), 0),
        "output_tokens": Coalesce(Sum("output_tokens"), 0),
        "cache_read_tokens": Coalesce(Sum("cache_read_tokens"), 0),
        "cache_write_tokens": Coalesce(Sum("cache_write_tokens"), 0),
        "cost": Coalesce(Sum("cost"), Value(0), output_field=UsageDay._meta.get_field("cost")),
        "quality_sum": Sum("final_quality", default=0.0),
        "quality_n": Count("final_quality"),
        **{name: Count("pk", filter=condition) for name, condition in QUALITY.items()},
        **latency_buckets("latency_ms"),
    }
    grouped = (
        batch_runs.annotate(
            day=TruncDate("created_at", tzinfo=tz),
            user_id=F("session__owner_id"),
            strategy=F("final_strategy"),
        )
        .values("day", "user_id", "model", "strategy")
        .annotate(**run_figures)
        .order_by()
    )
    call_figures: dict[str, Any] = {
        "calls": Count("pk"),
        "input_tokens": Coalesce(Sum("input_tokens"), 0),
        "output_tokens": Coalesce(Sum("output_tokens"), 0),
        "cache_read_tokens": Coalesce(Sum("cache_read_tokens"), 0),
        "cache_write_tokens": Coalesce(Sum("cache_write_tokens"), 0),
        "cost": Coalesce(Sum("cost"), Value(0), output_field=CallDay._meta.get_field("cost")),
        **latency_buckets("latency_ms"),
    }
    calls = (
        LLMCall.objects.filter(run__in=batch_runs)
        .annotate(day=TruncDate("created_at", tzinfo=tz), user_id=F("run__session__owner_id"))
        .values("day", "user_id", "model")
        .annotate(**call_figures)
        .order_by()
    )
    return [
        _upsert_statement(
            UsageDay._meta.db_table,
            ["day", "user_id", "model", "strategy"],
            ["day", "user_id", "model", "strategy", *run_figures],
            grouped,
        ),
        _upsert_statement(
            CallDay._meta.db_table,
            ["day", "user_id", "model"],
            ["day", "user_id", "model", *call_figures],
            calls,
        ),
    ]


def rollup(runs: QuerySet[ReasoningRun] | None = None, *, run_ids: list[int] | None = None) -> int:
    """Count the finished runs among `runs` (default: all), or those of `run_ids`, not counted
    yet; returns how many."""
    with transaction.atomic():
        if run_ids is not None:
            batch = _claim_ids(run_ids) if run_ids else ""
        else:
            batch = _claim(runs if runs is not None else ReasoningRun.objects.all())
        count = CountedRun.objects.filter(batch=batch).count() if batch else 0
        if not count:
            return 0
        with connection.cursor() as cursor:
            for statement, params in _statements(batch):
                cursor.execute(statement, params)
    return count


def rollup_run(run_id: int) -> int:
    """Count one run if it is finished (called when a run ends)."""
    return rollup(run_ids=[run_id])


def rollup_runs_safely(run_ids: list[int]) -> None:
    """Count runs that just ended, for the run executor: a failure to count is logged, never
    the runs' problem (the dashboard's rollup_recent picks them up later)."""
    for attempt in (1, 2):
        try:
            rollup(run_ids=run_ids)
            return
        except DATABASE_LOST as exc:
            # A dropped connection (a database restart, a terminated backend): once more on a
            # new one; the rollup is one transaction, so nothing was half counted.
            close_old_connections()
            if attempt == 2:
                logger.warning("could not roll up runs %s, the database is away: %s", run_ids, exc)
        except Exception:
            logger.exception("could not roll up runs %s", run_ids)
            return


def _add(model: type[Any], keys: list[str], rows: dict[tuple[Any, ...], dict[str, Any]]) -> None:
    """INSERT each row (its other figures 0), or add its figures to the row of its keys."""
    table = model._meta.db_table
    others = [f.column for f in model._meta.concrete_fields if not f.primary_key and f.column not in keys]
    with connection.cursor() as cursor:
        for key, figures in rows.items():
            names = [*keys, *others]
            values = [*key, *(figures.get(column, 0) for column in others)]
            additions = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in figures)
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))}) "  # noqa: S608  # nosec B608
                f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {additions}",
                values,
            )


def add_late_calls(call_ids: list[int]) -> None:
    """Model calls stored after their run was counted (its reflection, which runs once the
    answer is out, or a reflection on feedback days later) are added to the rollup as the
    run's own were: the dashboard that counted the run first never showed them."""
    calls = (
        LLMCall.objects.filter(pk__in=call_ids, run__in=CountedRun.objects.values("run_id"))
        .select_related("run__session")
        .only(
            "created_at", "model", "latency_ms", "cost", "input_tokens", "output_tokens",
            "cache_read_tokens", "cache_write_tokens", "run__created_at", "run__model",
            "run__final_strategy", "run__session__owner_id",
        )
    )  # fmt: skip
    tokens = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    usage: dict[tuple[Any, ...], dict[str, Any]] = {}
    by_call: dict[tuple[Any, ...], dict[str, Any]] = {}
    for call in calls:
        user = call.run.session.owner_id
        run_day = timezone.localdate(call.run.created_at)
        row = usage.setdefault(
            (run_day, user, call.run.model, call.run.final_strategy), dict.fromkeys([*tokens, "cost"], 0)
        )
        bucket = LATENCY_FIELDS[sum(1 for bound in LATENCY_BOUNDS_MS if call.latency_ms >= bound)]
        line = by_call.setdefault(
            (timezone.localdate(call.created_at), user, call.model),
            {"calls": 0, **dict.fromkeys([*tokens, "cost"], 0), **dict.fromkeys(LATENCY_FIELDS, 0)},
        )
        line["calls"] += 1
        line[bucket] += 1
        for figures in (row, line):
            for name in tokens:
                figures[name] += getattr(call, name)
            figures["cost"] += call.cost
    _add(UsageDay, ["day", "user_id", "model", "strategy"], usage)
    _add(CallDay, ["day", "user_id", "model"], by_call)


def rollup_recent(hours: int = 6) -> int:
    """Count finished runs of the last `hours` that slipped past rollup_run (a run failed by
    a sweeper, a crash between finishing and counting): the dashboard calls this first."""
    return rollup(ReasoningRun.objects.filter(created_at__gte=timezone.now() - timedelta(hours=hours)))
