"""Hand a run to whatever executes runs: a task in the server process, or a Celery worker.

Embedded mode executes runs on the ASGI server's own event loop, so events reach the
in-memory channel layer that the page's websocket listens on. Outside a server (management
commands, tests) a private background loop stands in.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from concurrent.futures import Future

from django.conf import settings

from nexus.errors import DATABASE_LOST

logger = logging.getLogger(__name__)

_server_loop: asyncio.AbstractEventLoop | None = None
_thread_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()
_running: set[Future[str]] = set()
_background: set[asyncio.Task[None]] = set()


class DispatchError(Exception):
    """The run could not be handed to a worker (the broker is unreachable)."""


def bind_server_loop() -> None:
    """Called from the ASGI app: remember the loop, and recover runs a crash left behind (the
    code runs need was loaded when the app was, see nexus.asgi)."""
    global _server_loop
    if _server_loop is not None:
        return
    _server_loop = asyncio.get_running_loop()
    if settings.NEXUS_RUN_BACKEND == "embedded":
        task = _server_loop.create_task(_sweep_forever())
        _background.add(task)
        task.add_done_callback(_background.discard)


def running_server_loop() -> asyncio.AbstractEventLoop | None:
    """The web server's event loop while it runs (None in a worker, or once it stopped)."""
    loop = _server_loop
    return loop if loop is not None and loop.is_running() else None


def _loop() -> asyncio.AbstractEventLoop:
    global _thread_loop
    if _server_loop is not None and not _server_loop.is_closed():
        return _server_loop
    with _lock:
        if _thread_loop is None or _thread_loop.is_closed():
            _thread_loop = asyncio.new_event_loop()
            threading.Thread(target=_thread_loop.run_forever, name="nexus-runs", daemon=True).start()
    return _thread_loop


def dispatch_run(run_id: int) -> None:
    """Start executing `run_id`; raises DispatchError if the job cannot be queued."""
    if settings.NEXUS_RUN_BACKEND == "celery":
        from chat.tasks import execute_run_task

        try:
            execute_run_task.apply_async((run_id,), retry=False)
        except Exception as exc:
            logger.warning("could not queue run %s: %s", run_id, exc)
            raise DispatchError("The job queue (Redis) is unreachable.") from exc
        return
    # A fresh context: the run must not inherit the request's asgiref thread context, whose
    # executor is gone once the response is sent (database calls would wait forever).
    future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, _execute(run_id), _loop())
    _running.add(future)
    future.add_done_callback(_finished)


async def _execute(run_id: int) -> str:
    from chat.engine import execute_run
    from chat.writer import own_writer

    own_writer()
    return await execute_run(run_id)


def _finished(future: Future[str]) -> None:
    _running.discard(future)
    if not future.cancelled() and future.exception() is not None:
        logger.error("embedded run crashed", exc_info=future.exception())


async def _sweep_forever() -> None:
    from channels.db import database_sync_to_async

    from chat.services import StaleJudge, runs_to_recover

    judge = StaleJudge()
    while True:
        try:
            for run_id in await database_sync_to_async(runs_to_recover)(orphans=judge.judging()):
                dispatch_run(run_id)
        except Exception as exc:
            if isinstance(exc, DATABASE_LOST):
                judge.database_lost()
            logger.warning("run sweep failed: %s", exc)
        await asyncio.sleep(max(5, settings.NEXUS_RUN_STALE_SECONDS // 2))
