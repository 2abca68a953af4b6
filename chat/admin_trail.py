"""How a run's page in the admin reads: a summary card first, then each part of the trail
as a table, long values cut short with a "show all", and the comparison of attempts.

Everything here reads what `ReasoningRunAdmin.get_object` prefetched (no queries of its own),
and builds HTML only through `format_html`, so stored text is always escaped; the one
exception is the approved answer, rendered by the app's Markdown renderer and sanitised.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from chat.models import Attempt, ReasoningRun, ToolExecution
from chat.presenters import answer_html, low_confidence

STRATEGY_SHORT = {"direct": "DIRECT", "light_planning": "LIGHT", "deep_reasoning": "DEEP", "": "?"}


def long_text(value: Any, limit: int = 240) -> str:
    """A value cut to `limit` characters, with the whole of it one click away."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return format_html('<span class="nexus-value">{}</span>', text)
    return format_html(
        '<details class="nexus-more"><summary><span class="nexus-value">{}…</span> '
        '<span class="nexus-show-all">show all ({} characters)</span></summary>'
        '<div class="nexus-full">{}</div></details>',
        text[:limit],
        f"{len(text):,}",
        text,
    )


def table(headers: list[str], rows: list[tuple[Any, ...]]) -> str:
    """Rows of already-escaped cells (strings from format_html or plain values) as a table."""
    if not rows:
        return "–"
    cells = "".join("<td>{}</td>" for _ in headers)
    return format_html(
        '<div class="nexus-scroll"><table class="nexus-audit"><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table></div>",
        format_html_join("", "<th>{}</th>", ((h,) for h in headers)),
        format_html_join("", "<tr>" + cells + "</tr>", rows),
    )


def answer_text(run: ReasoningRun) -> str:
    answers = list(run.answers.all())
    return answers[0].content if answers else ""


def confidence_decision(run: ReasoningRun) -> str:
    decisions = [e.payload or {} for e in run.events.all() if e.kind == "confidence.assessed"]
    if not decisions:
        return "–"
    last = decisions[-1]
    return f"{last.get('action', '?')}: {last.get('reasoning', '')}".strip(": ")


def strategy_path(run: ReasoningRun, diff_url: str) -> str:
    parts = []
    for attempt in run.attempts.all():
        verdict = (
            "approved" if attempt.approved else ("rejected" if attempt.approved is False else "unchecked")
        )
        score = "" if attempt.quality_score is None else f" {attempt.quality_score:.2f}"
        parts.append(
            format_html(
                '<span class="nexus-step nexus-{}">{} ({}{})</span>',
                verdict,
                STRATEGY_SHORT.get(attempt.strategy, attempt.strategy),
                verdict,
                score,
            )
        )
    path = format_html_join(" → ", "{}", ((p,) for p in parts)) if parts else "–"
    if run.escalation_count:
        return format_html('{} <a class="nexus-diff-link" href="{}">compare attempts</a>', path, diff_url)
    return path


def feedback_summary(run: ReasoningRun) -> str:
    verdicts = list(run.feedback.all())
    if not verdicts:
        return "none yet"
    up = sum(1 for f in verdicts if f.rating > 0)
    comments = [
        (f.user.get_username(), "👍" if f.rating > 0 else "👎", f.comment) for f in verdicts if f.comment
    ]
    return format_html(
        "👍 {} · 👎 {}{}",
        up,
        len(verdicts) - up,
        format_html(
            '<ul class="nexus-feedback">{}</ul>',
            format_html_join("", "<li>{} {}: {}</li>", comments),
        )
        if comments
        else "",
    )


def final_answer_heading(run: ReasoningRun) -> str:
    """What the answer the person was shown is called: approved by the evaluator, or shown
    below its strategy's threshold with a low-confidence note."""
    return "Answer shown with a low-confidence note" if low_confidence(run) else "Approved answer"


def summary_card(run: ReasoningRun, *, diff_url: str, session_url: str) -> str:
    """What an auditor wants first: what was asked, what was answered, how, at what cost."""
    answer = answer_text(run)
    rendered: str | SafeString = answer_html(answer) if answer else format_html("<em>{}</em>", "no answer")
    latency = "–" if run.latency_ms is None else f"{run.latency_ms / 1000:.1f} s"
    quality = "–" if run.final_quality is None else f"{run.final_quality:.2f}"
    # What the person was shown: the evaluator's approved answer, or the best one Nexus had,
    # under a low-confidence note (the strategy path beside it says "rejected").
    heading = final_answer_heading(run) if answer else "Answer"
    facts = [
        ("status", format_html('<span class="nexus-status nexus-{}">{}</span>', run.status, run.status)),
        (
            "owner",
            format_html(
                '{} · <a href="{}">session #{}</a>',
                run.session.owner.get_username(),
                session_url,
                run.session_id,
            ),
        ),
        ("strategy path", strategy_path(run, diff_url)),
        ("quality", quality),
        ("confidence decision", confidence_decision(run)),
        (
            "tokens",
            f"{run.total_tokens:,} (in {run.input_tokens:,}, out {run.output_tokens:,}, "
            f"cache {run.cache_read_tokens:,}/{run.cache_write_tokens:,})",
        ),
        ("cost", f"${run.cost:.4f}"),
        ("latency", latency),
        ("feedback", feedback_summary(run)),
    ]
    return format_html(
        '<div class="nexus-card"><div class="nexus-card-question"><h3>Question</h3>{}</div>'
        '<div class="nexus-card-answer"><h3>{}</h3><div class="markdown">{}</div>{}</div>'
        '<dl class="nexus-facts">{}</dl></div>',
        long_text(run.user_message.content, 600),
        heading,
        rendered,
        format_html('<p class="nexus-error">error: {}</p>', run.error) if run.error else "",
        format_html_join("", "<dt>{}</dt><dd>{}</dd>", facts),
    )


def attempts_table(run: ReasoningRun, diff_url: str) -> str:
    rows = []
    for a in run.attempts.all():
        missing = ", ".join((a.evaluation or {}).get("missing_aspects") or [])
        outcome = a.outcome
        if a.status == Attempt.Status.ESCALATED:
            outcome = format_html('{} (<a href="{}#attempt-{}">diff</a>)', a.outcome, diff_url, a.number)
        rows.append(
            (
                a.number,
                STRATEGY_SHORT.get(a.strategy, a.strategy),
                a.status,
                "–" if a.quality_score is None else f"{a.quality_score:.2f}",
                {True: "yes", False: "no", None: "–"}[a.approved],
                outcome,
                long_text(missing or "–", 160),
            )
        )
    return table(["#", "strategy", "status", "quality", "approved", "outcome", "missing aspects"], rows)


def tools_table(run: ReasoningRun) -> str:
    rows = [
        (
            t.created_at.strftime("%H:%M:%S"),
            t.attempt.number if t.attempt else "–",
            t.step_id or "–",
            f"{t.server}/{t.tool}" if t.server else t.tool,
            long_text(t.arguments, 120),
            "✓" if t.success else "✗",
            "cached" if t.cached else f"{t.duration_ms:.0f} ms",
            long_text(t.result or "–", 160),
            long_text(t.error, 160) if t.error else "",
        )
        for t in run.tool_executions.all()
    ]
    return table(["time", "attempt", "step", "tool", "arguments", "ok", "took", "result", "error"], rows)


def calls_table(run: ReasoningRun) -> str:
    rows = [
        (
            c.created_at.strftime("%H:%M:%S"),
            c.component,
            f"{c.provider}/{c.model}",
            f"{c.input_tokens:,}/{c.output_tokens:,}",
            f"{c.cache_read_tokens:,}/{c.cache_write_tokens:,}",
            f"{c.latency_ms:.0f} ms",
            c.retries,
            c.stop_reason or "–",
            f"${c.cost:.4f}",
            long_text(c.error, 160) if c.error else "",
        )
        for c in run.llm_calls.all()
    ]
    return table(
        ["time", "component", "model", "in/out", "cache r/w", "latency", "retries", "stop", "cost", "error"],
        rows,
    )


def critiques_table(run: ReasoningRun) -> str:
    rows = [
        (
            c.round,
            "quick" if c.quick else "model",
            f"{c.overall_score:.2f}",
            " / ".join(
                f"{score:.2f}"
                for score in (c.feasibility_score, c.correctness_score, c.efficiency_score, c.safety_score)
            ),
            c.recommendation,
            long_text(c.issues, 160),
            long_text(c.rationale or "–", 160),
        )
        for c in run.critiques.all()
    ]
    return table(
        [
            "round",
            "by",
            "overall",
            "feasibility / correctness / efficiency / safety",
            "verdict",
            "issues",
            "rationale",
        ],
        rows,
    )


def reflection_block(run: ReasoningRun) -> str:
    reflection = getattr(run, "reflection", None) if hasattr(run, "reflection") else None
    if reflection is None:
        return "–"
    rows = [
        ("lessons", long_text(reflection.lessons, 400)),
        ("insights", long_text(reflection.insights, 400)),
        ("improvements", long_text(reflection.improvements, 400)),
        ("confidence", f"{reflection.confidence:.2f}"),
    ]
    return format_html(
        '<dl class="nexus-facts">{}</dl>', format_html_join("", "<dt>{}</dt><dd>{}</dd>", rows)
    )


# --- Attempt diff -------------------------------------------------------------------------


@dataclass
class AttemptChange:
    """One escalation: the draft that was rejected, and what the next attempt did instead."""

    rejected: Attempt
    later: Attempt | None
    draft: str
    answer: str
    answer_is_final: bool
    missing_aspects: list[str]
    reason: str
    # What the final answer was, shown to the person: approved, or under a low-confidence note.
    final_heading: str = "Approved answer"
    tools_added: list[str] = field(default_factory=list)
    steps_added: list[str] = field(default_factory=list)
    left_html: str = ""
    right_html: str = ""


_TOKEN = re.compile(r"\s+|[^\s]+")


def side_by_side(before: str, after: str) -> tuple[str, str]:
    """Word-level diff: removed words marked on the left, added words on the right."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            left.append(format_html("{}", old))
            right.append(format_html("{}", new))
            continue
        if old:
            left.append(format_html("<del>{}</del>", old))
        if new:
            right.append(format_html("<ins>{}</ins>", new))
    return format_html_join("", "{}", ((p,) for p in left)), format_html_join("", "{}", ((p,) for p in right))


def _tool_key(t: ToolExecution) -> str:
    return f"{t.tool}({json.dumps(t.arguments, ensure_ascii=False, sort_keys=True)})"


def attempt_changes(run: ReasoningRun) -> list[AttemptChange]:
    """Every rejected or escalated attempt beside the attempt that followed it (or the
    approved answer): the drafts come from the `answer.discarded` events, which keep the
    rejected text, and from the attempts' stored responses."""
    attempts = list(run.attempts.all())
    drafts: dict[int, str] = {}
    for event in run.events.all():
        p = event.payload or {}
        if event.kind == "answer.discarded" and p.get("reason") == "quality" and p.get("attempt"):
            drafts[int(p["attempt"])] = p.get("text") or ""
    escalations = [e.payload or {} for e in run.events.all() if e.kind == "escalation"]
    tools: dict[int | None, list[ToolExecution]] = {}
    for t in run.tool_executions.all():
        tools.setdefault(t.attempt_id, []).append(t)
    steps: dict[int | None, list[str]] = {}
    for plan in run.plans.all():
        for step in plan.steps.all():
            steps.setdefault(plan.attempt_id, []).append(f"{step.step_id}: {step.description}")
    final = answer_text(run)
    final_heading = final_answer_heading(run)
    changes = []
    for index, attempt in enumerate(attempts):
        if attempt.approved is not False and attempt.status != Attempt.Status.ESCALATED:
            continue
        later = attempts[index + 1] if index + 1 < len(attempts) else None
        if later is None or later.approved is True:
            answer, answer_is_final = final or (later.response if later else ""), True
        else:  # the next attempt was rejected too: compare with its draft
            answer, answer_is_final = drafts.get(later.number) or later.response, False
        escalation = next((e for e in escalations if e.get("from_strategy") == attempt.strategy), {})
        before_tools = {_tool_key(t) for t in tools.get(attempt.pk, [])}
        later_tools = tools.get(later.pk, []) if later else []
        change = AttemptChange(
            rejected=attempt,
            later=later,
            draft=drafts.get(attempt.number) or attempt.response,
            answer=answer,
            answer_is_final=answer_is_final,
            final_heading=final_heading,
            missing_aspects=list((attempt.evaluation or {}).get("missing_aspects") or [])
            or list(escalation.get("missing_aspects") or []),
            reason=(attempt.evaluation or {}).get("reasoning") or escalation.get("reason", ""),
            tools_added=list(
                dict.fromkeys(_tool_key(t) for t in later_tools if _tool_key(t) not in before_tools)
            ),
            steps_added=steps.get(later.pk, []) if later else [],
        )
        change.left_html, change.right_html = side_by_side(change.draft, change.answer)
        changes.append(change)
    return changes
