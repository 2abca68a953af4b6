"""Tool approval in the chat: the run asks, the person decides on a card in the chat.

The run's request is a `ToolApproval` row (written by the sink with the request's trace
event); the run waits for its decision by reading that row, so a run resumed on another
worker finds the same request, pending or decided, and never asks twice. "Always for this
chat" approves that tool's later calls in the same chat without asking.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from chat.models import ReasoningRun, ToolApproval
from reasoning.tools.approval import ApprovalDecision, ApprovalRequest

POLL_SECONDS = 0.5


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
        limit = settings.NEXUS_APPROVAL_WAIT_SECONDS
        waited = 0.0
        while waited < limit:
            decision = await self._known(request)
            if decision is not None:
                return decision
            await asyncio.sleep(POLL_SECONDS)
            waited += POLL_SECONDS
        await database_sync_to_async(approval_expire)(self.run_id, request.argument_hash)
        return ApprovalDecision(False, note="nobody answered in time")


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
        },
    )
    if not created and approval.status == ToolApproval.Status.PENDING:
        approval.event_sequence = sequence  # the card moves to where the resumed run asked
        approval.save(update_fields=["event_sequence"])
    return approval


def approval_expire(run_id: int, argument_hash: str) -> None:
    ToolApproval.objects.filter(
        run_id=run_id, argument_hash=argument_hash, status=ToolApproval.Status.PENDING
    ).update(status=ToolApproval.Status.DECLINED, note="nobody answered in time", decided_at=timezone.now())


@transaction.atomic
def approval_decide(*, approval: ToolApproval, user: Any, choice: str, arguments: Any = None) -> ToolApproval:
    """Record `user`'s decision: "approve" (this call), "always" (this tool in this chat),
    "decline", or "edit" (approve with `arguments`, a JSON object). A decided request stays
    decided: the first answer wins."""
    approval = ToolApproval.objects.select_for_update().get(pk=approval.pk)
    if approval.status != ToolApproval.Status.PENDING:
        raise ValidationError("This call was already decided.")
    if choice == "edit":
        if not isinstance(arguments, dict):
            raise ValidationError('The arguments must be a JSON object, like {"name": "value"}.')
        approval.edited_arguments = arguments
    elif choice not in ("approve", "always", "decline"):
        raise ValidationError("Choose approve, always, decline or edit.")
    approval.status = ToolApproval.Status.DECLINED if choice == "decline" else ToolApproval.Status.APPROVED
    approval.scope = ToolApproval.Scope.CHAT if choice == "always" else ToolApproval.Scope.ONCE
    approval.decided_by, approval.decided_at = user, timezone.now()
    approval.note = "declined by the user" if choice == "decline" else ""
    approval.save()
    return approval
