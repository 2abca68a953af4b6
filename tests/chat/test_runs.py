"""Executing runs: persisted events, domain rows, idempotent finish, resume after a dead worker."""

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from chat import services
from chat.models import Attempt, LLMCall, PlanStep, ReasoningRun, ToolExecution, TraceEvent
from tests.conftest import ask, run_now, starting_with

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_becomes_rows(alice_session):
    run = ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")
    assert run.status == "succeeded" and run.answers.count() == 1
    sequences = list(run.events.values_list("sequence", flat=True))
    assert (
        sequences[0] == 1 and sequences == sorted(set(sequences)) and run.next_sequence == sequences[-1] + 1
    )
    assert not run.events.filter(kind="answer.delta").exists(), "draft batches are folded, not stored as rows"
    discarded = run.events.get(kind="answer.discarded").payload
    assert discarded["reason"] == "quality" and discarded["missing_aspects"] == ["What time is it in Tokyo?"]
    assert (run.initial_strategy, run.final_strategy, run.escalation_count) == ("direct", "light_planning", 1)
    assert run.final_quality == 0.95 and not run.draft_id and not run.draft_text
    attempts = list(Attempt.objects.filter(run=run).values_list("strategy", "status", "approved"))
    assert attempts == [("direct", "escalated", False), ("light_planning", "completed", True)]
    steps = list(PlanStep.objects.filter(plan__run=run).values_list("step_id", "status"))
    assert steps == [("step_1", "completed"), ("step_2", "completed")]
    tools = list(ToolExecution.objects.filter(run=run).values_list("tool", "cached", "success"))
    assert tools == [("calculator", False, True), ("calculator", True, True), ("clock", False, True)]
    calls = LLMCall.objects.filter(run=run)
    assert calls.count() == run.events.filter(kind="llm.call").count()
    assert set(calls.values_list("provider", "model")) == {("offline", "nexus-offline")}
    assert run.input_tokens == sum(calls.values_list("input_tokens", flat=True)) > 0
    assert run.tracker_state["attempts"][1]["status"] == "completed"
    assert run.started_at <= run.finished_at


def test_executing_twice_never_adds_a_second_answer(alice_session):
    run = ask(alice_session, "What is 6*7?")
    assert run_now(run.pk) == "skipped"
    ReasoningRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    assert run_now(run.pk) == "skipped", "the answer was already stored; the run is just marked done"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.answers.count() == 1


def test_a_run_left_running_by_a_dead_worker_is_resumed(alice_session):
    run = services.message_post(session=alice_session, content="What is 17*23 and what time is it in Tokyo?")
    with starting_with("direct"):
        run_now(run.pk)
    run.refresh_from_db()
    # Rewind to just after the DIRECT attempt was checkpointed, as if the worker died there.
    state = run.tracker_state
    state["attempts"] = state["attempts"][:1]
    state["plan"] = None
    state["current_attempt"] = 0
    cut = run.events.get(kind="escalation").sequence
    run.answers.all().delete()
    TraceEvent.objects.filter(run=run, sequence__gt=cut).delete()
    ReasoningRun.objects.filter(pk=run.pk).update(
        status="running",
        worker="dead-host:1",
        tracker_state=state,
        next_sequence=cut + 1,
        finished_at=None,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
        escalation_count=0,
    )
    assert services.runs_to_recover() == [run.pk]
    assert run_now(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.answers.count() == 1 and run.delivery_count == 2
    sequences = list(run.events.values_list("sequence", flat=True))
    assert sequences == sorted(set(sequences)), "numbering continues after the last stored event"
    resumed = run.events.filter(kind="run.started").last()
    assert resumed.sequence == cut + 1 and resumed.payload["resumed"]
    assert run.events.filter(kind="analysis.completed").last().payload["cached"], "analysis not repeated"
    assert [e.payload["strategy"] for e in run.events.filter(kind="strategy.selected")] == [
        "direct",
        "light_planning",
    ], "resumed at LIGHT, where the dead worker was going"


def test_a_healthy_running_run_is_left_alone(alice_session):
    run = services.message_post(session=alice_session, content="hi")
    ReasoningRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now(), worker="other:1"
    )
    assert run_now(run.pk) == "skipped" and services.runs_to_recover() == []


def test_a_run_that_keeps_killing_workers_is_failed_clearly(alice_session):
    run = services.message_post(session=alice_session, content="hi")
    ReasoningRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(hours=1), delivery_count=3
    )
    assert run_now(run.pk) == "skipped"
    run.refresh_from_db()
    assert run.status == "failed" and "stopped 3 times" in run.error


def test_queued_runs_whose_dispatch_was_lost_are_recovered(alice_session):
    run = services.message_post(session=alice_session, content="hi")
    assert services.runs_to_recover() == []
    # A worker that starts or gets its broker back sends every queued run's job again.
    assert services.runs_to_recover(resend_queued=True) == [run.pk]
    assert services.runs_to_recover() == [], "stamped: the next sweep waits its interval again"
    # Stored as dispatched (the post hands it on in the same request): the broker lost its job.
    old = timezone.now() - timedelta(minutes=5)
    ReasoningRun.objects.filter(pk=run.pk).update(created_at=old, dispatched_at=old)
    assert services.runs_to_recover() == [run.pk]


def test_a_run_whose_dispatch_failed_is_handed_on_at_the_next_sweep(alice_session):
    run = services.message_post(session=alice_session, content="hi")
    services.runs_mark_dispatched([run.pk], dispatched=False)  # what the view does when the queue is down
    ReasoningRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=2))
    assert services.runs_to_recover() == [run.pk]
    run.refresh_from_db()
    assert run.dispatched_at is not None  # stamped: re-sent at most once per interval


def test_a_sweep_that_finds_the_queue_down_leaves_every_unsent_run_for_the_next(
    alice, bob, alice_session, monkeypatch
):
    """It stamped every waiting run as sent, failed on the first, and un-stamped only that one:
    the others waited for the lost-job interval (minutes) after the queue came back."""
    from kombu.exceptions import OperationalError

    from chat import tasks

    sessions = [alice_session, *(services.session_create(owner=bob, title=f"b{n}") for n in range(2))]
    runs = [services.message_post(session=session, content="hi").pk for session in sessions]
    ReasoningRun.objects.update(dispatched_at=None, created_at=timezone.now() - timedelta(seconds=2))
    sent: list[int] = []

    def broker_down(args, **options):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.execute_run_task, "apply_async", broker_down)
    with pytest.raises(OperationalError):
        tasks.sweep_runs_task()
    assert (
        list(ReasoningRun.objects.filter(pk__in=runs).values_list("dispatched_at", flat=True)) == [None] * 3
    )
    monkeypatch.setattr(tasks.execute_run_task, "apply_async", lambda args, **options: sent.append(args[0]))
    assert tasks.sweep_runs_task() == 3 and sorted(sent) == sorted(runs), "all sent at the next sweep"


def test_history_holds_only_approved_turns(alice_session):
    first = ask(alice_session, "What is 2+2?")
    ReasoningRun.objects.filter(pk=first.pk).update(status="failed")
    second = ask(alice_session, "What is 3+3?")
    third = services.message_post(session=alice_session, content="And 4+4?")
    history = services.conversation_history(third)
    assert [m["content"] for m in history if m["role"] == "user"] == ["What is 3+3?"]
    assert history[1]["content"] == second.answers.get().content


def test_a_run_past_the_time_limit_fails_with_a_clear_message(alice_session, monkeypatch, settings):
    import asyncio

    from chat.tasks import execute_run_task

    async def too_slow(run_id, **kwargs):
        await asyncio.sleep(60)

    settings.NEXUS_RUN_TIME_LIMIT = 0.2
    monkeypatch.setattr("chat.engine.execute_run", too_slow)
    run = services.message_post(session=alice_session, content="Take forever")
    assert execute_run_task.run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and "time limit" in run.error


def test_a_run_whose_first_worker_died_before_storing_anything_counts_the_wait(alice_session):
    """A run resumed after its first worker died before its first checkpoint recorded only the
    second worker's time: "2.2 s" after the person waited 132 s."""
    run = services.message_post(session=alice_session, content="What is 2+2?")
    long_ago = timezone.now() - timedelta(seconds=100)
    ReasoningRun.objects.filter(pk=run.pk).update(
        status=ReasoningRun.Status.RUNNING, worker="gone:1", started_at=long_ago, heartbeat_at=long_ago
    )
    assert run_now(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.latency_ms >= 100_000, run.latency_ms


def test_a_run_the_database_went_away_under_resumes_once_it_is_back(alice_session, monkeypatch):
    """A 1 s PostgreSQL restart under a run left it to the sweeper: it resumed only once its
    heartbeat was stale, so a 2 s run took 35 s."""
    from django.db import OperationalError

    from chat import engine

    real, calls = engine._run_context, []

    def lost_once(run):
        calls.append(run.pk)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return real(run)

    monkeypatch.setattr(engine, "_run_context", lost_once)
    run = services.message_post(session=alice_session, content="What is 6*7?")
    assert run_now(run.pk) == "succeeded", "resumed by the same call, not left for the sweeper"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.answers.count() == 1 and len(calls) == 2


def test_a_run_the_database_went_away_under_again_and_again_is_not_given_up_as_a_dying_worker(
    alice_session, monkeypatch
):
    """Found with faults (PostgreSQL connections cut three times while runs were in flight):
    each time, the worker released the run to itself and claimed it again to resume it, and
    each claim counted as a delivery lost to a dead worker; the fourth failed the run with
    "The worker stopped 3 times while answering; giving up", though no worker had stopped.
    One outage and two workers killed under it did the same. A worker resuming its own run
    after an outage is no lost delivery."""
    from django.db import OperationalError

    from chat import engine

    real, calls = engine._run_context, []

    def lost_three_times(run):
        calls.append(run.pk)
        if len(calls) <= 3:
            raise OperationalError("terminating connection due to administrator command")
        return real(run)

    monkeypatch.setattr(engine, "_run_context", lost_three_times)
    run = services.message_post(session=alice_session, content="What is 6*7?")
    assert run_now(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.answers.count() == 1 and len(calls) == 4, run.error

    # A worker that really dies still counts: two more deaths after these outages give up.
    again = services.message_post(session=alice_session, content="What is 7*7?")
    calls.clear()
    assert run_now(again.pk) == "succeeded"
    again = services.message_post(session=alice_session, content="What is 8*7?")
    ReasoningRun.objects.filter(pk=again.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(hours=1), delivery_count=3
    )
    assert run_now(again.pk) == "skipped"
    again.refresh_from_db()
    assert again.status == "failed" and "stopped 3 times" in again.error


@pytest.mark.parametrize("when", ["before the claim", "after the claim"])
def test_a_run_whose_claim_lost_the_database_is_claimed_once_it_is_back(alice_session, monkeypatch, when):
    """Found by a team review: a connection dropped while a worker claimed a run raised out of
    the job (acknowledged, failed), and the run waited 30–60 s for the sweeper with "Starting…"
    on the page: queued and sent when the claim never happened, running with no worker when it
    had."""
    from django.db import OperationalError

    real, calls = services.run_claim, []

    def lost_once(run_id, *, worker, **options):
        calls.append(run_id)
        if len(calls) == 1:
            if when == "after the claim":
                real(run_id, worker=worker, **options)  # stored; the answer to it is what was lost
            raise OperationalError("terminating connection due to administrator command")
        return real(run_id, worker=worker, **options)

    monkeypatch.setattr(services, "run_claim", lost_once)
    run = services.message_post(session=alice_session, content="What is 6*7?")
    assert run_now(run.pk) == "succeeded", "claimed by the same job once the database answered"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.answers.count() == 1 and len(calls) == 2


@pytest.mark.parametrize("stopped_first", [True, False])
async def test_a_chat_deleted_under_its_winding_down_run_ends_it_quietly(
    alice_session, settings, caplog, stopped_first
):
    """Found by QA: Stop, then Delete chat at once (the delete is allowed: the run is no longer
    active) deleted the run while its worker was still winding it down. Every such run logged
    "could not record an event of run N" and "run N crashed" with a traceback (or, stopped
    first, failed the job on the missing row): a chat deleted under its run is no crash."""
    import asyncio
    import logging

    from asgiref.sync import sync_to_async

    from chat.engine import execute_run

    settings.OFFLINE_LATENCY_MS = 300
    run = await sync_to_async(services.message_post)(session=alice_session, content="What is 17*23?")
    executing = asyncio.create_task(execute_run(run.pk))
    for _ in range(100):  # until it has started writing its trace
        if await TraceEvent.objects.filter(run_id=run.pk).aexists():
            break
        await asyncio.sleep(0.05)

    def stop_and_delete() -> None:
        services.run_stop(run)
        if not stopped_first:  # an admin, or an account deleted with its chats
            ReasoningRun.objects.filter(pk=run.pk).update(status="running")
        run.session.delete()

    caplog.set_level(logging.WARNING)
    await sync_to_async(stop_and_delete)()
    outcome = await asyncio.wait_for(executing, 30)
    assert outcome in ("stopped", "deleted")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_heartbeats_that_went_stale_while_the_database_was_away_hand_no_run_on(
    alice_session, monkeypatch, settings
):
    """A 2 s PostgreSQL outage left every running run's heartbeat stale, and the first sweep
    after it handed them all to another worker while their own worker went on executing them
    (found under load with faults). After a sweep that lost the database, stale heartbeats
    are taken for dead workers only once a stale time has passed with it back."""
    from django.db import OperationalError

    from chat import tasks

    settings.NEXUS_RUN_STALE_SECONDS = 30
    run = services.message_post(session=alice_session, content="hi")
    ReasoningRun.objects.filter(pk=run.pk).update(
        status="running", worker="busy:1", heartbeat_at=timezone.now() - timedelta(seconds=40)
    )
    sent: list[int] = []
    monkeypatch.setattr(tasks.execute_run_task, "apply_async", lambda args, **options: sent.append(args[0]))
    real_recover, now = services.runs_to_recover, [1000.0]

    def database_away(**options):
        raise OperationalError("connection to server at 127.0.0.1 failed: Connection refused")

    judge = services.StaleJudge(clock=lambda: now[0])
    monkeypatch.setattr(services, "runs_to_recover", database_away)
    assert tasks.sweep(judge) == 0
    monkeypatch.setattr(services, "runs_to_recover", real_recover)
    now[0] += 1  # the database is back: the run's worker has not had the chance to beat yet
    assert tasks.sweep(judge) == 0 and sent == [], "not handed on while its heartbeat may lag"
    now[0] += 30  # a stale time with the database back and still no beat: the worker is dead
    assert tasks.sweep(judge) == 1 and sent == [run.pk]


def test_an_executor_stuck_past_the_time_limit_leaves_a_run_taken_over_alone(
    alice_session, monkeypatch, settings
):
    """A worker frozen longer than the stale time had its run handed on; thawed, its time limit
    fired and it marked the run failed ("took longer than the time limit") while the worker that
    took it over was answering it."""
    from asgiref.sync import async_to_sync, sync_to_async

    from chat import engine, tasks

    settings.NEXUS_RUN_TIME_LIMIT = 0.3
    run = services.message_post(session=alice_session, content="What is 2+2?")

    async def stuck_then_taken_over(run_id: int, **options) -> str:
        await sync_to_async(services.run_claim)(run_id, worker=engine.worker_name())
        await sync_to_async(ReasoningRun.objects.filter(pk=run_id).update)(worker="other-host:7")
        await asyncio.sleep(5)  # frozen past the limit
        return "succeeded"

    monkeypatch.setattr(engine, "execute_run", stuck_then_taken_over)
    assert async_to_sync(tasks.execute_with_time_limit)(run.pk) == "moved"
    run.refresh_from_db()
    assert (run.status, run.worker, run.error) == ("running", "other-host:7", "")
