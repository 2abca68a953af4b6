"""Answer drafts streamed as they are written, batched into `answer.delta` events.

Every model call that may produce the answer streams into a draft with its own id. Text is
a draft until `quality.completed` approves it (`answer.final` names the draft); a draft that
will not become the answer is closed with `answer.discarded` and the reason (the call turned
to a tool, the quality check rejected it, the analysis chose a deeper strategy than the
speculative start, a retry, a newer revision). See reasoning/events.py for the payloads.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from reasoning.events import Emitter

DISCARDED_TEXT_CHARS = 4000


class DraftBook:
    """The drafts of one run: numbers them, and knows the latest one of the current attempt."""

    def __init__(self, emitter: Emitter, *, interval_ms: int) -> None:
        self.emitter = emitter
        self.interval = interval_ms / 1000
        self._count = 0
        self.current: DraftStream | None = None

    def new_id(self) -> str:
        self._count += 1
        return f"d{self._count}"

    def open(self, *, attempt: int, strategy: str, speculative: bool = False) -> DraftStream:
        draft = DraftStream(self, attempt=attempt, strategy=strategy, speculative=speculative)
        self.current = draft
        return draft

    @property
    def current_id(self) -> str | None:
        """The id of the draft the latest answer came from, if it was streamed and is still live."""
        draft = self.current
        return draft.id if draft is not None and draft.text and not draft.discarded else None

    async def discard_current(self, reason: str, **detail: Any) -> None:
        if self.current is not None:
            await self.current.discard(reason, **detail)


class DraftStream:
    """One draft: receives text deltas from a streaming call, emits them in batches."""

    def __init__(self, book: DraftBook, *, attempt: int, strategy: str, speculative: bool) -> None:
        self.book = book
        self.id = book.new_id()
        self.attempt = attempt
        self.strategy = strategy
        self.speculative = speculative
        self.text = ""
        self.offset = 0
        self.discarded = False
        self._pending: list[str] = []
        self._last_flush: float | None = None
        self._timer: asyncio.Task[None] | None = None

    async def delta(self, text: str) -> None:
        """Buffer `text`; the first piece goes out at once, the rest at most once per interval."""
        self._pending.append(text)
        self.text += text
        now = time.monotonic()
        if self._last_flush is None or now - self._last_flush >= self.book.interval:
            await self.flush()
        elif self._timer is None:
            self._timer = asyncio.create_task(self._flush_later(self._last_flush + self.book.interval - now))

    async def _flush_later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._timer = None
        await self.flush()

    async def flush(self) -> None:
        if not self._pending:
            return
        chunk = "".join(self._pending)
        self._pending.clear()
        offset, self.offset = self.offset, self.offset + len(chunk)
        self._last_flush = time.monotonic()
        await self.book.emitter.emit(
            "answer.delta",
            draft=self.id,
            attempt=self.attempt,
            strategy=self.strategy,
            speculative=self.speculative,
            offset=offset,
            text=chunk,
        )

    def stop(self) -> None:
        """Stop the batching timer without sending (the call failed or was cancelled)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def close(self) -> None:
        """Send what is buffered; called when the model call ends."""
        if self._timer is not None:
            timer, self._timer = self._timer, None
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        await self.flush()

    async def reset(self) -> None:
        """The call is retried: this draft is void, the retry streams under a new id."""
        await self.discard("retry")
        self.id = self.book.new_id()
        self.text, self.offset, self.discarded = "", 0, False
        self._last_flush = None
        self.book.current = self

    async def discard(self, reason: str, *, always: bool = False, **detail: Any) -> None:
        """Close the draft for good: it will not become the answer. A draft that streamed
        nothing is discarded silently unless `always`."""
        if self.discarded:
            return
        await self.close()
        self.discarded = True
        if not self.text and not always:
            return
        await self.book.emitter.emit(
            "answer.discarded",
            draft=self.id,
            attempt=self.attempt,
            strategy=self.strategy,
            speculative=self.speculative,
            reason=reason,
            text=self.text[:DISCARDED_TEXT_CHARS],
            **detail,
        )
