"""Export runs with everything recorded about them as JSON, and import them back.

The export is self-contained (no database ids): rows refer to each other by attempt
number and plan revision, so an export imported elsewhere exports to the same document.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from django.db import models, transaction
from django.db.models import Prefetch

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

FORMAT = "nexus-runs"
VERSION = 1


def _plain_fields(model: type[models.Model], *skip: str) -> list[models.Field]:
    return [
        f
        for f in model._meta.concrete_fields
        if not f.is_relation and not f.primary_key and f.name not in skip
    ]


def _dump(obj: models.Model, *skip: str) -> dict[str, Any]:
    data = {}
    for f in _plain_fields(type(obj), *skip):
        value = getattr(obj, f.attname)
        if isinstance(value, dt.datetime):
            value = value.isoformat()
        elif isinstance(value, Decimal):
            value = str(value)
        data[f.name] = value
    return data


def _load(model: type[models.Model], data: dict[str, Any], *skip: str) -> dict[str, Any]:
    values = {}
    for f in _plain_fields(model, *skip):
        if f.name not in data:
            continue
        value = data[f.name]
        if value is not None and isinstance(f, models.DateTimeField):
            value = dt.datetime.fromisoformat(value)
        elif value is not None and isinstance(f, models.DecimalField):
            value = Decimal(value)
        values[f.name] = value
    return values


def runs_for_export(queryset: models.QuerySet[ReasoningRun]) -> models.QuerySet[ReasoningRun]:
    """The queryset with everything the export reads, in a fixed number of queries."""
    return queryset.select_related("session__owner", "user_message", "reflection").prefetch_related(
        "answers",
        "attempts",
        Prefetch("plans", queryset=Plan.objects.select_related("attempt")),
        "plans__steps",
        Prefetch("tool_executions", queryset=ToolExecution.objects.select_related("attempt")),
        "llm_calls",
        Prefetch("critiques", queryset=Critique.objects.select_related("plan")),
        "events",
    )


def runs_export(queryset: models.QuerySet[ReasoningRun]) -> dict[str, Any]:
    runs = []
    for run in runs_for_export(queryset).order_by("created_at", "id"):
        reflection = getattr(run, "reflection", None) if hasattr(run, "reflection") else None
        runs.append(
            {
                **_dump(run),
                "session": {"title": run.session.title, "owner": run.session.owner.get_username()},
                "user_message": _dump(run.user_message),
                "answers": [_dump(m) for m in run.answers.all()],
                "attempts": [_dump(a) for a in run.attempts.all()],
                "plans": [
                    {
                        **_dump(p),
                        "attempt": p.attempt.number if p.attempt else None,
                        "steps": [_dump(s) for s in p.steps.all()],
                    }
                    for p in run.plans.all()
                ],
                "tool_executions": [
                    {**_dump(t), "attempt": t.attempt.number if t.attempt else None}
                    for t in run.tool_executions.all()
                ],
                "llm_calls": [_dump(c) for c in run.llm_calls.all()],
                "critiques": [
                    {**_dump(c), "plan": c.plan.revision if c.plan else None} for c in run.critiques.all()
                ],
                "reflection": _dump(reflection) if reflection else None,
                "events": [_dump(e) for e in run.events.all()],
            }
        )
    return {"format": FORMAT, "version": VERSION, "runs": runs}


@transaction.atomic
def runs_import(document: dict[str, Any], *, owners: Mapping[str, Any]) -> list[ReasoningRun]:
    """Recreate exported runs, each in a new session, all or nothing.

    The document names each run's owner, but a document can say anything: the caller maps
    the names it accepts to accounts (`owners`), and a run for anyone else is refused. Runs
    that were still queued or running are refused too, since a worker would pick them up and
    execute them as their owner.
    """
    if document.get("format") != FORMAT or document.get("version") != VERSION:
        raise ValueError(f"not a {FORMAT} v{VERSION} document")
    created = []
    for data in document["runs"]:
        owner = owners.get(data["session"]["owner"])
        if owner is None:
            raise ValueError(
                f"the document assigns runs to {data['session']['owner']!r}, who was not accepted"
            )
        if data.get("status") in ReasoningRun.ACTIVE:
            raise ValueError(f"run status {data['status']!r}: only finished runs can be imported")
        session = ChatSession.objects.create(owner=owner, title=data["session"]["title"])
        user_message = Message.objects.create(session=session, **_load(Message, data["user_message"]))
        run = ReasoningRun.objects.create(
            session=session, user_message=user_message, **_load(ReasoningRun, data)
        )
        for answer in data["answers"]:
            Message.objects.create(session=session, run=run, **_load(Message, answer))
        attempts = {
            a["number"]: Attempt.objects.create(run=run, **_load(Attempt, a)) for a in data["attempts"]
        }
        plans = {}
        for p in data["plans"]:
            plan = Plan.objects.create(run=run, attempt=attempts.get(p["attempt"]), **_load(Plan, p))
            PlanStep.objects.bulk_create(PlanStep(plan=plan, **_load(PlanStep, s)) for s in p["steps"])
            plans[plan.revision] = plan
        ToolExecution.objects.bulk_create(
            ToolExecution(run=run, attempt=attempts.get(t["attempt"]), **_load(ToolExecution, t))
            for t in data["tool_executions"]
        )
        LLMCall.objects.bulk_create(LLMCall(run=run, **_load(LLMCall, c)) for c in data["llm_calls"])
        Critique.objects.bulk_create(
            Critique(run=run, plan=plans.get(c["plan"]), **_load(Critique, c)) for c in data["critiques"]
        )
        if data["reflection"]:
            Reflection.objects.create(run=run, **_load(Reflection, data["reflection"]))
        TraceEvent.objects.bulk_create(TraceEvent(run=run, **_load(TraceEvent, e)) for e in data["events"])
        created.append(run)
    return created


# --- Bulk export: one run per line, streamed ----------------------------------------------

LINES_FORMAT = "nexus-runs-lines"
EXPORT_BATCH = 200


def runs_export_lines(queryset: models.QuerySet[ReasoningRun], *, batch: int = EXPORT_BATCH) -> Iterator[str]:
    """The export as JSON Lines: a header line, then one run per line in id order.

    Runs are read `batch` at a time by keyset (id > the last one sent), each batch with the
    same fixed number of queries, so memory stays flat however many runs match. Each run
    line is exactly an element of `runs_export(...)["runs"]`.
    """
    yield json.dumps({"format": LINES_FORMAT, "version": VERSION}) + "\n"
    ids = queryset.order_by("pk").values_list("pk", flat=True)
    last = 0
    while True:
        chunk = list(ids.filter(pk__gt=last)[:batch])
        if not chunk:
            return
        for run in runs_export(ReasoningRun.objects.filter(pk__in=chunk))["runs"]:
            yield json.dumps(run, ensure_ascii=False) + "\n"
        last = chunk[-1]


def runs_import_lines(lines: Iterable[str | bytes], *, owners: Mapping[str, Any]) -> list[ReasoningRun]:
    """Import a JSON Lines export (see `runs_export_lines`), all or nothing."""
    rows = (line for line in lines if line.strip())
    header = json.loads(next(rows, "{}"))
    if header.get("format") != LINES_FORMAT or header.get("version") != VERSION:
        raise ValueError(f"not a {LINES_FORMAT} v{VERSION} file")
    runs = [json.loads(line) for line in rows]
    return runs_import({"format": FORMAT, "version": VERSION, "runs": runs}, owners=owners)


SUMMARY_COLUMNS = [
    "id",
    "created_at",
    "owner",
    "session",
    "status",
    "question",
    "answer",
    "initial_strategy",
    "final_strategy",
    "escalations",
    "quality",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_ms",
    "tool_calls",
    "feedback_up",
    "feedback_down",
    "error",
]


class _Echo:
    """What csv.writer writes to: each line is handed back to be streamed."""

    def write(self, value: str) -> str:
        return value


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet reads as text: one starting with =, +, - or @ would be a
    formula (a user name, a question or a tool's name can start with one)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    if isinstance(value, float):  # 8999.999999999995 is an average's binary noise, not data
        return float(f"{value:.12g}")
    return value


def runs_summary_csv(queryset: models.QuerySet[ReasoningRun], *, batch: int = 2000) -> Iterator[str]:
    """One CSV row per run (question, answer, strategy, quality, tokens, cost, feedback),
    streamed by keyset in batches, for spreadsheets and compliance reviews."""
    writer = csv.writer(_Echo())
    yield writer.writerow(SUMMARY_COLUMNS)
    runs = (
        queryset.order_by("pk")
        .select_related("session__owner", "user_message")
        .annotate(
            n_tool_calls=models.Count("tool_executions", distinct=True),
            n_up=models.Count("feedback", filter=models.Q(feedback__rating=1), distinct=True),
            n_down=models.Count("feedback", filter=models.Q(feedback__rating=-1), distinct=True),
        )
    )
    answers = Message.objects.filter(role=Message.Role.ASSISTANT)
    last = 0
    while True:
        chunk = list(runs.filter(pk__gt=last)[:batch])
        if not chunk:
            return
        text = dict(answers.filter(run__in=[r.pk for r in chunk]).values_list("run_id", "content"))
        for run in chunk:
            row = {
                "id": run.pk,
                "created_at": run.created_at.isoformat(),
                "owner": run.session.owner.get_username(),
                "session": run.session_id,
                "status": run.status,
                "question": run.user_message.content,
                "answer": text.get(run.pk, ""),
                "initial_strategy": run.initial_strategy,
                "final_strategy": run.final_strategy,
                "escalations": run.escalation_count,
                "quality": "" if run.final_quality is None else f"{run.final_quality:.3f}",
                "input_tokens": run.input_tokens,
                "output_tokens": run.output_tokens,
                "cost": str(run.cost),
                "latency_ms": "" if run.latency_ms is None else run.latency_ms,
                "tool_calls": run.n_tool_calls,
                "feedback_up": run.n_up,
                "feedback_down": run.n_down,
                "error": run.error,
            }
            yield writer.writerow([spreadsheet_cell(row[c]) for c in SUMMARY_COLUMNS])
        last = chunk[-1].pk
