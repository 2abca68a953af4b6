"""Stop requests reach the runs a process executes through one poll for all of them.

`services.run_stop` marks a run cancelled in the database, so Stop works the same in the
server process and in any Celery worker. Each run used to poll for its own stop four times a
second: a worker holding 100 runs sent 400 queries a second for that alone (more than its
trace writes). One query per event loop now asks about every run the loop executes, and
cancels the engines of those stopped; the cancellation lands at the engine's next await.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from channels.db import database_sync_to_async

from chat.loops import per_loop
from chat.models import ReasoningRun

logger = logging.getLogger(__name__)

STOP_POLL_SECONDS = 0.25


def _cancelled(run_ids: list[int]) -> set[int]:
    stopped = ReasoningRun.objects.filter(pk__in=run_ids, status=ReasoningRun.Status.CANCELLED)
    return set(stopped.values_list("pk", flat=True))


class StopWatch:
    """The engines one event loop executes, and the one poll that stops them."""

    def __init__(self) -> None:
        self.engines: dict[int, asyncio.Task[str]] = {}
        self.stopped: set[int] = set()
        self.poller: asyncio.Task[None] | None = None

    def watch(self, run_id: int, engine: asyncio.Task[str]) -> None:
        self.engines[run_id] = engine
        if self.poller is None or self.poller.done():
            self.poller = asyncio.get_running_loop().create_task(self._poll())

    def was_stopped(self, run_id: int) -> bool:
        """Whether the run's engine was cancelled because the person stopped it."""
        return run_id in self.stopped

    async def release(self, run_id: int) -> None:
        """Stop watching the run; the last one out ends the poll (nothing outlives the runs)."""
        self.engines.pop(run_id, None)
        self.stopped.discard(run_id)
        if not self.engines and self.poller is not None:
            poller, self.poller = self.poller, None
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller

    async def _poll(self) -> None:
        while self.engines:
            await asyncio.sleep(STOP_POLL_SECONDS)
            try:
                stopped = await database_sync_to_async(_cancelled)(list(self.engines))
            except Exception as exc:  # a missed poll only delays a stop
                logger.warning("stop check for %d run(s) failed: %s", len(self.engines), exc)
                continue
            for run_id in stopped:
                engine = self.engines.get(run_id)
                if engine is not None and not engine.done():
                    self.stopped.add(run_id)
                    engine.cancel()


stop_watch = per_loop(StopWatch)  # the running loop's StopWatch
