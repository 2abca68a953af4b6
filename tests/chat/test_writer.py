"""The event writer: many runs' events in one transaction, in order, write-behind, and one
run's bad event or a lost connection costing no other run anything."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from chat import services, writer
from chat.models import LLMCall, ReasoningRun, TraceEvent
from chat.sink import RunSink, session_group
from chat.writer import Item, RunChange, event_writer
from reasoning.events import Event

pytestmark = pytest.mark.django_db


def event(sequence: int, kind: str = "iteration", **payload) -> Event:
    return Event(sequence, time.time(), kind, "Phase 1: Execution (DIRECT)", "trace", payload)


def llm_call(sequence: int, tokens: int = 10) -> Event:
    return event(
        sequence,
        "llm.call",
        component="response",
        provider="offline",
        model="nexus-offline",
        input_tokens=tokens,
        output_tokens=tokens,
        cache_read_tokens=0,
        cache_write_tokens=0,
        cost="0.001",
    )


def delta(sequence: int, draft: str, offset: int, text: str) -> Event:
    return event(
        sequence, "answer.delta", draft=draft, attempt=1, strategy="direct", offset=offset, text=text
    )


@pytest.fixture
def runs(alice):
    return [
        services.message_post(session=services.session_create(owner=alice), content=f"Question {n}")
        for n in range(3)
    ]


def sequences(run: ReasoningRun) -> list[int]:
    return list(TraceEvent.objects.filter(run=run).order_by("sequence").values_list("sequence", flat=True))


def test_runs_events_are_stored_together_in_order_and_after_the_run_went_on(runs, monkeypatch):
    real_store = writer.store

    def unhurried_store(items):  # a transaction takes a moment, as under load: events queue meanwhile
        time.sleep(0.05)
        return real_store(items)

    monkeypatch.setattr(writer, "store", unhurried_store)

    async def scenario() -> tuple[int, int, int]:
        sinks = [RunSink(run, behind=True) for run in runs]
        for seq in range(1, 6):
            for sink in sinks:
                await sink(event(seq))  # returns at once: the engine does not wait for the database
        written_before_drain = event_writer().events
        for sink in sinks:
            await sink.drain()
        return event_writer().batches, event_writer().events, written_before_drain

    batches, events, written_before_drain = async_to_sync(scenario)()
    assert written_before_drain < 15, "written behind the runs, not before they go on"
    assert events == 15 and batches <= 2, "events queued while a batch is written go together"
    for run in runs:
        assert sequences(run) == [1, 2, 3, 4, 5]
        run.refresh_from_db()
        assert run.next_sequence == 6


def test_a_bad_event_fails_only_its_own_run_and_keeps_what_came_before(runs):
    good, bad, _ = runs

    async def scenario() -> BaseException | None:
        good_sink, bad_sink = RunSink(good, behind=True), RunSink(bad, behind=True)
        await good_sink(event(1))
        await bad_sink(event(1))
        await bad_sink(event(2, "llm.call"))  # malformed: no model, no tokens
        await bad_sink(event(3))
        await good_sink(llm_call(2))
        await good_sink.drain()
        with pytest.raises(KeyError):
            await bad_sink.drain()
        with pytest.raises(KeyError):
            await bad_sink(event(4))  # the run stops at its next event
        return bad_sink.error

    error = async_to_sync(scenario)()
    assert isinstance(error, KeyError)
    assert sequences(good) == [1, 2] and LLMCall.objects.filter(run=good).count() == 1
    assert sequences(bad) == [1], "what the run emitted before the bad event is kept, nothing after it"


@pytest.mark.django_db(transaction=True)
def test_a_connection_lost_after_commit_is_retried_without_writing_anything_twice(
    runs, monkeypatch, settings
):
    settings.NEXUS_RUN_STALE_SECONDS = 10
    run = runs[0]
    real_store, calls = writer.store, []

    def flaky_store(items):
        rows = real_store(items)
        calls.append(len(items))
        if len(calls) == 1:  # committed, then the connection dropped before the reply
            raise OperationalError("server closed the connection unexpectedly")
        return rows

    monkeypatch.setattr(writer, "store", flaky_store)

    async def scenario() -> None:
        sink = RunSink(run, behind=True)
        together = [event_writer().submit(sink, "event", e) for e in (event(1), llm_call(2, tokens=7))]
        await asyncio.gather(*together)
        await sink(event(3))
        await sink.drain()

    async_to_sync(scenario)()
    assert calls == [2, 1], "the first batch was committed, then written again (and found written)"
    assert sequences(run) == [1, 2, 3]
    assert LLMCall.objects.filter(run=run).count() == 1
    run.refresh_from_db()
    assert (run.input_tokens, run.next_sequence) == (7, 4), "the retried batch counted once"


def test_a_batch_folds_a_runs_draft_and_counters_into_its_row(runs):
    run = runs[0]
    sink = RunSink(run, behind=True)
    events = [
        delta(1, "d1", 0, "Par"),
        delta(2, "d1", 3, "is is"),
        event(3, "answer.discarded", draft="d1", reason="quality", text="Paris is"),
        delta(4, "d2", 0, "Paris"),
        delta(5, "d2", 5, "."),
        llm_call(6, tokens=5),
        llm_call(7, tokens=6),
        event(8, "escalation", from_strategy="direct", to_strategy="light_planning"),
    ]
    writer.store([Item(sink, "event", e, None) for e in events])  # one transaction, as the writer does
    run.refresh_from_db()
    assert (run.draft_id, run.draft_text) == ("d2", "Paris."), "the draft the batch ended with"
    assert (run.input_tokens, run.output_tokens, run.cost) == (11, 11, Decimal("0.002"))
    assert run.escalation_count == 1 and run.next_sequence == 9
    assert sequences(run) == [3, 6, 7, 8], "draft batches are folded into the run, never rows"
    assert sink.messages(events) == [
        {"type": "answer.delta", "run": run.pk, "seq": 2, "draft": "d1", "offset": 0, "text": "Paris is"},
        {"type": "trace.event", "run": run.pk, "seq": 3, "kind": "answer.discarded"},
        {"type": "answer.delta", "run": run.pk, "seq": 5, "draft": "d2", "offset": 0, "text": "Paris."},
        {"type": "trace.event", "run": run.pk, "seq": 8, "kind": "escalation"},
    ], "pages hear of a batch once per stretch of trace events, and of joined draft text"


def test_pages_are_sent_the_trace_rows_as_stored_and_the_event_they_follow(runs):
    """A page that has a run's events up to `after` draws the carried rows without reading them
    back, so they must be the rows as stored; draft batches take sequences but have no rows."""
    run = runs[0]
    sink = RunSink(run)
    first = [event(1, "run.started"), event(2, "analysis.started"), delta(3, "d1", 0, "Par")]
    second = [delta(4, "d1", 3, "is"), event(5, "quality.started"), event(6, "iteration", note="y" * 20_000)]
    rows = writer.store([Item(sink, "event", e, None) for e in first])
    messages = sink.messages(first, {row[1]: row for row in rows})
    stored = {e.sequence: e for e in TraceEvent.objects.filter(run=run)}
    carried = messages[0]["rows"]
    assert messages[0]["after"] == 0 and [row[0] for row in carried] == [1, 2]
    for seq, kind, phase, level, payload, created in carried:
        row = stored[seq]
        assert (kind, phase, level, payload) == (row.kind, row.phase, row.level, row.payload)
        assert datetime.fromisoformat(created) == row.created_at
    rows = writer.store([Item(sink, "event", e, None) for e in second])
    messages = sink.messages(second, {row[1]: row for row in rows})
    trace = [m for m in messages if m["type"] == "trace.event"]
    assert len(trace) == 1 and trace[0]["seq"] == 6
    assert "rows" not in trace[0], "a payload too large to carry is read back by the pages"
    assert sink.messages([event(7)], {})[0] == {
        "type": "trace.event",
        "run": run.pk,
        "seq": 7,
        "kind": "iteration",
    }
    rows = writer.store([Item(sink, "event", event(8, "quality.started"), None)])
    assert sink.messages([event(8, "quality.started")], {row[1]: row for row in rows})[0]["after"] == 7
    resumed = RunSink(ReasoningRun.objects.get(pk=run.pk))
    rows = writer.store([Item(resumed, "event", event(9), None)])
    assert "rows" not in resumed.messages([event(9)], {row[1]: row for row in rows})[0], (
        "a resumed run does not know which event its pages saw last: they read its first batch back"
    )


def test_a_run_change_is_one_update_whatever_order_its_parts_came_in():
    change = RunChange()
    change.add("escalation_count", 1)
    change.set(escalation_count=3)  # the run's end states the total
    change.add("input_tokens", 5)
    change.add("input_tokens", 6)
    change.set(draft_id="d1", draft_text="Par")
    change.append("draft_text", "is")
    change.append("error", "x")
    change.set(error="")
    assert change.values == {"escalation_count": 3, "draft_id": "d1", "draft_text": "Paris", "error": ""}
    assert change.adds == {"input_tokens": 11} and change.appends == {}
    change.add("escalation_count", 1)
    assert change.values["escalation_count"] == 4


def test_a_run_keeps_its_first_answer_when_a_resumed_run_answers_again(runs):
    run = runs[0]

    async def scenario() -> None:
        first = RunSink(run, behind=True)
        await first(event(1, "answer.final", answer="391", answer_kind="answer", draft=None))
        await first.drain()
        again = RunSink(run, behind=True)  # another worker, resuming from an earlier checkpoint
        await again(event(2, "answer.final", answer="Three hundred and ninety-one", draft=None))
        await again.drain()
        assert again.error is None

    async_to_sync(scenario)()
    assert [m.content for m in run.answers.all()] == ["391"]


def test_a_failed_runs_later_events_do_not_leave_it_waiting(runs):
    """Events a run emitted while its failing batch was being written are dropped, and its
    drain returns (raising why) instead of waiting for them forever (found in review)."""
    run = runs[0]

    async def scenario() -> None:
        sink = RunSink(run, behind=True)
        await sink(event(1, "llm.call"))  # malformed (no tokens): its batch fails
        await sink(event(2))  # emitted while the writer is still on event 1
        await sink(event(3))
        with pytest.raises(KeyError):
            await asyncio.wait_for(sink.drain(), timeout=10)

    async_to_sync(scenario)()
    assert sequences(run) == []


def claim_from_a_stale_worker(run_id: int, worker: str) -> ReasoningRun:
    """Claim a running run as a sweep's redelivery does once its worker's heartbeat is stale."""
    stale = timezone.now() - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS + 1)
    ReasoningRun.objects.filter(pk=run_id).update(heartbeat_at=stale)
    return services.run_claim(run_id, worker=worker)


@pytest.mark.parametrize("writes_first", ["old executor", "new executor"])
def test_a_run_taken_over_by_another_worker_stops_writing_and_the_new_executor_goes_on(runs, writes_first):
    """A worker whose heartbeat went stale under a database restart kept executing its run
    while a second worker, handed the run by the sweeper, resumed it at the next stored
    sequence: whichever wrote that number second failed on the unique constraint, and the
    run ended "Something went wrong" (found under load with faults). The old executor stops,
    writing nothing more, whoever comes first; the new one writes on."""
    run, other = runs[0], runs[1]
    first = services.run_claim(run.pk, worker="first")
    neighbour = services.run_claim(other.pk, worker="first")

    async def scenario(old: RunSink, neighbour_sink: RunSink) -> BaseException | None:
        await old(event(1))
        await old.drain()
        second = await sync_to_async(claim_from_a_stale_worker)(run.pk, "second")
        assert second is not None and second.next_sequence == 2
        new = RunSink(second, behind=True)

        async def new_executor_writes() -> None:
            await new(event(2, "iteration"))
            await new(event(3))
            await new.drain()  # raised IntegrityError when the old executor had taken number 2

        if writes_first == "new executor":
            await new_executor_writes()
        # The old executor emits the very number the new one resumes at, in one batch with
        # another run of its worker's: that run is not affected.
        await old(event(2, "old.note"))
        await neighbour_sink(event(1))
        with contextlib.suppress(Exception):
            await old.drain()
        await neighbour_sink.drain()
        if writes_first == "old executor":
            await new_executor_writes()
        assert not await sync_to_async(services.run_fail)(run.pk, "crashed", claim=first.delivery_count), (
            "the old executor cannot fail the run the new one holds"
        )
        return old.error

    old_error = async_to_sync(scenario)(RunSink(first, behind=True), RunSink(neighbour, behind=True))
    assert type(old_error).__name__ == "RunTakenOver", "the old executor is told why, and stops quietly"
    assert sequences(run) == [1, 2, 3]
    assert TraceEvent.objects.get(run=run, sequence=2).kind == "iteration", "the new executor's event"
    assert sequences(other) == [1]
    run.refresh_from_db()
    assert (run.status, run.worker, run.next_sequence) == ("running", "second", 4)


class SlowLayer(InMemoryChannelLayer):
    """The in-memory layer with a Redis-like delay on every group send."""

    async def group_send(self, group: str, message: dict) -> None:
        await asyncio.sleep(0.2)
        await super().group_send(group, message)


def test_the_next_batch_is_stored_while_the_pages_hear_of_the_last_in_order(runs):
    run = runs[0]
    layer = SlowLayer()

    async def scenario() -> tuple[list[int], list[int]]:
        channel = await layer.new_channel()
        await layer.group_add(session_group(run.session_id), channel)
        sink = RunSink(run, behind=True)
        sink.layer = layer
        await sink(event(1))
        await asyncio.sleep(0.05)  # event 1 is stored; the page is being told
        await sink(event(2))
        await asyncio.sleep(0.05)
        stored_meanwhile = await sync_to_async(sequences)(run)
        await sink.drain()
        waiting = layer.channels[channel].qsize()  # what the page has been sent by then
        heard = [(await layer.receive(channel))["seq"] for _ in range(waiting)]
        return stored_meanwhile, heard

    stored_meanwhile, heard = async_to_sync(scenario)()
    assert stored_meanwhile == [1, 2], "event 2 is stored while the page hears of event 1"
    assert heard == [1, 2], "a drained run's pages have heard of every batch, in stored order"


def test_events_that_queue_behind_a_slow_push_go_out_together(runs):
    """Redis slower than the database: the writer keeps one push in flight, and what the run
    emitted meanwhile is stored and told as one batch, not one push each (found in review)."""
    run = runs[0]
    layer = SlowLayer()

    async def scenario() -> int:
        sink = RunSink(run, behind=True)
        sink.layer = layer
        sent = 0
        original = layer.group_send

        async def counted(group: str, message: dict) -> None:
            nonlocal sent
            sent += 1
            await original(group, message)

        layer.group_send = counted
        for seq in range(1, 21):
            await sink(event(seq))
            await asyncio.sleep(0.01)
        await sink.drain()
        return sent

    sent = async_to_sync(scenario)()
    assert sequences(run) == list(range(1, 21))
    assert sent <= 4, f"{sent} pushes for 20 events emitted during two slow ones"


@pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
    reason="PostgreSQL's prepared statements (the PostgreSQL pass runs this)",
)
def test_statements_a_connection_repeats_are_prepared_on_postgresql(alice):
    """PostgreSQL parsed and planned every statement anew, its values written into its text by
    the client: prepared once, a run cost PostgreSQL a fifth to a third less CPU."""
    from django.db import connection

    for n in range(6):
        services.message_post(session=services.session_create(owner=alice), content=f"Question {n}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]
    assert any(s.startswith('INSERT INTO "chat_message"') for s in prepared), prepared
    assert any(s.startswith('INSERT INTO "chat_reasoningrun"') for s in prepared), prepared


class ManyLayer(InMemoryChannelLayer):
    """The in-memory layer, taking many sends at once as the Redis one does (counted)."""

    calls = 0

    async def group_send_many(self, sends, *, fallback=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        for group, message in sends:
            await self.group_send(group, message)
        return []


def test_a_batch_of_several_runs_is_told_to_their_pages_in_one_send(runs):
    """Fifty runs' events in a batch were fifty group sends, a tenth of a worker's CPU: a layer
    that takes many sends gets the batch's in one call, each page still hearing its own run."""
    layer = ManyLayer()

    async def scenario() -> dict[int, list[int]]:
        pages = {}
        for run in runs:
            pages[run.pk] = await layer.new_channel()
            await layer.group_add(session_group(run.session_id), pages[run.pk])
        sinks = [RunSink(run, behind=True) for run in runs]
        for sink in sinks:
            sink.layer = layer
        done = [event_writer().submit(sink, "event", event(seq)) for seq in (1, 2) for sink in sinks]
        await asyncio.gather(*done)
        heard = {}
        for run in runs:
            waiting = layer.channels[pages[run.pk]].qsize()
            heard[run.pk] = [(await layer.receive(pages[run.pk]))["seq"] for _ in range(waiting)]
        return heard

    heard = async_to_sync(scenario)()
    assert heard == {run.pk: [2] for run in runs}, "each page hears its run's batch, up to event 2"
    assert layer.calls == 1


def test_a_cancelled_writer_leaves_no_run_waiting(runs, monkeypatch):
    run = runs[0]
    started = asyncio.Event()

    async def scenario() -> bool:
        async def stuck(items):  # a store that never returns (the database hung)
            started.set()
            await asyncio.sleep(3600)

        writer_ = event_writer()
        monkeypatch.setattr(writer_, "_store", stuck)
        done = writer_.submit(RunSink(run, behind=True), "event", event(1))
        await asyncio.wait_for(started.wait(), 5)
        writer_.task.cancel()  # the loop shutting down
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return done.done()

    assert async_to_sync(scenario)(), "the cancelled batch's futures are done, so drains return"


def test_a_call_stored_after_its_run_was_counted_is_added_to_the_usage_rollup(runs):
    """The dashboard counted a run as soon as it finished; its reflection's model calls,
    stored after, never reached the usage tables (31,169 tokens missing after 100 runs)."""
    from django.db.models import Sum

    from teamops.models import CallDay, UsageDay
    from teamops.rollup import rollup

    run = runs[0]
    finish = event(2, "run.finished", final_strategy="direct", initial_strategy="direct", quality=0.9,
                   latency_ms=1200, escalations=0)  # fmt: skip

    async def answered() -> None:
        sink = RunSink(run, behind=True)
        for e in (llm_call(1, tokens=100), finish):
            await sink(e)
        await sink.drain()

    async_to_sync(answered)()
    assert rollup() == 1, "the dashboard counts the finished run"

    run.refresh_from_db()

    async def reflected() -> None:
        sink = RunSink(run, behind=True)
        await sink(llm_call(3, tokens=40))
        await sink.drain()

    async_to_sync(reflected)()
    usage = UsageDay.objects.aggregate(tokens=Sum("input_tokens"), runs=Sum("runs"))
    calls = CallDay.objects.aggregate(calls=Sum("calls"), tokens=Sum("input_tokens"))
    assert usage == {"tokens": 140, "runs": 1} and calls == {"calls": 2, "tokens": 140}
    run.refresh_from_db()
    assert run.input_tokens == 140


def test_a_batch_updates_its_runs_in_id_order_as_the_heartbeat_locks_them(runs):
    """Two transactions locking the same run rows in opposite orders deadlock: the writer's
    batch and the executor's heartbeat both go in id order."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    order = [runs[2], runs[0], runs[1]]  # the order the runs' events came in
    items = [Item(RunSink(run, behind=True), "event", event(1), None) for run in order]
    with CaptureQueriesContext(connection) as queries:
        writer.store(items)
    updated = [
        int(pk)
        for q in queries.captured_queries
        for pk in re.findall(r'UPDATE "chat_reasoningrun" SET .*? WHERE "id" = \'?(\d+)', q["sql"])
    ]
    assert updated == sorted(run.pk for run in runs)

    for run in runs:
        assert services.run_claim(run.pk, worker="w1") is not None
    with CaptureQueriesContext(connection) as queries:
        services.runs_heartbeat([run.pk for run in reversed(runs)], worker="w1")
    statements = [q["sql"] for q in queries.captured_queries if "chat_reasoningrun" in q["sql"]]
    assert statements[0].startswith("SELECT") and "ORDER BY 1 ASC" in statements[0]
    if connection.vendor == "postgresql":
        assert statements[0].endswith("FOR NO KEY UPDATE")
    assert statements[-1].startswith('UPDATE "chat_reasoningrun" SET "heartbeat_at"')
    assert ReasoningRun.objects.filter(pk__in=[r.pk for r in runs], heartbeat_at__isnull=False).count() == 3


def steps_plan(sequence: int) -> Event:
    step = {"status": "pending", "priority": 1, "started_at": None, "completed_at": None, "findings": []}
    step.update(tools_used=[], depends_on=[], spawned_from=None)
    steps = [{**step, "id": f"step_{n}", "description": f"Part {n}"} for n in (1, 2)]
    plan = {"created_by": "light_planning", "query": "Two parts", "steps": steps}
    return event(sequence, "plan.created", plan=plan, mode="light", summary="Two parts", lessons_used=[])


def answered_in_steps() -> list[Event]:
    """The events of an attempt that plans two steps, runs them and is approved."""
    evaluation = {"is_complete": True, "confidence": 0.95, "reasoning": "Both parts.", "missing_aspects": []}
    return [
        event(1, "strategy.selected", strategy="light_planning", attempt=1),
        steps_plan(2),
        *(event(3 + n, "step.started", step_id=f"step_{n + 1}") for n in (0, 1)),
        *(
            event(5 + n, "step.completed", step_id=f"step_{n + 1}", status="completed", findings="")
            for n in (0, 1)
        ),
        event(7, "quality.completed", evaluation=evaluation, approved=True, strategy="light_planning"),
    ]


def test_a_batchs_updates_go_to_postgresql_together_in_the_order_of_their_events(runs):
    """Under load a worker's round trip to the database took milliseconds, and UPDATEs of
    steps, attempts and runs were most of a batch's statements: they are queued and sent
    together before the batch's next other statement, so order (and the rows) stay the same."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chat.models import Attempt, PlanStep

    sinks = [RunSink(run, behind=True) for run in runs]
    items = [Item(sink, "event", e, None) for sink in sinks for e in answered_in_steps()]
    with CaptureQueriesContext(connection) as queries:
        writer.store(items)
    for run in runs:
        steps = PlanStep.objects.filter(plan__run=run).order_by("position")
        assert [(s.step_id, s.status) for s in steps] == [("step_1", "completed"), ("step_2", "completed")]
        assert all(s.started_at and s.completed_at for s in steps)
        attempt = Attempt.objects.get(run=run)
        assert (attempt.status, attempt.approved, attempt.quality_score) == ("completed", True, 0.95)
        run.refresh_from_db()
        assert run.next_sequence == 8 and run.final_strategy == "light_planning"
    updates = sum(q["sql"].count("UPDATE ") for q in queries.captured_queries)
    assert updates == 3 * (4 + 1 + 1), "each step twice, the attempt and the run"
    if connection.vendor == "postgresql":
        # Per run: its attempt, plan and steps inserted (each waits for its ids), then its steps'
        # and attempt's UPDATEs in one command; the runs' UPDATEs in one; and the transaction's
        # savepoint and release; the trace rows go in one COPY, which Django does not log. One
        # at a time it was 30.
        assert len(queries.captured_queries) == 3 * (3 + 1) + 1 + 2
        assert TraceEvent.objects.filter(run__in=runs).count() == 3 * 7


def test_an_escalation_in_one_batch_keeps_the_first_attempts_score(runs):
    """The attempt's score waits in the queue while the next attempt's start marks whatever is
    still in progress as interrupted: the queue goes first, so the score is kept."""
    from chat.models import Attempt

    evaluation = {
        "is_complete": False,
        "confidence": 0.45,
        "reasoning": "One part.",
        "missing_aspects": ["b"],
    }
    events = [
        event(1, "strategy.selected", strategy="direct", attempt=1),
        event(2, "quality.completed", evaluation=evaluation, approved=False, strategy="direct"),
        event(3, "escalation", from_strategy="direct", to_strategy="light_planning"),
        event(4, "strategy.selected", strategy="light_planning", attempt=2),
    ]
    sink = RunSink(runs[0], behind=True)
    writer.store([Item(sink, "event", e, None) for e in events])
    first, second = Attempt.objects.filter(run=runs[0]).order_by("number")
    assert (first.status, first.quality_score, first.approved) == ("escalated", 0.45, False)
    assert (second.strategy, second.status) == ("light_planning", "in_progress")


def test_a_run_stopped_while_its_worker_was_frozen_is_stopped_once_and_keeps_the_draft_it_was_stopped_with(
    runs,
):
    """Found with faults (a worker SIGSTOPped past the stale time, Stop pressed meanwhile):
    the sweep ended the stopped run in its pages ("Stopped; this is what it had written so
    far"), and when the worker thawed its executor went on writing the draft behind that and
    recorded the stop again: the page showed "Stopped" twice in the trace, and the stopped
    answer grew after it was shown. The sweep's stop takes the run over from the frozen
    executor, whose later writes are refused like those of any executor taken over."""
    from chat.engine import finish_unattended_stops

    run = runs[0]
    claimed = services.run_claim(run.pk, worker="frozen")

    async def before_the_freeze(sink: RunSink) -> None:
        await sink(event(1))
        await sink(delta(2, "d1", 0, "Paris is"))
        await sink.drain()

    old = RunSink(claimed, behind=True)
    async_to_sync(before_the_freeze)(old)
    assert services.run_stop(claimed) == "running"
    gone = timezone.now() - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS + 5)
    ReasoningRun.objects.filter(pk=run.pk).update(heartbeat_at=gone, started_at=gone, finished_at=gone)
    assert finish_unattended_stops() == 1  # the sweep, while the worker is frozen

    async def thawed(sink: RunSink) -> int | None:
        # The engine's next delta was on its way; then the executor sees the stop and records it.
        await sink(delta(3, "d1", 8, " the capital"))
        with contextlib.suppress(Exception):
            await sink.drain()
        return await sync_to_async(sink.record_stopped)()

    assert async_to_sync(thawed)(old) is None, "the stop is not recorded twice"
    run.refresh_from_db()
    assert run.status == "cancelled" and run.draft_text == "Paris is", "the draft the person saw stopped"
    assert list(run.events.filter(kind="run.stopped").values_list("sequence", flat=True)) == [3]
    assert sequences(run) == [1, 3]


def test_a_call_a_stopped_run_stores_after_it_was_counted_is_added_to_the_usage_rollup(runs):
    """Found by a diff review: a stopped run is counted (its calls are billed), but a sink for
    it still took its later calls for the run's own, and they never reached the usage tables."""
    from django.db.models import Sum

    from teamops.models import UsageDay
    from teamops.rollup import rollup

    services.run_claim(runs[0].pk, worker="w:1")
    run = ReasoningRun.objects.get(pk=runs[0].pk)

    async def called() -> None:
        sink = RunSink(run, behind=True)
        await sink(llm_call(1, tokens=100))
        await sink.drain()

    async_to_sync(called)()
    run.refresh_from_db()
    services.run_stop(run)
    assert rollup() == 1, "the dashboard counts the stopped run"
    run.refresh_from_db()

    async def late() -> None:
        sink = RunSink(run, behind=True)
        await sink(llm_call(3, tokens=40))
        await sink.drain()

    async_to_sync(late)()
    assert UsageDay.objects.aggregate(tokens=Sum("input_tokens"))["tokens"] == 140
