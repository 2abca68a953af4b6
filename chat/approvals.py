"""Tool approval in the chat: the run asks, the person decides on a card in the chat.

The run's request is a `ToolApproval` row (written by the sink with the request's trace
event); the run waits for its decision by reading that row, so a run resumed on another
worker finds the same request, pending or decided, and never asks twice. "Always for this
chat" approves that tool's later calls in the same chat without asking.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import date, timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator
from django.db import transaction
from django.utils import timezone

from chat.inputs import finite_number
from chat.models import Elicitation, ReasoningRun, ToolApproval
from chat.services import run_park, run_unpark
from chat.sink import session_group, tell_group
from reasoning.tools.approval import (
    ApprovalDecision,
    ApprovalRequest,
    AwaitingApproval,
    InputRequest,
    edit_refusal,
)

POLL_SECONDS = 0.5
# The note on a request declined because the person stopped its run, and how long a run told
# so waits for its executor to cancel it (they look for a stop every 0.25 s: chat.stops).
STOPPED = "the run was stopped"
STOP_NOTICE_SECONDS = 5.0
logger = logging.getLogger(__name__)


def _decision(approval: ToolApproval) -> ApprovalDecision | None:
    if approval.status == ToolApproval.Status.PENDING:
        return None
    return ApprovalDecision(
        approved=approval.status == ToolApproval.Status.APPROVED,
        arguments=approval.edited_arguments,
        scope=approval.scope,  # type: ignore[arg-type]
        by=approval.decided_by.get_username() if approval.decided_by else "",
        note=approval.note,
    )


class ChatApprover:
    """The engine's `Approver` for one run."""

    def __init__(self, run: ReasoningRun) -> None:
        self.run_id = run.pk
        self.session_id = run.session_id
        self.worker = run.worker

    @database_sync_to_async
    def _known(self, request: ApprovalRequest) -> ApprovalDecision | None:
        own = ToolApproval.objects.filter(run_id=self.run_id, argument_hash=request.argument_hash).first()
        if own is not None:
            return _decision(own)
        always = (
            ToolApproval.objects.filter(
                session_id=self.session_id,
                model_tool=request.tool,
                status=ToolApproval.Status.APPROVED,
                scope=ToolApproval.Scope.CHAT,
            )
            .select_related("decided_by")
            .first()
        )
        if always is not None:
            return ApprovalDecision(
                True, None, "chat", always.decided_by.get_username() if always.decided_by else ""
            )
        return None

    async def known(self, request: ApprovalRequest) -> ApprovalDecision | None:
        return await self._known(request)

    async def wait(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait a moment for a quick decision, then park the run (raising AwaitingApproval):
        its worker slot is free while the person decides, and their decision queues it again.
        A request made inside a tool call in flight cannot be parked: it is waited for."""
        limit = settings.NEXUS_APPROVAL_WAIT_SECONDS
        grace = limit if request.in_call else min(limit, settings.NEXUS_APPROVAL_PARK_SECONDS)
        waited = 0.0
        while True:
            decision = await self._known(request)
            if decision is not None:
                if not decision.approved and decision.note == STOPPED:
                    # Declined because the person pressed Stop: the executor is about to
                    # cancel the run (it looks every quarter second); going on would write an
                    # answer, "You declined the calculator…", for a stopped run.
                    await asyncio.sleep(STOP_NOTICE_SECONDS)
                return decision
            if waited >= grace:
                break
            await asyncio.sleep(POLL_SECONDS)
            waited += POLL_SECONDS
        if not request.in_call and await database_sync_to_async(run_park)(self.run_id, worker=self.worker):
            if await self._known(request) is not None:  # decided while it was being parked
                await database_sync_to_async(run_unpark)(self.run_id)
            raise AwaitingApproval(request.argument_hash)
        await database_sync_to_async(approval_expire)(self.run_id, request.argument_hash)
        return ApprovalDecision(False, note="nobody answered in time")

    async def answer(self, request: InputRequest) -> tuple[str, dict[str, Any] | None]:
        """Wait for the person until the deadline their card shows (the question's own
        budget, counted from when it was first asked, also across a resumed run); then
        the server hears "cancel" and every tab sees the card closed."""
        limit = timedelta(seconds=settings.NEXUS_ELICITATION_WAIT_SECONDS)
        find = Elicitation.objects.filter(run_id=self.run_id, key=request.key).first
        started = timezone.now()
        while True:
            row = await database_sync_to_async(find)()
            if row is not None and row.status != Elicitation.Status.PENDING:
                return row.status, row.content
            if timezone.now() >= (row.created_at if row is not None else started) + limit:
                break
            await asyncio.sleep(POLL_SECONDS)
        if row is not None:
            expired = await database_sync_to_async(
                Elicitation.objects.filter(pk=row.pk, status=Elicitation.Status.PENDING).update
            )(status=Elicitation.Status.CANCEL, answered_at=timezone.now())
            if expired:
                await database_sync_to_async(card_changed)(row.session_id, "elicitation", row.pk)
        return "cancel", None


def elicitation_request(*, run_id: int, payload: dict[str, Any], sequence: int | None) -> Elicitation:
    """The pending question for the person (the same row when a resumed run asks again)."""
    run = ReasoningRun.objects.only("session_id").get(pk=run_id)
    row, created = Elicitation.objects.get_or_create(
        run_id=run_id,
        key=payload["key"],
        defaults={
            "session_id": run.session_id,
            "event_sequence": sequence,
            "server": payload.get("server") or "",
            "tool": payload.get("tool") or "",
            "message": payload.get("message") or "",
            "schema": payload.get("schema") or {},
            "url": payload.get("url") or "",
        },
    )
    if not created and row.status == Elicitation.Status.PENDING:
        row.event_sequence = sequence
        row.save(update_fields=["event_sequence"])
    return row


def _options(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """An enum's (value, label) pairs: a plain `enum` (labelled by the legacy `enumNames` when
    it names each value), or `oneOf`/`anyOf` options, each a `const` with its `title`."""
    values = spec.get("enum")
    if isinstance(values, list):
        names = spec.get("enumNames")
        names = names if isinstance(names, list) and len(names) == len(values) else values
        return [(str(value), str(name)) for value, name in zip(values, names, strict=True)]
    options = spec.get("oneOf") or spec.get("anyOf") or []
    return [
        (str(option["const"]), str(option.get("title") or option["const"]))
        for option in options
        if isinstance(option, dict) and "const" in option
    ]


# The string formats MCP allows in a form, as the browser's input types that check them.
FORMAT_INPUTS = {"email": "email", "uri": "url", "date": "date"}


def _bound(value: Any) -> int | float | None:
    """A schema's bound (minimum, maxLength, ...) when it is a number; anything else is none."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def form_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The form for an elicitation's schema: MCP allows only flat objects of primitives
    (string, possibly a single-select enum; number; integer; boolean) and multi-select enums
    (an array whose items are an enum). Each choice is shown by its title and sent as its value."""
    required = set(schema.get("required") or [])
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type", "string")
        default = spec.get("default", "")
        if kind == "array":
            items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
            options, kind = _options(items), "multiple"
            default = [str(v) for v in default] if isinstance(default, list) else []
        else:
            options = _options(spec)
            kind = "enum" if options else kind
            default = str(default) if options else default
        fields.append(
            {
                "name": str(name),
                "label": str(spec.get("title") or name),
                "help": str(spec.get("description") or ""),
                "kind": kind,
                "choices": [value for value, _ in options],
                "options": options,
                "min_items": spec.get("minItems") if kind == "multiple" else None,
                "max_items": spec.get("maxItems") if kind == "multiple" else None,
                "minimum": _bound(spec.get("minimum")) if kind in ("number", "integer") else None,
                "maximum": _bound(spec.get("maximum")) if kind in ("number", "integer") else None,
                "min_length": _bound(spec.get("minLength")) if kind == "string" else None,
                "max_length": _bound(spec.get("maxLength")) if kind == "string" else None,
                "input_type": FORMAT_INPUTS.get(str(spec.get("format")), "text") if kind == "string" else "",
                "required": name in required,
                "default": default,
            }
        )
    return fields


@transaction.atomic
def elicitation_answer(*, row: Elicitation, user: Any, action: str, data: Any) -> Elicitation:
    """Store the person's answer: "accept" with the form's values (typed by the schema),
    "decline" or "cancel". The first answer wins."""
    row = Elicitation.objects.select_for_update().get(pk=row.pk)
    if row.status != Elicitation.Status.PENDING:
        raise ValidationError("This question was already answered.")
    if not ReasoningRun.objects.filter(pk=row.run_id, status__in=ReasoningRun.ACTIVE).exists():
        # A question left open by a run that ended without it (its process was restarted and
        # the resumed run went on without asking again): nothing reads an answer any more.
        raise ValidationError("This answer has finished; nothing waits for this question any more.")
    if action not in ("accept", "decline", "cancel"):
        raise ValidationError("Choose accept, decline or cancel.")
    content: dict[str, Any] | None = None
    if action == "accept" and not row.url:  # a URL's answer is only that they opened it
        content = {}
        for field in form_fields(row.schema):
            raw = data.get(field["name"], "")
            if field["kind"] == "multiple":
                chosen = [v for v in data.getlist(field["name"]) if v in field["choices"]]
                if not chosen and field["required"]:
                    raise ValidationError(f"Choose at least one value for {field['label']}.")
                least, most = field["min_items"], field["max_items"]
                if chosen and isinstance(least, int) and len(chosen) < least:
                    raise ValidationError(f"Choose at least {least} values for {field['label']}.")
                if isinstance(most, int) and len(chosen) > most:
                    raise ValidationError(f"Choose at most {most} values for {field['label']}.")
                content[field["name"]] = chosen
                continue
            if field["kind"] == "boolean":
                content[field["name"]] = raw in ("on", "true", "1")
                continue
            if raw == "":
                if field["required"]:
                    raise ValidationError(f"Fill in {field['label']}.")
                continue
            if field["kind"] in ("number", "integer"):
                try:
                    content[field["name"]] = int(raw) if field["kind"] == "integer" else finite_number(raw)
                except ValueError:
                    raise ValidationError(f"{field['label']} must be a number.") from None
                _within(field, content[field["name"]])
            elif field["kind"] == "enum" and raw not in field["choices"]:
                raise ValidationError(f"Choose one of the offered values for {field['label']}.")
            else:
                content[field["name"]] = _text(field, str(raw)[:2000])
    row.status, row.content = action, content
    row.answered_by, row.answered_at = user, timezone.now()
    row.save()
    return row


def _within(field: dict[str, Any], value: float) -> None:
    """A number the schema bounds (minimum, maximum): refused outside them, as the server would."""
    low, high = field["minimum"], field["maximum"]
    if (low is not None and value < low) or (high is not None and value > high):
        span = (
            f"from {low:g} to {high:g}"
            if low is not None and high is not None
            else (f"at least {low:g}" if low is not None else f"at most {high:g}")
        )
        raise ValidationError(f"{field['label']} must be {span}.")


def _text(field: dict[str, Any], value: str) -> str:
    """Text the schema bounds (minLength, maxLength) or gives a format (email, uri, date)."""
    low, high = field["min_length"], field["max_length"]
    if low is not None and len(value) < low:
        raise ValidationError(f"{field['label']} must be at least {low:g} characters.")
    if high is not None and len(value) > high:
        raise ValidationError(f"{field['label']} must be at most {high:g} characters.")
    checks = {
        "email": (EmailValidator(), "an email address"),
        "url": (_absolute_uri, "an address with its scheme, such as https://…"),
        "date": (_iso_date, "a date (YYYY-MM-DD)"),
    }
    if field["input_type"] in checks:
        check, what = checks[field["input_type"]]
        try:
            check(value)
        except (ValidationError, ValueError):
            raise ValidationError(f"{field['label']} must be {what}.") from None
    return value


def _absolute_uri(value: str) -> None:
    """The JSON Schema "uri" format: an absolute URI (any scheme), with no spaces in it."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:\S+", value):
        raise ValueError(value)


def _iso_date(value: str) -> None:
    date.fromisoformat(value)
    if len(value) != 10:
        raise ValueError(value)


def approval_request(*, run_id: int, payload: dict[str, Any], sequence: int | None) -> ToolApproval:
    """The pending request for a call (the same row when a resumed run asks again)."""
    run = ReasoningRun.objects.only("session_id").get(pk=run_id)
    approval, created = ToolApproval.objects.get_or_create(
        run_id=run_id,
        argument_hash=payload["argument_hash"],
        defaults={
            "session_id": run.session_id,
            "event_sequence": sequence,
            "call_id": payload.get("call_id") or "",
            "server": payload.get("server") or "",
            "tool": payload.get("server_tool") or payload["tool"],
            "model_tool": payload["tool"],
            "arguments": payload.get("arguments") or {},
            "input_schema": payload.get("input_schema"),
        },
    )
    if not created and approval.status == ToolApproval.Status.PENDING:
        approval.event_sequence = sequence  # the card moves to where the resumed run asked
        approval.save(update_fields=["event_sequence"])
    return approval


def approval_expire(run_id: int, argument_hash: str) -> None:
    _expire(ToolApproval.objects.filter(run_id=run_id, argument_hash=argument_hash))


def approval_expire_before(cutoff: Any) -> list[int]:
    """Decline the requests of parked runs that nobody answered since `cutoff`; the runs'
    ids (to queue again, so the model hears of the decline)."""
    rows = ToolApproval.objects.filter(
        run__status=ReasoningRun.Status.AWAITING, created_at__lt=cutoff, status=ToolApproval.Status.PENDING
    )
    return sorted(set(_expire(rows)))


def _close(rows: Any, kind: str, **changes: Any) -> list[int]:
    """Close the cards among `rows` (approvals or input forms) still pending, with `changes`,
    and tell every tab; the runs' ids. Only a card still pending takes the change: a decision
    made meanwhile stands."""
    pending = rows.model.Status.PENDING
    closed = list(rows.filter(status=pending).values_list("pk", "run_id", "session_id"))
    rows.model.objects.filter(pk__in=[pk for pk, _, _ in closed], status=pending).update(**changes)
    for pk, _, session_id in closed:
        card_changed(session_id, kind, pk)
    return [run_id for _, run_id, _ in closed]


def _expire(rows: Any, note: str = "nobody answered in time") -> list[int]:
    return _close(rows, "approval", status=ToolApproval.Status.DECLINED, note=note, decided_at=timezone.now())


def approvals_decline_for_stopped(run_id: int) -> None:
    """Close a stopped run's open cards: its tool calls declined, its servers' questions
    cancelled, every tab told (a card left open could still be approved, for nothing)."""
    _expire(ToolApproval.objects.filter(run_id=run_id), note=STOPPED)
    _close(
        Elicitation.objects.filter(run_id=run_id),
        "elicitation",
        status=Elicitation.Status.CANCEL,
        answered_at=timezone.now(),
    )


def card_changed(session_id: int, kind: str, pk: int) -> None:
    """Tell every tab of the chat that an approval card or an input form changed (decided,
    answered or expired), so each shows it resolved, not only the tab that answered."""
    message = {"type": "card.changed", "kind": kind, "id": pk}
    tell_group(session_group(session_id), message, f"the {kind} card {pk}")  # else: on their next reload


@transaction.atomic
def approval_decide(*, approval: ToolApproval, user: Any, choice: str, arguments: Any = None) -> ToolApproval:
    """Record `user`'s decision: "approve" (this call), "always" (this tool in this chat),
    "decline", or "edit" (approve with `arguments`, a JSON object). A decided request stays
    decided: the first answer wins."""
    approval = ToolApproval.objects.select_for_update().get(pk=approval.pk)
    if approval.status != ToolApproval.Status.PENDING:
        raise ValidationError("This call was already decided.")
    if not ReasoningRun.objects.filter(pk=approval.run_id, status__in=ReasoningRun.ACTIVE).exists():
        raise ValidationError("This answer was stopped or has finished; nothing waits for this decision.")
    if choice == "edit":
        if not isinstance(arguments, dict):
            raise ValidationError('The arguments must be a JSON object, like {"name": "value"}.')
        if (refusal := edit_refusal(arguments, approval.input_schema, approval.arguments)) is not None:
            raise ValidationError(refusal)
        approval.edited_arguments = arguments
    elif choice not in ("approve", "always", "decline"):
        raise ValidationError("Choose approve, always, decline or edit.")
    approval.status = ToolApproval.Status.DECLINED if choice == "decline" else ToolApproval.Status.APPROVED
    approval.scope = ToolApproval.Scope.CHAT if choice == "always" else ToolApproval.Scope.ONCE
    approval.decided_by, approval.decided_at = user, timezone.now()
    approval.note = "declined by the user" if choice == "decline" else ""
    approval.save()
    return approval
