"""Celery tasks: thin wrappers that take an id and call one service."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_shutdown, worker_ready
from django.conf import settings

logger = logging.getLogger(__name__)


@shared_task(
    name="chat.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def execute_run_task(run_id: int) -> str:
    from chat.engine import execute_run
    from chat.services import run_fail

    try:
        return asyncio.run(execute_run(run_id))
    except SoftTimeLimitExceeded:
        run_fail(run_id, "The answer took longer than the time limit and was stopped.")
        return "failed"


@shared_task(name="chat.sweep_runs")
def sweep_runs_task() -> int:
    """Re-queue runs whose worker died (stale heartbeat) or whose dispatch was lost."""
    from chat.services import runs_to_recover

    run_ids = runs_to_recover()
    for run_id in run_ids:
        execute_run_task.apply_async((run_id,))
    return len(run_ids)


@worker_ready.connect
def _sweep_on_start(**kwargs: object) -> None:
    """A new worker recovers what a dead one left, at once and then periodically."""

    def loop() -> None:
        while True:
            try:
                recovered = sweep_runs_task()
                if recovered:
                    logger.info("re-queued %d orphaned run(s)", recovered)
            except Exception as exc:
                logger.warning("run sweep failed: %s", exc)
            time.sleep(max(2, settings.NEXUS_RUN_STALE_SECONDS // 2))

    threading.Thread(target=loop, name="nexus-sweeper", daemon=True).start()


@worker_process_shutdown.connect
def _close_tool_servers(**kwargs: object) -> None:
    from chat.tools import POOL

    POOL.close_sync()
