"""Sharing a chat: a read-only link for signed-in teammates, revocable, with who opened it;
never indexed, never showing a document to someone who may not read it."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from chat import documents, services
from chat.models import Memory, TraceEvent
from teamops.models import SharedLink
from tests.conftest import ask, run_now

pytestmark = pytest.mark.django_db(transaction=True)


def share(client, session, *, trace: bool = False) -> str:
    data = {"include_trace": "on"} if trace else {}
    response = client.post(f"/sessions/{session.pk}/share/", data, follow=True)
    assert response.status_code == 200
    return re.search(r"(/shared/[\w-]+/)", response.content.decode()).group(1)


def test_a_teammate_reads_a_shared_chat_and_the_owner_sees_who_opened_it(
    alice, bob, alice_session, client_for
):
    ask(alice_session, "What is 17*23?")
    owner = client_for(alice)
    url = share(owner, alice_session)
    response = client_for(bob).get(url)
    html = response.content.decode()
    assert response.status_code == 200 and "What is 17*23?" in html and "391" in html
    assert response["X-Robots-Tag"] == "noindex, nofollow, noarchive"
    assert '<meta name="robots" content="noindex, nofollow, noarchive">' in html
    assert response["Referrer-Policy"] == "no-referrer"
    assert "Reasoning steps" not in html and 'action="/sessions/' not in html, "read-only, no trace"
    client_for(bob).get(url)
    page = owner.get(f"/sessions/{alice_session.pk}/").content.decode()
    assert "bob opened it 2×" in page
    assert Client().get(url).status_code == 302, "signed-in teammates only"


def test_with_the_trace_the_steps_show_but_never_tool_output(alice, bob, alice_session, client_for):
    ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")
    html = client_for(bob).get(share(client_for(alice), alice_session, trace=True)).content.decode()
    assert "Reasoning steps" in html and "Escalated Direct → Light" in html
    assert "Tool called: Calculator (Nexus)" in html and "Step: What time is it in Tokyo?" in html
    assert "nexus__" not in html, "the shared page speaks plainly, like the chat page"
    assert "17*23 = 391" not in html, "tool results stay with the owner"


def test_a_revoked_link_opens_nothing(alice, bob, alice_session, client_for):
    url = share(client_for(alice), alice_session)
    link = SharedLink.objects.get()
    assert client_for(bob).post(f"/sessions/{alice_session.pk}/share/{link.pk}/revoke/").status_code == 404
    client_for(alice).post(f"/sessions/{alice_session.pk}/share/{link.pk}/revoke/")
    assert client_for(bob).get(url).status_code == 404
    assert "Revoked" in client_for(alice).get(f"/sessions/{alice_session.pk}/").content.decode()


def test_only_the_owner_shares_a_chat(alice, bob, alice_session, client_for):
    assert client_for(bob).post(f"/sessions/{alice_session.pk}/share/").status_code == 404
    assert not SharedLink.objects.exists()
    assert 'id="share-dialog"' in client_for(alice).get(f"/sessions/{alice_session.pk}/").content.decode()


def _ask_about_salaries(alice, session):
    documents.document_create(owner=alice, title="Salaries", content="Intro.\n\nDana earns 91,234 a year.")
    question = "What does Dana earn? @Salaries"
    prepared = services.message_prepare(user=alice, content=question)
    run = services.message_post(
        session=session, content=question, question=prepared.question, attachments=prepared.attachments
    )
    run_now(run.pk)
    return run


def test_an_answer_built_from_a_private_document_is_withheld_from_who_may_not_read_it(
    alice, bob, alice_session, client_for
):
    run = _ask_about_salaries(alice, alice_session)
    assert "91,234" in run.answers.get().content, "the answer quotes the document"
    # A real model writes its steps after reading the document, and may quote it there too.
    run.refresh_from_db()
    TraceEvent.objects.create(
        run=run,
        sequence=run.next_sequence + 100,
        kind="step.started",
        payload={"step_id": "step_9", "description": "Check that 91,234 is Dana's base salary"},
    )
    url = share(client_for(alice), alice_session, trace=True)
    html = client_for(bob).get(url).content.decode()
    assert "91,234" not in html and "Attached: a document you may not read" in html
    assert "base salary" not in html, "the withheld answer's steps are withheld with it"
    assert "drew on a document you may not read" in html and "What does Dana earn?" in html
    assert "91,234" in client_for(alice).get(url).content.decode(), "the owner may read their own"
    documents.Document.objects.filter(title="Salaries").update(shared=True)
    assert "91,234" in client_for(bob).get(url).content.decode(), "once shared with the team, it shows"


def test_a_question_asked_again_shows_once_in_its_latest_version(alice, bob, alice_session, client_for):
    """Regenerated and edited versions read as separate questions on the shared page."""
    first = ask(alice_session, "What is 17*23?")
    again = services.message_resend(run=first)
    run_now(again.pk)
    edited = services.message_resend(run=again, content="What is 6*7?", question="What is 6*7?")
    run_now(edited.pk)
    ask(alice_session, "What time is it in Tokyo?")
    html = client_for(bob).get(share(client_for(alice), alice_session)).content.decode()
    assert html.count('class="shared-turn"') == 2
    assert "What is 17*23?" not in html and "What is 6*7?" in html and "42" in html
    assert "(the latest of 3 versions)" in html


def test_a_later_turn_is_withheld_with_the_private_document_an_earlier_one_read(
    alice, bob, alice_session, client_for
):
    """The model hears the chat's earlier answers: a later turn may repeat the document. It
    says so, not that it drew on the document itself (an arithmetic answer was said to)."""
    _ask_about_salaries(alice, alice_session)
    ask(alice_session, "What is 17*23?")
    html = client_for(bob).get(share(client_for(alice), alice_session)).content.decode()
    assert html.count("drew on a document you may not read") == 2 and "391" not in html
    assert (
        html.count("This answer drew on") == 1 and html.count("An earlier answer in this chat drew on") == 1
    )
    assert html.index("This answer drew on") < html.index("An earlier answer")


def test_an_answer_from_a_memory_of_a_private_document_is_withheld(alice, bob, alice_session, client_for):
    """A memory recalled in another chat carried the document's content past the check."""
    source = _ask_about_salaries(alice, alice_session)
    episode = Memory.objects.create(
        owner=alice, kind="episodic", text="Dana earns 91,234 a year.", session=alice_session, run=source
    )
    derived = Memory.objects.create(owner=alice, kind="semantic", text="Dana's pay: 91,234.")
    derived.sources.set([episode])
    other = services.session_create(owner=alice, title="Pay")
    later = ask(other, "What is 17*23?")
    recall = TraceEvent.objects.create(
        run=later,
        sequence=later.next_sequence + 100,
        kind="memory.recalled",
        payload={"items": [{"id": derived.pk}]},
    )
    url = share(client_for(alice), other)
    assert "drew on a document you may not read" in client_for(bob).get(url).content.decode()
    Memory.objects.filter(pk=derived.pk).update(shared=True)  # staff promoted it for the team
    assert "391" in client_for(bob).get(url).content.decode()
    recall.payload = {"items": [{"id": 10**6}]}  # forgotten since: what it held is unknown
    recall.save()
    assert "drew on a document you may not read" in client_for(bob).get(url).content.decode()


def test_a_private_document_found_past_what_the_trace_stores_is_still_withheld(
    alice, bob, alice_session, client_for
):
    """The trace keeps the first 4,000 characters of a tool result; a search whose first hit
    fills them (a long heading repeated before each passage) once hid the private document
    behind it from the check, and the shared page showed its content to the team."""
    documents.document_create(
        owner=bob,
        title="Wombat handbook",
        content="# Wombat " + "wombat " * 600 + "\n\nwombat wombat overview.",
        shared=True,
    )
    documents.document_create(owner=alice, title="Vault", content="Wombat vault code is ALICE-SECRET-9911.")
    run = ask(alice_session, "What do our team documents say about wombat?")
    assert "ALICE-SECRET-9911" in run.answers.get().content, "the answer quotes the private document"
    html = client_for(bob).get(share(client_for(alice), alice_session)).content.decode()
    assert "ALICE-SECRET-9911" not in html and "drew on a document you may not read" in html
