"""Usage pages: the team dashboard (staff) and each person's own usage."""

from __future__ import annotations

import csv
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from chat import staff_audit
from chat.audit import spreadsheet_cell
from chat.models import StaffAuditEntry
from teamops import budgets, quality, usage
from teamops.rollup import rollup_recent

CSV_COLUMNS = [
    ("key", "group"),
    ("runs", "runs"),
    ("tokens", "tokens"),
    ("input_tokens", "input tokens"),
    ("output_tokens", "output tokens"),
    ("cache_read_tokens", "cache read tokens"),
    ("cache_write_tokens", "cache write tokens"),
    ("cache_hit_rate", "cache hit rate"),
    ("cost", "cost usd"),
    ("latency_p50", "latency p50 ms"),
    ("latency_p95", "latency p95 ms"),
    ("escalation_rate", "escalation rate"),
    ("failed", "failed runs"),
    ("quality_avg", "average quality"),
    *[(key, f"quality {label}") for key, label, _ in usage.QUALITY_BUCKETS],
]
MODEL_CSV_COLUMNS = [
    ("model", "model"),
    ("calls", "calls"),
    ("tokens", "tokens"),
    ("input_tokens", "input tokens"),
    ("output_tokens", "output tokens"),
    ("cache_read_tokens", "cache read tokens"),
    ("cache_write_tokens", "cache write tokens"),
    ("cache_hit_rate", "cache hit rate"),
    ("cost", "cost usd"),
    ("latency_p50", "latency p50 ms"),
    ("latency_p95", "latency p95 ms"),
]
# What each table's chart plots: (figure, label) pairs, the first on the left axis.
CHARTS = {
    "day": ("line", [("cost", "Cost (USD)"), ("tokens", "Tokens")]),
    "user": ("bar", [("cost", "Cost (USD)"), ("runs", "Runs")]),
    "model": ("bar", [("runs", "Runs"), ("escalation_rate", "Escalation rate")]),
    "strategy": ("bar", [("runs", "Runs"), ("quality_avg", "Average quality")]),
    "calls": ("bar", [("tokens", "Tokens"), ("cache_hit_rate", "Cache hit rate")]),
}


def _require_staff(request: HttpRequest) -> None:
    """The team's figures come from everyone's runs and feedback: staff who may audit runs."""
    if not (request.user.is_staff and request.user.has_perm("chat.view_reasoningrun")):
        raise PermissionDenied("The team's usage is for staff who may audit runs.")


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _chart(name: str, rows: list[dict[str, Any]], key: str = "key") -> dict[str, Any]:
    kind, series = CHARTS[name]
    return {
        "kind": kind,
        "labels": [str(row[key] or "—") for row in rows],
        "series": [
            {"label": label, "data": [_number(row[figure]) for row in rows]} for figure, label in series
        ],
    }


def _csv(
    name: str, rows: list[dict[str, Any]], columns: list[tuple[str, str]], filters: usage.UsageFilters
) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="nexus-usage-{name}-{filters.start:%Y%m%d}-{filters.end:%Y%m%d}.csv"'
    )
    writer = csv.writer(response)
    writer.writerow([label for _, label in columns])
    for row in rows:
        writer.writerow(["" if row[key] is None else spreadsheet_cell(row[key]) for key, _ in columns])
    return response


def _tables(filters: usage.UsageFilters, names: list[str]) -> list[dict[str, Any]]:
    tables = []
    for name in names:
        rows = usage.breakdown(filters, name)
        if name == "strategy":  # as the filter above names them ("Light planning", not "light_planning")
            rows = [{**row, "key": usage.strategy_label(row["key"])} for row in rows]
        tables.append(
            {
                "name": name,
                "title": usage.DIMENSIONS[name],
                "rows": rows,
                "chart": _chart(name, rows),
                "chart_id": f"chart-{name}",
            }
        )
    return tables


@require_GET
@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """The team's usage (staff): charts, the table beneath each, CSV for each table."""
    _require_staff(request)
    rollup_recent()
    filters = usage.UsageFilters.from_query(request.GET)
    table = request.GET.get("csv")
    if table in usage.DIMENSIONS or table == "calls":
        rows = usage.model_calls(filters) if table == "calls" else usage.breakdown(filters, table)
        staff_audit.record(
            request,
            StaffAuditEntry.Action.EXPORT,
            "usage",
            table,
            f"usage by {table} {filters.start}..{filters.end} as CSV",
            filters=filters.as_query(),
        )
        return _csv(table, rows, MODEL_CSV_COLUMNS if table == "calls" else CSV_COLUMNS, filters)
    calls = usage.model_calls(filters)
    return render(
        request,
        "teamops/usage.html",
        {
            "team": True,
            "filters": filters,
            "query": urlencode(filters.as_query()),
            "choices": usage.choices(filters),
            "strategies": usage.Strategy.choices,
            "totals": usage.totals(filters),
            "tables": _tables(filters, ["day", "user", "model", "strategy"]),
            "calls": calls,
            "calls_chart": _chart("calls", calls, key="model"),
            "quality_buckets": usage.QUALITY_BUCKETS,
            "csv_base": reverse("teamops:usage"),
        },
    )


@require_GET
@login_required
def my_usage(request: HttpRequest) -> HttpResponse:
    """A person's own usage and how much of each budget that binds them is spent."""
    rollup_recent()
    filters = usage.UsageFilters.from_query(request.GET, user_id=request.user.pk)
    return render(
        request,
        "teamops/usage.html",
        {
            "team": False,
            "filters": filters,
            "query": urlencode(filters.as_query()),
            "totals": usage.totals(filters),
            "tables": _tables(filters, ["day", "strategy"]),
            "budgets": budgets.budget_states_for(request.user.pk),
            "quality_buckets": usage.QUALITY_BUCKETS,
        },
    )


@require_GET
@login_required
def quality_stats(request: HttpRequest) -> HttpResponse:
    """People's verdicts against the evaluator and the confidence scorer (staff)."""
    _require_staff(request)
    filters = usage.UsageFilters.from_query(request.GET)
    return render(
        request,
        "teamops/quality.html",
        {
            "filters": filters,
            "query": urlencode(filters.as_query()),
            "choices": usage.choices(filters),
            "strategies": usage.Strategy.choices,
            "by_group": quality.agreement(filters),
            "by_decision": quality.agreement(filters, by=("decision",)),
            "disagreements": quality.disagreements(filters) if request.GET.get("disagree") else None,
        },
    )
