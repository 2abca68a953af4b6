"""The usage dashboard (staff) and each person's own usage page."""

from __future__ import annotations

import csv
import io
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection, connections
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat import services
from chat.models import StaffAuditEntry
from teamops.models import CallDay, UsageDay
from teamops.rollup import rollup, rollup_run
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
        latency_ms=4800,
        quality=0.4,
        escalations=2,
        strategy="deep_reasoning",
        cost="1.50",
        calls=("claude-opus",),
    )
    assert rollup() == 5
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
    # Latency percentiles from the rollup's histogram: alice's 100, 200 | 300, 400 ms fall in
    # the buckets below 250 ms and 250-500 ms; bob's 4.8 s in 4-5 s.
    assert "<td>$0.28</td><td>250 ms</td><td>475 ms</td><td>0%</td>" in by_user
    assert "<td>$1.50</td><td>4.5 s</td><td>5.0 s</td><td>100%</td>" in by_user
    by_strategy = rows_of(html, "strategy")
    assert '<th scope="row">Deep reasoning</th><td>1</td>' in by_strategy, "named as the filter names it"
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
        ("bob", "1", "150", "4500.0"),
    ]
    entry = StaffAuditEntry.objects.get(action="export", object_type="usage")
    assert entry.object_id == "user" and entry.actor == auditor
    # A name a spreadsheet would take for a formula stays text, as in the other exports.
    get_user_model().objects.filter(username="bob").update(username="=HYPERLINK(1)")
    response = client_for(auditor).get("/usage/", {"csv": "user"})
    groups = [r["group"] for r in csv.DictReader(io.StringIO(response.content.decode()))]
    assert "'=HYPERLINK(1)" in groups and "=HYPERLINK(1)" not in groups


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


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_is_counted_once_and_stays_counted(alice_session, alice, auditor, client_for):
    from tests.conftest import ask

    run = ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")
    row = UsageDay.objects.get(user=alice)
    assert (row.runs, row.escalated, row.input_tokens) == (1, 1, run.input_tokens)
    assert CallDay.objects.filter(user=alice).aggregate(n=Sum("calls"))["n"] == run.llm_calls.count()
    assert rollup_run(run.pk) == 0 and rollup() == 0, "recording again counts nothing twice"
    services.session_delete(session=alice_session)
    html = client_for(auditor).get("/usage/").content.decode()
    assert '<dd id="total-runs">1</dd>' in html, "deleting a chat does not erase its spending"


@pytest.mark.django_db(transaction=True)
def test_workers_rolling_up_the_same_runs_at_once_count_each_run_once(alice):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent connections run in the PostgreSQL pass (scripts/test.sh)")
    now = timezone.now()
    for index in range(40):
        finished_run(alice, at=now - timedelta(minutes=index), calls=("m",))
    barrier = threading.Barrier(4)
    counted: list[int] = []

    def worker() -> None:
        try:
            barrier.wait()
            counted.append(rollup())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counted) == 40
    assert UsageDay.objects.aggregate(n=Sum("runs"))["n"] == 40
    assert CallDay.objects.aggregate(n=Sum("calls"))["n"] == 40


def test_the_backfill_command_counts_older_runs(alice):
    finished_run(alice, at=timezone.now() - timedelta(days=20))
    out = io.StringIO()
    call_command("usage_rollup", stdout=out)
    assert out.getvalue().strip() == "Rolled up 1 run." and UsageDay.objects.get().runs == 1


def test_staff_status_alone_does_not_open_the_teams_usage(team_runs, make_user, client_for):
    """Everyone's spending and feedback comments are for staff who may audit runs, not for
    anyone who was given staff status for some other task."""
    helper = make_user("helper", is_staff=True)
    client = client_for(helper)
    for url in ("/usage/", "/usage/?csv=user", "/usage/quality/"):
        assert client.get(url).status_code == 403, url
    helper.user_permissions.add(Permission.objects.get(codename="view_reasoningrun"))
    assert client_for(helper).get("/usage/").status_code == 200


@pytest.mark.parametrize(
    "window", [{"start": "0001-01-01", "end": "9999-12-31"}, {"start": "9999-12-31"}, {"end": "0001-01-01"}]
)
def test_a_report_over_any_dates_answers_instead_of_overflowing(team_runs, auditor, client_for, window):
    client = client_for(auditor)
    client.raise_request_exception = False
    for url in ("/usage/", "/usage/quality/", "/usage/mine/"):
        assert client.get(url, window).status_code == 200, url


def test_a_csv_cell_holds_a_number_as_people_write_it():
    """Usage CSVs showed 8999.999999999995 and 94269.23076923075: an average's binary noise."""
    from chat.audit import spreadsheet_cell

    assert spreadsheet_cell(8999.999999999995) == 9000
    assert spreadsheet_cell(94269.23076923075) == 94269.2307692
    assert spreadsheet_cell(0.1 + 0.2) == 0.3 and spreadsheet_cell(7) == 7
    assert spreadsheet_cell("=SUM(A1)") == "'=SUM(A1)"


@pytest.mark.django_db(transaction=True)  # a closed connection is what the retry makes of it
def test_a_run_whose_rollup_lost_the_database_is_counted_on_a_new_connection(alice, monkeypatch, caplog):
    """Found by a team review: a connection dropped as runs finished left them out of the
    dashboard (until someone opened it) with an ERROR traceback in the worker's log."""
    from django.db import OperationalError

    from teamops import rollup as rollups

    run = finished_run(alice, at=timezone.now(), latency_ms=100)
    real, calls = rollups.rollup, []

    def lost_once(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return real(**kwargs)

    monkeypatch.setattr(rollups, "rollup", lost_once)
    rollups.rollup_runs_safely([run.pk])
    assert UsageDay.objects.get(user=alice).runs == 1 and len(calls) == 2
    assert "could not roll up" not in caplog.text


def test_a_stopped_runs_spending_is_in_the_usage_as_in_the_budgets(alice, auditor, client_for):
    """A run stopped after its model calls had cost them (the provider bills them, and the
    budgets counted them), but the usage pages rolled up only succeeded and failed runs."""
    run = finished_run(
        alice,
        at=timezone.now(),
        status="cancelled",
        tokens=(1241, 7, 0, 0),
        cost="0.02",
        quality=None,
        calls=("m",),
    )
    assert rollup_run(run.pk) == 1
    row = UsageDay.objects.get(user=alice)
    assert (row.runs, row.input_tokens, row.output_tokens) == (1, 1241, 7) and row.cost == Decimal("0.02")
    assert CallDay.objects.get(user=alice).calls == 1
