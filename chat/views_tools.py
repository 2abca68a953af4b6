"""Tools in the chat: what a tool server returned beside its text (images shown in the panel,
binary resources offered as downloads), and the person's decisions on tool calls a run asks
to make. Only the run's owner may fetch or decide; nothing fetched is ever rendered as a page
(a sandboxing policy, no type sniffing), and an image is served only when its bytes are still
what its type says."""

from __future__ import annotations

import base64
import re

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget

from chat.approvals import approval_decide as decide
from chat.approvals import card_changed, elicitation_answer
from chat.engine import resume_after_decision
from chat.inputs import strict_json
from chat.models import Elicitation, ToolApproval, ToolExecution
from chat.presenters import approval_for, elicitation_for
from reasoning.tools.mcp import image_bytes_match


@require_GET
def tool_part(request: HttpRequest, run_id: int, sequence: int, index: int) -> HttpResponse:
    execution = get_object_or_404(
        ToolExecution, run_id=run_id, event_sequence=sequence, run__session__owner=request.user
    )
    parts = execution.parts or []
    if index >= len(parts) or parts[index].get("type") not in ("image", "blob"):
        raise Http404("no such part")
    part = parts[index]
    data = base64.b64decode(part.get("data") or "")
    mime = str(part.get("mime_type") or "")
    if part["type"] == "image":
        if not image_bytes_match(mime, data):
            raise Http404("not an image that may be shown")
        response = HttpResponse(data, content_type=mime)
        response["Content-Disposition"] = "inline"
    else:
        response = HttpResponse(data, content_type="application/octet-stream")
        name = (
            re.sub(r"[^\w.\-]+", "_", str(part.get("uri") or "download").rsplit("/", 1)[-1])[:80]
            or "download"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    # Never kept by the browser: a shared computer's next person could open it after sign-out.
    response["Cache-Control"] = "private, no-store"
    return response


@require_POST
def approval_decide(request: HttpRequest, approval_id: int) -> HttpResponse:
    """Approve once, always for this chat, decline, or approve with edited arguments; answers
    with the card, now showing the decision (or why it was not taken)."""
    approval = get_object_or_404(ToolApproval, pk=approval_id, session__owner=request.user)
    choice = request.POST.get("decision", "")
    error = ""
    try:
        try:
            arguments = strict_json(request.POST.get("arguments") or "null") if choice == "edit" else None
        except ValueError:
            raise ValidationError(
                'The arguments are not valid JSON; write an object like {"name": "value"}.'
            ) from None
        decide(approval=approval, user=request.user, choice=choice, arguments=arguments)
        card_changed(approval.session_id, "approval", approval.pk)
        resume_after_decision(approval.run_id, request.user.pk)
    except ValidationError as exc:
        error = exc.messages[0]
    context = {"approval": approval_for(approval.run_id, approval.argument_hash), "error": error}
    if error and choice == "edit":  # the edit stays open as it was typed, to be corrected
        context["edited"] = request.POST.get("arguments", "")
    return _card(request, "chat/tools/approval.html", context, f"#approval-{approval.pk}", error)


@require_POST
def elicitation_reply(request: HttpRequest, elicitation_id: int) -> HttpResponse:
    """The person's answer to a tool server's question: the form's values, or decline/cancel."""
    row = get_object_or_404(Elicitation, pk=elicitation_id, session__owner=request.user)
    error = ""
    try:
        elicitation_answer(
            row=row, user=request.user, action=request.POST.get("action", ""), data=request.POST
        )
        card_changed(row.session_id, "elicitation", row.pk)
    except ValidationError as exc:
        error = exc.messages[0]
    context = {"elicitation": elicitation_for(row.run_id, row.key), "error": error}
    return _card(request, "chat/tools/elicitation.html", context, f"#elicitation-{row.pk}", error)


def _card(request: HttpRequest, template: str, context: dict, card: str, error: str) -> HttpResponse:
    """The card as it now stands; refused (400) with the reason inside it, where the person
    is looking (aimed back at the card, which the page swaps even for an error)."""
    response = render(request, template, context, status=400 if error else 200)
    return reswap(retarget(response, card), "outerHTML") if error else response
