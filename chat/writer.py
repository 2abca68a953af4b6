"""One writer per event loop stores the events of every run the loop executes, many to a
transaction, and then tells the pages.

A run emits about twenty events, most of them around its model calls. Written one at a time,
each cost a hop to a database thread, a transaction and a handful of ORM statements, and a
worker holding fifty runs spent more CPU on its audit trail than on anything else. The writer
takes whatever has queued up since its last transaction, from all runs, and writes it at once:
domain rows in event order, then one statement for all the trace rows and one UPDATE per run.
With nothing else queued a batch is a single event, so under no load nothing waits for
company; under load batches grow and the cost per event falls.

Order: one writer and one queue per loop, so a run's events are stored and pushed in the order
it emitted them. A batch that fails is written again one run at a time, so a bad event fails
only its own run; a lost database connection is retried (see `EventWriter._store`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.db import (
    IntegrityError,
    close_old_connections,
    connection,
    models,
    transaction,
)

from chat.loops import per_loop
from chat.models import LLMCall, ReasoningRun, ToolExecution, TraceEvent
from nexus.errors import DATABASE_LOST
from teamops.budgets import Charge, usage_charges
from teamops.rollup import add_late_calls

if TYPE_CHECKING:
    from chat.sink import RunSink

logger = logging.getLogger(__name__)

# Events written in one transaction at most (a bound on its size, not a wait: a batch never
# waits to fill up).
MAX_BATCH = 500

TRACE_INSERT = (
    "INSERT INTO chat_traceevent (run_id, sequence, kind, phase, level, payload, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s)"
)
TRACE_COPY = "COPY chat_traceevent (run_id, sequence, kind, phase, level, payload, created_at) FROM STDIN"


class RunTakenOver(Exception):
    """Another executor claimed the run while this one still executed it: this worker's
    heartbeat went stale (the database away longer than NEXUS_RUN_STALE_SECONDS, or the
    process stalled) and a sweep or a redelivered job handed the run on. This executor stops
    without writing anything more; the other one goes on from the run's last checkpoint."""

    def __init__(self, run_id: int) -> None:
        super().__init__(f"Run {run_id} was taken over by another executor.")


class RunChange:
    """What a batch changes on one run's row, folded into one UPDATE at the end of the batch:
    fields set (the later event wins), counters added to, and text appended (draft batches)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.adds: dict[str, Any] = {}
        self.appends: dict[str, str] = {}

    def set(self, **values: Any) -> None:
        for name, value in values.items():
            self.values[name] = value
            self.adds.pop(name, None)
            self.appends.pop(name, None)

    def add(self, name: str, amount: int | Decimal) -> None:
        if name in self.values:
            self.values[name] += amount
        else:
            self.adds[name] = self.adds.get(name, 0) + amount

    def append(self, name: str, text: str) -> None:
        if name in self.values:
            self.values[name] += text
        else:
            self.appends[name] = self.appends.get(name, "") + text

    def write(self, run_id: int, batch: Batch) -> None:
        batch.update(ReasoningRun, {"id": run_id}, self.values, adds=self.adds, appends=self.appends)


def update_statement(
    model: type[models.Model],
    where: dict[str, Any],
    values: dict[str, Any],
    *,
    adds: dict[str, Any] | None = None,
    appends: dict[str, str] | None = None,
) -> tuple[str, list[Any]] | None:
    """The UPDATE of `model`'s rows matching every `where` field that sets `values`, adds to
    `adds` and appends to `appends`, with its parameters; None when it changes nothing. The
    same as QuerySet.update for these plain cases, at a fraction of the CPU: the writer runs
    several for every batch, and building them with the ORM cost more than the database took
    to run them."""
    adds, appends = adds or {}, appends or {}
    field = model._meta.get_field
    table = connection.ops.quote_name(model._meta.db_table)

    def column(name: str) -> str:
        return connection.ops.quote_name(field(name).column)

    sets = [f"{column(name)} = %s" for name in values]
    sets += [f"{column(name)} = {column(name)} + %s" for name in adds]
    sets += [f"{column(name)} = {column(name)} || %s" for name in appends]
    if not sets:
        return None
    params = [field(name).get_db_prep_save(value, connection) for name, value in values.items()]
    params += [field(name).get_db_prep_save(amount, connection) for name, amount in adds.items()]
    params += list(appends.values())
    conditions = " AND ".join(f"{column(name)} = %s" for name in where)
    params += [field(name).get_db_prep_value(value, connection) for name, value in where.items()]
    # Only the model's own table and column names are interpolated; values travel as parameters.
    return f"UPDATE {table} SET {', '.join(sets)} WHERE {conditions}", params  # noqa: S608  # nosec B608


def update_rows(
    model: type[models.Model],
    where: dict[str, Any],
    values: dict[str, Any],
    *,
    adds: dict[str, Any] | None = None,
    appends: dict[str, str] | None = None,
) -> int:
    """Run `update_statement` now; the number of rows it changed."""
    statement = update_statement(model, where, values, adds=adds, appends=appends)
    if statement is None:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(*statement)
        return cursor.rowcount


@dataclass
class Batch:
    """The rows one transaction writes besides the domain rows handlers write at once."""

    trace_rows: list[list[Any]] = field(default_factory=list)
    calls: list[LLMCall] = field(default_factory=list)
    # Calls of runs that had finished: maybe counted in the usage rollup already.
    late_calls: list[LLMCall] = field(default_factory=list)
    # Model calls' spending, charged to the people's counters once per batch.
    charges: list[Charge] = field(default_factory=list)
    tool_runs: list[ToolExecution] = field(default_factory=list)
    runs: dict[int, RunChange] = field(default_factory=dict)
    # UPDATEs whose row counts nobody reads, sent together (see `update`).
    updates: list[tuple[str, list[Any]]] = field(default_factory=list)

    def charge(self, user_id: int, tokens: int, cost: Decimal, at: datetime) -> None:
        self.charges.append(Charge(user_id, tokens, cost, 1, at))

    def run(self, run_id: int) -> RunChange:
        change = self.runs.get(run_id)
        if change is None:
            change = self.runs[run_id] = RunChange()
        return change

    def update(
        self,
        model: type[models.Model],
        where: dict[str, Any],
        values: dict[str, Any],
        *,
        adds: dict[str, Any] | None = None,
        appends: dict[str, str] | None = None,
    ) -> None:
        """Queue an UPDATE (see `update_statement`) to go with the others queued before the
        batch's next statement, in one round trip. Under load a worker's database round trip
        took milliseconds (its CPU shared with the database and the other processes), and a
        batch's UPDATEs of steps, attempts and runs were most of its statements: the pages
        heard of events about a second late. The order of statements is kept (see `send`)."""
        statement = update_statement(model, where, values, adds=adds, appends=appends)
        if statement is not None:
            self.updates.append(statement)

    def send(self, then: tuple[str, list[Any]] | None = None) -> list[tuple[Any, ...]]:
        """Send the queued UPDATEs: on PostgreSQL as one command string (bound on the client,
        the way Django binds every query there), elsewhere one by one. `then` is a query sent
        last, in the same round trip; its rows are returned."""
        statements, self.updates = self.updates, []
        if then is not None:
            statements.append(then)
        if not statements:
            return []
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql" and len(statements) > 1:
                cursor.execute(
                    ";\n".join(connection.ops.compose_sql(sql, params) for sql, params in statements)
                )
                if then is None:
                    return []
                while cursor.cursor.nextset():  # the last result is the query's
                    pass
            else:
                for statement in statements:
                    cursor.execute(*statement)
            return cursor.fetchall() if then is not None else []

    def sent_first(self, execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        """A database wrapper: the queued UPDATEs go before any other statement, so every
        statement of the batch runs in the order its event came."""
        if self.updates:
            self.send()
        return execute(sql, params, many, context)


@dataclass
class Item:
    """One event (or a checkpoint of the run's tracker) on its way to the database."""

    sink: RunSink
    kind: str  # "event" or "checkpoint"
    value: Any
    done: asyncio.Future[None]


def _insert_trace_rows(rows: list[list[Any]], batch: Batch) -> None:
    """The batch's trace rows, in one statement. On PostgreSQL through COPY: an INSERT bound on
    the client wrote every payload into the statement's text as a quoted literal, a tenth of a
    worker's CPU under load; COPY sends the rows as they are."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(TRACE_INSERT, rows)
            return
        batch.send()  # COPY does not pass the wrapper that sends the queued UPDATEs first
        with connection.wrap_database_errors, cursor.cursor.copy(TRACE_COPY) as copy:
            for row in rows:
                copy.write_row(row)


CLAIMS = "SELECT id, delivery_count FROM chat_reasoningrun WHERE id IN ({})"


def _check_claims(items: list[Item], batch: Batch) -> None:
    """Send the batch's last UPDATEs (those of its runs) and raise RunTakenOver, rolling the
    batch back, if a run was claimed again since its executor claimed it: its heartbeat went
    stale while it still ran (a database restart outlasting NEXUS_RUN_STALE_SECONDS) and a
    second executor, resuming from the checkpoint, reuses the sequence numbers this one goes
    on emitting. Left to race, whichever wrote a number second failed on the unique
    constraint, often the new executor, and the run ended "Something went wrong". Read after
    the UPDATEs of the runs, in the same round trip, so the rows are locked until the commit: a
    claim either came first (and is seen here) or waits for this batch (and its executor then
    reads the run's next sequence with this batch in)."""
    claims = {item.sink.run_id: item.sink.claim for item in items if item.sink.claim is not None}
    if not claims:
        batch.send()
        return
    query = CLAIMS.format(", ".join(["%s"] * len(claims)))
    for run_id, delivery_count in batch.send(then=(query, list(claims))):
        if delivery_count > claims[run_id]:
            raise RunTakenOver(run_id)


def store(items: list[Item]) -> list[list[Any]]:
    """Write `items` in one transaction (a database thread calls this); return the trace rows
    written, as they were stored, for the pages (see `RunSink.messages`)."""
    batch = Batch()
    with transaction.atomic(), connection.execute_wrapper(batch.sent_first):
        for item in items:
            change = batch.run(item.sink.run_id)
            if item.kind == "checkpoint":
                change.set(tracker_state=item.value)
            else:
                item.sink.apply(item.value, batch, change)
        if batch.calls or batch.late_calls:
            LLMCall.objects.bulk_create([*batch.calls, *batch.late_calls])
        if batch.late_calls:
            add_late_calls([call.pk for call in batch.late_calls])
        if batch.tool_runs:
            ToolExecution.objects.bulk_create(batch.tool_runs)
        if batch.trace_rows:
            prepare = TraceEvent._meta.get_field
            payload, created = prepare("payload"), prepare("created_at")
            rows = [
                [
                    *row[:5],
                    payload.get_db_prep_value(row[5], connection),
                    created.get_db_prep_value(row[6], connection),
                ]
                for row in batch.trace_rows
            ]
            _insert_trace_rows(rows, batch)
        # Not the heartbeat: the executor beats for all its runs at once (chat.engine), and a
        # changed heartbeat_at is an indexed column, which made every batch's UPDATE rewrite the
        # run's index entries (its full-text one included) instead of updating the row in place.
        # In id order, the order the heartbeat locks them in (chat.services.runs_heartbeat):
        # two transactions locking the same runs in opposite orders were a deadlock.
        for run_id, change in sorted(batch.runs.items()):
            change.write(run_id, batch)
        _check_claims(items, batch)
        # Last, just before the commit: these rows are shared with the other workers' writers,
        # which wait for their locks while this transaction holds them.
        usage_charges(batch.charges)
    return batch.trace_rows


def _by_run(items: Iterable[Item]) -> dict[RunSink, list[Item]]:
    runs: dict[RunSink, list[Item]] = {}
    for item in items:
        runs.setdefault(item.sink, []).append(item)
    return runs


def store_apart(items: list[Item], *, retried: bool) -> list[list[Any]]:
    """Write each run's items in a transaction of its own, and a run whose items fail one item
    at a time: what it emitted before the bad event is kept, the run is told (its next event
    raises) and nothing after it is written; the other runs are not affected. After a lost
    connection (`retried`), an integrity error means the earlier attempt was committed after
    all: nothing to do (the pages read those rows back). Returns the trace rows written."""
    rows: list[list[Any]] = []
    for sink, own in _by_run(items).items():
        try:
            rows += store(own)
            continue
        except DATABASE_LOST:
            raise
        except RunTakenOver as exc:
            sink.failed(exc)
            continue
        except Exception as exc:
            if retried and isinstance(exc, IntegrityError):
                continue
        for item in own:  # found again, one item at a time
            try:
                rows += store([item])
            except DATABASE_LOST:
                raise
            except Exception as exc:
                sink.failed(exc)
                break
    return rows


def _sends(items: list[Item], rows: list[list[Any]]) -> list[tuple[RunSink, list[dict[str, Any]]]]:
    """What to tell each run's pages about its stored events (`rows`, their trace rows): one
    message per run for its trace events, and its draft batches joined. Taken as the batch is
    stored: a run failing in a later batch keeps this one's news."""
    stored: dict[int, dict[int, list[Any]]] = {}
    for row in rows:
        stored.setdefault(row[0], {})[row[1]] = row
    sends = []
    for sink, own in _by_run(items).items():
        events = [item.value for item in own if item.kind == "event"]
        messages = sink.messages(events, stored.get(sink.run_id, {}))
        if messages and sink.error is None:
            sends.append((sink, messages))
    return sends


def _finish(taken: list[Item]) -> None:
    for item in taken:
        if not item.done.done():
            item.done.set_result(None)


class EventWriter:
    """The writer of one event loop (see the module's docstring)."""

    def __init__(self, context: contextvars.Context | None = None) -> None:
        self.queue: deque[Item] = deque()
        self.ready = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.context = context
        self.pushing: asyncio.Task[None] | None = None  # the pages being told of the last batch
        self.batches = 0  # transactions written (tests and benchmarks read these)
        self.events = 0

    def submit(self, sink: RunSink, kind: str, value: Any) -> asyncio.Future[None]:
        """Queue an event or checkpoint of `sink`'s run; the future is done once it is stored
        and pushed (or given up on: `sink.error` then says why)."""
        item = Item(sink, kind, value, asyncio.get_running_loop().create_future())
        self.queue.append(item)
        self.ready.set()
        if self.task is None or self.task.done():
            loop = asyncio.get_running_loop()
            self.task = loop.create_task(self._run(), context=self.context or contextvars.copy_context())
        return item.done

    async def _run(self) -> None:
        while True:
            if not self.queue:
                self.ready.clear()
                await self.ready.wait()
                continue
            taken = [self.queue.popleft() for _ in range(min(len(self.queue), MAX_BATCH))]
            items = [item for item in taken if item.sink.error is None]  # not those of failed runs
            sends: list[tuple[RunSink, list[dict[str, Any]]]] = []
            try:
                try:
                    sends = _sends(items, await self._store(items))
                except Exception as exc:  # never stop writing for every other run
                    logger.exception("writing a batch of %d events failed", len(items))
                    for item in items:
                        item.sink.failed(exc)
                # The pages hear of this batch while the next one is stored (a push is a few
                # Redis round trips the next batch need not wait for). One push at a time:
                # pushes keep their order, and what queues up behind a slow one goes as one.
                if self.pushing is not None and not self.pushing.done():
                    await asyncio.wait([self.pushing])
            except BaseException:  # cancelled: nobody may wait for these forever
                _finish(taken)
                raise
            self.pushing = asyncio.get_running_loop().create_task(self._push(sends, taken))

    @staticmethod
    async def _push(sends: list[tuple[RunSink, list[dict[str, Any]]]], taken: list[Item]) -> None:
        """Tell each run's pages about its stored events; then every item taken is done,
        written or not: a failed run's drain must return (and raise its error), never wait for
        events nobody will write."""
        from chat.sink import tell_pages  # chat.sink imports this module

        try:
            if sends:
                await tell_pages(sends)
        except Exception:
            logger.exception("telling the pages about %d stored events failed", len(taken))
        finally:
            _finish(taken)

    async def _store(self, items: list[Item]) -> list[list[Any]]:
        """Write through a database restart: retry a lost connection for up to half the stale
        time (never long enough for a sweeper to hand the runs to another worker meanwhile),
        then give up on these items, so their runs stop and are resumed from their checkpoints
        later. Returns the trace rows written."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + settings.NEXUS_RUN_STALE_SECONDS / 2
        pause, retried = 0.2, False
        while True:
            try:
                if retried:
                    rows = await sync_to_async(store_apart)(items, retried=True)
                else:
                    try:
                        rows = await sync_to_async(store)(items)
                    except DATABASE_LOST:
                        raise
                    except Exception:
                        rows = await sync_to_async(store_apart)(items, retried=False)
                self.batches += 1
                self.events += len(items)
                return rows
            except DATABASE_LOST as exc:
                if loop.time() + pause > give_up:
                    for item in items:
                        item.sink.failed(exc)
                    return []
                logger.warning("database lost while recording %d event(s), retrying: %s", len(items), exc)
            await asyncio.sleep(pause)
            await sync_to_async(close_old_connections)()
            pause, retried = min(pause * 2, 5), True


event_writer = per_loop(EventWriter)  # the running loop's writer


def own_writer() -> EventWriter:
    """The running loop's writer, on a database thread (and connection) of its own, so the
    runs' and the pages' database calls never queue behind a batch. For processes that execute
    runs; tests keep the writer on their own thread (the default) to see its rows."""
    writer = event_writer()
    if writer.context is None:
        context = contextvars.Context()
        context.run(SyncToAsync.thread_sensitive_context.set, ThreadSensitiveContext())
        writer.context = context
    return writer
