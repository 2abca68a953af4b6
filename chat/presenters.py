"""What templates need, computed once: rendered answers, footers, trace items with phases.

The page load and the websocket push render the same partials from these, so a reload
shows exactly what was pushed live.
"""

from __future__ import annotations

import json
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from chat import services
from chat.models import ReasoningRun, TraceEvent
from chat.rendering import render_markdown

MODE_ICONS = {
    "Analyzing": "⚡",
    "Direct": "🎯",
    "Light Reasoning": "🧠",
    "Deep Reasoning": "🔬",
    "Refining": "⚠",
    "Complete": "✅",
    "Failed": "✗",
    "Queued": "…",
}
STRATEGY_SHORT = {"direct": "DIRECT", "light_planning": "LIGHT", "deep_reasoning": "DEEP"}


def answer_html(text: str) -> SafeString:
    # Sanitised by nh3 in render_markdown (allow-listed tags and attributes only).
    return mark_safe(render_markdown(text))  # noqa: S308  # nosec B308 B703


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def quality_class(score: float | None, approved: bool | None = None) -> str:
    if score is None:
        return "q-none"
    if approved is True or score >= 0.8:
        return "q-good"
    if approved is False and score < 0.5:
        return "q-bad"
    return "q-fair" if approved is not False else "q-weak"


def event_context(event: TraceEvent, previous_phase: str | None) -> dict[str, Any]:
    payload = event.payload or {}
    item: dict[str, Any] = {
        "event": event,
        "p": payload,
        "run_id": event.run_id,
        "new_phase": event.phase != previous_phase,
    }
    if event.kind == "quality.completed":
        evaluation = payload.get("evaluation", {})
        item["quality_class"] = quality_class(evaluation.get("confidence"), payload.get("approved"))
    if event.kind in ("tool.called", "thought", "meta.assessment"):
        item["json"] = pretty_json(payload.get("arguments") if event.kind == "tool.called" else payload)
    if event.kind in ("plan.created", "plan.refined"):
        plan = payload.get("plan") or {}
        item["steps"] = plan.get("steps", [])
    if event.kind == "escalation":
        item["from_short"] = STRATEGY_SHORT.get(payload.get("from_strategy"), payload.get("from_strategy"))
        item["to_short"] = STRATEGY_SHORT.get(payload.get("to_strategy"), payload.get("to_strategy"))
    if event.kind == "analysis.completed":
        analysis = payload.get("analysis", {})
        item["strategy_short"] = STRATEGY_SHORT.get(analysis.get("recommended_strategy"), "")
    if event.kind == "tool.approval.requested":
        item["approval"] = approval_for(event.run_id, payload.get("argument_hash", ""))
    if event.kind == "elicitation.requested":
        item["elicitation"] = elicitation_for(event.run_id, payload.get("key", ""))
    if event.kind == "run.finished":
        item["strategy_short"] = STRATEGY_SHORT.get(payload.get("final_strategy"), "")
        item["quality_class"] = quality_class(payload.get("quality"))
    return item


def events_context(events: list[TraceEvent], previous_phase: str | None = None) -> list[dict[str, Any]]:
    items = []
    for event in events:
        items.append(event_context(event, previous_phase))
        previous_phase = event.phase
    return items


def run_mode(run: ReasoningRun | None) -> str:
    """The high-level mode of a run, for the status line and the page title."""
    if run is None:
        return "Ready"
    if run.status == ReasoningRun.Status.QUEUED:
        return "Queued"
    if run.status == ReasoningRun.Status.FAILED:
        return "Failed"
    if run.status in (ReasoningRun.Status.SUCCEEDED, ReasoningRun.Status.CANCELLED):
        return "Complete"
    last = run.events.filter(level=TraceEvent.Level.STATUS).order_by("-sequence").first()
    return (last.payload or {}).get("mode", "Analyzing") if last else "Analyzing"


def footer(run: ReasoningRun | None) -> dict[str, Any] | None:
    if run is None or run.status != ReasoningRun.Status.SUCCEEDED:
        return None
    return {
        "strategy": STRATEGY_SHORT.get(run.final_strategy, run.final_strategy or "–"),
        "initial": STRATEGY_SHORT.get(run.initial_strategy, ""),
        "escalations": run.escalation_count,
        "quality": run.final_quality,
        "quality_class": quality_class(run.final_quality),
        "tokens": run.total_tokens,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cache_read_tokens": run.cache_read_tokens,
        "cache_write_tokens": run.cache_write_tokens,
        "cost": run.cost,
        "seconds": (run.latency_ms or 0) / 1000,
        "provider": run.provider,
        "model": run.model,
    }


def turn_context(turn: dict[str, Any], *, trace_open: bool) -> dict[str, Any]:
    run: ReasoningRun | None = turn["run"]
    answer = turn["answer"]
    events = list(run.events.all()) if run else []
    return {
        "message": turn["message"],
        "run": run,
        "answer": answer,
        "answer_html": answer_html(answer.content) if answer else None,
        "events": events_context(events),
        "last_seq": events[-1].sequence if events else 0,
        "footer": footer(run),
        "active": bool(run and run.is_active),
        "trace_open": trace_open,
        "mode": run_mode(run),
        **queue_context(run),
    }


def queue_context(run: ReasoningRun | None) -> dict[str, Any]:
    """For a queued run: how many runs wait ahead of it, and whether it is stuck (its dispatch
    failed, so only Retry or the sweeper will start it) rather than merely waiting its turn."""
    if run is None or run.status != ReasoningRun.Status.QUEUED:
        return {"queue_ahead": 0, "stuck": False}
    return {"queue_ahead": services.run_queue_position(run), "stuck": services.run_is_stuck(run)}


def approval_for(run_id: int, argument_hash: str) -> Any:
    """The approval card's row: what the person decided, or that it is still pending."""
    from chat.models import ToolApproval

    approval = ToolApproval.objects.filter(run_id=run_id, argument_hash=argument_hash).first()
    if approval is not None:
        approval.arguments_json = pretty_json(approval.arguments)
    return approval


def elicitation_for(run_id: int, key: str) -> Any:
    """The input card's row, with the form its schema asks for."""
    from chat.approvals import form_fields
    from chat.models import Elicitation

    row = Elicitation.objects.filter(run_id=run_id, key=key).first()
    if row is not None:
        row.fields = form_fields(row.schema)
    return row
