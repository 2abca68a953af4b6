"""Budgets: counted per model call across processes, checked before a run starts and before
it escalates, set by staff in the admin (and audited)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.db import connection, connections
from django.db.models import Sum

from chat import services
from chat.models import LLMCall, Message, ReasoningRun, StaffAuditEntry, TraceEvent
from teamops.budgets import refusal_for, usage_charge
from teamops.models import Budget, Period, UsageCounter
from tests.conftest import ask, run_now, starting_with

# Runs execute on another thread (as in a worker): their rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

TWO_PARTS = "What is 17*23 and what time is it in Tokyo?"


def spent(user, period: str = Period.DAY) -> tuple[int, Decimal]:
    totals = UsageCounter.objects.filter(user=user, period=period).aggregate(t=Sum("tokens"), c=Sum("cost"))
    return totals["t"] or 0, totals["c"] or Decimal(0)


def test_every_model_call_is_counted_for_the_day_and_the_month(alice_session, alice):
    run = ask(alice_session, TWO_PARTS, start="direct")
    calls = LLMCall.objects.filter(run=run)
    assert calls.count() > 1
    expected = sum(
        c.input_tokens + c.output_tokens + c.cache_read_tokens + c.cache_write_tokens for c in calls
    )
    assert spent(alice, Period.DAY)[0] == spent(alice, Period.MONTH)[0] == expected > 0
    assert UsageCounter.objects.get(user=alice, period=Period.DAY).calls == calls.count()
    services.session_delete(session=alice_session)
    assert spent(alice)[0] == expected, "deleting a chat does not give the budget back"


def test_a_message_past_the_budget_is_refused_before_any_model_call(
    alice, alice_session, client_for, dispatched
):
    Budget.objects.create(user=alice, period=Period.DAY, metric=Budget.Metric.TOKENS, limit=1000)
    usage_charge(user_id=alice.pk, tokens=1200, cost=Decimal("0.01"))
    response = client_for(alice).post(
        f"/sessions/{alice_session.pk}/messages/", {"content": "hello?"}, HTTP_HX_REQUEST="true"
    )
    text = response.content.decode()
    assert "Your daily budget of 1,000 tokens is used up (1,200 tokens spent)" in text
    assert "It resets on" in text and "at 00:00 UTC" in text
    assert dispatched == [] and not Message.objects.filter(session=alice_session).exists()
    assert not LLMCall.objects.exists()


def test_a_queued_run_is_refused_when_the_budget_ran_out_meanwhile(alice, alice_session):
    run = services.message_post(session=alice_session, content="What is 2+2?")
    Budget.objects.create(user=alice, period=Period.MONTH, metric=Budget.Metric.COST, limit=Decimal("5"))
    usage_charge(user_id=alice.pk, tokens=10, cost=Decimal("5.25"))
    assert run_now(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == ReasoningRun.Status.FAILED
    assert run.error.startswith("Your monthly budget of $5.00 is used up ($5.25 spent). It resets on 1 ")
    assert not LLMCall.objects.filter(run=run).exists() and not TraceEvent.objects.filter(run=run).exists()


def test_a_run_crossing_the_budget_finishes_its_attempt_without_escalating(alice, alice_session):
    # Within budget at the start (nothing spent); the first attempt's calls use it up.
    Budget.objects.create(user=alice, period=Period.DAY, metric=Budget.Metric.TOKENS, limit=1)
    run = ask(alice_session, TWO_PARTS, start="direct")
    assert run.status == ReasoningRun.Status.SUCCEEDED
    assert run.escalation_count == 0 and run.final_strategy == "direct"
    assert run.answers.count() == 1, "the person gets the answer already paid for"
    notes = TraceEvent.objects.filter(run=run, kind="component.degraded", payload__component="budget")
    assert notes.count() == 1 and "budget of 1 tokens is used up" in notes.get().payload["error"]
    # Without a budget the same question escalates (so the budget is what stopped it).
    Budget.objects.all().delete()
    other = services.session_create(owner=alice)
    assert ask(other, TWO_PARTS, start="direct").escalation_count == 1


def test_the_budget_sees_the_runs_own_calls_however_far_behind_their_writing_is(
    alice, alice_session, monkeypatch
):
    """A run's events are written behind it; the check before escalating still counts the calls
    of the attempt it has just made (a slow database, here a slow writer, must not let it pass)."""
    import time

    from chat import writer

    real_store = writer.store

    def slow_store(items):
        time.sleep(0.05)
        return real_store(items)

    monkeypatch.setattr(writer, "store", slow_store)
    Budget.objects.create(user=alice, period=Period.DAY, metric=Budget.Metric.TOKENS, limit=1)
    run = ask(alice_session, TWO_PARTS, start="direct")
    assert run.escalation_count == 0 and run.final_strategy == "direct"


def test_a_group_budget_counts_every_member_together(alice, bob, make_user):
    team = Group.objects.create(name="Research")
    team.user_set.add(alice, bob)
    Budget.objects.create(group=team, period=Period.DAY, metric=Budget.Metric.TOKENS, limit=500)
    usage_charge(user_id=alice.pk, tokens=300, cost=Decimal(0))
    assert refusal_for(bob.pk) is None
    usage_charge(user_id=bob.pk, tokens=250, cost=Decimal(0))
    message = refusal_for(alice.pk)
    assert message.startswith('Your group "Research"\'s daily budget of 500 tokens is used up (550 tokens')
    assert refusal_for(make_user("charlie").pk) is None, "outsiders are not bound by it"
    Budget.objects.update(enabled=False)
    assert refusal_for(alice.pk) is None, "a disabled budget binds nobody"


def test_concurrent_charges_from_many_connections_are_all_counted(alice):
    """Each thread is its own database connection, as separate workers are; none is lost."""
    if connection.vendor != "postgresql":
        pytest.skip("row-locking concurrency runs in the PostgreSQL pass (scripts/test.sh)")
    threads, per_thread = 8, 25
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            for _ in range(per_thread):
                usage_charge(user_id=alice.pk, tokens=3, cost=Decimal("0.001"))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert errors == []
    counter = UsageCounter.objects.get(user=alice, period=Period.DAY)
    assert (counter.tokens, counter.cost, counter.calls) == (
        threads * per_thread * 3,
        Decimal("0.200"),
        threads * per_thread,
    )


def test_staff_set_budgets_in_the_admin_and_each_change_is_audited(auditor, alice, client_for):
    client = client_for(auditor)
    response = client.post(
        "/admin/teamops/budget/add/",
        {
            "user": alice.pk,
            "period": "day",
            "metric": "tokens",
            "limit": "20000",
            "enabled": "on",
            "note": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    budget = Budget.objects.get(user=alice)
    entry = StaffAuditEntry.objects.get(action="add", object_type="budget")
    assert entry.object_id == str(budget.pk) and "20,000 tokens" in entry.summary
    listing = client.get("/admin/teamops/budget/").content.decode()
    assert "0 tokens (0%)" in listing
    both = client.post(
        "/admin/teamops/budget/add/",
        {
            "user": alice.pk,
            "group": Group.objects.create(name="Ops").pk,
            "period": "month",
            "metric": "cost",
            "limit": "5",
        },
    )
    assert both.status_code == 200 and Budget.objects.count() == 1, "a budget is a person's or a group's"


def test_runs_executing_at_once_are_all_counted(alice, settings):
    """Four runs answered at the same time on four connections (as four workers would)."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent connections run in the PostgreSQL pass (scripts/test.sh)")
    # All four at once: above the default per-person limit, a fourth would wait its turn.
    settings.NEXUS_MAX_RUNS_PER_USER = 4
    runs = [
        services.message_post(session=services.session_create(owner=alice), content=TWO_PARTS)
        for _ in range(4)
    ]
    barrier = threading.Barrier(len(runs))
    outcomes: list[str] = []

    def worker(run_id: int) -> None:
        try:
            barrier.wait()
            outcomes.append(run_now(run_id))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(run.pk,)) for run in runs]
    with starting_with("direct"):  # each run escalates once: more calls in flight at once
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert outcomes == ["succeeded"] * 4
    calls = LLMCall.objects.filter(run__in=runs)
    tokens = calls.aggregate(
        t=Sum("input_tokens") + Sum("output_tokens") + Sum("cache_read_tokens") + Sum("cache_write_tokens")
    )["t"]
    counter = UsageCounter.objects.get(user=alice, period=Period.DAY)
    assert (counter.tokens, counter.calls) == (tokens, calls.count())
