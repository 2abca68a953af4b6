"""Read-only links to a chat: created and revoked by its owner, opened by signed-in teammates.

What a shared page shows is decided here, not in the template: each turn's question as it
was typed and its approved answer; with the trace, the run's steps as a skeleton (strategy,
plan steps, which tools ran, quality, escalations), never tool output, step results or
attachments, which may hold documents the viewer may not read.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F
from django.http import Http404
from django.utils import timezone

from chat import services
from chat.documents import documents_visible_to
from chat.models import ChatSession, Memory, ReasoningRun, TraceEvent
from chat.presenters import answer_html
from reasoning.text import DOCUMENT_URI
from teamops.models import SharedLink, SharedLinkOpening

# The trace kinds a shared page shows, and the payload fields of each it may show.
SHARED_TRACE = {
    "strategy.selected": ("strategy", "attempt"),
    "plan.created": (),
    "plan.refined": (),
    "step.started": ("step_id", "description"),
    "tool.called": ("tool",),
    "tool.result": ("tool", "success", "cached"),
    "quality.completed": ("approved", "threshold"),
    "escalation": ("from_strategy", "to_strategy", "quality", "threshold"),
    "run.finished": ("final_strategy", "attempts", "quality", "escalations"),
}


def link_create(*, session: ChatSession, user: AbstractBaseUser, include_trace: bool) -> SharedLink:
    return SharedLink.objects.create(
        session=session, created_by=user, include_trace=include_trace, token=secrets.token_urlsafe(32)
    )


def link_revoke(*, link: SharedLink) -> None:
    SharedLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def links_for(session: ChatSession) -> list[SharedLink]:
    return list(session.shared_links.prefetch_related("openings__user"))


def link_open(*, token: str, user: AbstractBaseUser) -> SharedLink:
    """The active link with this token, recording that `user` opened it; 404 otherwise."""
    link = (
        SharedLink.objects.select_related("session__owner")
        .filter(token=token, revoked_at__isnull=True)
        .first()
    )
    if link is None:
        raise Http404("This link does not exist or was revoked.")
    if user.pk != link.session.owner_id:
        opening, created = SharedLinkOpening.objects.get_or_create(link=link, user=user)
        if not created:
            SharedLinkOpening.objects.filter(pk=opening.pk).update(
                times=F("times") + 1, last_opened_at=timezone.now()
            )
    return link


@dataclass
class SharedTurn:
    question: str
    answer_html: str | None
    failed: bool
    # The answer drew on documents this viewer may not read: it is not shown.
    withheld: bool = False
    # ... not itself but through an earlier answer of the chat, which it had in its conversation
    # (an arithmetic answer after it was said to have drawn on a private document, untrue).
    withheld_earlier: bool = False
    attachments: list[str] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    versions: int = 1  # how many times the question was asked (regenerated, edited)


def _trace_item(event: TraceEvent) -> dict[str, Any]:
    payload = event.payload or {}
    item: dict[str, Any] = {"kind": event.kind, "phase": event.phase}
    item.update({key: payload.get(key) for key in SHARED_TRACE[event.kind] if key in payload})
    if event.kind in ("plan.created", "plan.refined"):
        steps = (payload.get("plan") or {}).get("steps") or []
        item["steps"] = [str(step.get("description", ""))[:300] for step in steps if isinstance(step, dict)]
    if event.kind == "quality.completed":
        item["quality"] = (payload.get("evaluation") or {}).get("confidence")
    return item


def _documents_read(run: Any, events: list[TraceEvent]) -> set[int]:
    """Ids of the team documents a run read: attached by @mention or found by a tool (named in
    the whole result, or, in a run stored before that was recorded, in its stored start)."""
    texts = [str(item.get("source", "")) for item in run.attachments or []]
    results = [e.payload or {} for e in events if e.kind == "tool.result"]
    texts += [str(payload.get("result", "")) for payload in results]
    cited = {int(pk) for payload in results for pk in payload.get("documents") or [] if str(pk).isdigit()}
    return cited | {int(match) for text in texts for match in DOCUMENT_URI.findall(text)}


# Stands for a document nobody may read: what a recalled memory came from when that is unknown.
UNKNOWN_SOURCE = -1


def _recalled(events: list[TraceEvent]) -> set[int]:
    """Ids of the memories a run recalled (the cognitive mode)."""
    return {
        int(item["id"])
        for e in events
        if e.kind == "memory.recalled"
        for item in (e.payload or {}).get("items") or []
        if isinstance(item, dict) and str(item.get("id", "")).isdigit()
    }


def _documents_remembered(memory_ids: set[int]) -> set[int]:
    """The documents behind recalled memories: what the runs that made them read (and the
    memories those runs recalled, in turn). A memory staff promoted to the team was reviewed
    for everyone; a private one whose run is gone counts as a document nobody may read."""
    documents: set[int] = set()
    seen_memories: set[int] = set()
    seen_runs: set[int] = set()
    pending = set(memory_ids)
    while pending:
        seen_memories |= pending
        memories = Memory.objects.filter(pk__in=pending).prefetch_related("sources")
        found = {memory.pk: memory for memory in memories}
        if set(found) != pending:
            documents.add(UNKNOWN_SOURCE)  # forgotten since: what it held is unknown
        runs: set[int] = set()
        pending = set()
        for memory in found.values():
            if memory.shared:
                continue
            if memory.run_id is None:
                documents.add(UNKNOWN_SOURCE)
            else:
                runs.add(memory.run_id)
            pending |= {source.pk for source in memory.sources.all()}
        runs -= seen_runs
        seen_runs |= runs
        for run in ReasoningRun.objects.filter(pk__in=runs).prefetch_related("events"):
            events = list(run.events.all())
            documents |= _documents_read(run, events)
            pending |= _recalled(events)
        pending -= seen_memories
    return documents


def shared_turns(link: SharedLink, viewer: AbstractBaseUser) -> list[SharedTurn]:
    """What the link shows `viewer` (see the module docstring for what it never shows). An
    answer built from a document the viewer may not read is withheld: it may quote it. A turn
    counts as having read what it read itself, what the memories it recalled came from, and
    what every earlier turn of the chat read (their answers were in its conversation).

    Of a question asked again (regenerated or edited) the latest version shows, as its owner
    sees it on opening the chat."""
    every = services.session_thread(link.session)
    runs = [turn["run"] for turn in every if turn["run"] is not None]
    events = {run.pk: list(run.events.all()) for run in runs}
    read: dict[int, set[int]] = {}
    own: dict[int, set[int]] = {}
    earlier: set[int] = set()
    for run in runs:
        own[run.pk] = _documents_read(run, events[run.pk]) | _documents_remembered(_recalled(events[run.pk]))
        earlier |= own[run.pk]
        read[run.pk] = set(earlier)
    wanted = set().union(*read.values()) if read else set()
    readable = set(documents_visible_to(viewer).filter(pk__in=wanted).values_list("pk", flat=True))
    thread = [turn for turn in every if turn["current"]]
    turns = []
    for turn in thread:
        run = turn["run"]
        answer = turn["answer"]
        withheld = run is not None and not read[run.pk] <= readable
        shared = SharedTurn(
            question=turn["message"].content,
            answer_html=answer_html(answer.content) if answer and not withheld else None,
            failed=bool(run and run.status == run.Status.FAILED),
            withheld=withheld,
            withheld_earlier=withheld and own[run.pk] <= readable,
            versions=turn["variants"],
            attachments=[
                str(item.get("title", "")) if not _private(item, readable) else "a document you may not read"
                for item in (run.attachments if run else []) or []
            ],
        )
        # The model writes its steps after reading the documents: they go with the answer.
        if link.include_trace and run is not None and not withheld:
            shared.trace = [_trace_item(e) for e in events[run.pk] if e.kind in SHARED_TRACE]
        turns.append(shared)
    return turns


def _private(attachment: dict[str, Any], readable: set[int]) -> bool:
    found = DOCUMENT_URI.findall(str(attachment.get("source", "")))
    return any(int(pk) not in readable for pk in found)
