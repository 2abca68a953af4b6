"""The session websocket: pushes rendered trace fragments, and catches clients up.

Authorisation happens in `connect` (signed in, owner of the session). The channel layer
carries small messages naming a run's last stored event, most with that batch's rows as
stored; this consumer renders the same partials the page uses, from those rows when the page
has every event before them, else from the rows it reads back. The client sends
`{"type": "sync", "cursor": {run: seq}}` on every (re)connect and after adding a turn; the
consumer answers with every event after each cursor, so nothing is lost across a reconnect or
a reload. Live events fill gaps the same way, and the client drops fragments it already has.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module
from typing import Any

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from django.template.loader import render_to_string
from redis.exceptions import RedisError

from chat import services, sockets
from chat.converters import MAX_ID
from chat.models import ChatSession, Elicitation, Preference, ReasoningRun, ToolApproval, TraceEvent
from chat.presenters import (
    answer_html,
    approval_for,
    elicitation_for,
    events_context,
    rationale_of,
    run_mode,
    run_urls,
    session_links,
    turn_context,
)
from chat.rendering import render_markdown
from chat.sink import QUEUE_GROUP, session_group, user_group

logger = logging.getLogger(__name__)

PAGE = "chat/session.html"
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY = 4429
CLOSE_UNAVAILABLE = 4503
# How long a socket's handshake waits for the database (who it is, whether the chat is theirs):
# under daphne's own handshake limit (5 s), past which it drops the socket unanswered, and the
# page, seeing no close code, does not try again. The pool's wait for a connection is 10 s.
HANDSHAKE_DATABASE_WAIT = 3.0
SIGNED_OUT_REASON = "You are signed out in this browser: reload the page to sign in again."
TOO_MANY_REASON = "Too many Nexus tabs are open: close some, then reload this one for live updates."
UNAVAILABLE_REASON = "Live updates are unavailable for a moment; they come back on their own."
MAX_CURSOR_RUNS = 200
# Turns a reconnecting page is sent whole at most: questions asked while it was away.
MAX_NEW_TURNS = 20
MAX_FRAME_CHARS = 64_000
# A page asks for a sync when its socket opens, after a send and when a draft has a gap: a few
# at once. Beyond SYNC_BURST, one every SYNC_EVERY seconds, the page's latest ask waiting its
# turn (it covers the ones before it): each sync reads and draws the chat's runs, and a script
# sending them in a loop held a server process's CPU for everyone's pages on it.
SYNC_BURST = 10
SYNC_EVERY = 1.0
DRAFT_KEYS = ("run", "seq", "draft", "offset", "text")
# Runs that leave the queue together (a worker taking fifty) move a waiting page's count once.
QUEUE_REFRESH_SECONDS = 0.2
# How long a page waits for a question asked in another tab to show up by itself (its run's
# first event, or, in the tab that asked, the page's own sync after its POST) before drawing it.
NEW_TURN_WAIT_SECONDS = 0.5
# A streaming draft's Markdown is rendered at most this often per page (the text between two
# renders is shown as it arrives), so a long answer costs a few renders a second, not one a batch.
DRAFT_RENDER_SECONDS = 0.15
# Events after which the answer area changes (a run starts, an answer is shown or discarded).
TURN_KINDS = frozenset({"answer.final", "answer.discarded", "run.started"})
# Events whose trace line shows rows besides their own (an approval card, an input form).
CARD_KINDS = frozenset({"tool.approval.requested", "elicitation.requested"})


def status_events(events: list[TraceEvent]) -> list[TraceEvent]:
    """Those of `events` that set the status line's mode."""
    return [e for e in events if e.level == TraceEvent.Level.STATUS and e.payload.get("mode")]


def turn_news(events: list[TraceEvent]) -> bool:
    """Whether `events` change the turn beyond its trace (see `_render_turn_news`)."""
    return any(e.kind in TURN_KINDS for e in events) or bool(status_events(events))


def needs_database(events: list[TraceEvent], rationale: str | None) -> bool:
    """Whether drawing `events`' lines reads other rows: a card's, or the analysis whose
    rationale a strategy line repeats only if it differs (see `events_context`), when this
    page has not drawn it (`rationale`)."""
    for event in events:
        if event.kind in CARD_KINDS:
            return True
        rationale = rationale_of(event) if event.kind == "analysis.completed" else rationale
        if event.kind == "strategy.selected" and event.payload.get("rationale") and rationale is None:
            return True
    return False


class SyncBudget:
    """A token bucket: SYNC_BURST syncs at once, then one per SYNC_EVERY seconds."""

    def __init__(self) -> None:
        self.tokens = float(SYNC_BURST)
        self.at = time.monotonic()

    def take(self) -> float:
        """0.0 if a sync may run now (it is counted), else the seconds until one may."""
        now = time.monotonic()
        self.tokens = min(SYNC_BURST, self.tokens + (now - self.at) / SYNC_EVERY)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) * SYNC_EVERY


@dataclass
class DraftView:
    """What this page has of one run's draft: its text, and when it was last rendered."""

    draft: str
    text: str
    rendered_at: float = 0.0
    flush: asyncio.Task[None] | None = None


class SessionConsumer(AsyncWebsocketConsumer):
    # Channels sets this in __call__ to the channel layer's receive for this socket. Wrapped so
    # that Redis going away ends the socket with 4503 (the page says live updates are
    # unavailable and reconnects later) instead of an exception and a traceback in daphne's log,
    # which every socket refused for lack of Redis used to leave behind.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._layer_receive

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        async def layer_receive() -> dict[str, Any]:
            try:
                return await receive()
            except Exception as exc:
                # The handshake first: a socket refused in `connect` has its own close code.
                for _ in range(200):
                    if self.handshake_done:
                        break
                    await asyncio.sleep(0.05)
                if self.live:
                    logger.warning("live updates stopped, Redis unreachable: %s", exc)
                    with contextlib.suppress(Exception):
                        await self.close(code=CLOSE_UNAVAILABLE, reason=UNAVAILABLE_REASON)
                    with contextlib.suppress(Exception):
                        await self.disconnect(CLOSE_UNAVAILABLE)
                raise StopConsumer from None

        self._layer_receive = layer_receive

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Every message and frame this socket handles. The database or Redis going away under
        one (a restart) closed the socket with 1011 and a traceback in daphne's log; now it
        closes as "unavailable for a moment", and the page reconnects and catches up."""
        try:
            await super().dispatch(message)
        except (DatabaseError, RedisError, OSError) as exc:
            if not self.handshake_done:
                raise  # `connect` has its own refusals
            logger.warning("page socket closed, %s unreachable: %s", type(exc).__module__.split(".")[0], exc)
            with contextlib.suppress(Exception):
                await self.close(code=CLOSE_UNAVAILABLE, reason=UNAVAILABLE_REASON)

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        """A frame to the page, unless the page has gone: a tab closed just as an event came
        in raised "Attempt to send on a closed protocol" out of whatever was sending, and
        daphne logged it as an application error with a traceback (a tenth of the runs of a
        person who closes tabs as answers arrive). The disconnect that follows cleans up."""
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except Disconnected:
            logger.debug("a frame for a page socket that has closed was dropped")

    handshake_done = False  # `connect` has accepted or refused the socket
    live = False  # accepted, and subscribed to its session's events

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: dict[int, int] = {}
        self.phases: dict[int, str] = {}  # the phase of the last event sent, per run
        self.rationales: dict[int, str | None] = {}  # of the last analysis drawn, per run
        self.trace_open: bool | None = None
        self.settled: set[int] = set()
        self.ended: set[tuple[int, str]] = set()  # (run, part) rendered in the run's final state
        self.drafts: dict[int, DraftView] = {}
        self.queued: set[int] = set()  # runs this page shows as queued, whose place it keeps current
        self.queue_refresh: asyncio.Task[None] | None = None
        self.new_turns: set[asyncio.Task[None]] = set()
        self.sync_budget = SyncBudget()
        self.pending_sync: str | None = None  # the latest frame over the budget, not yet read
        self.sync_later: asyncio.Task[None] | None = None

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        try:
            await super().websocket_connect(message)
        finally:
            self.handshake_done = True

    async def connect(self) -> None:
        user = self.scope.get("user")
        if self.scope.get("database_away"):  # who it is could not be read (chat.routing)
            await self._unavailable()
            return
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        try:
            owned = await asyncio.wait_for(
                self._owns_session(user.pk, self.session_id), HANDSHAKE_DATABASE_WAIT
            )
        except (DatabaseError, TimeoutError) as exc:  # a bare 403, or none, the page could not explain
            logger.warning("websocket refused, the database is away: %s", exc or "no answer in time")
            await self._unavailable()
            return
        if not owned:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        try:
            self.slot = await sockets.socket_claim(user.pk, self.channel_name)
            if self.slot is None:
                # Accepted first, so the page receives the reason and can say it (see below).
                await self.accept()
                await self.close(code=CLOSE_TOO_MANY, reason=TOO_MANY_REASON)
                return
            await self.channel_layer.group_add(session_group(self.session_id), self.channel_name)
            # The chat list and this chat's header follow renames, new and deleted chats made
            # in any of the person's tabs.
            await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        except Exception as exc:
            # Live updates travel through Redis: without it say so plainly (the page still
            # works, and a reload shows what happened), rather than fail with a server error.
            logger.warning("websocket refused, Redis unreachable: %s", exc)
            self.slot = None
            await self._unavailable()
            return
        self.keeper = asyncio.create_task(sockets.socket_keep(self.slot, self.channel_name, user.pk))
        self.user_id = user.pk
        self.group = session_group(self.session_id)
        await self.accept()
        self.live = True

    async def disconnect(self, code: int) -> None:
        for view in self.drafts.values():
            await sockets.stop(view.flush)
        if getattr(self, "slot", None):
            await sockets.stop(self.keeper)
            await sockets.socket_release(self.slot, self.channel_name)
        for task in [*self.new_turns, self.sync_later]:
            await sockets.stop(task)
        if hasattr(self, "group"):
            await sockets.stop(self.queue_refresh)
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)
            if self.queued:
                await self.channel_layer.group_discard(QUEUE_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Frames come from the browser: anything malformed, oversized or absurdly nested is ignored.
        if text_data is None or len(text_data) > MAX_FRAME_CHARS:
            return
        wait = self.sync_budget.take()
        if wait:  # kept unread: a flood costs no parsing either
            self.pending_sync = text_data
            if self.sync_later is None:
                self.sync_later = asyncio.create_task(self._sync_later(wait))
            return
        await self._answer_sync(text_data)

    async def _sync_later(self, wait: float) -> None:
        """The page's latest sync over the budget, when its turn comes: through this socket's
        own channel, so it is handled in order with the pushes, never beside one."""
        await asyncio.sleep(wait)
        try:
            await self.channel_layer.send(self.channel_name, {"type": "sync.deferred"})
        except Exception as exc:  # Redis away: the socket closes as unavailable and the page syncs again
            logger.warning("could not defer a sync: %s", exc)
        finally:
            self.sync_later = None

    async def sync_deferred(self, message: dict[str, Any]) -> None:
        text, self.pending_sync = self.pending_sync, None
        if text is not None:
            self.sync_budget.take()
            await self._answer_sync(text)

    async def _answer_sync(self, text_data: str) -> None:
        try:
            message = json.loads(text_data)
        except (ValueError, RecursionError):
            return
        if not isinstance(message, dict) or message.get("type") != "sync":
            return
        cursor = message.get("cursor") or {}
        if not isinstance(cursor, dict):
            return
        wanted: dict[int, int] = {}
        for key, value in list(cursor.items())[:MAX_CURSOR_RUNS]:
            try:
                run_id, seq = int(key), max(0, int(value))
            except (TypeError, ValueError, OverflowError):
                continue
            if 0 < run_id <= MAX_ID and seq <= MAX_ID:
                wanted[run_id] = seq
        # Only this session's runs: one query, and nothing remembered for ids that are not.
        runs = await self._runs_of_session(list(wanted))
        await self._keep_places(
            run_id for run_id, status in runs.items() if status == ReasoningRun.Status.QUEUED
        )
        for run_id in runs:
            self.sent[run_id] = wanted[run_id]
            self.phases.pop(run_id, None)  # the page's own cursor: its phase is read with the events
            await self._send_events(run_id, upto=None)
            await self._send_draft(run_id)
        # Questions asked after the page's newest turn (`after`, the run it names; in another
        # tab or browser while this page was away): their turns are drawn whole, as a live push
        # of one would draw them. A frame without it asks for nothing more.
        after = message.get("after")
        if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= MAX_ID:
            return
        later = await self._runs_after(max([after, *runs]))
        await self._keep_places(
            run_id for run_id, status in later.items() if status == ReasoningRun.Status.QUEUED
        )
        for run_id in later:
            if run_id in self.sent:
                continue
            html, last = await database_sync_to_async(self._render_new_turn)(run_id, MAX_ID)
            if last is None or run_id in self.sent:
                continue
            self.sent[run_id] = last
            await self.send(text_data=html)
            await self._send_draft(run_id)

    async def _send_draft(self, run_id: int) -> None:
        draft = await self._draft_of(run_id)
        if draft is not None:
            await self.send(text_data=json.dumps(draft))

    # --- group messages ----------------------------------------------------------------

    async def trace_event(self, message: dict[str, Any]) -> None:
        run_id = message["run"]
        if run_id not in self.sent:
            # A run this page has never synced: a question asked in another tab (or this
            # tab's own, racing its POST's response). Send the whole turn; the page keeps one.
            html, last = await database_sync_to_async(self._render_new_turn)(run_id, message["seq"])
            if last is None:
                return
            self.sent[run_id] = last
            await self.send(text_data=html)
            return
        if message["seq"] <= self.sent[run_id]:
            return
        events = self._live_events(run_id, message)
        if events is None:
            await self._send_events(run_id, upto=message["seq"])
            return
        # Drawn here, on the loop: a few small templates and no query cost less than a hop to
        # the database thread, where the page's events would queue behind other work. The
        # lines go first; the status line and answer area they change follow from the run's row.
        previous = self.phases.get(run_id)
        self.sent[run_id] = events[-1].sequence
        await self.send(text_data=self._render_lines(run_id, events, previous))
        if turn_news(events):
            try:
                html = await database_sync_to_async(self._render_turn_news)(run_id, events)
            except Exception as exc:  # the next status event, or the run's end, draws it again
                logger.warning("could not draw run %s's status line: %s", run_id, exc)
                return
            if html:
                await self.send(text_data=html)

    async def answer_delta(self, message: dict[str, Any]) -> None:
        """A batch of draft text, as a small JSON frame the page appends to the run's draft.
        The page checks `offset` against what it has and asks for a sync on a gap; the sync
        sends the whole stored draft. At most every DRAFT_RENDER_SECONDS the frame also carries
        the draft so far as sanitised HTML (`html`, covering `upto` characters): the page shows
        it as Markdown and the text after it as it arrives; a last render follows a burst."""
        run_id = message["run"]
        if run_id not in self.sent:
            return
        frame = {"nexus": "draft", **{k: message[k] for k in DRAFT_KEYS}}
        view = await self._draft_view(run_id, message)
        loop = asyncio.get_running_loop()
        wait = DRAFT_RENDER_SECONDS - (loop.time() - view.rendered_at)
        if wait <= 0:
            frame.update(await self._draft_render(view))
        elif view.flush is None:
            view.flush = asyncio.create_task(self._draft_flush(run_id, view, wait))
        await self.send(text_data=json.dumps(frame))

    async def _draft_view(self, run_id: int, message: dict[str, Any]) -> DraftView:
        """This page's copy of the draft, with the batch applied (from the database if this page
        missed the draft's start or a batch: the sink stores a batch before it pushes it)."""
        view = self.drafts.get(run_id)
        offset, text = message["offset"], message["text"]
        if offset == 0:
            if view is not None and view.draft == message["draft"]:
                view.text = text
                return view
            if view is not None:
                await sockets.stop(view.flush)
            view = self.drafts[run_id] = DraftView(message["draft"], text)
            return view
        if view is not None and view.draft == message["draft"] and offset <= len(view.text):
            view.text += text[len(view.text) - offset :]
            return view
        stored = await self._draft_of(run_id)
        if view is not None:
            await sockets.stop(view.flush)
        view = self.drafts[run_id] = DraftView(
            stored["draft"] if stored else message["draft"], stored["text"] if stored else ""
        )
        return view

    async def _draft_render(self, view: DraftView) -> dict[str, Any]:
        view.rendered_at = asyncio.get_running_loop().time()
        html = await sync_to_async(render_markdown, thread_sensitive=False)(view.text)
        return {"html": html, "upto": len(view.text)}

    async def _draft_flush(self, run_id: int, view: DraftView, wait: float) -> None:
        await asyncio.sleep(wait)
        view.flush = None
        if self.drafts.get(run_id) is not view:
            return
        frame = {"nexus": "draft", "run": run_id, "draft": view.draft, **await self._draft_render(view)}
        await self.send(text_data=json.dumps(frame))

    async def card_changed(self, message: dict[str, Any]) -> None:
        """An approval card or input form was decided, answered or expired (in any tab):
        this tab shows it resolved too, in place."""
        html = await database_sync_to_async(self._render_card)(message["kind"], message["id"])
        if html:
            await self.send(text_data=html)

    async def queue_moved(self, message: dict[str, Any]) -> None:
        """A run left the queue: show this page's queued runs' new places (once for a burst)."""
        if self.queued and (self.queue_refresh is None or self.queue_refresh.done()):
            self.queue_refresh = asyncio.create_task(self._refresh_places())

    async def _keep_places(self, run_ids: Iterable[int]) -> None:
        """Listen for the queue moving while this page shows a queued run."""
        listening = bool(self.queued)
        self.queued.update(run_ids)
        if self.queued and not listening:
            await self.channel_layer.group_add(QUEUE_GROUP, self.channel_name)

    async def _refresh_places(self) -> None:
        await asyncio.sleep(QUEUE_REFRESH_SECONDS)
        try:
            html, still = await database_sync_to_async(self._render_places)(sorted(self.queued))
            self.queued &= still  # a run that started shows its progress through its own events
            if html:
                await self.send(text_data=html)
            if not self.queued:
                await self.channel_layer.group_discard(QUEUE_GROUP, self.channel_name)
        except Exception as exc:  # a stale count is no reason to close the socket
            logger.warning("could not refresh queued runs' places: %s", exc)

    def _render_places(self, run_ids: list[int]) -> tuple[str, set[int]]:
        runs = list(
            ReasoningRun.objects.select_related("session", "user_message").filter(
                pk__in=run_ids, session_id=self.session_id, status=ReasoningRun.Status.QUEUED
            )
        )
        html = "".join(self._render_turn_parts(run, parts=("answer",)) for run in runs)
        return html, {run.pk for run in runs}

    async def run_done(self, message: dict[str, Any]) -> None:
        view = self.drafts.pop(message["run"], None)
        if view is not None:
            await sockets.stop(view.flush)
        html = await database_sync_to_async(self._render_done)(message["run"])
        if html:
            await self.send(text_data=html)

    async def account_changed(self, message: dict[str, Any]) -> None:
        """The person signed out, changed their password or was deactivated somewhere: a page
        no longer signed in stops receiving (a reviewer's socket kept streaming after logout)."""
        own = self.scope["session"].session_key
        signed_out = message.get("session_key") == own
        if signed_out or not await self._still_signed_in(own):
            await self.close(code=CLOSE_UNAUTHENTICATED, reason=SIGNED_OUT_REASON)

    async def _still_signed_in(self, session_key: str | None) -> bool:
        """What a fresh request with this page's cookie would get: Channels' own sign-in check
        (the one this socket passed when it opened) on the session as it is stored now."""
        store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
        user = await get_user({"session": store})
        return user.is_authenticated and user.pk == self.user_id

    async def sessions_changed(self, message: dict[str, Any]) -> None:
        """A chat of this person was created, renamed, moved up or deleted (in any tab). When a
        question moved this page's chat up, the page gets its turn if nothing else brought it
        soon (see `_new_turn_later`)."""
        html = await database_sync_to_async(self._render_sessions)(message["session"])
        await self.send(text_data=html)
        run_id = message.get("run")
        if run_id and message["session"] == self.session_id and run_id not in self.sent:
            task = asyncio.create_task(self._new_turn_later(run_id))
            self.new_turns.add(task)
            task.add_done_callback(self.new_turns.discard)

    async def _new_turn_later(self, run_id: int) -> None:
        """Draw a question asked in another tab, unless the run's first event or this page's
        own sync (the tab that asked has the turn from its POST) came first: a run waiting its
        turn has no events, so the other tabs showed nothing of it until it started; drawn at
        once, the tab that asked drew every question twice, and the run's first events waited."""
        await asyncio.sleep(NEW_TURN_WAIT_SECONDS)
        if run_id in self.sent:
            return
        try:
            html, last = await database_sync_to_async(self._render_new_turn)(run_id, 0)
        except Exception as exc:  # the run's first event draws it anyway
            logger.warning("could not draw run %s's new turn: %s", run_id, exc)
            return
        if last is not None and run_id not in self.sent:
            self.sent[run_id] = last
            await self.send(text_data=html)

    # --- rendering -------------------------------------------------------------------------

    def _render_sessions(self, changed_id: int) -> str:
        """The chat list; and if the change is this page's chat, its header and tab title (or,
        deleted, a note saying so where the person types)."""
        session = ChatSession.objects.filter(pk=self.session_id, owner_id=self.user_id).first()
        context = {
            "sessions": session_links(self.user_id),
            "session": session,
            "swap_oob": True,
        }
        html = render_to_string(f"{PAGE}#session-list", context)
        if changed_id != self.session_id:
            return html
        if session is None:
            return html + render_to_string(f"{PAGE}#session-gone", context)
        latest = session.runs.order_by("-created_at", "-id").first()
        # The heading only: the chat menu and share dialog around it stay as this page has them.
        html += render_to_string(f"{PAGE}#session-heading", {**context, "heading_oob": True})
        if latest is not None and latest.is_active and latest.pk in self.sent:
            # The run's own events keep this page's status line: drawn here from the run's row,
            # it ran ahead of the events still on their way, and the line stepped back
            # (Direct → Analyzing → Direct) as they arrived.
            return html
        return html + self._render_status_for(session, latest)

    async def _send_events(self, run_id: int, upto: int | None) -> None:
        after = self.sent.get(run_id, 0)
        if upto is not None and upto <= after:
            return
        html, last = await database_sync_to_async(self._render_events)(run_id, after, upto)
        if last is not None:
            self.sent[run_id] = last
        if html:
            await self.send(text_data=html)

    def _render_events(self, run_id: int, after: int, upto: int | None) -> tuple[str, int | None]:
        events = TraceEvent.objects.filter(run_id=run_id, run__session_id=self.session_id, sequence__gt=after)
        if upto is not None:
            events = events.filter(sequence__lte=upto)
        events = list(events.order_by("sequence"))
        if not events:
            return "", None
        previous = self.phases.get(run_id) if after else None
        if after and previous is None:
            before = TraceEvent.objects.filter(run_id=run_id, sequence=after)
            previous = before.values_list("phase", flat=True).first()
        html = self._render_lines(run_id, events, previous)
        if turn_news(events):
            html += self._render_turn_news(run_id, events)
        return html, events[-1].sequence

    def _live_events(self, run_id: int, message: dict[str, Any]) -> list[TraceEvent] | None:
        """The events a message carries that this page lacks, if it can show them from the
        message alone: it has every event before them (and knows the phase they follow), and
        none needs a row besides its own to be drawn. None: read them from the database."""
        rows, after = message.get("rows"), self.sent[run_id]
        if not rows or message["after"] > after or (after and run_id not in self.phases):
            return None
        events = [
            TraceEvent(
                run_id=run_id,
                sequence=seq,
                kind=kind,
                phase=phase,
                level=level,
                payload=payload,
                created_at=datetime.fromisoformat(created),
            )
            for seq, kind, phase, level, payload, created in rows
            if seq > after
        ]
        return None if needs_database(events, self.rationales.get(run_id)) else events

    def _render_lines(self, run_id: int, events: list[TraceEvent], previous: str | None) -> str:
        """The trace lines of `events`, one render for the batch (each event used to be a
        template render of its own)."""
        self.phases[run_id] = events[-1].phase
        items = events_context(events, previous, self.rationales.get(run_id) if previous else None)
        for event in events:
            if event.kind == "analysis.completed":
                self.rationales[run_id] = rationale_of(event)
        items = render_to_string(f"{PAGE}#trace-events", {"items": items})
        return f'<ol hx-swap-oob="beforeend:#trace-{run_id}">{items}</ol>'

    def _render_turn_news(self, run_id: int, events: list[TraceEvent]) -> str:
        """What status events and a run's answer change besides the trace: the status line,
        the panel's head, the answer area."""
        status = status_events(events)
        turn_changed = any(e.kind in TURN_KINDS for e in events)
        run = ReasoningRun.objects.select_related("session", "user_message").get(pk=run_id)
        mode = status[-1].payload["mode"] if status else run_mode(run)
        finished = not run.is_active
        html = ""
        parts: list[str] = []  # of the turn, rendered from it in one go when the run is over
        if status:
            html += self._render_status(run, mode)
            if finished:
                parts.append("panel-head")
            else:
                html += self._render_active_head(run, mode)
        if turn_changed:
            if finished or run.status != ReasoningRun.Status.RUNNING or run.answers.exists():
                parts.append("answer")
            else:
                html += self._render_answer(run, mode)
        if parts:
            html += self._render_turn_parts(run, tuple(parts))
        if finished:
            # What the run's end (run.done) would render again: this page shows it already.
            self.ended.update((run_id, part) for part in parts)
            if "answer" in parts:
                self.settled.add(run_id)
        return html

    def _render_card(self, kind: str, pk: int) -> str:
        model = {"approval": ToolApproval, "elicitation": Elicitation}.get(kind)
        row = model.objects.filter(pk=pk, session_id=self.session_id).first() if model else None
        if row is None:
            return ""
        if kind == "approval":
            context = {"approval": approval_for(row.run_id, row.argument_hash)}
        else:
            context = {"elicitation": elicitation_for(row.run_id, row.key)}
        return render_to_string(f"chat/tools/{kind}.html", {**context, "card_oob": True})

    def _render_done(self, run_id: int) -> str:
        run = (
            ReasoningRun.objects.select_related("session", "user_message")
            .filter(pk=run_id, session_id=self.session_id)
            .first()
        )
        if run is None:
            return ""
        # An answer already rendered in its final state is not rendered again: the person may be
        # rating it right now, and an older render must not overwrite their verdict. Nor is a
        # head or status line the run's last events already brought in their final state.
        parts = tuple(
            part
            for part in ("panel-head", "answer")
            if (run_id, part) not in self.ended and not (part == "answer" and run_id in self.settled)
        )
        if not parts:
            return ""
        status = "" if (run_id, "panel-head") in self.ended else self._render_status(run, run_mode(run))
        return status + self._render_turn_parts(run, parts)

    def _render_status_for(self, session: ChatSession, run: ReasoningRun | None) -> str:
        return render_to_string(
            f"{PAGE}#status-line",
            {"session": session, "active_run": run, "swap_oob": True},
        )

    def _render_status(self, run: ReasoningRun, mode: str) -> str:
        return render_to_string(
            f"{PAGE}#status-line",
            {"mode": mode, "session": run.session, "active_run": None, "swap_oob": True},
        )

    def _render_active_head(self, run: ReasoningRun, mode: str) -> str:
        """The panel's head while the run works ("Active · mode"), from what it shows alone: the
        whole turn (every event of the run, its answer, feedback, queue place) was rebuilt for
        each status event, so a run's later events cost more than its first ones."""
        turn = {"run": run, "active": True, "mode": mode, "trace_open": self._trace_open(), "stopped": False}
        html = render_to_string(f"{PAGE}#panel-head", {"turn": turn, "swap_oob": True})
        if run.status == ReasoningRun.Status.RUNNING and not run.answers.exists():
            # The line above the draft says the same mode as the status line and the panel.
            html += render_to_string(f"{PAGE}#pending-line", {"turn": turn, "swap_oob": True})
        return html

    def _render_answer(self, run: ReasoningRun, mode: str) -> str:
        """The answer area of a run at work with no answer yet (it started, or a draft was
        discarded): the line saying what it does and its draft, drawn from the run alone, not
        from the whole turn (every event, feedback, queue place) as an answer is."""
        turn = {
            "run": run,
            "active": True,
            "mode": mode,
            "stopped": False,
            "answer": None,
            "urls": run_urls(run),
        }
        turn["draft_html"] = answer_html(run.draft_text) if run.draft_text else None
        return render_to_string(f"{PAGE}#answer", {"turn": turn, "swap_oob": True})

    def _trace_open(self) -> bool:
        """Whether the person keeps reasoning panels open, read once per socket: it only sets a
        head's first state, which the page then keeps true to its own panel."""
        if self.trace_open is None:
            self.trace_open = bool(
                Preference.objects.filter(user_id=self.user_id).values_list("trace_open", flat=True).first()
            )
        return self.trace_open

    def _render_turn_parts(self, run: ReasoningRun, parts: tuple[str, ...]) -> str:
        entry = services.turn_of(run)
        if "panel-head" not in parts:
            # The answer area alone needs none of the run's events (only the panel's head
            # summarises them): not loading every event made an answer's push much cheaper.
            entry["events"] = []
        turn = turn_context(entry, trace_open=self._trace_open(), user_id=self.user_id)
        return "".join(render_to_string(f"{PAGE}#{part}", {"turn": turn, "swap_oob": True}) for part in parts)

    def _render_new_turn(self, run_id: int, upto: int) -> tuple[str, int | None]:
        run = (
            ReasoningRun.objects.select_related("session", "user_message")
            .filter(pk=run_id, session_id=self.session_id)
            .first()
        )
        if run is None:
            return "", None
        turn = turn_context(services.turn_of(run), trace_open=False, user_id=self.user_id)
        turn["events"] = [item for item in turn["events"] if item["event"].sequence <= upto]
        last = turn["events"][-1]["event"].sequence if turn["events"] else 0
        if turn["events"]:
            self.phases[run_id] = turn["events"][-1]["event"].phase
        turn["last_seq"] = last
        html = render_to_string(f"{PAGE}#turn", {"turn": turn, "session": run.session})
        return f'<div hx-swap-oob="beforeend:#thread">{html}</div>', last

    @database_sync_to_async
    def _draft_of(self, run_id: int) -> dict[str, Any] | None:
        """The stored draft of an unfinished run, as one draft frame from offset 0."""
        run = (
            ReasoningRun.objects.filter(pk=run_id, status__in=ReasoningRun.ACTIVE)
            .exclude(draft_id="")
            .values("draft_id", "draft_text", "next_sequence")
            .first()
        )
        if run is None:
            return None
        return {
            "nexus": "draft",
            "run": run_id,
            "seq": run["next_sequence"] - 1,
            "draft": run["draft_id"],
            "offset": 0,
            "text": run["draft_text"],
            "html": render_markdown(run["draft_text"]),
            "upto": len(run["draft_text"]),
        }

    @database_sync_to_async
    def _runs_of_session(self, run_ids: list[int]) -> dict[int, str]:
        """{run id: status} of those of the runs that belong to this session, in id order."""
        if not run_ids:
            return {}
        runs = ReasoningRun.objects.filter(session_id=self.session_id, pk__in=run_ids).order_by("pk")
        return dict(runs.values_list("pk", "status"))

    @database_sync_to_async
    def _runs_after(self, run_id: int) -> dict[int, str]:
        """{run id: status} of this session's runs after `run_id`, the newest MAX_NEW_TURNS of
        them, in id order."""
        runs = ReasoningRun.objects.filter(session_id=self.session_id, pk__gt=run_id).order_by("-pk")
        return dict(reversed(runs.values_list("pk", "status")[:MAX_NEW_TURNS]))

    async def _unavailable(self) -> None:
        """Refuse the socket as "unavailable for a moment" (the page says so and reconnects):
        accepted first, so the browser receives the code and the reason (a refused handshake
        reaches the page as an anonymous error)."""
        await self.accept()
        await self.close(code=CLOSE_UNAVAILABLE, reason=UNAVAILABLE_REASON)

    @database_sync_to_async
    def _owns_session(self, user_id: int, session_id: int) -> bool:
        return ChatSession.objects.filter(pk=session_id, owner_id=user_id).exists()
