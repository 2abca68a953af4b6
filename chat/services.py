"""Business logic for sessions, messages and runs. Views, tasks and admin all call these.

Reads live in selectors below the services; nothing here imports tasks or views.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce, Greatest
from django.http import Http404
from django.utils import timezone

from chat import mentions
from chat.converters import parse_id
from chat.inputs import BIDI_OVERRIDES, clean_title, refuse_nul, visible
from chat.models import AnswerFeedback, ChatSession, Message, ReasoningRun, SessionMode, ToolApproval
from chat.sink import sessions_changed
from reasoning.modes import MODE_NAMES
from reasoning.text import markdown_inline, markdown_text, plain_text
from reasoning.types import Attachment

logger = logging.getLogger(__name__)

TITLE_CHARS = 60
MAX_DELIVERIES = 3


CHAT_DELETED = "This chat was deleted (in another tab or window), so your message was not sent."


class RunActive(Exception):
    """The session already has a run in progress; one turn at a time."""

    def __init__(self, run: ReasoningRun) -> None:
        super().__init__("Nexus is still answering your previous message in this chat.")
        self.run = run


# --- selectors -------------------------------------------------------------------------


def session_list_for_user(user: Any) -> QuerySet[ChatSession]:
    return ChatSession.objects.filter(owner=user)


def session_titles_for_user(
    user: Any, *, limit: int, after: tuple[datetime, int] | None = None
) -> list[tuple[int, str, datetime]]:
    """(id, title, updated_at) of up to `limit` of the user's chats, newest first (`after`:
    those listed after the chat with that updated_at and id), without building a model
    instance per chat: the chat list, drawn on every page and by every question that
    retitles a chat."""
    chats = session_list_for_user(user)
    if after is not None:
        updated, pk = after
        chats = chats.filter(Q(updated_at__lt=updated) | Q(updated_at=updated, pk__lt=pk))
    return list(chats.values_list("pk", "title", "updated_at")[:limit])


def session_get_for_user(user: Any, session_id: int) -> ChatSession:
    """The user's own session; anyone else's answers 404 (not 403), so ids cannot be probed."""
    try:
        return ChatSession.objects.get(pk=session_id, owner=user)
    except (ChatSession.DoesNotExist, ValueError, TypeError):
        raise Http404("No such chat.") from None


def session_thread(session: ChatSession) -> list[dict[str, Any]]:
    """User turns, each with its run and the run's answer, in order, in three queries: the
    runs, their events, and the session's messages (questions and answers together).

    A regenerated or edited question is a variant of its first version: each turn says which
    variant it is (`variant`, `variants`) and whether it is the latest one (`current`), so the
    page shows the latest and keeps the older answers one click away."""
    runs = {run.user_message_id: run for run in session.runs.prefetch_related("events")}
    questions, answers = [], {}
    for message in session.messages.all():
        if message.role == Message.Role.USER:
            questions.append(message)
        if message.run_id is not None:  # a run's answer (one per run, a constraint says)
            answers.setdefault(message.run_id, message)
    turns = []
    groups: dict[int, list[dict[str, Any]]] = {}
    for message in questions:
        run = runs.get(message.pk)
        if run is not None:
            run.user_message = message  # the question it asks, without a query to load it again
        turn = {"message": message, "run": run, "answer": answers.get(run.pk) if run else None}
        turn["group"] = message.variant_of_id or message.pk
        groups.setdefault(turn["group"], []).append(turn)
        turns.append(turn)
    last_group = turns[-1]["group"] if turns else None
    for members in groups.values():
        for index, turn in enumerate(members, start=1):
            turn.update(variant=index, variants=len(members), current=index == len(members))
            turn["last"] = turn["group"] == last_group and turn["current"]
    return turns


def feedback_by_run(user: Any, run_ids: list[int]) -> dict[int, AnswerFeedback]:
    """The person's verdicts on these runs' answers (one each at most), in one query."""
    if not run_ids:
        return {}
    return {
        feedback.run_id: feedback for feedback in AnswerFeedback.objects.filter(user=user, run_id__in=run_ids)
    }


def turn_of(run: ReasoningRun) -> dict[str, Any]:
    """The thread entry of one run, as `session_thread` builds it, for rendering that turn
    alone: one query for the session's question ids, one for the answer."""
    message = run.user_message
    rows = list(
        Message.objects.filter(session_id=run.session_id, role=Message.Role.USER).values_list(
            "pk", "variant_of_id"
        )
    )
    group = message.variant_of_id or message.pk
    members = [pk for pk, root in rows if (root or pk) == group]
    last_root = (rows[-1][1] or rows[-1][0]) if rows else None
    current = members[-1] == message.pk if members else True
    return {
        "message": message,
        "run": run,
        "answer": run.answers.first(),
        "group": group,
        "variant": members.index(message.pk) + 1 if message.pk in members else 1,
        "variants": max(1, len(members)),
        "current": current,
        "last": current and last_root == group,
    }


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued run stands: how many runs must start or finish before it starts (the
    queued runs posted before it that are its owner's or start as soon as a worker takes them
    (another owner's oldest, up to their concurrent-run limit), and, when its owner is at the
    limit, the owner's running runs that must finish first; others' runs waiting for their
    owners' turns are not ahead), and whether it is stuck: nobody will start it on their own,
    because its dispatch failed (the queue was down) and it is not merely waiting for its
    owner's earlier runs."""

    ahead: int
    stuck: bool


# A queued run's place: the queued runs posted before it (its owner's, and of others' only those
# that start as soon as a worker takes them: the oldest `limit - running` of each other owner's
# queued runs; the rest wait for their own owner's turn and are not ahead, and the sweeper re-sends
# those now and then, so whether they were dispatched says nothing), and its owner's running runs,
# in one statement (asked for every queued turn a page, a message POST or a socket's queue refresh
# renders; the ORM's aggregate cost several times the statement's work). Counting every queued run
# of an owner under the limit made a page's count jump up by another person's whole backlog each
# time one of their runs finished ("4 ahead", "9 ahead", "4 ahead"), though only one would start.
QUEUE_PLACE = """
SELECT
  (SELECT COUNT(*) FROM
     (SELECT q.id, q.created_at, qs.owner_id,
             ROW_NUMBER() OVER (PARTITION BY qs.owner_id ORDER BY q.created_at, q.id) AS place
      FROM chat_reasoningrun q JOIN chat_chatsession qs ON qs.id = q.session_id
      WHERE q.status = %(queued)s) w
    LEFT JOIN (SELECT bs.owner_id, COUNT(*) AS running FROM chat_reasoningrun b
               JOIN chat_chatsession bs ON bs.id = b.session_id WHERE b.status = %(running)s
               GROUP BY bs.owner_id) busy ON busy.owner_id = w.owner_id
    WHERE (w.owner_id = s.owner_id OR w.place <= %(limit)s - COALESCE(busy.running, 0))
    AND (w.created_at < r.created_at OR (w.created_at = r.created_at AND w.id < r.id))),
  (SELECT COUNT(*) FROM chat_reasoningrun m JOIN chat_chatsession ms ON ms.id = m.session_id
    WHERE ms.owner_id = s.owner_id AND m.status = %(running)s)
FROM chat_reasoningrun r JOIN chat_chatsession s ON s.id = r.session_id
WHERE r.id = %(run)s
"""


def queue_place_of(run: ReasoningRun) -> QueuePlace:
    """The queue place of a queued run as just loaded, in one statement (stuck: no dispatch
    recorded, owner under the concurrent-run limit)."""
    limit = settings.NEXUS_MAX_RUNS_PER_USER
    names = {"queued": ReasoningRun.Status.QUEUED, "running": ReasoningRun.Status.RUNNING}
    with connection.cursor() as cursor:
        cursor.execute(QUEUE_PLACE, {**names, "limit": limit, "run": run.pk})
        earlier, running = cursor.fetchone() or (0, 0)
    stuck = run.status == ReasoningRun.Status.QUEUED and run.dispatched_at is None and running < limit
    return QueuePlace(ahead=earlier + max(0, running - limit + 1), stuck=stuck)


def conversation_history(run: ReasoningRun) -> list[dict[str, str]]:
    """Earlier approved turns of the run's session, as engine messages (answers only).

    Of a regenerated or edited question only the latest earlier version counts, and never a
    version of the run's own question: a regenerated answer starts fresh."""
    own_group = run.user_message.variant_of_id or run.user_message_id
    earlier = (
        ReasoningRun.objects.filter(session_id=run.session_id, created_at__lt=run.created_at)
        .select_related("user_message")
        .prefetch_related("answers")
        .order_by("created_at")
    )
    latest: dict[int, ReasoningRun] = {}
    for previous in earlier:
        group = previous.user_message.variant_of_id or previous.user_message_id
        if group != own_group:
            latest[group] = previous
    history: list[dict[str, str]] = []
    for previous in sorted(latest.values(), key=lambda r: r.created_at):
        answers = list(previous.answers.all())
        if previous.status == ReasoningRun.Status.SUCCEEDED and answers:
            history.append({"role": "user", "content": previous.query or previous.user_message.content})
            history.append({"role": "assistant", "content": answers[0].content})
    return history


def session_search(user: Any, text: str) -> list[dict[str, Any]]:
    """The user's chats whose title or messages contain `text`, newest first, each with a
    snippet of the first message that matched (the title when only the title did)."""
    text = " ".join(refuse_nul(text or "", what="The search").split())[:200]
    if not text:
        return []
    matches = Message.objects.filter(session__owner=user, content__icontains=text).order_by("-created_at")
    snippets: dict[int, str] = {}
    for session_id, content in matches.values_list("session_id", "content")[:500]:
        snippets.setdefault(session_id, _snippet(content, text))
    sessions = session_list_for_user(user).filter(Q(title__icontains=text) | Q(pk__in=list(snippets)))
    return [{"session": s, "snippet": snippets.get(s.pk, "")} for s in sessions[:50]]


def _snippet(content: str, text: str, width: int = 60) -> dict[str, str]:
    """The words around the first match, as plain text split around it (the page marks it)."""
    flat = plain_text(content)
    at = flat.lower().find(text.lower())
    if at < 0:  # the match was inside Markdown syntax: the start of the message instead
        return {
            "before": flat[: 2 * width] + ("…" if len(flat) > 2 * width else ""),
            "match": "",
            "after": "",
        }
    start = max(0, at - width)
    end = at + len(text) + width
    return {
        "before": ("…" if start else "") + flat[start:at],
        "match": flat[at : at + len(text)],
        "after": flat[at + len(text) : end] + ("…" if end < len(flat) else ""),
    }


def session_export_markdown(session: ChatSession) -> str:
    """The chat as Markdown: each question and the answer the page shows for it."""
    lines = [
        f"# {markdown_inline(session.title)}",
        "",
        f"_Exported from Nexus on {timezone.now():%Y-%m-%d %H:%M} UTC._",
        "",
    ]
    for turn in session_thread(session):
        if not turn["current"]:
            continue
        # Questions were typed as text (the page shows them as typed); answers are Markdown.
        lines += ["## Question", "", markdown_text(turn["message"].content.strip()), ""]
        run = turn["run"]
        if turn["answer"] is not None:
            lines += ["## Answer", "", turn["answer"].content.strip(), ""]
        elif run is not None and run.status == ReasoningRun.Status.CANCELLED:
            lines += ["## Answer (stopped)", "", run.draft_text.strip() or "_Stopped before any text._", ""]
        elif run is not None and run.status == ReasoningRun.Status.FAILED:
            lines += ["## Answer (failed)", "", run.error, ""]
    return "\n".join(lines)


# --- sessions ----------------------------------------------------------------------------


def session_create(*, owner: Any, title: str = "") -> ChatSession:
    title = clean_title(title)
    session = ChatSession.objects.create(owner=owner, title=title or "New chat")
    sessions_changed(owner_id=session.owner_id, session_id=session.pk)
    return session


def session_new(owner: Any, *, came_from: str = "", key: str = "") -> ChatSession:
    """The chat "+ New chat" opens: the chat it was pressed in if that is still blank, the
    blank chat an earlier post under the same `key` made (the second post of a double-click,
    which made two; a key the page kept while its chat filled in, Back to a cached page, names
    a new one), or a new chat."""
    blank = session_unused(owner, came_from)
    if blank is not None:
        return blank
    # The chat under `key` read once, then asked whether it is blank: read as "no blank chat
    # under the key" and then "a chat under the key" (the other post of a double-click made
    # it in between), it was taken as filled in, and a second blank chat was made.
    keyed = ChatSession.objects.filter(owner=owner, client_key=key).order_by().first() if key else None
    if keyed is not None:
        if _blank_sessions(owner).filter(pk=keyed.pk).exists():
            return keyed
        key = ""  # its chat has a question in it now: this one is another
    try:
        with transaction.atomic():
            session = ChatSession.objects.create(owner=owner, client_key=key or None)
    except IntegrityError:  # both posts at once: the other one's
        return ChatSession.objects.get(owner=owner, client_key=key)
    sessions_changed(owner_id=session.owner_id, session_id=session.pk)
    return session


def session_unused(owner: Any, session_id: str) -> ChatSession | None:
    """The owner's chat `session_id` if it is still a blank "New chat", nothing asked in it
    and no title given (a new chat opened from it is that chat), else None."""
    pk = parse_id(session_id)
    if pk is None:
        return None
    return _blank_sessions(owner).filter(pk=pk).order_by().first()


def session_blank(owner: Any) -> ChatSession | None:
    """The owner's latest chat that is still a blank "New chat" (nothing asked in it, no title
    given): where a first question goes rather than into yet another new chat, since one whose
    message could not be stored (the database away mid-request) was left blank behind it."""
    return _blank_sessions(owner).order_by("-created_at", "-id").first()


def _blank_sessions(owner: Any) -> QuerySet[ChatSession]:
    """The owner's chats still a blank "New chat": nothing asked in them, no title given."""
    return ChatSession.objects.filter(owner=owner, title="New chat", messages__isnull=True)


def session_rename(*, session: ChatSession, title: str) -> ChatSession:
    cleaned = clean_title(title)
    if not cleaned:
        raise ValidationError("A chat needs a title.")
    session.title = cleaned
    session.save(update_fields=["title"])
    sessions_changed(owner_id=session.owner_id, session_id=session.pk)
    return session


def session_delete(*, session: ChatSession) -> None:
    """Delete a chat that is not answering. The chat's row is locked first: a question being
    stored in it meanwhile (another tab) is then either in, and seen answering here, or waits
    and finds the chat gone (see `_store_next_run`). Checked without the lock, a question that
    slipped in between the check and the delete made the delete a 500 (the question's row
    still pointed at the chat), or deleted the run under the worker answering it."""
    owner_id, session_id = session.owner_id, session.pk
    with transaction.atomic():
        if not ChatSession.objects.select_for_update().filter(pk=session_id).values_list("pk", flat=True):
            return  # deleted meanwhile (another tab): what was asked is done
        if session.runs.filter(status__in=ReasoningRun.ACTIVE).exists():
            raise ValidationError("This chat is still answering; delete it when the answer is in.")
        session.delete()
    sessions_changed(owner_id=owner_id, session_id=session_id, deleted=True)


# --- messages and runs -------------------------------------------------------------------


LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


def _title_from(text: str) -> str:
    """A new chat's title: its first message's first line that shows something, as clean as a
    title given by hand (no direction overrides); a longer line is cut at a word, with "…"
    (cut mid-word and unmarked, "…dolor si" read as the whole question)."""
    for line in text.splitlines():
        if not (title := clean_title(line[: TITLE_CHARS * 3]).strip()):
            continue
        if len(title) <= TITLE_CHARS:
            return title
        cut = title[: TITLE_CHARS - 1]
        if title[TITLE_CHARS - 1] != " " and " " in cut[TITLE_CHARS // 2 :]:
            cut = cut.rsplit(" ", 1)[0]  # not in the middle of a word
        return (cut.rstrip(" ,;:-") or cut) + "…"
    return "New chat"


def message_validate(content: str) -> str:
    """The message as stored: without blank lines around it, but with its first line's
    indentation (a pasted code snippet stays aligned)."""
    text = LEADING_BLANK_LINES.sub(
        "", refuse_nul(content or "", what="The message").translate(BIDI_OVERRIDES)
    ).rstrip()
    if not visible(text):
        raise ValidationError("Type a message first.")
    limit = settings.NEXUS_MAX_MESSAGE_CHARS
    if len(text) > limit:
        raise ValidationError(
            f"That message is {len(text):,} characters; the limit is {limit:,}. Shorten it or "
            "upload it as a document and mention it with @."
        )
    return text


@dataclass
class PreparedMessage:
    """What the engine will be asked (the question, and attachments beside it), and notes for
    the user about how it was prepared."""

    question: str
    attachments: list[Attachment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def message_prepare(*, user: Any, content: str) -> PreparedMessage:
    """Expand a /command and attach @mentioned documents; raises ValidationError for bad input."""
    text = message_validate(content)
    expansion = mentions.expand_command(user, text.lstrip())  # "  /summarize x" is a command too
    question = expansion.question if expansion is not None else text
    attachments, notes = mentions.attachments_for(user, question)
    if expansion is not None:
        attachments = [*expansion.attachments, *attachments]
        notes = [*expansion.notes, *notes]
    return PreparedMessage(question=question, attachments=attachments, notes=notes)


def mode_for(session: ChatSession) -> str:
    """The chat's own mode where the operator lets people choose, else AGENT_MODE."""
    if settings.NEXUS_CHAT_MODE_CHOICE:
        chosen = SessionMode.objects.filter(session=session).values_list("mode", flat=True).first()
        if chosen in MODE_NAMES:
            return chosen
    return settings.AGENT_MODE


def message_post(
    *,
    session: ChatSession,
    content: str,
    question: str | None = None,
    attachments: list[Attachment] | None = None,
    key: str = "",
) -> ReasoningRun:
    """Store the user's message and a queued run together; the caller dispatches the run.
    `question` is what the engine answers (default: the message as typed). `session` is
    updated in place to what was stored (its title, when the message gave it one). `key` is
    the page's name for the message (see `run_posted_with`).

    A session still answering refuses the run: its database constraint allows one active run
    per session, so the refused insert rolls the message back too and `_store_next_run` raises
    RunActive. (Asking first cost a query on every post to spare that rollback on a few.)"""
    text = message_validate(content)
    updates = {"updated_at": timezone.now()}
    if session.title == "New chat":
        updates["title"] = _title_from(text)

    def store() -> ReasoningRun:
        message = Message.objects.create(
            session=session, role=Message.Role.USER, content=text, client_key=key
        )
        run = ReasoningRun.objects.create(
            session=session,
            user_message=message,
            query=question or text,
            attachments=[a.to_dict() for a in attachments or []],
            provider=settings.NEXUS_LLM_PROVIDER,
            model=settings.NEXUS_REASONING.model,
            agent_mode=mode_for(session),
            dispatched_at=timezone.now(),  # see dispatch_stored_run
        )
        ChatSession.objects.filter(pk=session.pk).update(**updates)
        # The chat moves to the top of the list (and may get its title) in every tab.
        sessions_changed(owner_id=session.owner_id, session_id=session.pk, run_id=run.pk)
        return run

    run = _store_next_run(session, store)
    for name, value in updates.items():
        setattr(session, name, value)
    return run


MESSAGE_KEY = re.compile(r"[A-Za-z0-9_-]{16,64}")


def message_key(value: str) -> str:
    """A page's name for a message it sends, if well formed; "" (none) otherwise."""
    return value if MESSAGE_KEY.fullmatch(value) else ""


def run_posted_with(session: ChatSession, key: str) -> ReasoningRun | None:
    """The run of the question the page sent under `key` already, if it was stored: the page
    sends a question again under the same key when the reply to the first send was lost (the
    server restarted under it, the network dropped), and it was asked twice, or refused as
    "still answering" by a page that showed no answer under way."""
    return _posted_under(key, session=session)


def same_question(run: ReasoningRun, content: str) -> bool:
    """Whether `content` is the question `run` was asked, as it was stored: a key sent with
    another question (a page restored by Back kept its key) names no question already asked."""
    return run.user_message.content == _as_stored(content)


def run_posted_by(owner: Any, key: str, content: str) -> ReasoningRun | None:
    """`run_posted_with` for the first page's box, which starts a chat: the run of the question
    `content` that `owner` sent under `key`, in whichever chat it started (sent again, it
    started a second chat with the same question). The key stays with each question sent
    under it (a first page restored by Back sends another one under the same key, into a chat
    of its own), so the question is matched too."""
    text = _as_stored(content)
    return _posted_under(key, session__owner=owner, user_message__content=text) if text is not None else None


def _as_stored(content: str) -> str | None:
    """The question as message_post stores it, or None if it could not be stored."""
    try:
        return message_validate(content)
    except ValidationError:
        return None


def _posted_under(key: str, **where: Any) -> ReasoningRun | None:
    if not key:
        return None
    return (
        ReasoningRun.objects.select_related("session", "user_message")
        .filter(user_message__client_key=key, **where)
        .order_by("pk")
        .first()
    )


def message_resend(
    *,
    run: ReasoningRun,
    content: str | None = None,
    question: str | None = None,
    attachments: list[Attachment] | None = None,
) -> ReasoningRun:
    """Ask the last question again: as it was (regenerate, `content` None) or edited (with the
    edit's prepared `question` and `attachments`). The new run's message is a variant of the
    question's first version; the older answers stay."""
    session = run.session
    active = session.runs.filter(status__in=ReasoningRun.ACTIVE).first()
    if active is not None:
        raise RunActive(active)
    last = session.messages.filter(role=Message.Role.USER).last()
    if last is None or last.pk != run.user_message_id:
        raise ValidationError("Only the last question can be asked again.")
    original = run.user_message
    text = message_validate(original.content if content is None else content)
    root = original.variant_of_id or original.pk

    def store() -> ReasoningRun:
        message = Message.objects.create(
            session=session, role=Message.Role.USER, content=text, variant_of_id=root
        )
        new_run = ReasoningRun.objects.create(
            session=session,
            user_message=message,
            query=(run.query if content is None else question) or text,
            attachments=run.attachments if content is None else [a.to_dict() for a in attachments or []],
            provider=settings.NEXUS_LLM_PROVIDER,
            model=settings.NEXUS_REASONING.model,
            agent_mode=mode_for(session),
            dispatched_at=timezone.now(),  # see dispatch_stored_run
        )
        ChatSession.objects.filter(pk=session.pk).update(updated_at=timezone.now())
        sessions_changed(owner_id=session.owner_id, session_id=session.pk, run_id=new_run.pk)
        return new_run

    return _store_next_run(session, store)


def _store_next_run(session: ChatSession, store: Callable[[], ReasoningRun]) -> ReasoningRun:
    """Store a session's next question and run (`store`) in one transaction. Two posts can race
    past the callers' check for an active run; the database constraint lets exactly one
    through, and the other learns which run is answering. A run that was active when the
    insert was refused may have finished before it is looked up: then the way is clear, and
    the question is stored again (it was a 500 that lost the message)."""
    for _ in range(3):
        try:
            with transaction.atomic():
                return store()
        except IntegrityError:
            active = session.runs.filter(status__in=ReasoningRun.ACTIVE).first()
            if active is not None:
                raise RunActive(active) from None
            if not ChatSession.objects.filter(pk=session.pk).exists():
                raise ValidationError(CHAT_DELETED) from None
    with transaction.atomic():
        return store()  # a refusal that is not about an active run raises here


def run_stop(run: ReasoningRun) -> str | None:
    """Stop an unfinished run at the person's request: the status it was stopped in (queued,
    running or awaiting approval), None if it had already finished.

    The executor (here or in a Celery worker) sees the status within a fraction of a second
    and cancels the engine; whatever draft had streamed stays on the run. A run stopped while
    queued or parked has no executor to notice: the caller tells its pages. Each status is
    tried by a conditional update of its own, so the one returned is the one the run was
    really in when stopped (a worker claiming it meanwhile cannot make a queued stop look
    like a running one, or the other way round)."""
    now = timezone.now()
    for _ in range(3):  # a run moving between active states under the updates: try again
        for status in ReasoningRun.ACTIVE:
            if ReasoningRun.objects.filter(pk=run.pk, status=status).update(
                status=ReasoningRun.Status.CANCELLED,
                finished_at=now,
                started_at=Coalesce(F("started_at"), now),
            ):
                return status
        if not ReasoningRun.objects.filter(pk=run.pk, status__in=ReasoningRun.ACTIVE).exists():
            return None
    return None


def runs_stopped_unattended(limit: int = 50) -> list[ReasoningRun]:
    """Runs stopped while they ran whose executor never recorded the stop (no `run.stopped` in
    their trace, their heartbeat stale since): their worker had died, within the stale time, so
    the stop found no one to end them in their pages. Stopped in the last ten minutes (older
    pages were reloaded long since)."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS)
    return list(
        ReasoningRun.objects.select_related("session")
        .filter(
            status=ReasoningRun.Status.CANCELLED,
            heartbeat_at__lt=stale,
            finished_at__lt=stale,
            finished_at__gt=now - timedelta(minutes=10),
        )
        .exclude(events__kind="run.stopped")
        .order_by("finished_at")[:limit]
    )


def run_take_over_stopped(run_id: int) -> None:
    """Take a stopped run over from the executor that held it (as a claim does, see
    chat.writer.RunTakenOver), to end it without it: that executor, if its worker was only
    frozen, writes nothing more to the run when it thaws."""
    ReasoningRun.objects.filter(pk=run_id, status=ReasoningRun.Status.CANCELLED).update(
        delivery_count=F("delivery_count") + 1
    )


def run_orphaned(run: ReasoningRun) -> bool:
    """Whether a run that was running (as just read) had lost its worker: its heartbeat stale."""
    stale = timezone.now() - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS)
    return run.heartbeat_at is None or run.heartbeat_at < stale


def feedback_set(*, run: ReasoningRun, user: Any, rating: int, comment: str | None = "") -> AnswerFeedback:
    """Record (or change) a person's verdict on an answer: one row per person and run.
    `comment` None (a thumb clicked): the saved comment stays with its verdict, and goes when
    the verdict changes (`cleared_comment` says so)."""
    if rating not in (AnswerFeedback.Rating.UP, AnswerFeedback.Rating.DOWN):
        raise ValidationError("Rate an answer up or down.")
    thumb = comment is None
    comment = refuse_nul(comment or "", what="The comment").strip()
    if len(comment) > 2000:
        raise ValidationError("Keep the comment under 2,000 characters.")
    if not run.answers.exists():
        raise ValidationError("Only an answer can be rated.")
    before = AnswerFeedback.objects.filter(run=run, user=user).values_list("rating", "comment").first()
    cleared = ""
    if before is not None and before[0] != rating and (thumb or comment == before[1]):
        # A changed verdict: the saved comment was about the other one (a form that posts it
        # unchanged with the verdict says the same).
        cleared, comment = before[1], ""
    elif thumb and before is not None:
        comment = before[1]
    feedback, _ = AnswerFeedback.objects.update_or_create(
        run=run, user=user, defaults={"rating": rating, "comment": comment, "updated_at": timezone.now()}
    )
    feedback.cleared_comment = cleared  # the page says so: nothing disappears unannounced
    return feedback


def run_claim(run_id: int, *, worker: str, ended: list[ReasoningRun] | None = None) -> ReasoningRun | None:
    """Take a queued run, or a running one whose worker stopped beating; None if not ours.
    A redelivered run the claim finishes instead (its answer was stored before its worker
    died, or its workers died too often) is added to `ended`: no executor runs it, so the
    caller tells its pages.

    The update is a single conditional statement, so two workers can never both claim a run.
    A queued run whose owner already has NEXUS_MAX_RUNS_PER_USER runs ahead of it is parked
    (left queued, marked undispatched) until one of them finishes: one user's burst waits its
    turn instead of filling every worker.
    """
    now = timezone.now()
    if not _run_has_turn(run_id):
        return None
    stale = now - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS)
    claimable = Q(status=ReasoningRun.Status.QUEUED) | Q(
        status=ReasoningRun.Status.RUNNING, heartbeat_at__lt=stale
    )
    updated = ReasoningRun.objects.filter(Q(pk=run_id) & claimable).update(
        status=ReasoningRun.Status.RUNNING,
        worker=worker,
        heartbeat_at=now,
        started_at=Coalesce(F("started_at"), now),
        delivery_count=F("delivery_count") + 1,
    )
    if not updated:
        return None
    run = ReasoningRun.objects.select_related("session__owner", "user_message").get(pk=run_id)
    if run.delivery_count > 1 and run.answers.exists():
        # The answer was stored before the previous worker died: nothing left to do.
        run_mark_succeeded(run)
        if ended is not None:
            ended.append(run)
        return None
    if run.delivery_count - run.releases > MAX_DELIVERIES:  # not its own worker resuming it
        run_fail(
            run.pk, f"The worker stopped {MAX_DELIVERIES} times while answering; giving up. Try asking again."
        )
        if ended is not None:
            ended.append(run)
        return None
    return run


def run_held_by_another(run_id: int, worker: str) -> bool:
    """Whether another worker than `worker` holds the run now (it took it over)."""
    return (
        ReasoningRun.objects.filter(pk=run_id, status=ReasoningRun.Status.RUNNING)
        .exclude(worker=worker)
        .exists()
    )


def run_release(run_id: int, *, worker: str) -> bool:
    """Make a run this worker holds claimable again at once (its heartbeat as if stale), to
    resume it from its checkpoint; False if it is not this worker's running run any more. The
    claim that follows is no delivery lost to a dead worker (see run_claim's MAX_DELIVERIES):
    three database outages under a run failed it as if its workers had died."""
    stale = timezone.now() - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS + 1)
    return bool(
        ReasoningRun.objects.filter(pk=run_id, status=ReasoningRun.Status.RUNNING, worker=worker).update(
            heartbeat_at=stale, releases=F("releases") + 1
        )
    )


def run_park(run_id: int, *, worker: str) -> bool:
    """Put a run that waits for a person's decision aside: stored as awaiting approval, no
    worker holds it, and the park does not count as a lost delivery. False if the run is no
    longer this worker's to park (stopped meanwhile, or taken over)."""
    return bool(
        ReasoningRun.objects.filter(pk=run_id, status=ReasoningRun.Status.RUNNING, worker=worker).update(
            status=ReasoningRun.Status.AWAITING,
            heartbeat_at=None,
            delivery_count=Greatest(F("delivery_count") - 1, 0),
        )
    )


def run_unpark(run_id: int) -> bool:
    """A decision came for a parked run: queue it again (to be dispatched); False if it was
    not parked."""
    return bool(
        ReasoningRun.objects.filter(pk=run_id, status=ReasoningRun.Status.AWAITING).update(
            status=ReasoningRun.Status.QUEUED, dispatched_at=None
        )
    )


def runs_to_unpark() -> list[int]:
    """Parked runs with nothing left to wait for: their decision's dispatch was lost, or
    nobody answered within NEXUS_APPROVAL_WAIT_SECONDS (then the request is declined, and
    the model hears so). They are queued again, stamped as dispatched by the caller."""
    from chat.approvals import approval_expire_before

    expired = approval_expire_before(timezone.now() - timedelta(seconds=settings.NEXUS_APPROVAL_WAIT_SECONDS))
    parked = ReasoningRun.objects.filter(status=ReasoningRun.Status.AWAITING)
    decided = list(
        parked.exclude(tool_approvals__status=ToolApproval.Status.PENDING).values_list("pk", flat=True)[:200]
    )
    ready = sorted(set(decided) | set(expired))
    ReasoningRun.objects.filter(pk__in=ready, status=ReasoningRun.Status.AWAITING).update(
        status=ReasoningRun.Status.QUEUED, dispatched_at=timezone.now()
    )
    return ready


def runs_heartbeat(run_ids: list[int], *, worker: str) -> None:
    """Mark the worker's running runs alive, all at once. Their rows are locked in id order
    first, the order the event writer updates runs in: one UPDATE of many rows locks them in
    whatever order it finds them, and a writer holding one of them while waiting for another
    was a deadlock (PostgreSQL broke one in a burst of 100 runs, stalling both for a second)."""
    mine = ReasoningRun.objects.filter(pk__in=run_ids, worker=worker, status=ReasoningRun.Status.RUNNING)
    with transaction.atomic():
        alive = list(mine.order_by("pk").select_for_update(no_key=True).values_list("pk", flat=True))
        ReasoningRun.objects.filter(pk__in=alive).update(heartbeat_at=timezone.now())


def run_mark_succeeded(run: ReasoningRun) -> None:
    ReasoningRun.objects.filter(pk=run.pk, status__in=ReasoningRun.ACTIVE).update(
        status=ReasoningRun.Status.SUCCEEDED, finished_at=timezone.now()
    )


def run_fail(run_id: int, message: str, *, claim: int | None = None) -> bool:
    """Mark an unfinished run failed with a message for the user; False if it had finished,
    or if it was claimed again since the executor's `claim` (another executor has it now)."""
    now = timezone.now()
    unfinished = ReasoningRun.objects.filter(pk=run_id, status__in=ReasoningRun.ACTIVE)
    if claim is not None:
        unfinished = unfinished.filter(delivery_count__lte=claim)
    return bool(
        unfinished.update(
            status=ReasoningRun.Status.FAILED,
            error=message,
            finished_at=now,
            started_at=Coalesce(F("started_at"), now),
        )
    )


# Whether a queued run's owner has room for it: their running runs, and their queued runs
# posted before it, in one statement (it runs for every job a worker takes; built with the ORM
# it cost a few milliseconds of CPU each time, as two queries).
RUNS_AHEAD = """
SELECT
  (SELECT COUNT(*) FROM chat_reasoningrun m JOIN chat_chatsession ms ON ms.id = m.session_id
    WHERE ms.owner_id = s.owner_id AND m.status = %s),
  (SELECT COUNT(*) FROM chat_reasoningrun m JOIN chat_chatsession ms ON ms.id = m.session_id
    WHERE ms.owner_id = s.owner_id AND m.status = %s
      AND (m.created_at < r.created_at OR (m.created_at = r.created_at AND m.id < r.id)))
FROM chat_reasoningrun r JOIN chat_chatsession s ON s.id = r.session_id
WHERE r.id = %s AND r.status = %s
"""


def _run_has_turn(run_id: int) -> bool:
    """Whether a queued run may start now under its owner's concurrent-run limit; parks it if not."""
    queued = ReasoningRun.Status.QUEUED
    with connection.cursor() as cursor:
        cursor.execute(RUNS_AHEAD, [ReasoningRun.Status.RUNNING, queued, run_id, queued])
        row = cursor.fetchone()
    if row is None:  # running (a redelivery), finished or gone: run_claim decides
        return True
    running, earlier = row
    if running + earlier < settings.NEXUS_MAX_RUNS_PER_USER:
        return True
    ReasoningRun.objects.filter(pk=run_id, status=queued).update(dispatched_at=None)
    return False


def runs_mark_dispatched(run_ids: list[int], *, dispatched: bool = True) -> None:
    """Record that these queued runs were handed to the job queue (or, `dispatched=False`, that
    they never reached it), in one statement."""
    ReasoningRun.objects.filter(pk__in=run_ids, status=ReasoningRun.Status.QUEUED).update(
        dispatched_at=timezone.now() if dispatched else None
    )


def runs_next_for_owner(owner_id: int) -> list[int]:
    """The owner's oldest queued runs that fit under the concurrent-run limit now, to dispatch
    when one of their runs finishes (first come, first served)."""
    mine = ReasoningRun.objects.filter(session__owner_id=owner_id)
    limit = settings.NEXUS_MAX_RUNS_PER_USER
    queued = mine.filter(status=ReasoningRun.Status.QUEUED).order_by("created_at", "pk")
    waiting = list(queued.values_list("pk", flat=True)[:limit])
    if not waiting:  # the usual case, answered in one query
        return []
    free = limit - mine.filter(status=ReasoningRun.Status.RUNNING).count()
    return waiting[: max(free, 0)]


class StaleJudge:
    """Whether a sweeper may take stale heartbeats for dead workers now. Heartbeats that went
    stale while the database was away prove nothing (their workers could not beat either):
    once the sweeper itself lost the database, it hands running runs on only after a stale
    time with the database back. A 2 s PostgreSQL outage made every run of a live worker look
    orphaned the moment it ended, and each was executed again by another worker."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._after = 0.0

    def database_lost(self) -> None:
        self._after = self.clock() + settings.NEXUS_RUN_STALE_SECONDS

    def judging(self) -> bool:
        return self.clock() >= self._after


def runs_to_recover(*, orphans: bool = True, resend_queued: bool = False) -> list[int]:
    """Runs a sweeper should hand to a worker again: orphaned running ones (unless `orphans`
    is False, see StaleJudge), parked ones with nothing left to wait for (`runs_to_unpark`),
    queued ones whose dispatch failed or that waited for their turn, and (rarely) queued ones
    whose job the broker lost: those sent a lost-job interval ago, or every one sent so far
    when `resend_queued` (the broker may have restarted empty). The queued ones are stamped as
    dispatched, so each is re-sent at most once per interval; duplicates are harmless
    (run_claim lets one executor through)."""
    unparked = runs_to_unpark()
    now = timezone.now()
    stale = now - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS)
    lost = now if resend_queued else now - timedelta(seconds=max(30, 2 * settings.NEXUS_RUN_STALE_SECONDS))
    queued = ReasoningRun.objects.filter(status=ReasoningRun.Status.QUEUED)
    orphaned = (
        list(
            ReasoningRun.objects.filter(status=ReasoningRun.Status.RUNNING, heartbeat_at__lt=stale)
            .order_by("heartbeat_at")
            .values_list("pk", flat=True)[:200]
        )
        if orphans
        else []
    )
    waiting = list(
        queued.filter(
            Q(dispatched_at__isnull=True, created_at__lt=now - timedelta(seconds=1))
            | Q(dispatched_at__lt=lost)
        )
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)[: 5000 if resend_queued else 200]
    )
    runs_mark_dispatched(waiting)
    return orphaned + unparked + waiting
