"""Budgets: counted per model call across processes, checked before a run starts and before
it escalates, set by staff in the admin (and audited)."""

from __future__ import annotations

import threading
import time
from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.db import connection, connections, transaction
from django.db.models import Sum
from django.utils import timezone

from chat import services, writer
from chat.models import LLMCall, Message, ReasoningRun, StaffAuditEntry, TraceEvent
from chat.sink import RunSink
from chat.writer import Item
from reasoning.events import Event
from teamops.budgets import Charge, refusal_for, usage_charge, usage_charges
from teamops.models import Budget, Period, UsageCounter
from tests.conftest import ask, run_now, starting_with

# Runs execute on another thread (as in a worker): their rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

TWO_PARTS = "What is 17*23 and what time is it in Tokyo?"
WAITING_FOR_A_LOCK = (
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() "
    "AND datname = current_database()"
)
# A model call's event as the engine emits it: 20 tokens.
CALL = {
    "component": "response",
    "provider": "offline",
    "model": "nexus-offline",
    "input_tokens": 12,
    "output_tokens": 8,
    "cache_read_tokens": 0,
    "cache_write_tokens": 0,
    "cost": "0",
}


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


def test_a_batch_of_charges_spanning_midnight_counts_each_day_and_the_month_once(alice, bob):
    """A writer's batch may hold calls from both sides of midnight: one upsert cannot touch a
    counter twice, so the month's row gets the sum."""
    late = timezone.make_aware(datetime(2026, 11, 25, 23, 59, 50))
    early = late + timedelta(seconds=20)
    usage_charges(
        [
            Charge(alice.pk, 10, Decimal("0.01"), 1, late),
            Charge(bob.pk, 5, Decimal(0), 1, early),
            Charge(alice.pk, 20, Decimal("0.02"), 2, early),
        ]
    )
    days = dict(UsageCounter.objects.filter(user=alice, period=Period.DAY).values_list("start", "tokens"))
    assert days == {date(2026, 11, 25): 10, date(2026, 11, 26): 20}
    month = UsageCounter.objects.get(user=alice, period=Period.MONTH)
    assert (month.tokens, month.cost, month.calls) == (30, Decimal("0.03"), 3)
    assert UsageCounter.objects.get(user=bob, period=Period.MONTH).tokens == 5


def test_two_workers_charging_the_same_people_in_opposite_orders_do_not_deadlock(alice, bob):
    """Each worker's event writer charges, inside its batch's transaction, the people whose
    model calls the batch holds. Here one batch holds bob's call then alice's while another
    worker's transaction (this test's connection) holds alice's counters and then needs bob's.
    Charged in the batch's order they deadlocked, and PostgreSQL failed one side after its
    deadlock timeout (a second in which both workers' pages heard nothing); in one order, the
    batch waits for alice's counters holding none, and both commit."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks between connections are tested in the PostgreSQL pass (scripts/test.sh)")
    # The one order is by person: "alice" here is whoever comes first in it.
    alice, bob = sorted((alice, bob), key=lambda user: user.pk)
    usage_charge(user_id=alice.pk, tokens=1, cost=Decimal(0))
    usage_charge(user_id=bob.pk, tokens=1, cost=Decimal(0))
    first, second = (
        services.message_post(session=services.session_create(owner=owner), content="Question")
        for owner in (bob, alice)
    )
    items = [
        Item(
            RunSink(run, behind=True),
            "event",
            Event(1, time.time(), "llm.call", "Answer", "trace", CALL),
            None,
        )
        for run in (first, second)
    ]
    errors: list[BaseException] = []

    def other_worker() -> None:
        try:
            writer.store(items)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    with transaction.atomic():
        usage_charge(user_id=alice.pk, tokens=100, cost=Decimal(0))  # alice's counters locked
        batch = threading.Thread(target=other_worker)
        batch.start()
        with connection.cursor() as cursor:  # until the batch waits for a row lock
            for _ in range(200):
                cursor.execute(WAITING_FOR_A_LOCK)
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.025)
            else:
                pytest.fail("the batch never waited for alice's counters")
        usage_charge(user_id=bob.pk, tokens=100, cost=Decimal(0))
    batch.join(30)
    assert errors == []
    assert spent(alice)[0] == spent(bob)[0] == 1 + 100 + 20
    assert LLMCall.objects.filter(run__in=[first, second]).count() == 2


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
    # Said in words, not as the database constraint's name (an operator's review).
    page = both.content.decode()
    assert "A budget is for one person or for one group" in page and "budget_user_xor_group" not in page
    again = client.post(
        "/admin/teamops/budget/add/",
        {"user": alice.pk, "period": "day", "metric": "tokens", "limit": "5", "enabled": "on", "note": ""},
    ).content.decode()
    assert "This person already has a budget for that period and measure." in again


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
