"""Export runs with everything recorded about them as JSON, and import them back.

The export is self-contained (no database ids): rows refer to each other by attempt
number and plan revision, so an export imported elsewhere exports to the same document.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
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
