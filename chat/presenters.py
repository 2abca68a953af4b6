"""What templates need, computed once: rendered answers, footers, trace items with phases.

The page load and the websocket push render the same partials from these, so a reload
shows exactly what was pushed live.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from chat import services
from chat.converters import parse_id
from chat.inputs import upright
from chat.models import AnswerFeedback, Preference, ReasoningRun, TraceEvent
from chat.rendering import render_markdown
from reasoning.tools.labels import humanize_tool_names, tool_label
from reasoning.types import ExecutionStrategy

__all__ = ["tool_label"]  # the panel's tool names; kept importable from here

logger = logging.getLogger(__name__)

MODE_ICONS = {
    "Analyzing": "⚡",
    "Direct": "🎯",
    "Light Reasoning": "🧠",
    "Deep Reasoning": "🔬",
    "Refining": "⚠",
    "Complete": "✅",
    "Failed": "✗",
    "Queued": "…",
    "Stopped": "■",
}
# Strategies as the panel and footer name them ("Direct → Light"), never the engine's enums.
STRATEGY_SHORT = {"direct": "Direct", "light_planning": "Light", "deep_reasoning": "Deep"}
# One line per strategy, for people who have never heard of them (shown in the panel).
STRATEGY_HELP = {
    "direct": "answers in one go, calling a tool when it needs one; for simple questions",
    "light_planning": "splits the question into its parts and covers each; for questions with a few parts",
    "deep_reasoning": "plans the work, has the plan reviewed, runs independent steps in parallel, "
    "then checks and combines the findings; for research, diagnoses and designs",
}
ACTION_LABELS = {
    "execute": "go ahead",
    "execute_with_caution": "go ahead with caution",
    "clarify": "ask you one question first",
    "replan": "plan again",
    "escalate": "switch to a deeper strategy",
}
CRITIQUE_LABELS = {"approve": "approved", "revise": "needs changes", "reject": "rejected"}
FINDINGS_CHARS = 400


_STEP_ID = re.compile(r"\bstep_(\d+)\b")
# A search hit's address for the model ("(private, nexus://documents/6)"): people have the
# title beside it, so they read "(private)"; a bare address elsewhere reads "a team document".
_DOCUMENT_URI = re.compile(r"(\((?:private|shared)), nexus://documents/\d+\)|nexus://documents/\d+")


# Stands in for each id while a URL pattern is reversed once (no id on a page comes near it).
_URL_MARK = 7_318_664_000


@lru_cache(maxsize=64)
def _url_parts(name: str, arity: int, script_prefix: str, urlconf: str | None) -> tuple[str, ...] | None:
    """The text around the ids of URL `name`, reversed once with placeholder ids (None if one
    is not found in it). The script prefix and urlconf that reverse() reads are part of the
    cache key."""
    marks = [str(_URL_MARK + i) for i in range(arity)]
    rest = reverse(name, args=marks, urlconf=urlconf)
    parts = []
    for mark in marks:
        before, found, rest = rest.partition(mark)
        if not found:
            return None
        parts.append(before)
    parts.append(rest)
    return tuple(parts)


def url_for(name: str, *ids: int) -> str:
    """reverse(name, args=ids) for a URL whose arguments are all integer ids, without resolving
    the pattern again for each call: pages name the same few URLs once per chat or answer."""
    parts = _url_parts(name, len(ids), get_script_prefix(), get_urlconf())
    if parts is None:
        return reverse(name, args=ids)
    return parts[0] + "".join(f"{int(pk)}{part}" for pk, part in zip(ids, parts[1:], strict=True))


def run_urls(run: ReasoningRun) -> dict[str, str]:
    """Where an answer's buttons post: resend (edit, regenerate), stop, feedback, retry."""
    ids = (run.session_id, run.pk)
    return {
        "resend": url_for("chat:run-resend", *ids),
        "stop": url_for("chat:run-stop", *ids),
        "feedback": url_for("chat:run-feedback", *ids),
        "retry": url_for("chat:run-retry", *ids),
    }


# Chats the list shows at once; older ones come a page at a time ("Show older chats"). Drawn
# whole, a person's list grew with every chat they ever started, on every page and push.
CHAT_LIST_PAGE = 50


class ChatList(list):
    """Rows of the chat list (each chat's id, title and address, newest first), and `more`:
    the address of the next, older page, or "" when these are the oldest."""

    more = ""


def session_links(user: Any, after: tuple[datetime, int] | None = None) -> ChatList:
    """A page of the person's chat list: the newest chats, or those after `after` (the
    updated_at and id the previous page's `more` carries)."""
    rows = services.session_titles_for_user(user, limit=CHAT_LIST_PAGE + 1, after=after)
    shown = rows[:CHAT_LIST_PAGE]  # one more was read only to know whether there are more
    links = ChatList({"pk": pk, "title": title, "url": url_for("chat:session", pk)} for pk, title, _ in shown)
    if len(rows) > CHAT_LIST_PAGE:
        pk, _, updated = shown[-1]
        links.more = f"{reverse('chat:session-list')}?{urlencode({'after': f'{updated.isoformat()}~{pk}'})}"
    return links


def chat_list_cursor(value: str) -> tuple[datetime, int] | None:
    """The (updated_at, id) a `more` address carries; None if it is not one."""
    stamp, _, pk = value.rpartition("~")
    try:
        updated = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    number = parse_id(pk)
    if updated.tzinfo is None or not number:
        return None
    return updated, number


def preferences_of(request: HttpRequest) -> dict[str, Any]:
    """The person's interface choices (`trace_open`, `theme`), read once per request: the chat
    page and the theme of every page's frame both need them. Someone who never chose gets the
    defaults (and no row is stored for them until they do)."""
    cached = getattr(request, "_nexus_preferences", None)
    if cached is None:
        user = getattr(request, "user", None)
        row = None
        if user is not None and user.is_authenticated:
            row = Preference.objects.filter(user=user).values("trace_open", "theme").first()
        cached = {
            "trace_open": bool(row and row["trace_open"]),
            "theme": (row and row["theme"]) or "system",
        }
        request._nexus_preferences = cached  # type: ignore[attr-defined]
    return cached


def plain_text(text: str) -> str:
    """Engine text as people read it: tool names as labels, "step_1" as "step 1", no
    internal document addresses."""
    return _STEP_ID.sub(r"step \1", humanize_tool_names(without_document_addresses(text)))


def without_document_addresses(text: str) -> str:
    """A tool's own output as it sent it, but for the team documents' internal addresses: its
    words are not rewritten (a server's "nexus__calculator" read as Nexus's calculator)."""
    return _DOCUMENT_URI.sub(lambda m: m.group(1) + ")" if m.group(1) else "a team document", text)


def answer_html(text: str) -> SafeString:
    # Sanitised by nh3 in render_markdown (allow-listed tags and attributes only).
    return mark_safe(render_markdown(text))  # noqa: S308  # nosec B308 B703


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def quality_class(score: float | None, approved: bool | None = None) -> str:
    """One colour scale for every quality score on the page (footer, panel head, trace), so
    the same number never shows in two colours. `approved` is accepted for old callers and
    does not change the colour: the number does."""
    if score is None:
        return "q-none"
    if score >= 0.8:
        return "q-good"
    if score >= 0.5:
        return "q-fair"
    return "q-bad"


def event_context(event: TraceEvent, previous_phase: str | None) -> dict[str, Any]:
    payload = upright(event.payload or {})  # model and tool text: no reversed file names
    # The line's ids and times as text: a trace has dozens of lines, and the template's own
    # number localisation and date filters were most of the time it took to render one.
    at = timezone.localtime(event.created_at)
    item: dict[str, Any] = {
        "event": event,
        "p": payload,
        "run_id": event.run_id,
        "new_phase": event.phase != previous_phase,
        "kind": event.kind,
        "key": f"{event.run_id}-{event.sequence}",  # in the line's id: ev-<run>-<sequence>
        "seq": str(event.sequence),
        "time": f"{int(at.timestamp())}.{at.microsecond:06d}",  # |date:"U.u"
        "clock": f"{at:%H:%M:%S}.{at.microsecond:06d}",  # |time:"H:i:s.u"
    }
    if event.kind == "quality.completed":
        evaluation = payload.get("evaluation", {})
        item["quality_class"] = quality_class(evaluation.get("confidence"), payload.get("approved"))
        # A rejected draft's missing aspects are said once, on its "discarded draft" line.
        item["show_missing"] = bool(payload.get("approved"))
    if event.kind in ("tool.called", "thought", "meta.assessment"):
        item["json"] = pretty_json(payload.get("arguments") if event.kind == "tool.called" else payload)
    if event.kind == "tool.called":
        item["tool_label"] = tool_label(
            payload.get("server_tool") or payload.get("tool") or "", payload.get("server") or ""
        )
    if event.kind in ("plan.created", "plan.refined"):
        plan = payload.get("plan") or {}
        item["steps"] = plan.get("steps", [])
    if event.kind == "step.completed":
        findings = payload.get("findings") or ""
        if findings:
            short = findings if len(findings) <= FINDINGS_CHARS else findings[:FINDINGS_CHARS].rstrip() + "…"
            item["findings_html"] = answer_html(plain_text(short))
        item["tools"] = [tool_label(t) for t in payload.get("tools_used") or []]
    if event.kind == "critique.completed":
        recommendation = (payload.get("critique") or {}).get("recommendation") or ""
        item["recommendation"] = CRITIQUE_LABELS.get(recommendation, recommendation.replace("_", " "))
    if event.kind == "confidence.assessed":
        item["action_label"] = ACTION_LABELS.get(payload.get("action"), payload.get("action"))
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
    if event.kind == "strategy.selected":
        item["strategy_short"] = STRATEGY_SHORT.get(payload.get("strategy"), "")
        item["strategy_help"] = STRATEGY_HELP.get(payload.get("strategy"), "")
    if event.kind == "run.finished":
        item["strategy_short"] = STRATEGY_SHORT.get(payload.get("final_strategy"), "")
        item["quality_class"] = quality_class(payload.get("quality"))
    return item


def events_context(
    events: list[TraceEvent], previous_phase: str | None = None, rationale: str | None = None
) -> list[dict[str, Any]]:
    """Trace items in order. A plan shows each step's latest status (done or failed once its
    step completed), and a rationale already shown by the analysis is not repeated
    (`rationale`: the run's last analysis's, when the caller knows it from an earlier batch)."""
    latest: dict[str, str] = {}
    for event in events:
        if event.kind == "step.completed" and event.payload.get("step_id"):
            latest[event.payload["step_id"]] = event.payload.get("status") or "completed"
    items = []
    for event in events:
        item = event_context(event, previous_phase)
        if event.kind == "analysis.completed":
            rationale = rationale_of(event)
        if event.kind == "strategy.selected":
            if rationale is None and event.payload.get("rationale"):
                # Pushed live, the analysis came in an earlier batch: its rationale is stored.
                rationale = analysis_rationale(event)
            item["show_rationale"] = (
                bool(event.payload.get("rationale")) and event.payload.get("rationale") != rationale
            )
        if "steps" in item and latest:
            item["steps"] = [
                {**step, "status": latest.get(step.get("id"), step.get("status"))} for step in item["steps"]
            ]
        items.append(item)
        previous_phase = event.phase
    return items


def rationale_of(analysis: TraceEvent) -> str | None:
    """The rationale an analysis.completed event gives (None: it gives none)."""
    return (analysis.payload.get("analysis") or {}).get("rationale")


def analysis_rationale(event: TraceEvent) -> str:
    """The rationale of the analysis before `event` in its run ("" if there was none)."""
    analysis = (
        TraceEvent.objects.filter(run_id=event.run_id, kind="analysis.completed", sequence__lt=event.sequence)
        .order_by("sequence")
        .values_list("payload", flat=True)
        .last()
    )
    return ((analysis or {}).get("analysis") or {}).get("rationale") or ""


def run_mode(run: ReasoningRun | None, events: list[TraceEvent] | None = None) -> str:
    """The high-level mode of a run, for the status line and the page title. `events`, when
    the caller has loaded them, are all of the run's events in order (read instead of asking
    the database for the latest status event)."""
    if run is None:
        return "Ready"
    if run.status == ReasoningRun.Status.QUEUED:
        return "Queued"
    if run.status == ReasoningRun.Status.FAILED:
        return "Failed"
    if run.status == ReasoningRun.Status.CANCELLED:
        return "Stopped"
    if run.status == ReasoningRun.Status.SUCCEEDED:
        return "Complete"
    if events is not None:
        last = next((e for e in reversed(events) if e.level == TraceEvent.Level.STATUS), None)
    else:
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


def summary(run: ReasoningRun | None, events: list[TraceEvent]) -> dict[str, Any] | None:
    """The panel's one line for a finished run: "Direct → Light · 2 tools · quality 0.95 · 0.7 s"."""
    if run is None or run.status != ReasoningRun.Status.SUCCEEDED:
        return None
    route = STRATEGY_SHORT.get(run.initial_strategy, "")
    final = STRATEGY_SHORT.get(run.final_strategy, "")
    if final and final != route:
        route = f"{route} → {final}" if route else final
    return {
        "route": route,
        "tools": sum(1 for e in events if e.kind == "tool.called"),
        "quality": run.final_quality,
        "quality_class": quality_class(run.final_quality),
        "seconds": (run.latency_ms or 0) / 1000,
    }


def low_confidence(run: ReasoningRun | None) -> dict[str, Any] | None:
    """What to say above an answer whose final attempt fell below its strategy's threshold:
    the score, the threshold and the evaluator's missing aspects. None for a good answer."""
    if run is None or run.status != ReasoningRun.Status.SUCCEEDED or run.final_quality is None:
        return None
    if run.answer_kind == "clarification":
        return None
    try:
        threshold = settings.NEXUS_REASONING.quality_threshold(ExecutionStrategy.parse(run.final_strategy))
    except (ValueError, KeyError):
        return None
    if run.final_quality >= threshold and run.answer_kind != "low_confidence":
        return None
    attempt = run.attempts.exclude(evaluation={}).order_by("-number").first()
    aspects = [str(m).strip() for m in (attempt.evaluation or {}).get("missing_aspects") or [] if attempt]
    # An aspect that is the whole question again says nothing the person does not know.
    kept = [aspect for aspect in aspects if _plain(aspect) != _plain(run.query)]
    missing = "; ".join(kept)
    # The sentence ends once: an aspect given as a question or a sentence brings its own mark.
    ending = "" if missing.endswith((".", "?", "!")) else "."
    return {
        "quality": run.final_quality,
        "threshold": threshold,
        "missing": missing,
        "ending": ending,
        "partly": len(kept) < len(aspects),
    }


def _plain(text: str) -> str:
    return " ".join(re.findall(r"\w+", (text or "").lower()))


def turn_context(turn: dict[str, Any], *, trace_open: bool, user_id: int | None = None) -> dict[str, Any]:
    """What the turn partials show of one thread entry (`session_thread`, `turn_of`). An entry
    may bring the run's `events` (a run just stored has none to load), the person's
    `feedback` on its answer (read for a whole page at once)."""
    run: ReasoningRun | None = turn["run"]
    answer = turn["answer"]
    events = turn["events"] if "events" in turn else list(run.events.all()) if run else []
    feedback = None
    if run is not None and answer is not None and user_id is not None:
        if "feedback" in turn:
            feedback = turn["feedback"]
        else:
            feedback = AnswerFeedback.objects.filter(run=run, user_id=user_id).first()
    return {
        "message": turn["message"],
        "run": run,
        "answer": answer,
        "answer_html": answer_html(answer.content) if answer else None,
        # An unapproved draft renders as Markdown too (sanitised the same way), still marked as a draft.
        "draft_html": answer_html(run.draft_text) if run and run.draft_text and not answer else None,
        "events": events_context(events),
        "last_seq": events[-1].sequence if events else 0,
        "footer": footer(run),
        "active": bool(run and run.is_active),
        "stopped": bool(run and run.status == ReasoningRun.Status.CANCELLED),
        "trace_open": trace_open,
        "mode": run_mode(run, events),
        **queue_context(run),
        "low_confidence": low_confidence(run) if answer else None,
        "summary": summary(run, events),
        "feedback": feedback,
        "group": turn.get("group", turn["message"].pk),
        "variant": turn.get("variant", 1),
        "variants": turn.get("variants", 1),
        "current": turn.get("current", True),
        "last": turn.get("last", True),
        "urls": run_urls(run) if run else {},
    }


def queue_context(run: ReasoningRun | None) -> dict[str, Any]:
    """For a queued run: how many runs wait ahead of it, and whether it is stuck (its dispatch
    failed, so only Retry or the sweeper will start it) rather than merely waiting its turn."""
    if run is None or run.status != ReasoningRun.Status.QUEUED:
        return {"queue_ahead": 0, "stuck": False}
    try:
        place = services.queue_place_of(run)
    except DatabaseError as exc:
        # Drawn just after the question was stored: the database going away then must not
        # turn a saved question into an error page (its page counts the queue live anyway).
        logger.warning("could not count the runs ahead of run %s: %s", run.pk, exc)
        return {"queue_ahead": 0, "stuck": False}
    return {"queue_ahead": place.ahead, "stuck": place.stuck}


def approval_for(run_id: int, argument_hash: str) -> Any:
    """The approval card's row: what the person decided, or that it is still pending."""
    from chat.models import ToolApproval

    approval = ToolApproval.objects.filter(run_id=run_id, argument_hash=argument_hash).first()
    if approval is not None:
        approval.arguments_json = pretty_json(approval.arguments)
        # What ran: the person's edited arguments once approved with them, else the model's.
        edited = approval.edited_arguments is not None and approval.status == "approved"
        approval.ran_json = pretty_json(approval.edited_arguments) if edited else approval.arguments_json
    return approval


def url_host(url: str) -> str:
    """The host a tool server's address names, "" when none can be read: the address is the
    server's own text ("https://[zz]/" raised out of urlsplit, a 500 for the chat page)."""
    try:
        return urlsplit(url).hostname or "" if url else ""
    except ValueError:
        return ""


def elicitation_for(run_id: int, key: str) -> Any:
    """The input card's row, with the form its schema asks for."""
    from chat.approvals import form_fields
    from chat.models import Elicitation

    row = Elicitation.objects.filter(run_id=run_id, key=key).select_related("run").first()
    if row is not None:
        if row.status == Elicitation.Status.PENDING and row.run.status not in ReasoningRun.ACTIVE:
            # Its run ended without it (resumed after a restart, it did not ask again): shown
            # closed, not as a form whose answer nothing would read.
            row.status = Elicitation.Status.CANCEL
        row.fields = form_fields(row.schema)
        # Shown on the card: after this the server hears "cancel" and the call goes on.
        row.deadline = row.created_at + timedelta(seconds=settings.NEXUS_ELICITATION_WAIT_SECONDS)
        row.url_host = url_host(row.url)
    return row
