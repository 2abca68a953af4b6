"""The usage dashboard (staff) and each person's own usage page."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import StaffAuditEntry
from tests.chat.usage_data import finished_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_runs(alice, bob):
    """Alice: four runs yesterday and today; Bob: one escalated DEEP run today."""
    now = timezone.now().replace(hour=12, minute=0)
    yesterday = now - timedelta(days=1)
    for latency in (100, 200, 300):
        finished_run(alice, at=yesterday, latency_ms=latency, calls=("claude-haiku", "claude-sonnet"))
    finished_run(alice, at=now, latency_ms=400, quality=0.6, tokens=(1000, 200, 800, 0), cost="0.25")
    finished_run(
        bob,
        at=now,
        latency_ms=5000,
        quality=0.4,
        escalations=2,
        strategy="deep_reasoning",
        cost="1.50",
        calls=("claude-opus",),
    )
    return now


def rows_of(html: str, section: str) -> str:
    start = html.index(f'id="by-{section}"')
    return html[start : html.index("</section>", start)]


def test_staff_see_the_team_per_day_person_model_and_strategy(team_runs, auditor, client_for):
    html = client_for(auditor).get("/usage/").content.decode()
    assert '<dd id="total-runs">5</dd>' in html and '<dd id="total-cost">$1.78</dd>' in html
    by_user = rows_of(html, "user")
    assert '<th scope="row">alice</th><td>4</td><td>2,450</td>' in by_user
    assert '<th scope="row">bob</th><td>1</td><td>150</td>' in by_user
    # Latency percentiles from the database: alice's 100, 200, 300, 400 ms.
    assert "<td>$0.28</td><td>250 ms</td><td>385 ms</td><td>0%</td>" in by_user
    assert "<td>$1.50</td><td>5.0 s</td><td>5.0 s</td><td>100%</td>" in by_user
    by_strategy = rows_of(html, "strategy")
    assert '<th scope="row">deep_reasoning</th><td>1</td>' in by_strategy
    # Cache hits: 800 of 1,800 prompt tokens on alice's run today.
    by_day = rows_of(html, "day")
    assert "42%" in by_day and by_day.count('<th scope="row">') == 2
    calls = rows_of(html, "calls")
    assert (
        '<th scope="row">claude-haiku</th><td>3</td>' in calls
        and '<th scope="row">claude-opus</th><td>1</td>' in calls
    )
    assert 'src="/static/vendor/chartjs/chart.umd.min.js"' in html and 'id="chart-day"' in html


def test_filters_narrow_every_table(team_runs, auditor, bob, client_for):
    client = client_for(auditor)
    html = client.get("/usage/", {"user": bob.pk}).content.decode()
    assert '<dd id="total-runs">1</dd>' in html and '<th scope="row">alice</th>' not in html
    html = client.get("/usage/", {"strategy": "direct"}).content.decode()
    assert '<dd id="total-runs">4</dd>' in html
    today = timezone.localdate(team_runs).isoformat()
    html = client.get("/usage/", {"start": today, "end": today}).content.decode()
    assert '<dd id="total-runs">2</dd>' in html
    html = client.get("/usage/", {"start": "garbage", "user": "x", "strategy": "<script>"}).content.decode()
    assert '<dd id="total-runs">5</dd>' in html, "bad filter values fall back to the defaults"


def test_each_table_downloads_as_csv_and_the_export_is_audited(team_runs, auditor, client_for):
    response = client_for(auditor).get("/usage/", {"csv": "user"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["group"], r["runs"], r["tokens"], r["latency p50 ms"]) for r in rows] == [
        ("alice", "4", "2450", "250.0"),
        ("bob", "1", "150", "5000.0"),
    ]
    entry = StaffAuditEntry.objects.get(action="export", object_type="usage")
    assert entry.object_id == "user" and entry.actor == auditor


def test_the_page_costs_the_same_few_queries_for_many_runs(alice, auditor, client_for):
    """Aggregation happens in the database: thirty times the runs, not one query more."""
    client = client_for(auditor)
    now = timezone.now()

    def queries_for_page() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/usage/").status_code == 200
        return len(queries)

    finished_run(alice, at=now, calls=("m1",))
    few = queries_for_page()
    for index in range(30):
        finished_run(alice, at=now - timedelta(hours=index * 7), latency_ms=100 + index, calls=("m1", "m2"))
    assert queries_for_page() == few


def test_people_see_only_their_own_usage_and_budgets(team_runs, bob, client_for):
    from teamops.models import Budget, Period

    Budget.objects.create(user=bob, period=Period.MONTH, metric=Budget.Metric.COST, limit=10)
    client = client_for(bob)
    assert client.get("/usage/").status_code == 403, "the team's usage is for staff"
    html = client.get("/usage/mine/").content.decode()
    assert '<dd id="total-runs">1</dd>' in html and "alice" not in html
    assert "Yours, monthly: 0 of 10 USD (0%)" in html
    html = client.get("/usage/mine/", {"user": team_runs and 1}).content.decode()
    assert '<dd id="total-runs">1</dd>' in html, "the person filter cannot show someone else"
