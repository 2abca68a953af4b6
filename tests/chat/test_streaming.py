"""Draft text in the web app: folded into the run cheaply, skipped by the page for now, and the
engine chosen by AGENT_MODE; reflection when feedback arrives."""

import time

import pytest
from asgiref.sync import async_to_sync
from django.test import override_settings
from django.urls import reverse

from chat.engine import reflect_on_run_feedback
from chat.models import ReasoningRun, Reflection, TraceEvent
from chat.sink import RunSink
from reasoning.events import Event
from tests.conftest import ask

pytestmark = pytest.mark.django_db(transaction=True)


def event(sequence: int, kind: str, **payload) -> Event:
    return Event(sequence, time.time(), kind, "Phase 1: Execution (DIRECT)", "trace", payload)


def delta(sequence: int, draft: str, offset: int, text: str) -> Event:
    return event(
        sequence, "answer.delta", draft=draft, attempt=1, strategy="direct", offset=offset, text=text
    )


def test_draft_batches_fold_into_the_run_without_a_row_each(alice_session):
    from chat import services

    run = services.message_post(session=alice_session, content="What is the capital of France?")
    sink = RunSink(run)
    send = async_to_sync(sink)
    send(delta(1, "d1", 0, "Par"))
    send(delta(2, "d1", 3, "is is"))
    run.refresh_from_db()
    assert (run.draft_id, run.draft_text, run.next_sequence) == ("d1", "Paris is", 3), (
        "a reload shows the draft"
    )
    assert not TraceEvent.objects.filter(run=run).exists(), "no row per batch"
    send(event(3, "answer.discarded", draft="d1", reason="quality", text="Paris is", quality=0.4))
    run.refresh_from_db()
    assert (run.draft_id, run.draft_text) == ("", "")
    send(delta(4, "d2", 0, "Paris."))
    send(event(5, "answer.final", answer="Paris.", answer_kind="answer", draft="d2"))
    run.refresh_from_db()
    assert (run.draft_id, run.draft_text) == ("", "") and run.answers.get().content == "Paris."
    assert list(TraceEvent.objects.filter(run=run).values_list("sequence", flat=True)) == [3, 5]


def test_a_real_run_stores_its_discarded_drafts_but_never_its_deltas(alice, alice_session, client_for):
    run = ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")
    assert not run.events.filter(kind="answer.delta").exists()
    discarded = run.events.get(kind="answer.discarded")
    assert discarded.payload["reason"] == "quality" and discarded.payload["quality"] < 0.6
    final = run.events.get(kind="answer.final").payload
    assert final["draft"] and final["draft"] != discarded.payload["draft"]
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Discarded draft, quality 0.45: missing What time is it in Tokyo?" in page


@override_settings(AGENT_MODE="reasoning_driven")
def test_agent_mode_picks_the_engine(alice_session):
    run = ask(alice_session, "What is 17*23?")
    assert run.status == "succeeded" and run.events.filter(kind="thought").exists()
    assert "391" in run.answers.get().content


def test_feedback_on_an_answer_reflects_on_the_run_and_keeps_earlier_lessons(alice_session):
    run = ask(alice_session, "What is 17*23?")
    assert not Reflection.objects.filter(run=run).exists(), "a clean run has nothing to reflect on"
    before = run.next_sequence
    reflection = async_to_sync(reflect_on_run_feedback)(run.pk, rating="down", comment="Show the working")
    assert reflection is not None
    stored = Reflection.objects.get(run=run)
    assert any("Show the working" in str(item) for item in stored.insights)
    appended = run.events.get(kind="reflection.completed")
    assert appended.payload["trigger"] == "feedback" and appended.payload["feedback"]["rating"] == "down"
    assert list(run.events.filter(sequence__gte=before).values_list("kind", flat=True)) == [
        "llm.call",
        "reflection.completed",
    ], "appended after the run's own events, the model call recorded too"
    assert ReasoningRun.objects.get(pk=run.pk).next_sequence == appended.sequence + 1
    Reflection.objects.filter(run=run).update(lessons=["Keep it short."])
    async_to_sync(reflect_on_run_feedback)(run.pk, rating="up")
    assert "Keep it short." in Reflection.objects.get(run=run).lessons, "feedback adds to what the run taught"
