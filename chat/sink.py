"""The engine's event sink in the web app: persist, then push.

Each event becomes a TraceEvent row plus the domain rows it describes (attempts, plans,
tool executions, model calls, the answer), written in one transaction; then a small
message naming the event goes to the session's channel group, and consumers render it.

Draft text (`answer.delta`) is the exception: batches are folded into the run's draft
columns with one UPDATE each, never stored as rows, and pushed as
`{"type": "answer.delta", "run", "seq", "draft", "offset", "text"}` for live pages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.db.models import F
from django.utils import timezone

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
from reasoning.events import Event
from teamops.budgets import usage_charge

logger = logging.getLogger(__name__)


# The statements of RunSink._persist_plain (values travel as parameters).
TRACE_INSERT = (
    "INSERT INTO chat_traceevent (run_id, sequence, kind, phase, level, payload, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s)"
)
RUN_PROGRESS = "UPDATE chat_reasoningrun SET next_sequence = %s, heartbeat_at = %s WHERE id = %s"
DRAFT_START = (
    "UPDATE chat_reasoningrun SET draft_id = %s, draft_text = %s, next_sequence = %s, heartbeat_at = %s "
    "WHERE id = %s"
)
DRAFT_APPEND = (
    "UPDATE chat_reasoningrun SET draft_id = %s, draft_text = draft_text || %s, next_sequence = %s, "
    "heartbeat_at = %s WHERE id = %s"
)
TRACE_WITH_PROGRESS = f"WITH event AS ({TRACE_INSERT}) {RUN_PROGRESS}"  # PostgreSQL: both at once


# Pages showing a queued run listen here while they do: a run leaving the queue moves the others.
QUEUE_GROUP = "run-queue"


async def queue_moved() -> None:
    """Tell pages that show a queued run that a run left the queue, so "Queued (N ahead)"
    counts down without a reload. A lost message only leaves a count stale until the next."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(QUEUE_GROUP, {"type": "queue.moved"})
    except Exception as exc:
        logger.warning("could not tell waiting pages the queue moved: %s", exc)


def session_group(session_id: int) -> str:
    return f"session-{session_id}"


def user_group(user_id: int) -> str:
    """Every open chat page of one person (whichever chat it shows): the chat list lives there."""
    return f"user-{user_id}"


def sessions_changed(*, owner_id: int, session_id: int, deleted: bool = False) -> None:
    """Tell the owner's open pages that a chat was created, renamed, moved up or deleted."""
    _tell_person(
        owner_id,
        {"type": "sessions.changed", "session": session_id, "deleted": deleted},
        "the chat list change",
    )


def account_changed(*, user_id: int, session_key: str | None = None) -> None:
    """Ask the person's open pages whether they are still signed in: `session_key` names a
    session just signed out (its pages close at once); without it each page checks its own
    session (a new password or a deactivated account ends the others)."""
    _tell_person(user_id, {"type": "account.changed", "session_key": session_key}, "a sign-out")


def _tell_person(user_id: int, message: dict[str, Any], what: str) -> None:
    """Send `message` to every open page of the person once the change is committed. Live
    updates are a courtesy: a broken channel layer is logged, never raised (a reload shows
    the change)."""

    def push() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(user_group(user_id), message)
        except Exception as exc:
            logger.warning("could not tell the open pages of user %s about %s: %s", user_id, what, exc)

    transaction.on_commit(push)


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


class RunSink:
    def __init__(self, run: ReasoningRun) -> None:
        self.run_id = run.pk
        self.session_id = run.session_id
        self.owner_id: int | None = None
        self.layer = get_channel_layer()

    async def __call__(self, event: Event) -> None:
        if event.kind == "answer.delta":
            p = event.payload
            await self._write(self.fold_delta, event)
            await self.push(
                {
                    "type": "answer.delta",
                    "run": self.run_id,
                    "seq": event.sequence,
                    "draft": p["draft"],
                    "offset": p["offset"],
                    "text": p["text"],
                }
            )
            return
        await self._write(self.persist, event)
        await self.push(
            {"type": "trace.event", "run": self.run_id, "seq": event.sequence, "kind": event.kind}
        )

    def fold_delta(self, event: Event) -> None:
        """Append a draft batch to the run's draft (a new draft starts it over): one UPDATE,
        written by hand like _persist_plain (several batches a second for every run)."""
        p = event.payload
        now = ReasoningRun._meta.get_field("heartbeat_at").get_db_prep_value(timezone.now(), connection)
        with connection.cursor() as cursor:
            cursor.execute(
                DRAFT_START if p["offset"] == 0 else DRAFT_APPEND,
                [p["draft"], p["text"], event.sequence + 1, now, self.run_id],
            )

    async def push(self, message: dict[str, Any]) -> None:
        """Tell the session's sockets; a broken channel layer must not stop the run (clients
        catch up from the database when they reconnect)."""
        if self.layer is None:
            return
        try:
            await self.layer.group_send(session_group(self.session_id), message)
        except Exception as exc:
            logger.warning("could not push event of run %s: %s", self.run_id, exc)

    async def checkpoint(self, tracker_state: dict[str, Any]) -> None:
        await self._write(self._store_checkpoint, tracker_state)

    def _store_checkpoint(self, tracker_state: dict[str, Any]) -> None:
        ReasoningRun.objects.filter(pk=self.run_id).update(
            tracker_state=tracker_state, heartbeat_at=timezone.now()
        )

    async def _write(self, write: Callable[[Any], None], item: Any) -> None:
        """Write through a database restart: retry a lost connection for up to half the stale
        time (never long enough for a sweeper to hand the run to another worker meanwhile),
        then give up, so the run stops and is resumed from its checkpoint later. A retried
        write that turns out to have been committed already counts as written."""
        give_up = asyncio.get_running_loop().time() + settings.NEXUS_RUN_STALE_SECONDS / 2
        pause = 0.2
        retried = False
        while True:
            try:
                # Not database_sync_to_async: its close_old_connections before every call makes
                # the next statement a health check, one more round trip for every event. A
                # connection is checked (and replaced) only after it failed, below.
                await sync_to_async(write)(item)
                return
            except IntegrityError:
                if retried:
                    return
                raise
            except (OperationalError, InterfaceError) as exc:
                if asyncio.get_running_loop().time() + pause > give_up:
                    raise
                logger.warning("database lost while recording run %s, retrying: %s", self.run_id, exc)
            await asyncio.sleep(pause)
            await sync_to_async(close_old_connections)()
            pause = min(pause * 2, 5)
            retried = True

    def persist(self, event: Event) -> None:
        """Store the event's row, the domain rows it describes and the run's progress together."""
        created = datetime.fromtimestamp(event.time, tz=UTC)
        handler = getattr(self, "on_" + event.kind.replace(".", "_"), None)
        if handler is None and "parts" not in event.payload:
            self._persist_plain(event, created)
            return
        with transaction.atomic():
            TraceEvent.objects.create(
                run_id=self.run_id,
                sequence=event.sequence,
                kind=event.kind,
                phase=event.phase[:80],
                level=event.level,
                payload=_without_part_data(event.payload),
                created_at=created,
            )
            run_updates: dict[str, Any] = {
                "next_sequence": event.sequence + 1,
                "heartbeat_at": timezone.now(),
            }
            if handler is not None:
                payload = (
                    {**event.payload, "sequence": event.sequence}
                    if event.kind in ("tool.result", "tool.approval.requested", "elicitation.requested")
                    else event.payload
                )
                run_updates.update(handler(payload, created) or {})
            ReasoningRun.objects.filter(pk=self.run_id).update(**run_updates)

    def _persist_plain(self, event: Event, created: datetime) -> None:
        """An event with no domain rows (most of them): its row and the run's next sequence in
        two fixed statements, one round trip on PostgreSQL. Written by hand because building
        the same two statements with the ORM cost several times their database work in CPU,
        for every event of every run (measured by `make bench`: CPU ms per event)."""
        field = TraceEvent._meta.get_field
        values = [
            self.run_id,
            event.sequence,
            event.kind,
            event.phase[:80],
            event.level,
            field("payload").get_db_prep_value(event.payload, connection),
            field("created_at").get_db_prep_value(created, connection),
        ]
        progress = [
            event.sequence + 1,
            ReasoningRun._meta.get_field("heartbeat_at").get_db_prep_value(timezone.now(), connection),
            self.run_id,
        ]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # One statement, so one round trip and atomic without BEGIN and COMMIT.
                cursor.execute(TRACE_WITH_PROGRESS, values + progress)
                return
            with transaction.atomic():
                cursor.execute(TRACE_INSERT, values)
                cursor.execute(RUN_PROGRESS, progress)

    # --- one method per event kind that has domain rows -----------------------------------

    def _attempt(self) -> Attempt | None:
        return Attempt.objects.filter(run_id=self.run_id).order_by("-number").first()

    def on_analysis_completed(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        a = p["analysis"]
        return {
            "complexity_level": a["complexity_level"],
            "rationale": a["rationale"],
            "confidence": a["confidence"],
            "estimated_iterations": a["estimated_iterations"],
            "requires_research": a["requires_research"],
            "requires_synthesis": a["requires_synthesis"],
            "multi_part_query": a["multi_part_query"],
            "tool_count_estimate": min(a["tool_count_estimate"], 32767),
        }

    def on_strategy_selected(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        Attempt.objects.filter(run_id=self.run_id, status=Attempt.Status.IN_PROGRESS).update(
            status=Attempt.Status.FAILED, outcome="Interrupted (the worker stopped)", completed_at=at
        )
        Attempt.objects.update_or_create(
            run_id=self.run_id,
            number=p["attempt"],
            defaults={"strategy": p["strategy"], "status": Attempt.Status.IN_PROGRESS, "started_at": at},
        )
        updates = {"final_strategy": p["strategy"]}
        if p["attempt"] == 1:
            updates["initial_strategy"] = p["strategy"]
        return updates

    def on_plan_created(self, p: dict[str, Any], at: datetime) -> None:
        plan_data = p.get("plan")
        if not plan_data:
            return
        revision = Plan.objects.filter(run_id=self.run_id).count()
        plan = Plan.objects.create(
            run_id=self.run_id,
            attempt=self._attempt(),
            revision=revision,
            created_by=p.get("strategy") or plan_data["created_by"],
            mode=p.get("mode", ""),
            summary=p.get("summary", ""),
            lessons_used=p.get("lessons_used", []),
            created_at=at,
        )
        PlanStep.objects.bulk_create(
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

    on_plan_refined = on_plan_created

    def _step(self, step_id: str) -> PlanStep | None:
        return (
            PlanStep.objects.filter(plan__run_id=self.run_id, step_id=step_id)
            .order_by("-plan__revision")
            .first()
        )

    def on_step_started(self, p: dict[str, Any], at: datetime) -> None:
        step = self._step(p["step_id"])
        if step:
            step.status, step.started_at = PlanStep.Status.IN_PROGRESS, at
            step.save(update_fields=["status", "started_at"])

    def on_step_completed(self, p: dict[str, Any], at: datetime) -> None:
        step = self._step(p["step_id"])
        if step:
            step.status, step.completed_at = p["status"], at
            step.findings = [p["findings"]] if p.get("findings") else ([p["error"]] if p.get("error") else [])
            step.tools_used = p.get("tools_used", [])
            step.save(update_fields=["status", "completed_at", "findings", "tools_used"])

    def on_tool_result(self, p: dict[str, Any], at: datetime) -> None:
        ToolExecution.objects.create(
            run_id=self.run_id,
            attempt=self._attempt(),
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

    def on_tool_approval_requested(self, p: dict[str, Any], at: datetime) -> None:
        from chat.approvals import approval_request

        approval_request(run_id=self.run_id, payload=p, sequence=p.get("sequence"))

    def on_elicitation_requested(self, p: dict[str, Any], at: datetime) -> None:
        from chat.approvals import elicitation_request

        elicitation_request(run_id=self.run_id, payload=p, sequence=p.get("sequence"))

    def on_llm_call(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        cost = Decimal(p.get("cost") or "0")
        LLMCall.objects.create(
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
        if self.owner_id is None:
            self.owner_id = ChatSession.objects.values_list("owner_id", flat=True).get(pk=self.session_id)
        tokens = sum(
            p[key] for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        )
        usage_charge(user_id=self.owner_id, tokens=tokens, cost=cost, at=at)
        return {
            "input_tokens": F("input_tokens") + p["input_tokens"],
            "output_tokens": F("output_tokens") + p["output_tokens"],
            "cache_read_tokens": F("cache_read_tokens") + p["cache_read_tokens"],
            "cache_write_tokens": F("cache_write_tokens") + p["cache_write_tokens"],
            "cost": F("cost") + cost,
        }

    def on_quality_completed(self, p: dict[str, Any], at: datetime) -> None:
        evaluation = p["evaluation"]
        Attempt.objects.filter(run_id=self.run_id, status=Attempt.Status.IN_PROGRESS).update(
            quality_score=evaluation["confidence"],
            approved=p["approved"],
            evaluation=evaluation,
            status=Attempt.Status.COMPLETED,
            completed_at=at,
            outcome="Approved" if p["approved"] else "Quality insufficient",
        )

    def on_escalation(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        Attempt.objects.filter(run_id=self.run_id, strategy=p["from_strategy"]).update(
            status=Attempt.Status.ESCALATED, outcome=f"Escalated to {p['to_strategy']}"
        )
        return {"escalation_count": F("escalation_count") + 1}

    def on_critique_completed(self, p: dict[str, Any], at: datetime) -> None:
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

    def on_reflection_completed(self, p: dict[str, Any], at: datetime) -> None:
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

    def on_answer_discarded(self, p: dict[str, Any], at: datetime) -> None:
        ReasoningRun.objects.filter(pk=self.run_id, draft_id=p["draft"]).update(draft_id="", draft_text="")

    def on_answer_final(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        run = ReasoningRun.objects.only("session_id").get(pk=self.run_id)
        # get_or_create + the one-answer-per-run constraint: a resumed run keeps its first answer.
        Message.objects.get_or_create(
            run_id=self.run_id,
            role=Message.Role.ASSISTANT,
            defaults={"session_id": run.session_id, "content": p["answer"], "created_at": at},
        )
        return {"answer_kind": p.get("answer_kind", "answer"), "draft_id": "", "draft_text": ""}

    def record_stopped(self) -> int | None:
        """The person stopped the run: say so in the trace, keeping the draft it had."""
        for _ in range(3):  # an event written by a step still finishing can take the number
            run = ReasoningRun.objects.only("next_sequence", "draft_text").get(pk=self.run_id)
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

    def on_run_finished(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        if ReasoningRun.objects.filter(pk=self.run_id, status=ReasoningRun.Status.CANCELLED).exists():
            return {}  # stopped while finishing: the person's stop stands
        return {
            "status": ReasoningRun.Status.SUCCEEDED,
            "finished_at": at,
            "final_strategy": p["final_strategy"],
            "initial_strategy": p["initial_strategy"],
            "final_quality": p["quality"],
            "latency_ms": int(p.get("latency_ms") or 0),
            "escalation_count": p["escalations"],
        }

    def on_run_failed(self, p: dict[str, Any], at: datetime) -> dict[str, Any]:
        return {"status": ReasoningRun.Status.FAILED, "error": p["error"], "finished_at": at}


def _without_part_data(payload: dict[str, Any]) -> dict[str, Any]:
    """A tool result's images and downloads are stored once, on its ToolExecution; the trace
    event lists them without their data (pages fetch them from chat:tool-part)."""
    if "parts" not in payload:
        return payload
    return {**payload, "parts": [{k: v for k, v in part.items() if k != "data"} for part in payload["parts"]]}
