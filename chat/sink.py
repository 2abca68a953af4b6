"""The engine's event sink in the web app: persist, then push.

Each event becomes a TraceEvent row plus the domain rows it describes (attempts, plans,
tool executions, model calls, the answer), written by the loop's EventWriter together with
whatever other events are waiting (chat/writer.py); then a message naming the run's last
stored event, with the batch's rows as stored when they are small, goes to the session's
channel group, and consumers render what they lack.

Draft text (`answer.delta`) is the exception: batches are folded into the run's draft
columns, never stored as rows, and pushed as
`{"type": "answer.delta", "run", "seq", "draft", "offset", "text"}` for live pages.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from chat.loops import per_loop
from chat.models import (
    Attempt,
    ChatSession,
    Critique,
    LLMCall,
    Message,
    Plan,
    PlanStep,
    ReasoningRun,
    Reflection,
    ToolExecution,
    TraceEvent,
)
from chat.writer import Batch, RunChange, RunTakenOver, event_writer, update_rows
from nexus.errors import DATABASE_LOST
from reasoning.events import Event
from teamops.rollup import FINISHED

logger = logging.getLogger(__name__)


INTERRUPTED = "Interrupted (the worker stopped)"
STOPPED = "SELECT 1 FROM chat_reasoningrun WHERE id = %s AND status = %s"

# Pages showing a queued run listen here while they do: a run leaving the queue moves the others.
QUEUE_GROUP = "run-queue"


class RunGone(Exception):
    """The run's row was deleted while it ran (its chat was deleted)."""

    def __init__(self, run_id: int) -> None:
        super().__init__(f"Run {run_id} was deleted while it ran.")


class QueueNews:
    """One event loop's "the queue moved" messages: while one is being sent, the runs that
    start meanwhile are told in one more, not one each (fifty runs claimed at once were
    fifty sends, and fifty new Redis connections; the pages refresh once per burst anyway)."""

    def __init__(self) -> None:
        self.sending: asyncio.Task[None] | None = None
        self.again = False

    def moved(self) -> None:
        if self.sending is not None and not self.sending.done():
            self.again = True
            return
        self.sending = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        self.again = True
        while self.again:
            self.again = False
            try:
                await layer.group_send(QUEUE_GROUP, {"type": "queue.moved"})
            except Exception as exc:  # runs that started meanwhile try once more
                logger.warning("could not tell waiting pages the queue moved: %s", exc)


_queue_news = per_loop(QueueNews)


def queue_moved() -> None:
    """Tell pages that show a queued run that a run left the queue, so "Queued (N ahead)"
    counts down without a reload. A lost message only leaves a count stale until the next."""
    _queue_news().moved()


def session_group(session_id: int) -> str:
    return f"session-{session_id}"


def user_group(user_id: int) -> str:
    """Every open chat page of one person (whichever chat it shows): the chat list lives there."""
    return f"user-{user_id}"


def sessions_changed(
    *, owner_id: int, session_id: int, deleted: bool = False, run_id: int | None = None
) -> None:
    """Tell the owner's open pages that a chat was created, renamed, moved up or deleted; with
    `run_id`, moved up by a new question, which the chat's other tabs draw if its first event
    has not brought it within half a second (a run that waits its turn has none to tell them
    with; see SessionConsumer._new_turn_later)."""
    _tell_person(
        owner_id,
        {"type": "sessions.changed", "session": session_id, "deleted": deleted, "run": run_id},
        "the chat list change",
    )


def account_changed(*, user_id: int, session_key: str | None = None) -> None:
    """Ask the person's open pages whether they are still signed in: `session_key` names a
    session just signed out (its pages close at once); without it each page checks its own
    session (a new password or a deactivated account ends the others)."""
    _tell_person(user_id, {"type": "account.changed", "session_key": session_key}, "a sign-out")


def _tell_person(user_id: int, message: dict[str, Any], what: str) -> None:
    """Send `message` to every open page of the person once the change is committed."""
    transaction.on_commit(lambda: tell_group(user_group(user_id), message, what))


def tell_group(group: str, message: dict[str, Any], what: str) -> None:
    """Send `message` to a channel group from synchronous code. Live updates are a courtesy:
    a broken channel layer is logged, never raised (a reload shows the change).

    In the web server the send goes to its event loop and the request does not wait for it: a
    request thread that waited (async_to_sync) for a send the loop never finished, because the
    server was stopping, kept the process from ever exiting."""
    layer = get_channel_layer()
    if layer is None:
        return

    def failed(exc: BaseException) -> None:
        logger.warning("could not tell the open pages about %s: %s", what, exc)

    from chat.dispatch import running_server_loop

    loop = running_server_loop()
    if loop is not None:
        sent = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        sent.add_done_callback(lambda f: f.cancelled() or f.exception() is None or failed(f.exception()))
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception as exc:
        failed(exc)


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


# The most payload a trace message carries to the pages (JSON characters): a larger batch (a long
# tool result, say) is read back from the database by each page instead of crossing Redis.
LIVE_ROWS_CHARS = 16_000


def carried(rows: list[list[Any]]) -> bool:
    """Whether rows are small enough to go with their message (their payloads' JSON, counted
    until the limit is passed)."""
    size = 0
    for row in rows:
        size += len(json.dumps(row[4]))
        if size > LIVE_ROWS_CHARS:
            return False
    return True


# Events whose rows someone reads before the run goes on: the run's own approver waits for its
# request's decision in that row, and a parked run must never be found without its request.
WRITE_THROUGH = frozenset({"tool.approval.requested", "elicitation.requested"})


def without_rows(message: dict[str, Any]) -> dict[str, Any] | None:
    """A trace message without the rows it carries (the pages read them back), for rows the
    channel layer cannot carry; None for a message that carries none."""
    if "rows" not in message:
        return None
    return {k: v for k, v in message.items() if k not in ("rows", "after")}


async def tell_pages(sends: list[tuple[RunSink, list[dict[str, Any]]]]) -> None:
    """Send each run's messages to its chat's pages: through a layer that takes many sends at
    once (Redis), all of them together, in order; otherwise run by run."""
    by_layer: dict[int, list[tuple[RunSink, list[dict[str, Any]]]]] = {}
    for sink, messages in sends:
        by_layer.setdefault(id(sink.layer), []).append((sink, messages))
    for part in by_layer.values():
        many = getattr(part[0][0].layer, "group_send_many", None)
        if many is None:
            await asyncio.gather(*(sink.send_all(messages) for sink, messages in part))
            continue
        pairs = [(session_group(sink.session_id), m) for sink, messages in part for m in messages]
        try:
            failed = await many(pairs, fallback=without_rows)
        except Exception as exc:  # a broken channel layer must not stop the runs
            failed = [(position, exc) for position in range(len(pairs))]
        if failed:  # pages catch up from the database when they reconnect or the next news comes
            groups = sorted({pairs[position][0] for position, _ in failed})
            logger.warning(
                "could not push %d event message(s) to the pages of %s: %s",
                len(failed),
                ", ".join(groups),
                failed[0][1],
            )


class RunSink:
    """The event sink of one run: events go to the loop's EventWriter (chat/writer.py), which
    stores them with the domain rows they describe and then pushes them to the pages.

    Written through (the default), each call returns once its event is stored and pushed.
    Written behind (`behind=True`, how runs execute), a call returns at once and the run goes
    on with its model call while the writer catches up; `drain()` waits for everything sent
    so far, and a failure to store raises at the run's next event or drain.
    """

    def __init__(self, run: ReasoningRun, *, behind: bool = False) -> None:
        self.run_id = run.pk
        self.session_id = run.session_id
        # The owner, when the run came with its session (it does from run_claim).
        session = run._state.fields_cache.get("session")
        self.owner_id: int | None = session.owner_id if session is not None else None
        self.layer = get_channel_layer()
        self.behind = behind
        # Finished (the answer is out, or the person stopped it): model calls from now on come
        # after the run may have been counted in the usage rollup, and are added to it as they
        # are stored.
        self.finished = run.status in FINISHED
        self.error: BaseException | None = None
        self._last: asyncio.Future[None] | None = None
        # The claim this executor holds the run by (written behind: an executor's sink). A
        # later claim means another executor has the run: the writer then stores none of
        # this one's events (see chat.writer.store), whose sequence numbers the other reuses.
        self.claim: int | None = run.delivery_count if behind else None
        # Rows this run created, so later events update them without looking them up.
        # A run with no stored event has no attempts, plans or steps but those this sink writes.
        self._fresh = run.next_sequence == 1
        self._attempt_id: int | None = None
        self._plans: int | None = 0 if self._fresh else None
        self._steps: dict[str, int] = {}
        # The sequence of the run's last trace event the pages were told of (draft batches take
        # sequences too, but have no rows); unknown for a resumed run until its first message.
        self._told: int | None = 0 if self._fresh else None

    async def __call__(self, event: Event) -> None:
        await self._submit("event", event, wait=not self.behind or event.kind in WRITE_THROUGH)

    async def checkpoint(self, tracker_state: dict[str, Any]) -> None:
        await self._submit("checkpoint", tracker_state, wait=not self.behind)

    async def _submit(self, kind: str, value: Any, *, wait: bool) -> None:
        if self.error is not None:
            raise self.error
        self._last = event_writer().submit(self, kind, value)
        if wait:
            await self.drain()
        else:
            # Let the writer start on it now rather than after the run's next stretch of work:
            # the page sees an event sooner, and the run loses nothing (it awaits the model next).
            await asyncio.sleep(0)

    async def drain(self) -> None:
        """Wait until every event sent so far is stored and pushed; raise if one could not be."""
        if self._last is not None and not self._last.done():
            await asyncio.shield(self._last)
        if self.error is not None:
            raise self.error

    def failed(self, error: BaseException) -> None:
        """The writer could not store one of this run's events: the run stops at its next one.
        A run deleted meanwhile (its chat deleted, just after a Stop) stops as RunGone, and one
        another executor took over (whose events took this one's numbers) as RunTakenOver,
        quietly: neither is a crash."""
        if self.error is None:
            if isinstance(error, IntegrityError):
                error = self._explained(error)
            if isinstance(error, RunGone):
                logger.warning(
                    "run %s was deleted while it ran (its chat was deleted); it stops", self.run_id
                )
            elif isinstance(error, RunTakenOver):
                logger.warning("run %s was taken over by another executor; this one stops", self.run_id)
            elif not isinstance(error, DATABASE_LOST):
                logger.error("could not record an event of run %s", self.run_id, exc_info=error)
            self.error = error

    def _explained(self, error: IntegrityError) -> BaseException:
        """RunGone if the run's row is no longer there, RunTakenOver if it was claimed again
        since this executor's claim, else `error` (asked from the writer's database thread)."""
        try:
            claims = list(
                ReasoningRun.objects.filter(pk=self.run_id).values_list("delivery_count", flat=True)
            )
        except Exception:  # not from a thread that may query, or the database away: not known
            return error
        if not claims:
            return RunGone(self.run_id)
        if self.claim is not None and claims[0] > self.claim:
            return RunTakenOver(self.run_id)
        return error

    async def push(self, message: dict[str, Any]) -> None:
        """Tell the session's sockets; a broken channel layer must not stop the run (clients
        catch up from the database when they reconnect). Rows the layer cannot carry (an
        integer too large for msgpack, say) are left for the pages to read back."""
        if self.layer is None:
            return
        try:
            await self.layer.group_send(session_group(self.session_id), message)
        except Exception as exc:
            if (lighter := without_rows(message)) is not None:
                await self.push(lighter)
                return
            logger.warning("could not push event of run %s: %s", self.run_id, exc)

    async def send_all(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            await self.push(message)

    def messages(
        self, events: list[Event], stored: dict[int, list[Any]] | None = None
    ) -> list[dict[str, Any]]:
        """What the pages are told about stored `events`, in order: a run of trace events is one
        message naming the last, and consecutive draft batches are one batch.

        A trace message also carries the rows as stored (`stored`, by sequence) and the run's
        trace event before them (`after`), so a page that has that one renders them without
        reading them back; one whose rows are missing or too large to carry says only how far
        to read (pages then read the rows)."""
        stored = stored or {}
        out: list[dict[str, Any]] = []
        for event in events:
            last = out[-1] if out else None
            if event.kind != "answer.delta":
                if last is None or last["type"] != "trace.event":
                    last = {"type": "trace.event", "run": self.run_id, "after": self._told, "rows": []}
                    out.append(last)
                self._told = event.sequence
                last.update(seq=event.sequence, kind=event.kind)
                row = stored.get(event.sequence)
                if last["rows"] is not None and row is not None:
                    last["rows"].append([row[1], row[2], row[3], row[4], row[5], row[6].isoformat()])
                else:
                    last["rows"] = None
                continue
            p = event.payload
            if (
                last is not None
                and last["type"] == "answer.delta"
                and last["draft"] == p["draft"]
                and last["offset"] + len(last["text"]) == p["offset"]
            ):
                last.update(seq=event.sequence, text=last["text"] + p["text"])
                continue
            out.append(
                {
                    "type": "answer.delta",
                    "run": self.run_id,
                    "seq": event.sequence,
                    "draft": p["draft"],
                    "offset": p["offset"],
                    "text": p["text"],
                }
            )
        for message in out:
            if message["type"] == "trace.event":
                rows, after = message.pop("rows"), message.pop("after")
                if rows and after is not None and carried(rows):
                    message.update(rows=rows, after=after)
        return out

    def apply(self, event: Event, batch: Batch, change: RunChange) -> None:
        """Store one event inside the writer's transaction: its domain rows now (in event order),
        its trace row and its change to the run's row with the rest of the batch. Draft text is
        folded into the run's draft columns, never stored as rows."""
        change.set(next_sequence=event.sequence + 1)
        p = event.payload
        if event.kind == "answer.delta":
            if p["offset"] == 0:
                change.set(draft_id=p["draft"], draft_text=p["text"])
            else:
                change.set(draft_id=p["draft"])
                change.append("draft_text", p["text"])
            return
        created = datetime.fromtimestamp(event.time, tz=UTC)
        handler = getattr(self, "on_" + event.kind.replace(".", "_"), None)
        if handler is not None:
            if event.kind in ("tool.result", "tool.approval.requested", "elicitation.requested"):
                p = {**p, "sequence": event.sequence}
            handler(p, created, batch, change)
        batch.trace_rows.append(
            [
                self.run_id,
                event.sequence,
                event.kind,
                event.phase[:80],
                event.level,
                _without_part_data(event.payload),
                created,
            ]
        )

    # --- one method per event kind that has domain rows ----------------------------------
    # Each runs inside the writer's transaction: rows are written at once (later events of the
    # same batch may update them), the run's own columns go to `change`.

    def _attempt(self) -> int | None:
        if self._attempt_id is None and not self._fresh:
            self._attempt_id = (
                Attempt.objects.filter(run_id=self.run_id)
                .order_by("-number")
                .values_list("pk", flat=True)
                .first()
            )
        return self._attempt_id

    def on_analysis_completed(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        a = p["analysis"]
        change.set(
            complexity_level=a["complexity_level"],
            rationale=a["rationale"],
            confidence=a["confidence"],
            estimated_iterations=a["estimated_iterations"],
            requires_research=a["requires_research"],
            requires_synthesis=a["requires_synthesis"],
            multi_part_query=a["multi_part_query"],
            tool_count_estimate=min(a["tool_count_estimate"], 32767),
        )

    def on_strategy_selected(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        first = self._fresh and self._attempt_id is None  # nothing to interrupt or start again
        if not first:
            update_rows(
                Attempt,
                {"run_id": self.run_id, "status": Attempt.Status.IN_PROGRESS},
                {"status": Attempt.Status.FAILED, "outcome": INTERRUPTED, "completed_at": at},
            )
        values = {"strategy": p["strategy"], "status": Attempt.Status.IN_PROGRESS, "started_at": at}
        number = {"run_id": self.run_id, "number": p["attempt"]}
        if not first and update_rows(Attempt, number, values):  # a resumed run starting its attempt again
            self._attempt_id = Attempt.objects.values_list("pk", flat=True).get(**number)
        else:
            self._attempt_id = Attempt.objects.create(**number, **values).pk
        change.set(final_strategy=p["strategy"])
        if p["attempt"] == 1:
            change.set(initial_strategy=p["strategy"])

    def on_plan_created(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        plan_data = p.get("plan")
        if not plan_data:
            return
        if self._plans is None:
            self._plans = Plan.objects.filter(run_id=self.run_id).count()
        revision, self._plans = self._plans, self._plans + 1
        plan = Plan.objects.create(
            run_id=self.run_id,
            attempt_id=self._attempt(),
            revision=revision,
            created_by=p.get("strategy") or plan_data["created_by"],
            mode=p.get("mode", ""),
            summary=p.get("summary", ""),
            lessons_used=p.get("lessons_used", []),
            created_at=at,
        )
        steps = PlanStep.objects.bulk_create(
            PlanStep(
                plan=plan,
                step_id=s["id"],
                position=i,
                description=s["description"],
                status=s["status"],
                priority=s["priority"],
                depends_on=s["depends_on"],
                spawned_from=s["spawned_from"] or "",
                findings=s["findings"],
                tools_used=s["tools_used"],
                started_at=_when(s["started_at"]),
                completed_at=_when(s["completed_at"]),
            )
            for i, s in enumerate(plan_data["steps"])
        )
        self._steps = {step.step_id: step.pk for step in steps if step.pk is not None}

    on_plan_refined = on_plan_created

    def _step(self, step_id: str) -> int | None:
        """The step's row in the run's latest plan (known when this sink wrote that plan)."""
        if step_id not in self._steps:
            if self._fresh:
                return None
            pk = (
                PlanStep.objects.filter(plan__run_id=self.run_id, step_id=step_id)
                .order_by("-plan__revision")
                .values_list("pk", flat=True)
                .first()
            )
            if pk is None:
                return None
            self._steps[step_id] = pk
        return self._steps[step_id]

    def on_step_started(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        step = self._step(p["step_id"])
        if step is not None:
            batch.update(PlanStep, {"id": step}, {"status": PlanStep.Status.IN_PROGRESS, "started_at": at})

    def on_step_completed(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        step = self._step(p["step_id"])
        if step is not None:
            findings = [p["findings"]] if p.get("findings") else ([p["error"]] if p.get("error") else [])
            batch.update(
                PlanStep,
                {"id": step},
                {
                    "status": p["status"],
                    "completed_at": at,
                    "findings": findings,
                    "tools_used": p.get("tools_used", []),
                },
            )

    def on_tool_result(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        batch.tool_runs.append(
            ToolExecution(
                run_id=self.run_id,
                attempt_id=self._attempt(),
                call_id=p.get("call_id") or "",
                step_id=p.get("step_id") or "",
                server=p.get("server") or "",
                tool=p.get("server_tool") or p["tool"],
                arguments=p.get("arguments") or {},
                argument_hash=p.get("argument_hash") or "",
                success=p["success"],
                result=p.get("result") or "",
                error=p.get("detail") or p.get("error") or "",  # staff read these: the full story
                duration_ms=max(0.0, p.get("duration_ms") or 0.0),
                cached=p.get("cached", False),
                truncated=p.get("truncated", False),
                strategy=p.get("strategy") or "",
                created_at=at,
                parts=p.get("parts") or [],
                event_sequence=p.get("sequence"),
            )
        )

    def on_tool_approval_requested(
        self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange
    ) -> None:
        from chat.approvals import approval_request

        approval_request(run_id=self.run_id, payload=p, sequence=p.get("sequence"))

    def on_elicitation_requested(
        self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange
    ) -> None:
        from chat.approvals import elicitation_request

        elicitation_request(run_id=self.run_id, payload=p, sequence=p.get("sequence"))

    def on_llm_call(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        cost = Decimal(p.get("cost") or "0")
        (batch.late_calls if self.finished else batch.calls).append(
            LLMCall(
                run_id=self.run_id,
                component=p["component"],
                provider=p.get("provider") or "",
                model=p.get("model") or "",
                input_tokens=p["input_tokens"],
                output_tokens=p["output_tokens"],
                cache_read_tokens=p["cache_read_tokens"],
                cache_write_tokens=p["cache_write_tokens"],
                latency_ms=p.get("latency_ms") or 0.0,
                stop_reason=p.get("stop_reason") or "",
                retries=p.get("retries") or 0,
                cost=cost,
                error=p.get("error") or "",
                created_at=at,
            )
        )
        if self.owner_id is None:
            self.owner_id = ChatSession.objects.values_list("owner_id", flat=True).get(pk=self.session_id)
        tokens = 0
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            tokens += p[key]
            change.add(key, p[key])
        change.add("cost", cost)
        batch.charge(self.owner_id, tokens, cost, at)

    def on_quality_completed(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        evaluation = p["evaluation"]
        batch.update(
            Attempt,
            {"run_id": self.run_id, "status": Attempt.Status.IN_PROGRESS},
            {
                "quality_score": evaluation["confidence"],
                "approved": p["approved"],
                "evaluation": evaluation,
                "status": Attempt.Status.COMPLETED,
                "completed_at": at,
                "outcome": "Approved" if p["approved"] else "Quality insufficient",
            },
        )

    def on_escalation(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        batch.update(
            Attempt,
            {"run_id": self.run_id, "strategy": p["from_strategy"]},
            {"status": Attempt.Status.ESCALATED, "outcome": f"Escalated to {p['to_strategy']}"},
        )
        change.add("escalation_count", 1)

    def on_critique_completed(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        c = p["critique"]
        plan = Plan.objects.filter(run_id=self.run_id).order_by("-revision").first()
        Critique.objects.create(
            run_id=self.run_id,
            plan=plan,
            round=p.get("round", 1),
            overall_score=c["overall_score"],
            feasibility_score=c["feasibility_score"],
            correctness_score=c["correctness_score"],
            efficiency_score=c["efficiency_score"],
            safety_score=c["safety_score"],
            issues=c["issues"],
            strengths=c["strengths"],
            suggestions=c["suggestions"],
            recommendation=c["recommendation"],
            rationale=c["rationale"],
            quick=p.get("quick", False),
            created_at=at,
        )

    def on_reflection_completed(
        self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange
    ) -> None:
        r = p["reflection"]
        earlier = Reflection.objects.filter(run_id=self.run_id).first()
        if earlier is not None and p.get("trigger") == "feedback":
            # Feedback adds to what the run itself taught; it does not erase it.
            r = {
                "insights": [*earlier.insights, *r["insights"]],
                "lessons": list(dict.fromkeys([*earlier.lessons, *r["lessons"]])),
                "improvements": [*earlier.improvements, *r["improvements"]],
                "confidence": r["confidence"],
            }
        Reflection.objects.update_or_create(
            run_id=self.run_id,
            defaults={
                "insights": r["insights"],
                "lessons": r["lessons"],
                "improvements": r["improvements"],
                "confidence": r["confidence"],
                "created_at": at,
            },
        )

    def on_answer_discarded(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        if "draft_id" in change.values:  # the draft this batch wrote is the run's draft now
            if change.values["draft_id"] == p["draft"]:
                change.set(draft_id="", draft_text="")
            return
        cleared = {"draft_id": "", "draft_text": ""}
        batch.update(ReasoningRun, {"id": self.run_id, "draft_id": p["draft"]}, cleared)

    def on_answer_final(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        # The one-answer-per-run constraint: a resumed run keeps its first answer.
        answer = Message(
            run_id=self.run_id,
            role=Message.Role.ASSISTANT,
            session_id=self.session_id,
            content=p["answer"],
            created_at=at,
        )
        Message.objects.bulk_create([answer], ignore_conflicts=True)
        change.set(answer_kind=p.get("answer_kind", "answer"), draft_id="", draft_text="")

    def record_stopped(self) -> int | None:
        """The person stopped the run: say so in the trace, keeping the draft it had (None:
        not recorded, or the run deleted meanwhile with its chat). Recorded once: a sweep that
        ended the run while its worker was frozen took it over (see
        engine.finish_unattended_stops), and the thawed executor records nothing more."""
        for _ in range(3):  # an event written by a step still finishing can take the number
            run = (
                ReasoningRun.objects.only("next_sequence", "draft_text", "delivery_count")
                .filter(pk=self.run_id)
                .first()
            )
            if run is None or (self.claim is not None and run.delivery_count > self.claim):
                return None
            if TraceEvent.objects.filter(run_id=self.run_id, kind="run.stopped").exists():
                return None
            try:
                with transaction.atomic():
                    TraceEvent.objects.create(
                        run_id=self.run_id,
                        sequence=run.next_sequence,
                        kind="run.stopped",
                        phase="Stopped",
                        level=TraceEvent.Level.STATUS,
                        payload={"mode": "Stopped", "draft_chars": len(run.draft_text)},
                        created_at=timezone.now(),
                    )
                    ReasoningRun.objects.filter(pk=self.run_id).update(next_sequence=run.next_sequence + 1)
                return run.next_sequence
            except IntegrityError:
                continue
        return None

    def on_run_finished(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        with connection.cursor() as cursor:
            cursor.execute(STOPPED, [self.run_id, ReasoningRun.Status.CANCELLED])
            if cursor.fetchone():
                return  # stopped while finishing: the person's stop stands
        self.finished = True
        change.set(
            status=ReasoningRun.Status.SUCCEEDED,
            finished_at=at,
            final_strategy=p["final_strategy"],
            initial_strategy=p["initial_strategy"],
            final_quality=p["quality"],
            latency_ms=int(p.get("latency_ms") or 0),
            escalation_count=p["escalations"],
        )

    def on_run_failed(self, p: dict[str, Any], at: datetime, batch: Batch, change: RunChange) -> None:
        self.finished = True
        change.set(status=ReasoningRun.Status.FAILED, error=p["error"], finished_at=at)


def _without_part_data(payload: dict[str, Any]) -> dict[str, Any]:
    """A tool result's images and downloads are stored once, on its ToolExecution; the trace
    event lists them without their data (pages fetch them from chat:tool-part)."""
    if "parts" not in payload:
        return payload
    return {**payload, "parts": [{k: v for k, v in part.items() if k != "data"} for part in payload["parts"]]}
