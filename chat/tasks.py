"""Celery tasks: thin wrappers that take an id and call one service.

A run spends almost all its time waiting on the model, so a worker process executes many at
once: Celery's `threads` pool (NEXUS_WORKER_RUNS threads) takes the jobs off the queue with
acks_late, and each task thread hands its run to ONE asyncio event loop per worker process
and waits for it. The loop holds the runs; the threads only hold the jobs' acknowledgements.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from asgiref.sync import SyncToAsync, ThreadSensitiveContext
from celery import bootsteps, shared_task
from celery.backends.base import DisabledBackend
from celery.signals import worker_process_shutdown, worker_ready
from django.conf import settings
from django.db import close_old_connections

from nexus.errors import DATABASE_LOST

if TYPE_CHECKING:
    from chat.services import StaleJudge

logger = logging.getLogger(__name__)

TIME_LIMIT_MESSAGE = "The answer took longer than the time limit and was stopped."

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
# Database lanes: each run's synchronous database calls go to one of these threads (each with
# its own connection), instead of all runs of the process queueing on asgiref's single
# thread-sensitive thread. A run keeps its lane, so its calls stay on one thread and in order.
DB_LANES = 8
_lanes = [ThreadSensitiveContext() for _ in range(DB_LANES)]


def run_loop() -> asyncio.AbstractEventLoop:
    """This process's event loop for runs, started in a daemon thread on first use (so a
    prefork child gets its own, never its parent's)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="nexus-run-loop", daemon=True).start()
    return _loop


def run_on_loop(coroutine: Coroutine[Any, Any, str]) -> str:
    """Execute `coroutine` on the process's run loop and wait for its result (task threads)."""
    return asyncio.run_coroutine_threadsafe(coroutine, run_loop()).result()


async def execute_with_time_limit(run_id: int) -> str:
    """Execute a run, failing it clearly when it outlives NEXUS_RUN_TIME_LIMIT."""
    from chat.engine import execute_run, tell_run_ended
    from chat.writer import own_writer

    own_writer()
    SyncToAsync.thread_sensitive_context.set(_lanes[run_id % DB_LANES])  # this task's context only
    try:
        async with asyncio.timeout(settings.NEXUS_RUN_TIME_LIMIT):
            return await execute_run(run_id)
    except TimeoutError:
        from channels.db import database_sync_to_async

        from chat.engine import worker_name
        from chat.services import run_fail, run_held_by_another

        if await database_sync_to_async(run_held_by_another)(run_id, worker_name()):
            # Taken over while this executor was stuck past the limit (a frozen worker): the
            # one that holds it now ends it; failing it here failed a run going on elsewhere.
            return "moved"
        await database_sync_to_async(run_fail)(run_id, TIME_LIMIT_MESSAGE)
        try:
            await tell_run_ended(run_id)
        except Exception as exc:  # the page shows the failure on its next load
            logger.warning("could not tell the pages run %s hit the time limit: %s", run_id, exc)
        return "failed"


@shared_task(name="chat.execute_run", acks_late=True, reject_on_worker_lost=True)
def execute_run_task(run_id: int) -> str:
    return run_on_loop(execute_with_time_limit(run_id))


# Runs report through the database, never through Celery's results: a backend of the task's
# own, so queueing a run does not build Celery's per-thread one (every ASGI request is a new
# thread, and building it cost half of what queueing took).
execute_run_task.backend = DisabledBackend(execute_run_task.app)


@shared_task(name="chat.sweep_runs")
def sweep_runs_task(orphans: bool = True, resend_queued: bool = False) -> int:
    """Re-queue runs whose worker died (stale heartbeat, unless `orphans` is False) or whose
    dispatch was lost (every queued one if `resend_queued`), and end in their pages the runs
    stopped while their worker lay dead."""
    from chat.engine import finish_unattended_stops
    from chat.services import runs_mark_dispatched, runs_to_recover

    try:
        finish_unattended_stops()
    except Exception as exc:  # the recovery below matters more
        logger.warning("could not finish runs stopped while their worker was dead: %s", exc)
    run_ids = runs_to_recover(orphans=orphans, resend_queued=resend_queued)
    for index, run_id in enumerate(run_ids):
        try:
            execute_run_task.apply_async((run_id,), retry=False)
        except Exception:
            # The queue is down: this run and the ones after it were not sent (they were all
            # stamped as sent). The next sweep sends them, not one lost-job interval later.
            runs_mark_dispatched(run_ids[index:], dispatched=False)
            raise
    return len(run_ids)


def sweep_interval() -> float:
    """Seconds between a worker's sweeps: a heartbeat, so a dead worker's runs are found about
    a heartbeat after they go stale (every half stale time, they waited up to 45 s more)."""
    return max(1, min(settings.NEXUS_HEARTBEAT_SECONDS, settings.NEXUS_RUN_STALE_SECONDS // 2))


def sweep(judge: StaleJudge, *, resend_queued: bool = False) -> int:
    """One sweep of a worker's sweeper; the runs re-queued (0 when it failed, logged)."""
    try:
        close_old_connections()  # a connection the database dropped is replaced
        recovered = sweep_runs_task(orphans=judge.judging(), resend_queued=resend_queued)
    except Exception as exc:
        if isinstance(exc, DATABASE_LOST):
            judge.database_lost()
        logger.warning("run sweep failed: %s", exc)
        return 0
    if recovered:
        logger.info("re-queued %d run(s)", recovered)
    return recovered


@worker_ready.connect
def _sweep_on_start(**kwargs: object) -> None:
    """A new worker starts its tool servers and its run loop, and recovers what a dead one
    left, at once and then periodically."""
    from chat.engine import prepare_executor
    from chat.services import StaleJudge

    prepare_executor()
    run_loop()
    judge = StaleJudge()

    def loop() -> None:
        resend = True  # jobs sent while no worker ran are gone if the broker restarted meanwhile
        while True:
            sweep(judge, resend_queued=resend and _first_to_resend())
            resend = _broker_back.wait(sweep_interval())
            if resend:  # cleared only once seen: a reconnect during the sweep is not lost
                _broker_back.clear()

    threading.Thread(target=loop, name="nexus-sweeper", daemon=True).start()


# Set when the worker's connection to the broker comes back: the sweeper sweeps at once and
# sends every queued run's job again.
_broker_back = threading.Event()
# Workers that start or reconnect together (a deploy, a Redis blip) re-send the queue once
# between them, not once each: the first takes this key in Redis for a while. A Redis restarted
# empty has lost the key with the jobs.
RESEND_KEY = "nexus:queued-jobs-resent"
RESEND_EVERY = 10


def _first_to_resend() -> bool:
    from django.core.cache import cache

    try:
        return bool(cache.add(RESEND_KEY, 1, RESEND_EVERY))
    except Exception:  # Redis away: sending the jobs again fails anyway, and is retried later
        return True


_consumer_starts = 0


class BrokerBack(bootsteps.StartStopStep):
    """Celery restarts a worker's consumer after it lost the broker. A broker that restarted
    empty (Redis without persistence, or a new one) lost every job queued on it, and those
    runs waited for the sweeper's lost-job interval (a minute by default) saying "Queued"; so
    when the consumer starts again the sweeper sends their jobs again at once (a job that was
    not lost after all finds its run taken and is skipped)."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: Any) -> None:
        global _consumer_starts
        _consumer_starts += 1
        if _consumer_starts > 1:
            logger.info("the broker is back: sending the queued runs' jobs again")
            _broker_back.set()


@worker_process_shutdown.connect
def _close_tool_servers(**kwargs: object) -> None:
    from chat.tools import POOL

    POOL.close_sync()
