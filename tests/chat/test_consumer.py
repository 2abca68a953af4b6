"""The session websocket: auth, ownership, origin, event order, catch-up after a reconnect."""

import asyncio
import json
import re
import time
from html.parser import HTMLParser

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.urls import reverse

from chat import services
from chat.consumers import NEW_TURN_WAIT_SECONDS, SYNC_BURST, SYNC_EVERY, SessionConsumer
from chat.engine import execute_run
from chat.models import ReasoningRun, TraceEvent
from chat.sink import RunSink, session_group
from nexus.asgi import application
from tests.conftest import wait_until
from tests.e2e.conftest import free_port

pytestmark = pytest.mark.django_db(transaction=True)

EVENT_ID = re.compile(r'id="ev-(\d+)-(\d+)"')


def cookie_for(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


async def socket(session_id: int, user=None, origin: bytes = b"http://127.0.0.1") -> WebsocketCommunicator:
    headers = [(b"origin", origin), (b"host", b"127.0.0.1")]
    if user is not None:
        headers.append((b"cookie", await database_sync_to_async(cookie_for)(user)))
    return WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=headers)


def post_in_new_chats(owner, count: int) -> list[ReasoningRun]:
    """`count` questions, each in a chat of its own (queued: nothing executes them here)."""
    return [
        services.message_post(session=services.session_create(owner=owner), content=f"What is {n}+1?")
        for n in range(count)
    ]


async def receive_all(communicator: WebsocketCommunicator, timeout: float = 0.5) -> str:
    chunks = []
    while not await communicator.receive_nothing(timeout=timeout):
        chunks.append(await communicator.receive_from())
    return "".join(chunks)


async def test_anonymous_sockets_are_closed(alice_session):
    communicator = await socket(alice_session.pk)
    connected, code = await communicator.connect()
    assert not connected and code == 4401


async def test_another_users_session_is_closed(alice_session, bob):
    communicator = await socket(alice_session.pk, bob)
    connected, code = await communicator.connect()
    assert not connected and code == 4404


async def test_a_foreign_origin_is_refused(alice, alice_session):
    communicator = await socket(alice_session.pk, alice, origin=b"https://evil.example")
    connected, _ = await communicator.connect()
    assert not connected


async def test_events_arrive_in_order_with_status_and_answer(alice, alice_session, settings):
    # A model that takes a moment, as a real one does: the page renders the run while it works
    # (a run that is over before its page renders shows only how it ended).
    settings.OFFLINE_LATENCY_MS = 100
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 2+2?")
    assert await execute_run(run.pk) == "succeeded"
    html = await receive_all(communicator)
    seen = [int(seq) for run_id, seq in EVENT_ID.findall(html) if int(run_id) == run.pk]
    stored = await database_sync_to_async(lambda: list(run.events.values_list("sequence", flat=True)))()
    assert seen == stored, "every stored event once, in order"
    assert "answer.delta" not in html, "draft batches are pushed for the page, not rendered as trace items"
    assert f'hx-swap-oob="beforeend:#trace-{run.pk}"' in html
    assert 'id="status-line"' in html and "Mode: <strong>Direct</strong>" in html
    assert "Mode: <strong>Complete</strong>" in html
    assert f'<p class="pending" id="pending-{run.pk}" hx-swap-oob="true" data-if-present>' in html, (
        "the line over the draft follows"
    )
    assert f'id="answer-{run.pk}" hx-swap-oob="true"' in html and "<strong>4</strong>" in html
    await communicator.disconnect()


async def test_a_run_the_engine_fails_ends_with_the_status_line_saying_failed(
    alice, alice_session, monkeypatch
):
    """Found under a team load with the model hanging on every call: each run failed with "The
    model provider did not answer in time.", but its open pages' status line ended at "✅ Mode:
    Complete" (the engine's run.failed said so) where a reload said "✗ Mode: Failed"."""
    from reasoning.llm.base import LLMError
    from reasoning.llm.scripted import ScriptedClient

    script = ScriptedClient(default=LLMError("request timed out", kind="timeout"))
    monkeypatch.setattr("chat.engine.build_llm", lambda: script)
    communicator = await socket(alice_session.pk, alice)
    assert (await communicator.connect())[0]
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 2+2?")
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    assert await execute_run(run.pk) == "failed"
    html = await receive_all(communicator)
    modes = re.findall(r'id="status-line".*?Mode: <strong>([^<]*)</strong>', html, re.S)
    assert modes and modes[-1] == "Failed", modes
    assert "did not answer in time" in html
    await communicator.disconnect()


async def test_a_question_asked_in_another_tab_shows_while_it_waits_to_start(alice, alice_session):
    """The other tabs of a chat learnt of a question from its run's first event: one waiting
    its turn (queued behind its owner's other runs) showed in none of them until it started."""
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected
    run = await database_sync_to_async(services.message_post)(
        session=alice_session, content="What is 6*7, asked in the other tab?"
    )
    html = await receive_all(communicator, timeout=2 * NEW_TURN_WAIT_SECONDS + 0.5)
    assert f'id="turn-{run.pk}"' in html and "asked in the other tab" in html
    assert 'hx-swap-oob="beforeend:#thread"' in html
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    assert await receive_all(communicator) == "", "nothing more until the run has events"
    await communicator.disconnect()


async def test_the_tab_that_asked_is_not_sent_its_own_question_again(alice, alice_session):
    """That tab has the turn from its POST's response and syncs it at once: drawing the turn for
    it as well cost every question a second render, in front of the run's first events."""
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 6*7?")
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    html = await receive_all(communicator, timeout=1.0)
    assert 'id="session-list"' in html and f'id="turn-{run.pk}"' not in html
    await communicator.disconnect()


async def test_reconnecting_clients_catch_up_from_their_cursor(alice, alice_session):
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 17*23?")
    await execute_run(run.pk)
    stored = await database_sync_to_async(
        lambda: list(ReasoningRun.objects.get(pk=run.pk).events.values_list("sequence", flat=True))
    )()
    total = stored[-1]
    communicator = await socket(alice_session.pk, alice)
    await communicator.connect()
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 5}}))
    html = await receive_all(communicator)
    assert [int(seq) for _, seq in EVENT_ID.findall(html)] == [seq for seq in stored if seq > 5]
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): total}}))
    assert await receive_all(communicator, 0.2) == ""
    await communicator.send_to(text_data="not json")
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {"999999": 0, "x": "y"}}))
    assert await receive_all(communicator, 0.2) == "", "unknown or foreign runs reveal nothing"
    await communicator.disconnect()


async def test_a_flood_of_syncs_is_answered_a_few_at_once_then_one_a_second_latest_last(alice, alice_session):
    """Each sync reads and draws the chat's runs again: a script sending them in a loop held a
    server process's CPU. A page's first few are answered at once; past that, the latest one
    waits its turn and is answered (it covers the ones before it), and nothing is lost. Bounded
    by the bucket however long this machine takes to send them (a fixed 0.3 s window for the
    burst failed on a loaded machine); the latest sync asks for less than the others, so its
    answer is told apart from theirs."""
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 17*23?")
    await execute_run(run.pk)
    last = await database_sync_to_async(lambda: ReasoningRun.objects.get(pk=run.pk).next_sequence - 1)()
    communicator = await socket(alice_session.pk, alice)
    await communicator.connect()
    everything = json.dumps({"type": "sync", "cursor": {str(run.pk): 0}})
    started = time.monotonic()
    for _ in range(199):
        await communicator.send_to(text_data=everything)
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): last - 1}}))
    frames = []
    while not await communicator.receive_nothing(timeout=2 * SYNC_EVERY):
        frames.append((time.monotonic(), EVENT_ID.findall(await communicator.receive_from())))
    first, newest = (str(run.pk), "1"), (str(run.pk), str(last))
    replays = [at for at, ids in frames if first in ids]
    refills = (frames[-1][0] - started) / SYNC_EVERY
    assert 1 <= len(replays) <= SYNC_BURST + refills, f"{len(replays)} replays of the whole run for 199 syncs"
    assert frames[-1][1] == [newest], "the latest sync is answered, last, with what it asked for"
    assert [ids for _, ids in frames].count([newest]) == 1, "and once"
    await communicator.disconnect()


async def test_a_reconnecting_page_is_sent_the_questions_asked_while_it_was_away(alice, alice_session):
    """Found by a review: a tab whose socket was down while a question was asked and answered
    in another browser never showed that turn (its cursor lists only the runs it has)."""
    first = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 2+2?")
    await execute_run(first.pk)
    total = await database_sync_to_async(lambda: ReasoningRun.objects.get(pk=first.pk).next_sequence - 1)()
    away = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 8*9?")
    await execute_run(away.pk)
    waiting = await database_sync_to_async(services.message_post)(session=alice_session, content="And 3*3?")

    communicator = await socket(alice_session.pk, alice)
    await communicator.connect()
    cursor = {"type": "sync", "cursor": {str(first.pk): total}}
    await communicator.send_to(text_data=json.dumps(cursor))
    assert await receive_all(communicator, 0.2) == "", "a page that does not say its newest turn"
    await communicator.send_to(text_data=json.dumps({**cursor, "after": first.pk}))
    html = await receive_all(communicator)
    assert f'id="turn-{away.pk}"' in html and "72" in html, "the answered question, whole"
    assert f'id="turn-{waiting.pk}"' in html and "What is 2+2?" not in html
    assert html.index(f'id="turn-{away.pk}"') < html.index(f'id="turn-{waiting.pk}"')
    await communicator.send_to(text_data=json.dumps({**cursor, "after": first.pk}))
    assert await receive_all(communicator, 0.2) == "", "sent once"
    await communicator.disconnect()


class TraceItems(HTMLParser):
    """The trace lines (and phase headings) in some HTML, by id: their tags, attributes, text.
    A plan's step statuses are left out: the page keeps them current as its steps complete
    (markSteps in chat.js), whenever the plan was drawn."""

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[str, list[tuple]] = {}
        self.current: str | None = None
        self.depth = 0
        self.step_badge = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs).get("id") or ""
        if self.current is None and tag == "li" and found.startswith(("ev-", "ph-")):
            self.current, self.depth = found, 0
            self.items[found] = []
        if self.current is not None:
            self.depth += tag == "li"
            status = re.compile(r"^((?:step|badge) )st-\w+$")
            self.items[self.current].append((tag, sorted((k, status.sub(r"\1", v or "")) for k, v in attrs)))
            self.step_badge = "badge st-" in (dict(attrs).get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if self.current is not None:
            self.items[self.current].append(("/" + tag,))
            self.depth -= tag == "li"
            if not self.depth:
                self.current = None

    def handle_data(self, data: str) -> None:
        if self.current is not None and data.strip() and not self.step_badge:
            self.items[self.current].append((data.strip(),))


def trace_items(html: str) -> dict[str, list[tuple]]:
    parser = TraceItems()
    parser.feed(html)
    return parser.items


async def test_a_synced_page_draws_live_events_from_the_push_exactly_as_a_reload_draws_them(
    alice, alice_session, settings, monkeypatch
):
    """The writer sends a run's rows with its news; a page that has every earlier event draws
    them without reading them back, and what it draws is what a reload draws from the database."""
    settings.OFFLINE_LATENCY_MS = 30
    reads: list[tuple] = []
    read_back = SessionConsumer._render_events

    def counted(self, run_id: int, after: int, upto: int | None):
        reads.append((after, upto))
        return read_back(self, run_id, after, upto)

    monkeypatch.setattr(SessionConsumer, "_render_events", counted)
    live = await socket(alice_session.pk, alice)
    assert (await live.connect())[0]
    run = await database_sync_to_async(services.message_post)(
        session=alice_session, content="What is 17*23 and what time is it in Tokyo?"
    )
    await live.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    await receive_all(live, 0.2)  # the sync, and the chat list's news of the message
    reads.clear()
    assert await execute_run(run.pk) == "succeeded"
    drawn_live = trace_items(await receive_all(live))
    assert reads == [], "every event was drawn from the push, none read back"
    await live.disconnect()

    reload = await socket(alice_session.pk, alice)
    assert (await reload.connect())[0]
    await reload.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    drawn_reload = trace_items(await receive_all(reload))
    await reload.disconnect()
    stored = await database_sync_to_async(lambda: run.events.count())()
    kinds = await database_sync_to_async(lambda: set(run.events.values_list("kind", flat=True)))()
    assert {"plan.created", "tool.called", "tool.result", "step.completed", "answer.final"} <= kinds
    assert len([key for key in drawn_reload if key.startswith("ev-")]) == stored
    assert drawn_live == drawn_reload


async def test_a_page_missing_events_before_a_push_reads_them_back(alice, alice_session):
    """A push whose rows follow events this page lacks (it missed a message) is not drawn
    alone: the page reads everything after its cursor, in order."""

    def store(run: ReasoningRun, sequences: range) -> list[list]:
        events = [
            TraceEvent.objects.create(
                run=run, sequence=seq, kind="iteration", phase="Phase 1", payload={"iteration": seq}
            )
            for seq in sequences
        ]
        return [[e.sequence, e.kind, e.phase, e.level, e.payload, e.created_at.isoformat()] for e in events]

    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 17*23?")
    await database_sync_to_async(store)(run, range(1, 4))
    communicator = await socket(alice_session.pk, alice)
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    assert [int(seq) for _, seq in EVENT_ID.findall(await receive_all(communicator))] == [1, 2, 3]
    rows = await database_sync_to_async(store)(run, range(4, 7))
    # The page hears of the last event only, which follows event 5 it never heard of.
    message = {
        "type": "trace.event",
        "run": run.pk,
        "seq": 6,
        "kind": "iteration",
        "after": 5,
        "rows": rows[-1:],
    }
    await get_channel_layer().group_send(session_group(alice_session.pk), message)
    html = await receive_all(communicator)
    assert [int(seq) for _, seq in EVENT_ID.findall(html)] == [4, 5, 6]
    await communicator.disconnect()


async def test_catch_up_never_leaks_another_sessions_run(alice, bob, alice_session):
    bob_session = await database_sync_to_async(services.session_create)(owner=bob)
    bob_run = await database_sync_to_async(services.message_post)(
        session=bob_session, content="Bob's secret 2+2"
    )
    await execute_run(bob_run.pk)
    communicator = await socket(alice_session.pk, alice)
    await communicator.connect()
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(bob_run.pk): 0}}))
    assert await receive_all(communicator, 0.3) == ""
    await communicator.disconnect()


async def test_draft_batches_reach_the_socket_without_breaking_the_page(alice, alice_session):
    from channels.layers import get_channel_layer

    from chat.sink import session_group

    communicator = await socket(alice_session.pk, alice)
    await communicator.connect()
    await get_channel_layer().group_send(
        session_group(alice_session.pk),
        {"type": "answer.delta", "run": 1, "seq": 9, "draft": "d1", "offset": 0, "text": "Par"},
    )
    assert await receive_all(communicator, 0.3) == "", "not rendered yet: the approved answer replaces it"
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 2+2?")
    assert await execute_run(run.pk) == "succeeded"
    assert "<strong>4</strong>" in await receive_all(communicator), "the socket keeps working"
    await communicator.disconnect()


async def test_every_tab_of_the_chat_sees_an_approval_card_appear_and_then_resolve(
    alice, alice_session, settings
):
    from chat.models import MCPServer, ToolApproval

    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    await database_sync_to_async(
        lambda: MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    )()
    tab = await socket(alice_session.pk, alice)
    assert (await tab.connect())[0]
    run = await database_sync_to_async(services.message_post)(session=alice_session, content="What is 17*23?")
    assert await execute_run(run.pk) == "parked"
    approval = await database_sync_to_async(ToolApproval.objects.get)(run=run)
    html = await receive_all(tab)
    assert f'id="approval-{approval.pk}"' in html and "Approve once" in html, "the card appears"

    def decide_in_another_tab() -> int:
        client = Client()
        client.force_login(alice)
        url = reverse("chat:approval-decide", args=[approval.pk])
        return client.post(url, {"decision": "always"}, HTTP_HX_REQUEST="true").status_code

    assert await database_sync_to_async(decide_in_another_tab)() == 200
    html = await receive_all(tab)
    card = html.split(f'id="approval-{approval.pk}" hx-swap-oob="true"', 1)[1].split("</div>\n</div>", 1)[0]
    assert "approved" in card and "for this chat" in card and "Approve once" not in card

    async def finished() -> bool:
        await run.arefresh_from_db()
        return not run.is_active

    for _ in range(600):  # the resumed run ends before the test does
        if await finished():
            break
        await asyncio.sleep(0.1)
    assert run.status == "succeeded"
    await tab.disconnect()


async def test_every_tab_sees_a_servers_question_answered(alice, alice_session):
    from chat.approvals import elicitation_request
    from chat.models import Elicitation

    run = await database_sync_to_async(services.message_post)(session=alice_session, content="Ask me")
    payload = {
        "key": "k1",
        "server": "everything",
        "tool": "ask",
        "message": "Your name?",
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    row = await database_sync_to_async(elicitation_request)(run_id=run.pk, payload=payload, sequence=None)
    tab = await socket(alice_session.pk, alice)
    assert (await tab.connect())[0]

    def answer_in_another_tab() -> int:
        client = Client()
        client.force_login(alice)
        url = reverse("chat:elicitation-reply", args=[row.pk])
        return client.post(url, {"action": "accept", "name": "Ada"}, HTTP_HX_REQUEST="true").status_code

    assert await database_sync_to_async(answer_in_another_tab)() == 200
    html = await receive_all(tab)
    assert f'id="elicitation-{row.pk}" hx-swap-oob="true"' in html and "Answered" in html
    assert (await database_sync_to_async(Elicitation.objects.get)(pk=row.pk)).content == {"name": "Ada"}
    await tab.disconnect()


async def test_a_page_stops_receiving_when_its_browser_signs_out_or_the_password_changes(
    alice, alice_session
):
    """Found by a review: after logout the old socket still streamed the person's answers."""
    browsers = []
    for _ in range(2):
        client = Client()
        await database_sync_to_async(client.force_login)(alice)
        browsers.append(client)
    sockets = []
    for client in browsers:
        cookie = (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()
        )
        communicator = WebsocketCommunicator(
            application,
            f"/ws/sessions/{alice_session.pk}/",
            headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)],
        )
        assert (await communicator.connect())[0]
        sockets.append(communicator)
    first, second = sockets

    await database_sync_to_async(browsers[0].post)(reverse("logout"))
    closing = await first.receive_output(timeout=5)
    assert closing["type"] == "websocket.close" and closing["code"] == 4401
    assert "signed out" in closing["reason"]
    assert await second.receive_nothing(timeout=0.5), "the other browser is still signed in"

    def change_password() -> None:
        alice.set_password("a-new-password-42")
        alice.save()

    await database_sync_to_async(change_password)()
    closing = await second.receive_output(timeout=5)
    assert closing["type"] == "websocket.close" and closing["code"] == 4401


async def test_a_queued_runs_place_counts_down_live_as_the_runs_ahead_start(alice, monkeypatch, settings):
    """'Queued (2 ahead)' becomes 'Queued (1 ahead)' on the open page when a run ahead of it
    starts, without a reload."""
    settings.NEXUS_MAX_RUNS_PER_USER = 1
    settings.OFFLINE_LATENCY_MS = 200  # the run that starts is still running when the page looks
    monkeypatch.setattr("chat.dispatch.dispatch_run", lambda run_id: None)  # this test starts runs

    first, second, third = await database_sync_to_async(post_in_new_chats)(alice, 3)
    assert await database_sync_to_async(services.run_claim)(first.pk, worker="w:1")
    communicator = await socket(third.session_id, alice)
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(third.pk): 0}}))
    await receive_all(communicator, 0.2)
    position = (await database_sync_to_async(services.queue_place_of)(third)).ahead
    assert position == 2, "the first run holds alice's one slot, the second waits before the third"

    await database_sync_to_async(services.run_mark_succeeded)(first)
    started = asyncio.create_task(execute_run(second.pk))
    html = ""
    while "Queued (1 ahead)" not in html and not started.done():
        html += await receive_all(communicator, 0.3)
    assert f'id="answer-{third.pk}"' in html and "Queued (1 ahead)" in html
    assert await started == "succeeded"
    await communicator.disconnect()


async def test_a_socket_refused_for_lack_of_redis_closes_cleanly_without_a_server_error(
    alice, alice_session, settings
):
    """Redis down: the socket is closed with 4503 and a reason, and the consumer ends without
    an exception (daphne used to log a traceback for each such socket, the channel layer's
    receive failing after the close)."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "chat.layers.GroupSendLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{free_port()}/0"]},  # nothing listens there
        }
    }
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected, "accepted first, so the browser gets the code and the reason"
    closed = await communicator.receive_output(timeout=5)
    assert closed["type"] == "websocket.close" and closed["code"] == 4503
    await communicator.wait(timeout=5)  # raised redis' ConnectionError before


async def test_redis_lost_after_a_pages_message_came_logs_no_traceback(caplog):
    """Found restarting Redis under open pages: after each message a page's socket receives,
    channels_redis clears its copy in the background (a task nobody awaits); Redis gone by
    then, daphne logged "ERROR asyncio: Task exception was never retrieved" with redis'
    ConnectionError's traceback, for an outage the pages already report and survive."""
    import logging

    from chat.layers import GroupSendLayer

    layer = GroupSendLayer(hosts=[f"redis://127.0.0.1:{free_port()}/0"])  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="chat.layers"):
        await layer._clean_receive_backup(0, "specific.abc!")  # the task channels_redis starts
    assert "Redis unreachable" in caplog.text


def test_a_running_runs_status_event_is_rendered_without_rebuilding_its_whole_turn(
    alice, alice_session, django_assert_max_num_queries
):
    """Each status event of a working run updates the status line and the panel's head; the
    head needs the mode alone, not every event, the answer and the feedback of the turn again."""
    from chat.consumers import SessionConsumer
    from chat.models import TraceEvent

    run = services.message_post(session=alice_session, content="What is 2+2?")
    services.run_claim(run.pk, worker="w:1")
    for sequence in range(1, 41):
        TraceEvent.objects.create(
            run=run, sequence=sequence, kind="step.started", phase="Research", payload={"mode": "Researching"}
        )
    TraceEvent.objects.create(
        run=run, sequence=41, kind="iteration", level="status", payload={"mode": "Checking"}
    )
    consumer = SessionConsumer()
    consumer.session_id, consumer.user_id, consumer.settled = alice_session.pk, alice.pk, set()
    with django_assert_max_num_queries(5):  # + whether the run has an answer yet (its pending line)
        html, last = consumer._render_events(run.pk, 40, 41)
    assert last == 41 and "Active · Checking" in html and 'id="status-line"' in html


def test_a_started_runs_answer_area_keeps_its_stop_button_working(alice, alice_session):
    """The answer area a page receives when its run starts is drawn from the run alone; it must
    still carry what the Stop button posts to."""
    from chat.consumers import SessionConsumer
    from chat.models import TraceEvent

    run = services.message_post(session=alice_session, content="What is 2+2?")
    services.run_claim(run.pk, worker="w:1")
    TraceEvent.objects.create(
        run=run, sequence=1, kind="run.started", level="status", payload={"mode": "Analyzing"}
    )
    consumer = SessionConsumer()
    consumer.session_id, consumer.user_id = alice_session.pk, alice.pk
    html, _ = consumer._render_events(run.pk, 0, 1)
    stop = reverse("chat:run-stop", args=[alice_session.pk, run.pk])
    assert f'id="answer-{run.pk}"' in html and f'data-stop-url="{stop}"' in html


def test_a_finished_runs_end_is_not_rendered_twice(alice, alice_session):
    """The last events of a run bring its final status line, panel head and answer; the run's
    end (run.done) then adds nothing, except what those events did not bring (a stopped run's
    note)."""
    from chat.consumers import SessionConsumer
    from tests.conftest import ask

    run = ask(alice_session, "What is 2+2?")
    consumer = SessionConsumer()
    consumer.session_id, consumer.user_id = alice_session.pk, alice.pk
    html, _ = consumer._render_events(run.pk, 0, None)
    assert (
        'id="status-line"' in html and f'id="trace-head-{run.pk}"' in html and f'id="answer-{run.pk}"' in html
    )
    assert consumer._render_done(run.pk) == ""

    stopped = services.message_post(session=alice_session, content="What is 3+3?")
    services.run_claim(stopped.pk, worker="w:1")
    services.run_stop(stopped)
    RunSink(stopped).record_stopped()
    html, _ = consumer._render_events(stopped.pk, 0, None)
    assert "Stopped" in html and f'id="trace-head-{stopped.pk}"' in html
    done = consumer._render_done(stopped.pk)
    assert f'id="answer-{stopped.pk}"' in done and "Stopped before any answer" in done
    assert 'id="status-line"' not in done, "the status line came with the run's last event"


def test_a_change_told_as_the_server_stops_never_holds_its_request(monkeypatch, alice_session):
    """Found by a review: daphne stopped mid-burst never exited, its request threads waiting for
    sends to the pages that its stopped event loop would never finish."""
    import asyncio
    import threading

    from chat import dispatch, sink

    class StuckLayer:  # a send that is still waiting on Redis when the loop stops
        async def group_send(self, group: str, message: dict) -> None:
            await asyncio.sleep(3600)

    monkeypatch.setattr(sink, "get_channel_layer", StuckLayer)
    loop = asyncio.new_event_loop()
    server = threading.Thread(target=loop.run_forever, daemon=True)
    server.start()
    monkeypatch.setattr(dispatch, "_server_loop", loop)
    assert wait_until(loop.is_running, 5)

    def post() -> None:  # a request thread, its question committed: the chat moved up
        sink.sessions_changed(owner_id=alice_session.owner_id, session_id=alice_session.pk)

    returned = threading.Event()
    request = threading.Thread(target=lambda: (post(), returned.set()), daemon=True)
    request.start()
    loop.call_soon_threadsafe(lambda: loop.call_later(0.2, loop.stop))  # the server stops
    assert returned.wait(5), "the request finished; its send did not hold it"
    server.join(5)


async def test_the_database_away_under_a_socket_closes_it_as_unavailable_not_1011(
    alice, alice_session, monkeypatch
):
    """A PostgreSQL restart under a page's sync closed the socket with 1011 and left a
    traceback in daphne's log; the page now hears "unavailable for a moment" and reconnects."""
    from django.db import OperationalError

    from chat.consumers import SessionConsumer

    async def away(self, run_ids):
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(SessionConsumer, "_runs_of_session", away)
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {"1": 0}}))
    closed = await communicator.receive_output(timeout=5)
    while closed["type"] != "websocket.close":
        closed = await communicator.receive_output(timeout=5)
    assert closed["code"] == 4503
    await communicator.wait(timeout=5)  # ended without the exception


@pytest.mark.parametrize("path", ["/ws/sessions/-1/", "/ws/sessions/abc/", "/ws/elsewhere/"])
async def test_a_socket_path_with_no_route_is_refused_not_an_error(alice, path):
    """A path the router has no route for raised ValueError: a 500 and a traceback in the log."""
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    headers.append((b"cookie", await database_sync_to_async(cookie_for)(alice)))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    assert not connected and code == 4404


@pytest.mark.parametrize("where", ["signing in", "the chat's owner"])
async def test_a_socket_opened_while_the_database_is_away_is_told_unavailable(
    alice, alice_session, monkeypatch, where
):
    """Found by a team review: a socket opening during a database blip got a 500 and a
    traceback (reading who it is) or a bare 403 (checking the chat is theirs), where the page
    expects "unavailable for a moment" and reconnects by itself."""
    from django.db import OperationalError

    def away(*args, **kwargs):
        raise OperationalError("terminating connection due to administrator command")

    if where == "signing in":
        import channels.auth

        async def no_user(scope):
            away()

        monkeypatch.setattr(channels.auth, "get_user", no_user)
    else:
        monkeypatch.setattr(SessionConsumer, "_owns_session", database_sync_to_async(away))
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected, "accepted, so that the page hears why"
    closed = await communicator.receive_output(timeout=5)
    assert closed["type"] == "websocket.close" and closed["code"] == 4503


async def test_a_socket_whose_database_does_not_answer_in_time_is_told_unavailable(
    alice, alice_session, monkeypatch
):
    """Found by a team re-check: with the database down, the pool's 10 s wait outlasted
    daphne's 5 s handshake limit, which dropped the socket unanswered (no close code, so the
    page never tried again) and left its slot claimed. The handshake waits a few seconds."""
    import time

    from chat import consumers, routing

    monkeypatch.setattr(consumers, "HANDSHAKE_DATABASE_WAIT", 0.5)
    monkeypatch.setattr(routing, "HANDSHAKE_DATABASE_WAIT", 0.5)
    monkeypatch.setattr(SessionConsumer, "_owns_session", database_sync_to_async(lambda *a: time.sleep(3)))
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect(timeout=2)
    assert connected
    closed = await communicator.receive_output(timeout=2)
    assert closed["type"] == "websocket.close" and closed["code"] == 4503


async def test_a_queued_run_stopped_in_one_tab_shows_stopped_in_the_others(alice, monkeypatch, settings):
    """Found by QA: a run stopped while it waited in the queue (no worker holds it, so none
    tells the pages) kept "Queued (1 ahead)…" and its pulse in the chat's other tabs until a
    reload, and the runs queued behind it kept counting it ahead of them."""
    settings.NEXUS_MAX_RUNS_PER_USER = 1
    monkeypatch.setattr("chat.dispatch.dispatch_run", lambda run_id: None)  # nothing executes them

    running, stopped, behind = await database_sync_to_async(post_in_new_chats)(alice, 3)
    assert await database_sync_to_async(services.run_claim)(running.pk, worker="w:1")
    tabs = []
    for run in (stopped, behind):
        tab = await socket(run.session_id, alice)
        assert (await tab.connect())[0]
        await tab.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
        tabs.append(tab)
    for tab in tabs:
        await receive_all(tab, 0.2)
    assert (await database_sync_to_async(services.queue_place_of)(behind)).ahead == 2

    def stop_in_another_tab() -> int:
        client = Client()
        client.force_login(alice)
        url = reverse("chat:run-stop", args=[stopped.session_id, stopped.pk])
        return client.post(url, HTTP_HX_REQUEST="true").status_code

    assert await database_sync_to_async(stop_in_another_tab)() == 200
    html = await receive_all(tabs[0])
    assert f'id="answer-{stopped.pk}"' in html and "Stopped before any answer" in html
    assert "Queued (1 ahead)" in await receive_all(tabs[1])
    for tab in tabs:
        await tab.disconnect()


@pytest.mark.parametrize("answered", [False, True])
async def test_a_run_a_redelivery_finishes_without_executing_it_shows_its_end_on_the_page(
    alice, alice_session, answered
):
    """Found by QA: a run whose workers kept dying was failed by the next claim ("The worker
    stopped 3 times..."), and one whose answer was stored just before its worker died was
    marked succeeded by it, but no executor ran, so nothing told the page: it kept the run's
    last mode and pulse until a reload, with no Try again."""
    from datetime import timedelta

    from django.utils import timezone

    from chat.models import Message

    def stale_run() -> ReasoningRun:
        run = services.message_post(session=alice_session, content="What is 2+2?")
        ReasoningRun.objects.filter(pk=run.pk).update(
            status="running", heartbeat_at=timezone.now() - timedelta(hours=1), delivery_count=3
        )
        if answered:
            Message.objects.create(session=alice_session, role="assistant", content="Four.", run=run)
        return run

    tab = await socket(alice_session.pk, alice)
    assert (await tab.connect())[0]  # first, so the embedded sweeper's first pass is over
    await asyncio.sleep(0.2)
    run = await database_sync_to_async(stale_run)()
    await tab.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    await receive_all(tab, 0.2)
    assert await execute_run(run.pk) == "skipped"
    html = await receive_all(tab)
    assert f'id="answer-{run.pk}"' in html and 'class="pending"' not in html
    if answered:
        assert "Four." in html
    else:
        assert "stopped 3 times" in html and "Try again" in html
    await tab.disconnect()


async def test_a_run_past_the_time_limit_shows_its_failure_on_the_page(
    alice, alice_session, settings, monkeypatch
):
    """Found by QA: a run failed for outliving NEXUS_RUN_TIME_LIMIT was marked failed, but
    nothing told its page (it kept the pulse and its last mode, with no Try again, until a
    reload), and the person's runs waiting for its slot waited for the next sweep."""
    from chat.tasks import TIME_LIMIT_MESSAGE, execute_with_time_limit

    settings.NEXUS_RUN_TIME_LIMIT = 0.6
    settings.OFFLINE_LATENCY_MS = 5000
    settings.NEXUS_MAX_RUNS_PER_USER = 1
    started: list[int] = []
    monkeypatch.setattr("chat.dispatch.dispatch_run", started.append)
    tab = await socket(alice_session.pk, alice)
    assert (await tab.connect())[0]
    await asyncio.sleep(0.2)  # the embedded sweeper's first pass is over

    def post_two() -> list[ReasoningRun]:
        first = services.message_post(session=alice_session, content="What is 2+2?")
        waiting = services.message_post(session=services.session_create(owner=alice), content="And 3+3?")
        return [first, waiting]

    run, waiting = await database_sync_to_async(post_two)()
    await tab.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    assert await execute_with_time_limit(run.pk) == "failed"
    html = await receive_all(tab)
    assert f'id="answer-{run.pk}"' in html and TIME_LIMIT_MESSAGE in html and "Try again" in html
    assert started == [waiting.pk], "the waiting run starts in the slot the failed one left"
    await tab.disconnect()


async def test_a_run_stopped_after_its_worker_died_shows_stopped_in_the_other_tabs(
    alice, settings, monkeypatch
):
    """Found by QA: a run whose worker had died (its heartbeat stale, before the sweeper hands
    it on) stopped from one tab: no executor was left to tell the others, which kept its pulse
    until a reload, and the person's run waiting for its slot waited for the next sweep."""
    from datetime import timedelta

    from django.utils import timezone

    settings.NEXUS_MAX_RUNS_PER_USER = 1
    started: list[int] = []
    monkeypatch.setattr("chat.dispatch.dispatch_run", started.append)

    def orphan_and_waiting() -> list[ReasoningRun]:
        run = services.message_post(session=chat, content="What is 2+2?")
        waiting = services.message_post(session=services.session_create(owner=alice), content="And 3+3?")
        long_ago = timezone.now() - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS + 5)
        ReasoningRun.objects.filter(pk=run.pk).update(
            status="running", worker="gone:1", heartbeat_at=long_ago
        )
        ReasoningRun.objects.filter(pk=waiting.pk).update(dispatched_at=None)  # parked: alice's slot is taken
        return [run, waiting]

    chat = await database_sync_to_async(services.session_create)(owner=alice)
    tab = await socket(chat.pk, alice)
    assert (await tab.connect())[0]
    await asyncio.sleep(0.2)  # the embedded sweeper's first pass is over
    run, waiting = await database_sync_to_async(orphan_and_waiting)()
    await tab.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    await receive_all(tab, 0.2)

    def stop_in_another_tab() -> int:
        client = Client()
        client.force_login(alice)
        return client.post(
            reverse("chat:run-stop", args=[run.session_id, run.pk]), HTTP_HX_REQUEST="true"
        ).status_code

    assert await database_sync_to_async(stop_in_another_tab)() == 200
    html = await receive_all(tab)
    assert f'id="answer-{run.pk}"' in html and "Stopped before any answer" in html
    assert started == [waiting.pk]
    await tab.disconnect()


async def test_a_run_stopped_just_after_its_worker_died_is_ended_in_its_pages_by_the_sweep(alice, settings):
    """Found by QA (workers killed, Stop pressed a second later, before the heartbeat went
    stale): no executor recorded the stop or told the other tabs, and the run, no longer
    running, was never swept: those tabs pulsed until a reload. The sweep now ends it."""
    from datetime import timedelta

    from django.utils import timezone

    from chat.tasks import sweep_runs_task

    chat = await database_sync_to_async(services.session_create)(owner=alice)
    tab = await socket(chat.pk, alice)
    assert (await tab.connect())[0]
    await asyncio.sleep(0.2)  # the embedded sweeper's first pass is over

    def stopped_while_its_worker_was_dead() -> ReasoningRun:
        run = services.message_post(session=chat, content="What is 2+2?")
        just_now = timezone.now() - timedelta(seconds=1)
        ReasoningRun.objects.filter(pk=run.pk).update(
            status="running", worker="gone:1", heartbeat_at=just_now
        )
        run.refresh_from_db()
        assert services.run_stop(run) == "running"
        return run

    run = await database_sync_to_async(stopped_while_its_worker_was_dead)()
    await tab.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    await receive_all(tab, 0.2)
    assert await database_sync_to_async(sweep_runs_task)() == 0
    assert await receive_all(tab, 0.2) == "", "not before its heartbeat is stale: its worker may be alive"

    def later() -> None:  # the stale time has passed since the stop
        gone = timezone.now() - timedelta(seconds=settings.NEXUS_RUN_STALE_SECONDS + 5)
        ReasoningRun.objects.filter(pk=run.pk).update(heartbeat_at=gone, started_at=gone, finished_at=gone)

    await database_sync_to_async(later)()
    await database_sync_to_async(sweep_runs_task)()
    html = await receive_all(tab)
    assert f'id="answer-{run.pk}"' in html and "Stopped before any answer" in html and "run.stopped" in html
    await database_sync_to_async(sweep_runs_task)()
    assert await receive_all(tab, 0.3) == "", "ended once"
    assert await run.events.filter(kind="run.stopped").acount() == 1
    await tab.disconnect()


async def test_a_frame_for_a_page_that_has_just_closed_is_dropped_not_an_application_error():
    """A tab closed as an event came in: daphne's send raised "Attempt to send on a closed
    protocol" out of the consumer, and daphne logged an application error with its traceback
    (21 times in 185 runs of a person closing tabs as answers arrived)."""
    from autobahn.exception import Disconnected

    from chat.consumers import SessionConsumer

    sent = []

    async def closed(message):
        sent.append(message)
        raise Disconnected("Attempt to send on a closed protocol")

    consumer = SessionConsumer()
    consumer.base_send = closed
    await consumer.send(text_data="<div>an event</div>")
    assert sent == [{"type": "websocket.send", "text": "<div>an event</div>"}]


def test_a_chat_list_change_leaves_the_status_line_to_a_followed_runs_events(alice, alice_session):
    """Found by a team review: the chat list's push (a question moved the chat up) drew the
    status line from the run's row, ahead of the events still on their way, and the line
    stepped back as they arrived (Direct → Analyzing → Direct). A run this page follows keeps
    its line from its events; one it does not follow yet is drawn from its row."""
    from chat.consumers import SessionConsumer

    run = services.message_post(session=alice_session, content="What is 2+2?")
    services.run_claim(run.pk, worker="w:1")
    consumer = SessionConsumer()
    consumer.session_id, consumer.user_id = alice_session.pk, alice.pk
    assert 'id="status-line"' in consumer._render_sessions(alice_session.pk)
    consumer.sent[run.pk] = 3
    html = consumer._render_sessions(alice_session.pk)
    assert 'id="status-line"' not in html and 'id="session-heading"' in html
