"""The engine↔Django glue: build the engine from settings and execute one run.

`execute_run` is the single entry point for both deployments: the embedded runner and the
Celery task call it with a run id. It claims the run (so only one executor ever works on
it), resumes from the stored tracker state if an earlier worker died, streams every event
into the database and the channel layer, and always leaves the run finished or failed.
The agent mode comes from AGENT_MODE (or the chat's own choice, where the operator allows
it); this module knows only the Mode interface. Each run gets the asking person's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections

from chat import services
from chat.approvals import ChatApprover
from chat.lessons import lessons_for
from chat.loops import per_loop
from chat.memory import DjangoMemoryStore
from chat.models import ReasoningRun
from chat.sink import QUEUE_GROUP, RunGone, RunSink, RunTakenOver, queue_moved, session_group, tell_group
from chat.stops import stop_watch
from chat.tools import registry_for
from nexus.errors import DATABASE_LOST
from reasoning.llm.base import LLMClient
from reasoning.llm.factory import make_client
from reasoning.modes import MODE_NAMES, Mode, ReasoningFailed, ResumeState, create_mode
from reasoning.quality.reflection import reflect_on_feedback
from reasoning.tools.approval import AwaitingApproval
from reasoning.types import Attachment, RunInput
from teamops import telemetry
from teamops.budgets import UserSpendingLimit, refusal_for
from teamops.rollup import rollup_runs_safely

logger = logging.getLogger(__name__)

# How often a worker whose database went away under a run asks whether it is back.
RECONNECT_PAUSE = 0.5


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


_llm_clients = per_loop(dict)


def build_llm() -> LLMClient:
    """The configured provider's client, one per event loop and configuration, shared by the
    loop's runs. A provider SDK client costs about 17 ms of CPU to make (its TLS context) and
    holds the connections to the provider: one per run paid both on every run."""
    config = settings.NEXUS_REASONING
    provider = settings.NEXUS_LLM_PROVIDER
    options: dict[str, Any] = {
        "model": config.model,
        "api_key": settings.ANTHROPIC_API_KEY if provider == "anthropic" else settings.OPENAI_API_KEY,
        "base_url": settings.ANTHROPIC_BASE_URL if provider == "anthropic" else settings.OPENAI_BASE_URL,
        "timeout": config.llm_timeout,
        "max_retries": config.llm_max_retries,
        "offline_latency": settings.OFFLINE_LATENCY_MS / 1000,
        "offline_jitter": min(settings.OFFLINE_LATENCY_JITTER_PCT, 100) / 100,
    }
    try:
        clients = _llm_clients()
    except RuntimeError:  # no running loop (the start-up warm-up): nothing to share with
        return make_client(provider, **options)
    key = (provider, *options.values())
    client = clients.get(key)
    if client is None:
        client = clients[key] = make_client(provider, **options)
    return client


def prepare_executor() -> None:
    """A process about to execute runs loads what every run needs (the modes' code, the tool
    servers) now, not while its first runs wait: the first run on a fresh worker took seconds
    longer than the rest, and a burst of runs on it paid the imports on its event loop. The
    code is then frozen out of the garbage collector's passes (nexus.heap) before the tool
    servers start in the background and before any run."""
    import reasoning.modes.adaptive
    import reasoning.modes.cognitive  # noqa: F401
    from chat.tools import warm_up
    from nexus.heap import freeze_startup_objects
    from reasoning.tools.mcp_pool import load_sdk

    load_sdk()
    build_llm()  # imports the provider's SDK
    freeze_startup_objects()
    warm_up()


def build_mode(name: str | None = None) -> Mode:
    """The agent mode `name` (default: the one AGENT_MODE names), on the configured provider."""
    return create_mode(
        name or settings.AGENT_MODE,
        build_llm(),
        settings.NEXUS_REASONING,
        analysis_cache=DjangoAnalysisCache(),
    )


class DjangoAnalysisCache:
    """The analysis cache on Django's cache, so every process shares it (Redis in team mode)."""

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return cache.get(key)
        except Exception as exc:  # Redis down: analyse again rather than fail the run
            logger.warning("analysis cache unreachable: %s", exc)
            return None

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None:
        with contextlib.suppress(Exception):
            cache.set(key, value, ttl)


async def _start_next_runs(user_id: int) -> None:
    """Start the user's oldest waiting runs now that one of theirs is done."""
    try:
        await database_sync_to_async(start_next_runs)(user_id)
    except DATABASE_LOST as exc:  # the sweeper starts them once the database is back
        logger.warning("could not start the next runs of user %s: %s", user_id, exc)


# Finished runs waiting to be counted in the usage rollup, and the lock that lets one batch at a
# time go per process: building the rollup's statements costs more CPU than running them, so
# runs that finish together (a worker holds fifty) are counted in one batch, not one each.
_rollup_pending: set[int] = set()
_rollup_lock = per_loop(asyncio.Lock)


async def _roll_up(run_id: int) -> None:
    """Count the finished run in the usage rollup, with any others that finished meanwhile."""
    _rollup_pending.add(run_id)
    async with _rollup_lock():
        if run_id not in _rollup_pending:
            return  # counted by the batch that went before
        batch = sorted(_rollup_pending)
        _rollup_pending.clear()
        await database_sync_to_async(rollup_runs_safely)(batch)


async def execute_run(run_id: int, *, worker: str | None = None) -> str:
    """Execute a run to the end; returns "succeeded", "failed", "stopped" (by the person),
    "skipped" (not ours to run), "deleted" (its chat was deleted under it), "interrupted"
    (the database went away; the sweeper resumes it later) or "moved" (another executor
    claimed it meanwhile, see chat.writer.RunTakenOver)."""
    worker = worker or worker_name()
    if run_id in _executing:  # a duplicate job for a run this process is already executing
        return "skipped"
    ended: list[ReasoningRun] = []
    run = await _claim(run_id, worker, ended)
    if run is None:
        for finished in ended:  # finished by the claim itself: no executor tells its pages
            try:
                await tell_run_ended(finished)
            except Exception as exc:  # stored already: the page shows the end on its next load
                logger.warning("could not tell the pages run %s ended: %s", finished.pk, exc)
        return "skipped"
    queue_moved()
    try:
        refusal = await database_sync_to_async(refusal_for)(run.session.owner_id)
    except DATABASE_LOST:
        if await _released_once_database_back(run.pk, worker):
            return await execute_run(run_id, worker=worker)
        return "interrupted"
    if refusal is not None and run.next_sequence == 1:
        # Queued before the budget ran out (or retried): refused before any model call.
        await database_sync_to_async(services.run_fail)(run.pk, refusal)
        await RunSink(run).push({"type": "run.done", "run": run.pk})
        await _roll_up(run.pk)
        await _start_next_runs(run.session.owner_id)
        return "failed"
    sink = RunSink(run, behind=True)
    _executing[run.pk] = worker
    _ensure_heartbeat()
    engine = asyncio.create_task(_run_engine(run, sink))
    stops = stop_watch()
    stops.watch(run.pk, engine)
    try:
        outcome = await engine
    except (AwaitingApproval, BaseExceptionGroup) as exc:
        if not _parked(exc):
            raise
        outcome = "parked"
    except asyncio.CancelledError:
        if not stops.was_stopped(run.pk):
            raise  # cancelled from outside (a time limit), not stopped by the person
        outcome = "stopped"
        # Stopped, the run counts as finished for the usage rollup (a dashboard may count it
        # now): what it emitted before the stop is added to the rollup as it is stored.
        sink.finished = True
        with contextlib.suppress(Exception):
            await sink.drain()  # what the run emitted before the stop comes first
        seq = await database_sync_to_async(sink.record_stopped)()
        if seq is not None:
            await sink.push({"type": "trace.event", "run": run.pk, "seq": seq, "kind": "run.stopped"})
    finally:
        _executing.pop(run.pk, None)
        await stops.release(run.pk)
    if outcome == "interrupted":
        if await _released_once_database_back(run.pk, worker):
            return await execute_run(run_id, worker=worker)
        return outcome
    if outcome == "moved":  # the executor that took the run over ends it and tells its pages
        await database_sync_to_async(close_old_connections)()
        return outcome
    if outcome == "parked":  # its slot is free; the person's decision queues it again
        await _start_next_runs(run.session.owner_id)
        await database_sync_to_async(close_old_connections)()
        return outcome
    await sink.push({"type": "run.done", "run": run.pk})
    await _roll_up(run.pk)
    await _start_next_runs(run.session.owner_id)
    await database_sync_to_async(close_old_connections)()
    return outcome


async def tell_run_ended(run: ReasoningRun | int) -> None:
    """A run that ended without its executor finishing it (a redelivery's claim found its
    answer in or its workers dead too often; the time limit cut it off): its pages get the
    events they may have missed and its end, as an executor would send them (they kept its
    last mode and pulse until a reload, without Try again), and the person's waiting runs
    start."""
    if isinstance(run, int):
        run = await database_sync_to_async(ReasoningRun.objects.select_related("session").get)(pk=run)
    sink = RunSink(run)
    last = run.next_sequence - 1
    if last > 0:
        await sink.push({"type": "trace.event", "run": run.pk, "seq": last})
    await sink.push({"type": "run.done", "run": run.pk})
    await _roll_up(run.pk)
    await _start_next_runs(run.session.owner_id)


async def _claim(run_id: int, worker: str, ended: list[ReasoningRun] | None = None) -> ReasoningRun | None:
    """services.run_claim, through a database connection lost on the way: the job waits (up to
    NEXUS_RUN_STALE_SECONDS) for the database and claims again. Raised out of the job, it left
    the run to the sweeper, 30–60 s of "Starting…": queued and marked sent when the claim never
    happened, running with no one executing it when it had. A claim that went through before
    its answer was lost is this worker's, so it is released to itself first."""
    try:
        await database_sync_to_async(close_old_connections)()
        return await database_sync_to_async(services.run_claim)(run_id, worker=worker, ended=ended)
    except DATABASE_LOST as exc:
        logger.warning("claiming run %s lost the database (%s); claiming again once it is back", run_id, exc)

    def claim_again() -> ReasoningRun | None:
        close_old_connections()
        services.run_release(run_id, worker=worker)
        return services.run_claim(run_id, worker=worker, ended=ended)

    # None when the database stays away: the sweeper hands the run on once it is back.
    return await _once_database_back(claim_again, unless=lambda: run_id in _executing)


async def _released_once_database_back(run_id: int, worker: str) -> bool:
    """Wait (up to NEXUS_RUN_STALE_SECONDS) for the database that went away under a run to
    answer again, then release the run for this worker to resume from its checkpoint. It
    used to wait out the stale-heartbeat time for the sweeper: a 1 s PostgreSQL restart made
    runs of 2 s take 35 s. False if the database stayed away (the sweeper resumes it later)."""
    return bool(await _once_database_back(lambda: services.run_release(run_id, worker=worker)))


async def _once_database_back[T](
    step: Callable[[], T], unless: Callable[[], bool] = lambda: False
) -> T | None:
    """`step` (on a database thread) as soon as the database answers again, asked every
    RECONNECT_PAUSE for up to NEXUS_RUN_STALE_SECONDS; None if it stays away, or if `unless`
    says the step is no longer wanted (another job of this process has the run)."""
    deadline = time.monotonic() + settings.NEXUS_RUN_STALE_SECONDS
    while time.monotonic() < deadline:
        await asyncio.sleep(RECONNECT_PAUSE)
        if unless():
            return None
        try:
            return await database_sync_to_async(step)()
        except DATABASE_LOST:
            continue
    return None


def _parked(error: BaseException) -> bool:
    """Whether the run stopped to wait for a person (alone, or among a group's errors)."""
    if isinstance(error, BaseExceptionGroup):
        return any(_parked(inner) for inner in error.exceptions)
    return isinstance(error, AwaitingApproval)


def resume_after_decision(run_id: int, owner_id: int) -> None:
    """A person decided on a parked run's request: queue it again and hand it to a worker
    through the normal dispatch (the owner's concurrent-run limit applies)."""
    if services.run_unpark(run_id):
        start_next_runs(owner_id)


def stop_parked(run: ReasoningRun) -> None:
    """The person stopped a parked run: no worker holds it, so finish it here the way an
    executor would (the trace says so, its open requests are closed, the page is told)."""
    from chat.approvals import approvals_decline_for_stopped

    sink = RunSink(run)
    approvals_decline_for_stopped(run.pk)
    seq = sink.record_stopped()
    group = session_group(run.session_id)
    if seq is not None:
        tell_group(group, {"type": "trace.event", "run": run.pk, "seq": seq, "kind": "run.stopped"}, "a stop")
    tell_group(group, {"type": "run.done", "run": run.pk}, "a stop")
    rollup_runs_safely([run.pk])
    start_next_runs(run.session.owner_id)


def stop_unattended(run: ReasoningRun) -> None:
    """The person stopped a run no executor will notice the stop of: still queued (a worker
    that takes its job later skips it), or running on a worker that died (its heartbeat stale,
    the sweeper not yet past). Tell the chat's other tabs it ended (they kept it queued or
    pulsing until a reload), the pages waiting behind it that the queue moved, and start the
    person's runs that waited for it."""
    tell_group(session_group(run.session_id), {"type": "run.done", "run": run.pk}, "a stop")
    tell_group(QUEUE_GROUP, {"type": "queue.moved"}, "a stop")
    rollup_runs_safely([run.pk])
    start_next_runs(run.session.owner_id)


def finish_unattended_stops() -> int:
    """End, in their pages, the runs stopped while their worker lay dead (see
    services.runs_stopped_unattended): the trace says Stopped (which also marks them done
    here), the other tabs see the run end, and the person's waiting runs start. A sweep's
    work; returns how many."""
    runs = services.runs_stopped_unattended()
    for run in runs:
        # Its worker may be frozen, not dead: taken over, it writes nothing when it thaws (its
        # draft went on growing behind the stop shown, and it recorded the stop again).
        services.run_take_over_stopped(run.pk)
        seq = RunSink(run).record_stopped()
        if seq is not None:
            tell_group(
                session_group(run.session_id),
                {"type": "trace.event", "run": run.pk, "seq": seq, "kind": "run.stopped"},
                "a stop",
            )
        stop_unattended(run)
    return len(runs)


def start_next_runs(owner_id: int) -> None:
    """Hand the owner's runs that waited for their turn to the executor, oldest first."""
    from chat.dispatch import DispatchError, dispatch_run

    for run_id in services.runs_next_for_owner(owner_id):
        try:
            dispatch_run(run_id)
        except DispatchError:
            # Not dispatched: the next sweep sends it (stamped, it waited for the lost-job check).
            services.runs_mark_dispatched([run_id], dispatched=False)
            return
        services.runs_mark_dispatched([run_id])


async def _run_engine(run: ReasoningRun, sink: RunSink) -> str:
    try:
        context = await database_sync_to_async(_run_context)(run)
        try:
            await build_mode(context["mode"]).run(
                context["input"],
                tools=context["tools"],
                sink=telemetry.traced(sink, run_id=run.pk, session_id=run.session_id),
                resume=context["resume"],
                lessons=context["lessons"],
                checkpoint=sink.checkpoint,
                budget=StoredSpending(UserSpendingLimit(run.session.owner_id), sink),
                memory=context["memory"],
            )
        finally:
            await context["tools"].close()
        await sink.drain()  # the answer and the run's end are stored before the run counts as done
        return "succeeded"
    except Exception as exc:
        with contextlib.suppress(Exception):
            await sink.drain()  # the events before the failure come first
        if isinstance(sink.error, RunGone):
            return "deleted"  # its chat was deleted under it (logged by the sink): nothing to record
        if isinstance(sink.error, RunTakenOver):
            return "moved"  # another executor has it (logged by the sink): it records the end
        if not _database_lost(exc) and not _database_lost(sink.error):
            return await _record_failure(run, exc)
        # Nothing can be recorded now. The run stops beating, so once the database is back the
        # sweeper hands it to a worker that resumes from the last checkpoint.
        logger.warning("run %s interrupted, the database was lost: %s", run.pk, exc)
        return "interrupted"
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await sink.drain()
        await database_sync_to_async(services.run_fail)(
            run.pk, "The answer took longer than the time limit and was stopped.", claim=run.delivery_count
        )
        raise


class StoredSpending:
    """The person's spending limit, asked once the run's own events are stored: its model calls
    are charged as their events are written, and those are written behind the run."""

    def __init__(self, limit: UserSpendingLimit, sink: RunSink) -> None:
        self.limit = limit
        self.sink = sink

    async def exceeded(self) -> str | None:
        await self.sink.drain()
        return await self.limit.exceeded()


def _database_lost(error: BaseException | None) -> bool:
    """Whether the database connection dropping caused `error` (the engine may wrap it)."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, DATABASE_LOST):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


async def _record_failure(run: ReasoningRun, error: Exception) -> str:
    if isinstance(error, ReasoningFailed):
        await database_sync_to_async(services.run_fail)(run.pk, error.user_message, claim=run.delivery_count)
        return "failed"
    logger.error("run %s crashed", run.pk, exc_info=error)
    await database_sync_to_async(services.run_fail)(
        run.pk,
        "Something went wrong inside Nexus while answering; the error is in the server log.",
        claim=run.delivery_count,
    )
    return "failed"


def _run_context(run: ReasoningRun) -> dict[str, Any]:
    """What the engine needs besides the run itself (which run_claim has just read)."""
    return {
        "input": RunInput.of(
            run.query or run.user_message.content,
            services.conversation_history(run),
            [Attachment.from_dict(item) for item in run.attachments or []],
        ),
        "resume": ResumeState(
            tracker_state=run.tracker_state if run.next_sequence > 1 and run.tracker_state else None,
            next_sequence=run.next_sequence,
            started_at=run.started_at,
        ),
        "lessons": lessons_for(run),
        "tools": _registry(run),
        # The mode the run started in (older runs stored none: the chat's, as they did).
        "mode": run.agent_mode if run.agent_mode in MODE_NAMES else services.mode_for(run.session),
        "memory": DjangoMemoryStore(user=run.session.owner, session=run.session, run=run)
        if settings.NEXUS_MEMORY
        else None,
    }


def _registry(run: ReasoningRun) -> Any:
    registry = registry_for(run.session.owner)
    registry.approver = ChatApprover(run)
    return registry


async def reflect_on_run_feedback(run_id: int, *, rating: str, comment: str = "") -> dict[str, Any] | None:
    """Reflect on a finished run because its answer got feedback (thumbs up or down).

    For the feedback view to call (in a background task: it makes a model call). Appends a
    `reflection.completed` event (trigger "feedback") to the run's trace and stores the
    Reflection, whose lessons then reach the user's later runs. None when the run has no
    stored tracker or reflection is switched off; model failures are logged, not raised."""
    if not settings.NEXUS_REASONING.enable_reflection:
        return None
    run = await database_sync_to_async(
        lambda: ReasoningRun.objects.select_related("session").filter(pk=run_id).first()
    )()
    if run is None or not run.tracker_state or run.is_active:
        return None
    sink = RunSink(run)
    try:
        return await reflect_on_feedback(
            build_llm(),
            settings.NEXUS_REASONING,
            question=run.query or "",
            tracker_state=run.tracker_state,
            feedback={"rating": rating, "comment": comment},
            sink=sink,
            start_sequence=run.next_sequence,
        )
    except Exception:
        logger.exception("reflecting on feedback for run %s failed", run_id)
        return None


# Runs this process executes now ({run id: worker name}), and the one task that keeps their
# heartbeats fresh: one UPDATE per beat for all of them, on a thread of its own, so a busy
# event loop or a queue of database writes never lets a healthy run look orphaned.
_executing: dict[int, str] = {}
_heartbeats: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
_heartbeat_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nexus-heartbeat")


def _ensure_heartbeat() -> None:
    loop = asyncio.get_running_loop()
    task = _heartbeats.get(loop)
    if task is None or task.done():
        _heartbeats[loop] = loop.create_task(_beat())


async def _beat() -> None:
    beat = sync_to_async(_beat_once, thread_sensitive=False, executor=_heartbeat_thread)
    while _executing:
        await asyncio.sleep(settings.NEXUS_HEARTBEAT_SECONDS)
        try:
            await beat(dict(_executing))
        except Exception as exc:  # a missed beat is not worth stopping the runs for
            logger.warning("heartbeat for %d run(s) failed: %s", len(_executing), exc)


def _beat_once(runs: dict[int, str]) -> None:
    close_old_connections()
    by_worker: dict[str, list[int]] = {}
    for run_id, worker in runs.items():
        by_worker.setdefault(worker, []).append(run_id)
    for worker, run_ids in by_worker.items():
        services.runs_heartbeat(run_ids, worker=worker)
