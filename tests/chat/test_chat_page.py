"""What people expect of a chat page, on the server side: stop, regenerate and edit, feedback,
honest low-confidence answers, search, export, theme, and draft frames on the socket."""

import asyncio
import json
import re

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.test import override_settings
from django.urls import reverse

from chat import services
from chat.engine import execute_run
from chat.models import AnswerFeedback, Message, Preference, ReasoningRun, TraceEvent
from chat.rendering import render_markdown
from chat.sink import RunSink
from reasoning.events import Event
from tests.conftest import ask, run_now

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, run: ReasoningRun) -> str:
    return reverse(name, args=[run.session_id, run.pk])


def draft_delta(seq: int, offset: int, text: str) -> Event:
    """A batch of draft d1's text, as the engine emits it while the answer streams."""
    return Event(
        seq, 0.0, "answer.delta", "Phase 1", "trace", {"draft": "d1", "offset": offset, "text": text}
    )


# --- stop ------------------------------------------------------------------------------------


@override_settings(OFFLINE_LATENCY_MS=4000)
def test_stop_cancels_the_run_and_keeps_what_it_had(alice, alice_session, client_for):
    """Each model call takes 4 s here; the stop lands in the middle of the first one."""
    client = client_for(alice)
    run = services.message_post(session=alice_session, content="What is the capital of France?")

    async def execute_and_stop() -> str:
        executing = asyncio.create_task(execute_run(run.pk))
        running = ReasoningRun.objects.filter(pk=run.pk, status="running").exists
        for _ in range(200):
            if await database_sync_to_async(running)():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        response = await database_sync_to_async(client.post)(url("chat:run-stop", run), **HTMX)
        assert response.status_code == 200 and "Stopped" in response.content.decode()
        return await executing

    assert async_to_sync(execute_and_stop)() == "stopped"
    run.refresh_from_db()
    assert run.status == ReasoningRun.Status.CANCELLED and run.finished_at is not None
    assert not run.answers.exists(), "a stopped run never gets an answer"
    kinds = list(run.events.values_list("kind", flat=True))
    assert kinds[-1] == "run.stopped" and "run.finished" not in kinds
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Stopped before any answer was written" in page or "what it had written so far" in page
    # The chat is free again at once.
    assert (
        client.post(
            reverse("chat:message-create", args=[alice_session.pk]), {"content": "Next?"}, **HTMX
        ).status_code
        == 200
    )


def test_a_stopped_runs_draft_stays_on_the_page(alice, alice_session, client_for):
    run = services.message_post(session=alice_session, content="Tell me about Paris")
    ReasoningRun.objects.filter(pk=run.pk).update(draft_id="d1", draft_text="Paris is the capital")
    services.run_stop(run)
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "what it had written so far" in page and "Paris is the capital" in page
    assert "Paris is the capital" in services.session_export_markdown(alice_session)


def test_stopping_a_finished_run_changes_nothing(alice, alice_session, client_for):
    run = ask(alice_session, "What is 2+2?")
    response = client_for(alice).post(url("chat:run-stop", run), **HTMX)
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == ReasoningRun.Status.SUCCEEDED


def test_a_reload_says_how_the_last_run_ended_as_the_live_page_did(alice, alice_session, client_for):
    """Live, a finished run left the status line on "Complete" (or "Stopped", "Failed"); a
    reload said "Ready", and the tab's title changed with it."""
    client = client_for(alice)
    assert "Mode: <strong>Ready</strong>" in client.get(url_of(alice_session)).content.decode()
    ask(alice_session, "What is 2+2?")
    page = client.get(url_of(alice_session)).content.decode()
    assert "Mode: <strong>Complete</strong>" in page and "| Mode: Complete</title>" in page
    stopped = services.message_post(session=alice_session, content="And 3+3?")
    services.run_stop(stopped)
    assert "Mode: <strong>Stopped</strong>" in client.get(url_of(alice_session)).content.decode()


def url_of(session) -> str:
    return reverse("chat:session", args=[session.pk])


def test_nobody_stops_or_rates_someone_elses_run(alice, bob, alice_session, client_for, dispatched):
    run = ask(alice_session, "What is 2+2?")
    bob_client = client_for(bob)
    for name in ("chat:run-stop", "chat:run-resend", "chat:run-feedback"):
        assert bob_client.post(url(name, run), {"rating": "1"}, **HTMX).status_code == 404
    assert bob_client.get(reverse("chat:session-export", args=[alice_session.pk])).status_code == 404
    assert not AnswerFeedback.objects.exists()


# --- regenerate and edit ------------------------------------------------------------------


def test_regenerate_asks_again_and_keeps_the_old_answer(alice, alice_session, client_for, dispatched):
    client = client_for(alice)
    first = ask(alice_session, "What is 17*23?")
    response = client.post(url("chat:run-resend", first), **HTMX)
    assert response.status_code == 200
    second = ReasoningRun.objects.exclude(pk=first.pk).get()
    assert second.user_message.variant_of_id == first.user_message_id
    assert second.query == first.query
    html = response.content.decode()
    assert f'id="turn-{second.pk}"' in html and f'data-group="{first.user_message_id}"' in html
    run_now(second.pk)
    assert services.conversation_history(second) == [], "the old version is not the new one's history"
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert page.count(f'data-group="{first.user_message_id}"') >= 2
    assert (
        f'id="turn-{first.pk}" data-run-id="{first.pk}" data-group="{first.user_message_id}" hidden' in page
    )
    assert "2/2" in page and "391" in page, "both versions are on the page, the latest shown"


def test_edit_sends_the_changed_question_and_only_the_last_can_change(
    alice, alice_session, client_for, dispatched
):
    client = client_for(alice)
    first = ask(alice_session, "What is 2+2?")
    second = ask(alice_session, "What is 3+3?")
    refused = client.post(url("chat:run-resend", first), {"content": "What is 5+5?"}, **HTMX)
    assert "Only the last question" in refused.content.decode()
    response = client.post(url("chat:run-resend", second), {"content": "What is 4+4?"}, **HTMX)
    assert response.status_code == 200
    edited = ReasoningRun.objects.get(user_message__content="What is 4+4?")
    assert edited.user_message.variant_of_id == second.user_message_id and edited.query == "What is 4+4?"
    run_now(edited.pk)
    history = services.conversation_history(edited)
    assert [m["content"] for m in history if m["role"] == "user"] == ["What is 2+2?"]
    markdown = services.session_export_markdown(alice_session)
    assert "What is 4+4?" in markdown and "What is 3+3?" not in markdown, "the export follows the page"


def test_a_refused_edit_is_said_under_the_edit_box(alice, alice_session, client_for, dispatched):
    """Found in review: an Edit refused (left blank, too long, while answering) was said under
    the message box at the foot of the page ("Type a message first."), away from the Edit box
    the person had typed in, and it read as if the empty message box were at fault."""
    run = ask(alice_session, "What is 2+2?")
    ReasoningRun.objects.update(status="succeeded")
    client = client_for(alice)
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert f'id="edit-error-{run.pk}"' in page and f'aria-describedby="edit-error-{run.pk}"' in page
    blank = client.post(url("chat:run-resend", run), {"content": "   "}, **HTMX)
    assert blank["HX-Retarget"] == f"#edit-error-{run.pk}" and "Type a message" in blank.content.decode()
    client.post(url("chat:run-resend", run), **HTMX)  # a regenerate: now answering
    busy = client.post(url("chat:run-resend", run), {"content": "What is 5+5?"}, **HTMX)
    assert busy.status_code == 409 and busy["HX-Retarget"] == f"#edit-error-{run.pk}"


def test_resend_while_answering_is_refused(alice, alice_session, client_for, dispatched):
    first = ask(alice_session, "What is 2+2?")
    client = client_for(alice)
    client.post(url("chat:run-resend", first), **HTMX)
    response = client.post(url("chat:run-resend", first), **HTMX)
    assert response.status_code == 409 and response["HX-Retarget"] == "#composer-error"
    assert "Stop it first" in response.content.decode()


# --- feedback ---------------------------------------------------------------------------------


def test_feedback_is_one_verdict_per_person_and_can_change(alice, alice_session, client_for, auditor):
    run = ask(alice_session, "What is 2+2?")
    client = client_for(alice)
    response = client.post(url("chat:run-feedback", run), {"rating": "1"}, **HTMX)
    assert response.status_code == 200 and 'aria-pressed="true"' in response.content.decode()
    client.post(url("chat:run-feedback", run), {"rating": "-1", "comment": "It skipped the working"}, **HTMX)
    feedback = AnswerFeedback.objects.get()
    assert (feedback.rating, feedback.comment, feedback.user) == (-1, "It skipped the working", alice)
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "It skipped the working" in page
    bad = client.post(url("chat:run-feedback", run), {"rating": "7"}, **HTMX)
    assert bad.status_code == 400 and "up or down" in bad.content.decode()
    admin = client_for(auditor)
    listing = admin.get(
        reverse("admin:chat_answerfeedback_changelist") + "?rating__exact=-1"
    ).content.decode()
    assert "It skipped the working" in listing
    run_page = admin.get(reverse("admin:chat_reasoningrun_change", args=[run.pk])).content.decode()
    assert "It skipped the working" in run_page, "staff see the verdict on the run's page"


def test_a_comment_written_for_one_verdict_does_not_follow_a_changed_one(alice, alice_session, client_for):
    """The thumbs post the whole form, the comment box included: switching 👎 to 👍 kept the
    complaint ("Thanks, noted: 'bad answer'" under a thumbs up)."""
    run = ask(alice_session, "What is 2+2?")
    client = client_for(alice)
    client.post(url("chat:run-feedback", run), {"rating": "-1", "comment": "bad answer"}, **HTMX)
    response = client.post(url("chat:run-feedback", run), {"rating": "1", "comment": "bad answer"}, **HTMX)
    html = response.content.decode()
    assert "Thanks, noted: “bad answer”" not in html and "bad answer</textarea>" not in html
    # ...and says so, instead of deleting it unannounced (a second review).
    assert "Your comment “<bdi>bad answer</bdi>” was about your earlier verdict, so it was removed." in html
    assert AnswerFeedback.objects.values_list("rating", "comment").get() == (1, "")
    client.post(url("chat:run-feedback", run), {"rating": "-1", "comment": "Missed the units"}, **HTMX)
    assert AnswerFeedback.objects.values_list("rating", "comment").get() == (-1, "Missed the units")
    client.post(url("chat:run-feedback", run), {"rating": "-1", "comment": "Missed the units, twice"}, **HTMX)
    assert AnswerFeedback.objects.get().comment == "Missed the units, twice", (
        "the same verdict's comment changes"
    )


def test_a_thumb_never_carries_the_comment_box(alice, alice_session, client_for):
    """A comment typed under 👎 and not saved was stored with 👍: the thumbs and the comment box
    were one form, so a thumb posted the box too."""
    run = ask(alice_session, "What is 2+2?")
    client = client_for(alice)
    client.post(url("chat:run-feedback", run), {"rating": "-1"}, **HTMX)
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    thumbs = re.search(r'<form class="feedback-verdict".*?</form>', page, re.S).group(0)
    assert 'class="thumb up"' in thumbs and "<textarea" not in thumbs
    client.post(url("chat:run-feedback", run), {"rating": "-1", "comment": "Missing detail"}, **HTMX)
    client.post(url("chat:run-feedback", run), {"rating": "-1"}, **HTMX)
    assert AnswerFeedback.objects.values_list("rating", "comment").get() == (-1, "Missing detail")
    html = client.post(url("chat:run-feedback", run), {"rating": "1"}, **HTMX).content.decode()
    assert AnswerFeedback.objects.values_list("rating", "comment").get() == (1, "")
    assert (
        "Your comment “<bdi>Missing detail</bdi>” was about your earlier verdict, so it was removed." in html
    )


def test_a_run_without_an_answer_cannot_be_rated(alice, alice_session, client_for, dispatched):
    run = services.message_post(session=alice_session, content="What is 2+2?")
    response = client_for(alice).post(url("chat:run-feedback", run), {"rating": "1"}, **HTMX)
    assert response.status_code == 400 and not AnswerFeedback.objects.exists()


# --- honest answers ---------------------------------------------------------------------------


def test_an_answer_below_its_threshold_says_so_with_what_it_misses(alice, alice_session, client_for):
    run = ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")
    good = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Low confidence" not in good
    ReasoningRun.objects.filter(pk=run.pk).update(final_quality=0.54)
    attempt = run.attempts.order_by("-number").first()
    attempt.evaluation = {**attempt.evaluation, "missing_aspects": ["the Tokyo time", "the sources"]}
    attempt.save(update_fields=["evaluation"])
    final = run.events.get(kind="answer.final")
    final.payload = {**final.payload, "approved": False}
    final.save(update_fields=["payload"])
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Low confidence" in page and "the answer may miss the Tokyo time; the sources" in page
    assert 'class="q-fair" title="Quality score from the evaluator">quality 0.54' in page
    assert "did not pass the quality check" in page and "Answer approved and shown" not in page
    # An aspect the evaluator gave as a question ends the sentence itself (it read "day?.").
    attempt.evaluation = {**attempt.evaluation, "missing_aspects": ["How many seconds are in a day?"]}
    attempt.save(update_fields=["evaluation"])
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "the answer may miss How many seconds are in a day?</div>" in page
    # The whole question as the thing missed told the person nothing (a review: "the answer
    # may miss What is 17*23 in hex?").
    attempt.evaluation = {**attempt.evaluation, "missing_aspects": [f"{run.query.upper()}!"]}
    attempt.save(update_fields=["evaluation"])
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "may miss" not in page and "it may answer only part of the question; check it" in page


def test_one_colour_scale_for_every_quality_score():
    from chat.presenters import quality_class

    assert quality_class(0.65) == quality_class(0.65, approved=True) == quality_class(0.65, approved=False)
    assert [quality_class(q) for q in (0.95, 0.65, 0.3, None)] == ["q-good", "q-fair", "q-bad", "q-none"]


# --- search, export, theme --------------------------------------------------------------------


def test_search_finds_titles_and_messages_of_your_own_chats_only(alice, bob, client_for):
    mine = services.session_create(owner=alice, title="Release planning")
    ask(mine, "What is 17*23?")
    other = services.session_create(owner=alice, title="Misc")
    ask(other, "When do we ship the release?")
    bobs = services.session_create(owner=bob, title="Bob's release notes")
    ask(bobs, "release secrets")
    page = client_for(alice).get(reverse("chat:search"), {"q": "RELEASE"}).content.decode()
    assert (
        "Release planning" in page and "Misc" in page and "When do we ship the <mark>release</mark>?" in page
    )
    assert "Bob" not in page and "secrets" not in page
    assert "2 chats mention “<bdi>RELEASE</bdi>”" in page
    # One result reads as a sentence, the answer's Markdown does not show as stars, and the
    # page keeps the ways to a new chat and the other pages (found by a review).
    one = client_for(alice).get(reverse("chat:search"), {"q": "391"}).content.decode()
    assert "1 chat mentions “<bdi>391</bdi>”" in one and "<mark>391</mark>" in one and "**391**" not in one
    # Nor its rule and italic footer (a second review saw "… --- *Answered by N…").
    snippet = re.search(r'<p class="snippet">(.*?)</p>', one, re.S).group(1)
    assert "---" not in snippet and "*" not in snippet.replace("17*23", ""), snippet
    assert "+ New chat" in one and "Team documents" in one and "Memory" in one
    none = client_for(alice).get(reverse("chat:search"), {"q": "zebra"}).content.decode()
    assert "No chat mentions “<bdi>zebra</bdi>”." in none


def test_export_is_the_chat_as_markdown(alice, alice_session, client_for):
    ask(alice_session, "What is 17*23?")
    response = client_for(alice).get(reverse("chat:session-export", args=[alice_session.pk]))
    assert response["Content-Type"].startswith("text/markdown")
    assert "attachment" in response["Content-Disposition"]
    text = response.content.decode()
    assert text.startswith("# Alice's chat") and "## Question\n\nWhat is 17\\*23?" in text and "391" in text


def test_an_exported_question_reads_as_it_was_typed(alice, alice_session, client_for):
    """Answers were exported as Markdown but questions raw: a question holding "<script>",
    "## Answer" or "---" broke the file's structure or ran as HTML in a lenient viewer."""
    typed = "Why does <script>alert(1)</script> run?\n## Answer\n---\n1. *not* a list"
    ask(alice_session, typed)
    text = client_for(alice).get(reverse("chat:session-export", args=[alice_session.pk])).content.decode()
    assert "<script>" not in text and text.count("\n## Answer") == 1
    assert "\n---\n" not in text.split("## Answer")[0]
    html = render_markdown(text.split("## Question\n\n", 1)[1].split("\n\n## ", 1)[0])
    assert "<h2>" not in html and "<hr" not in html and "<ol>" not in html and "<em>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "1. *not* a list" in html


def test_theme_is_remembered_per_user(alice, bob, alice_session, client_for):
    client = client_for(alice)
    assert client.post(reverse("chat:preferences"), {"theme": "dark"}).status_code == 204
    assert client.post(reverse("chat:preferences"), {"theme": "neon"}).status_code == 400
    assert Preference.objects.get(user=alice).theme == "dark"
    assert (
        'data-theme="dark"' in client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    )
    assert 'data-theme="system"' in client_for(bob).get(reverse("chat:documents")).content.decode()


def test_rename_updates_the_header_the_list_and_the_tab_title(alice, alice_session, client_for):
    response = client_for(alice).post(
        reverse("chat:session-rename", args=[alice_session.pk]), {"title": "Budget 2027"}, **HTMX
    )
    html = response.content.decode()
    assert html.count("Budget 2027") >= 3
    assert 'id="session-list" class="session-list" hx-swap-oob="true"' in html
    assert 'data-title="Budget 2027 · Nexus' in html


def test_renames_new_and_deleted_chats_reach_every_open_tab_of_their_owner(alice, bob, client_for):
    """Alice has one tab on chat A and one on chat B; Bob has a tab of his own."""
    chat_a = services.session_create(owner=alice, title="Chat A")
    chat_b = services.session_create(owner=alice, title="Chat B")
    bobs = services.session_create(owner=bob, title="Bob's")
    client = client_for(alice)

    async def received(communicator) -> str:
        chunks = []
        while not await communicator.receive_nothing(timeout=0.4):
            chunks.append(await communicator.receive_from())
        return "".join(chunks)

    async def scenario() -> dict[str, str]:
        on_a, on_b, bob_tab = (
            await _connect(alice, chat_a.pk),
            await _connect(alice, chat_b.pk),
            await _connect(bob, bobs.pk),
        )
        seen = {}
        rename = reverse("chat:session-rename", args=[chat_a.pk])
        await database_sync_to_async(client.post)(rename, {"title": "Budget 2027"}, **HTMX)
        seen["renamed: tab on A"], seen["renamed: tab on B"] = await received(on_a), await received(on_b)
        await database_sync_to_async(client.post)(reverse("chat:session-new"), **HTMX)
        seen["new: tab on B"] = await received(on_b)
        await received(on_a)
        delete = reverse("chat:session-delete", args=[chat_a.pk])
        await database_sync_to_async(client.post)(delete, **HTMX)
        seen["deleted: tab on A"], seen["deleted: tab on B"] = await received(on_a), await received(on_b)
        seen["bob"] = await received(bob_tab)
        for communicator in (on_a, on_b, bob_tab):
            await communicator.disconnect()
        return seen

    seen = async_to_sync(scenario)()
    on_a = seen["renamed: tab on A"]
    assert '<h1 id="session-heading" title="Budget 2027" hx-swap-oob="true">Budget 2027</h1>' in on_a
    assert 'data-title="Budget 2027 · Nexus' in on_a, "the tab title follows"
    assert 'id="session-list" class="session-list" hx-swap-oob="true"' in on_a
    on_b = seen["renamed: tab on B"]
    assert ">Budget 2027</a>" in on_b and 'id="session-heading"' not in on_b, "another chat's header stays"
    assert on_b.count(">New chat</a>") == 0 and seen["new: tab on B"].count(">New chat</a>") == 1
    assert "This chat was deleted" in seen["deleted: tab on A"]
    assert "Budget 2027" not in seen["deleted: tab on B"] and ">Chat B</a>" in seen["deleted: tab on B"]
    assert seen["bob"] == "", "nobody else hears about Alice's chats"


# --- drafts on the socket ---------------------------------------------------------------------


async def _connect(user, session_id):
    from tests.chat.test_consumer import socket

    communicator = await socket(session_id, user)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


def test_drafts_reach_the_page_as_text_frames_and_a_sync_sends_the_stored_draft(alice, alice_session):
    run = services.message_post(session=alice_session, content="What is the capital of France?")

    async def scenario() -> list[dict]:
        communicator = await _connect(alice, alice_session.pk)
        await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
        assert await communicator.receive_nothing(timeout=0.5), "nothing to catch up on yet"
        sink = RunSink(run)
        for seq, (offset, text) in enumerate([(0, "Par"), (3, "is <b>is</b>")], start=1):
            await sink(draft_delta(seq, offset, text))
        frames = []
        while not await communicator.receive_nothing(timeout=0.3):
            frames.append(json.loads(await communicator.receive_from()))
        frames = [f for f in frames if "text" in f]  # renders of the Markdown aside
        await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 2}}))
        frames.append(json.loads(await communicator.receive_from(timeout=3)))
        await communicator.disconnect()
        return frames

    frames = async_to_sync(scenario)()
    text_frames = [f for f in frames[:-1] if "text" in f]
    assert [(f["offset"], f["text"]) for f in text_frames] == [(0, "Par"), (3, "is <b>is</b>")]
    assert frames[-1] == {
        "nexus": "draft",
        "run": run.pk,
        "seq": 2,
        "draft": "d1",
        "offset": 0,
        "text": "Paris <b>is</b>",
        "html": "<p>Paris &lt;b&gt;is&lt;/b&gt;</p>\n",
        "upto": 15,
    }
    assert not TraceEvent.objects.filter(kind="answer.delta").exists()


def test_a_streaming_draft_arrives_as_sanitised_markdown_a_few_times_a_second(alice, alice_session):
    """LLM output is untrusted and arrives in pieces: half a code fence, half a table, raw HTML."""
    run = services.message_post(session=alice_session, content="Show me some code")
    pieces = [
        "Here is **the",
        " plan**:\n\n| step | what |\n|---",
        "|---|\n| 1 | <img src=x onerror=alert(1)> |\n\n",
    ]
    pieces += ["```python\n", "def f():\n", "    return '<script>alert(1)</script>'\n"]
    pieces += [f"    x{i} = {i}\n" for i in range(30)]  # a burst: 30 batches in a few ms

    async def scenario() -> list[dict]:
        communicator = await _connect(alice, alice_session.pk)
        await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
        await communicator.receive_nothing(timeout=0.3)
        sink, offset = RunSink(run), 0
        for seq, text in enumerate(pieces, start=1):
            await sink(draft_delta(seq, offset, text))
            offset += len(text)
        frames = []
        while not await communicator.receive_nothing(timeout=0.5):
            frames.append(json.loads(await communicator.receive_from()))
        await communicator.disconnect()
        return frames

    frames = async_to_sync(scenario)()
    assert len([f for f in frames if "text" in f]) == len(pieces), "every batch reaches the page at once"
    renders = [f for f in frames if "html" in f]
    assert 1 <= len(renders) < len(pieces) / 3, f"{len(renders)} renders for {len(pieces)} batches"
    last = renders[-1]
    full = "".join(pieces)
    assert last["upto"] == len(full), "the last render covers the whole draft"
    html = last["html"]
    assert "<strong>the plan</strong>" in html and "<table>" in html and "<td>1</td>" in html
    assert '<pre><code class="language-python">' in html and ">x29</span>" in html, "an open fence is code"
    tags = set(re.findall(r"<(\w+)", html))
    assert tags <= {"p", "strong", "table", "thead", "tbody", "tr", "th", "td", "pre", "code", "span"}, tags
    assert "&lt;img src=x onerror=alert(1)&gt;" in html, "raw HTML shows as text, never as markup"


def test_a_turn_asked_in_another_tab_arrives_whole(alice, alice_session):
    async def scenario() -> str:
        communicator = await _connect(alice, alice_session.pk)  # never synced: the other tab
        run = await database_sync_to_async(services.message_post)(
            session=alice_session, content="What is 2+2?"
        )
        assert await execute_run(run.pk) == "succeeded"
        html = []
        while not await communicator.receive_nothing(timeout=0.5):
            html.append(await communicator.receive_from())
        await communicator.disconnect()
        return "".join(html)

    html = async_to_sync(scenario)()
    run = ReasoningRun.objects.get()
    assert '<div hx-swap-oob="beforeend:#thread">' in html and f'id="turn-{run.pk}"' in html
    assert html.count(f'id="turn-{run.pk}"') == 1
    assert Message.objects.filter(role="assistant").count() == 1


# --- a panel a newcomer reads -----------------------------------------------------------------


def test_the_panel_speaks_plainly_and_says_each_thing_once(alice, alice_session, client_for):
    run = ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    trace = page[page.index(f'id="trace-{run.pk}"') :]
    trace = trace[: trace.index('class="answer"')]
    assert "Calculator (Nexus)" in trace and "nexus__" not in trace and ">calculator<" not in trace
    assert "splits the question into its parts" in trace, "each strategy is explained in a line"
    assert "execute_with_caution" not in trace and "LIGHT_PLANNING" not in trace
    assert 'badge st-pending">pending' not in trace, "finished steps say so in the plan"
    assert trace.count("Missing:") + trace.count("missing ") <= len(run.attempts.all())
    rationale = run.rationale
    assert not rationale or trace.count(rationale) <= 1, "the analysis rationale is shown once"
    assert "**" not in trace, "Markdown in findings is rendered"
    head = page[page.index(f'id="trace-head-{run.pk}"') :]
    head = head[: head.index("</button>")]
    assert re.search(
        r"Direct → Light · \d+ tools? · <span class=\"q-\w+\">quality \d\.\d\d</span> · \d+\.\d s", head
    ), head


def test_the_rationale_is_said_once_when_the_trace_arrives_live(alice, alice_session):
    """Pushed live, the analysis and the strategy arrive in different batches."""
    run = services.message_post(
        session=alice_session, content="What is the capital of France and what is 2**10?"
    )

    async def scenario() -> str:
        communicator = await _connect(alice, alice_session.pk)
        await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
        assert await execute_run(run.pk) == "succeeded"
        chunks = []
        while not await communicator.receive_nothing(timeout=0.5):
            chunks.append(await communicator.receive_from())
        await communicator.disconnect()
        return "".join(chunk for chunk in chunks if not chunk.startswith("{"))

    html = async_to_sync(scenario)()
    rationale = run.events.get(kind="analysis.completed").payload["analysis"]["rationale"]
    assert rationale and html.count(rationale) == 1, html.count(rationale)


def test_findings_markdown_is_rendered_and_sanitised():
    from chat.presenters import event_context

    event = TraceEvent(
        run_id=1,
        sequence=3,
        kind="step.completed",
        phase="Phase 1",
        payload={"step_id": "s1", "status": "completed", "findings": "**391** <script>alert(1)</script>"},
    )
    html = str(event_context(event, None)["findings_html"])
    assert "<strong>391</strong>" in html and "<script" not in html


def test_a_question_shows_as_typed_and_a_one_call_answer_says_call(alice, alice_session, client_for):
    """A code snippet's indentation was lost in the bubble; the trace said "1 model calls"."""
    ask(alice_session, "What is 17*23?")
    services.message_post(session=alice_session, content="Why?\ndef f(x):\n    return x*2")
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert '<div class="bubble" dir="auto">Why?\ndef f(x):\n    return x*2</div>' in page
    assert "· 1 model call ·" in page
    # The first line's indentation too (a second review); blank lines around it go.
    other = services.session_create(owner=alice)
    services.message_post(session=other, content="\n  \n    x = compute()\n    print(x)\nwhy is x None?\n\n")
    page = client_for(alice).get(reverse("chat:session", args=[other.pk])).content.decode()
    assert '<div class="bubble" dir="auto">    x = compute()\n    print(x)\nwhy is x None?</div>' in page
    other.refresh_from_db()
    assert other.title == "x = compute()"


def test_searching_for_spaces_asks_for_a_word(alice, alice_session, client_for):
    page = client_for(alice).get(reverse("chat:search"), {"q": "   "}).content.decode()
    assert "Type a word from a chat" in page and "No chat mentions" not in page


def test_an_image_in_an_answer_is_a_link_named_by_its_description():
    """An image vanished (an empty paragraph): the allow-list drops <img>, as it should, since
    loading it would tell its server who reads the answer. Its description and address stay."""
    html = render_markdown('The chart: ![revenue <by> month](https://example.com/c.png "t") ![x](ftp://a/b)')
    assert "<img" not in html
    assert (
        '<a href="https://example.com/c.png" rel="noopener noreferrer nofollow">'
        "[image: revenue &lt;by&gt; month]</a>" in html
    )
    assert "[image: x]" in html and "ftp:" not in html


def test_a_quoted_document_passage_keeps_its_heading_on_a_line_of_its_own():
    """A review: the offline answer read "Vacation policy Employees get 25 days…"."""
    from reasoning.llm.offline_text import _quote

    html = render_markdown(_quote([("Holiday policy", "# Vacation policy\nEmployees get 25 days a year.")]))
    assert "<p><strong>Vacation policy</strong></p>" in html and "<p>Employees get 25 days" in html, html


# --- direction controls -------------------------------------------------------------------------

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "report\u202egnp.exe" reads as "reportexe.png"


def test_direction_overrides_in_model_and_tool_text_do_not_reorder_the_page(alice, alice_session, client_for):
    """An override in an answer, a tool's result or its name reversed what followed it on the
    chat page (the admin already wrote them out). The embeddings and overrides go; the
    isolates a right-to-left writer uses stay."""
    run = ask(alice_session, "What is 17*23?")
    Message.objects.filter(run=run, role="assistant").update(
        content=f"Saved as report{RLO}gnp.exe; \u2067שלום\u2069 ok"
    )
    last = run.events.order_by("-sequence").first()
    for n, (kind, payload) in enumerate(
        [
            ("tool.called", {"tool": f"evil{RLO}gnp.exe", "server": "nexus", "arguments": {"a": f"x{RLO}y"}}),
            ("tool.result", {"tool": "calculator", "success": True, "summary": f"file{RLO}gnp.exe"}),
            ("step.completed", {"step_id": "s9", "status": "completed", "findings": f"f{RLO}txt.exe"}),
        ],
        start=1,
    ):
        TraceEvent.objects.create(
            run=run, sequence=last.sequence + n, kind=kind, phase="Phase 1", payload=payload
        )
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    shown = page.split('<template class="answer-source">')[0] + page.split("</template>", 1)[1]
    assert RLO not in shown
    assert "reportgnp.exe" in page and "filegnp.exe" in page and "ftxt.exe" in page
    assert "\u2067שלום\u2069" in page
    assert RLO not in render_markdown(
        f"a{RLO}b \u202a\u202b\u202c\u202d"
    ) and "\u2066x\u2069" in render_markdown("\u2066x\u2069")


def test_quoted_words_of_the_person_are_isolated_in_our_sentences(alice, alice_session, client_for):
    """ "No chat mentions “שלום, מה השעה בירושלים?”." wrapped out of order: the quote's direction
    leaked into the sentence around it."""
    query = "שלום, מה השעה בירושלים?"
    page = client_for(alice).get(reverse("chat:search"), {"q": query}).content.decode()
    assert f"“<bdi>{query}</bdi>”" in page


def test_a_search_snippet_drops_direction_overrides(alice, client_for):
    """Found by a re-check: a found answer quoting "report\u202egnp.exe" reordered the snippet."""
    chat = services.session_create(owner=alice, title="Files")
    run = ask(chat, "What is 2+2?")
    run.answers.update(content="See the release report\u202egnp.exe now")
    page = client_for(alice).get(reverse("chat:search"), {"q": "release"}).content.decode()
    assert "<mark>release</mark> reportgnp.exe" in page and "\u202e" not in page


def test_a_request_for_input_nexus_declined_shows_in_the_trace(alice, alice_session, client_for):
    from chat.models import TraceEvent

    run = services.message_post(session=alice_session, content="What is 2+2?")
    payload = {
        "server": "odd",
        "tool": "open_link",
        "action": "decline",
        "refused": "an address that is not a web page",
    }
    TraceEvent.objects.create(
        run=run, sequence=1, kind="elicitation.answered", payload={**payload, "message": "<b>x"}
    )
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "odd asked for an address that is not a web page: declined by Nexus, nobody was asked" in page
    assert "It said: &lt;b&gt;x" in page
