"""Long-term memory in the web app: the cognitive mode remembers per person, recalls by full
text, shows what it recalled, and forgets for good what a person deletes.

alice tells Nexus a fact; bob (a teammate) never gets it back, over HTTP or in the engine,
until staff share it with the team.
"""

import re

import pytest
from asgiref.sync import async_to_sync
from django.test import override_settings
from django.urls import reverse

from chat import services
from chat.memory import DjangoMemoryStore, memory_recall, memory_store
from chat.models import ChatSession, Memory, ReasoningRun, Reflection
from reasoning.memory import EPISODIC, SEMANTIC, MemoryItem
from tests.conftest import run_now

pytestmark = pytest.mark.django_db(transaction=True)

COGNITIVE = override_settings(AGENT_MODE="cognitive")
FACT = "Remember that our staging database is db-2 in Frankfurt."
QUESTION = "Which staging database do we use?"


def post(client, session, content, dispatched):
    response = client.post(reverse("chat:message-create", args=[session.pk]), {"content": content})
    assert response.status_code in (200, 302)
    run_id = dispatched[-1]
    assert run_now(run_id) == "succeeded"
    return ReasoningRun.objects.get(pk=run_id)


def recalled(run):
    return [item["text"] for e in run.events.filter(kind="memory.recalled") for item in e.payload["items"]]


@COGNITIVE
def test_alice_is_remembered_and_bob_never_gets_her_memories(alice, bob, client_for, dispatched):
    alice_client, bob_client = client_for(alice), client_for(bob)
    alice_chat = services.session_create(owner=alice, title="Ops")
    bob_chat = services.session_create(owner=bob, title="Bob's")
    told = post(alice_client, alice_chat, FACT, dispatched)
    assert told.status == "succeeded"
    assert Memory.objects.filter(owner=alice, kind=SEMANTIC, text__icontains="db-2 in Frankfurt").exists()

    bobs = post(bob_client, bob_chat, QUESTION, dispatched)
    assert recalled(bobs) == [], "bob's run recalls none of alice's memories"
    assert "Frankfurt" not in bobs.answers.get().content
    page = bob_client.get(reverse("chat:memory")).content.decode()
    assert "Frankfurt" not in page
    alice_item = Memory.objects.get(owner=alice, kind=SEMANTIC)
    assert bob_client.post(reverse("chat:memory-delete", args=[alice_item.pk])).status_code == 404
    assert Memory.objects.filter(pk=alice_item.pk).exists()

    alices = post(alice_client, alice_chat, QUESTION, dispatched)
    assert "our staging database is db-2 in Frankfurt" in recalled(alices)
    assert "db-2 in Frankfurt" in alices.answers.get().content, "the recalled fact answers the question"
    page = alice_client.get(reverse("chat:memory")).content.decode()
    assert "db-2 in Frankfurt" in page and "Ops" in page


@COGNITIVE
def test_a_deleted_memory_is_never_recalled_again(alice, client_for, dispatched):
    client = client_for(alice)
    chat = services.session_create(owner=alice, title="Ops")
    post(client, chat, FACT, dispatched)
    fact = Memory.objects.get(owner=alice, kind=SEMANTIC)
    assert fact.pk in [m.id for m in memory_recall(user=alice, query=QUESTION)]
    response = client.post(reverse("chat:memory-delete", args=[fact.pk]), follow=True)
    assert "will not recall it again" in response.content.decode()
    assert fact.pk not in [m.id for m in memory_recall(user=alice, query=QUESTION)]
    # The exchange that told it is an episode of its own, which the person deletes too, or
    # everything at once.
    assert Memory.objects.filter(owner=alice, kind=EPISODIC).exists()
    client.post(reverse("chat:memory-forget"))
    assert not Memory.objects.filter(owner=alice).exists()
    again = post(client, chat, QUESTION, dispatched)
    assert recalled(again) == [] and "Frankfurt" not in again.answers.get().content


def test_recall_uses_the_full_text_index_and_stays_with_the_owner(alice, bob):
    memory_store(
        user=alice,
        session=None,
        run=None,
        items=[
            MemoryItem(SEMANTIC, "Deploys to production happen on Tuesdays after the standup"),
            MemoryItem(SEMANTIC, "The office coffee machine is on the third floor"),
            MemoryItem(EPISODIC, "Asked: how do we roll back a deploy? Answered: run rollback.sh"),
        ],
    )
    texts = [m.text for m in memory_recall(user=alice, query="When do production deploys happen?")]
    assert texts[0].startswith("Deploys to production") and not any("coffee" in t for t in texts)
    assert memory_recall(user=bob, query="When do production deploys happen?") == []
    Memory.objects.filter(text__startswith="Deploys").update(shared=True)
    shared = memory_recall(user=bob, query="When do production deploys happen?")
    assert [m.text for m in shared] == ["Deploys to production happen on Tuesdays after the standup"]
    assert shared[0].shared


def test_the_engine_store_is_bound_to_its_person(alice, bob):
    store = DjangoMemoryStore(user=alice)
    async_to_sync(store.remember)([MemoryItem(SEMANTIC, "Alice's VPN token rotates every ninety days")])
    assert async_to_sync(DjangoMemoryStore(user=bob).recall)("How often does the VPN token rotate?") == []
    assert async_to_sync(store.recall)("How often does the VPN token rotate?")


def test_the_memory_page_lists_lessons_and_deletes_them(alice, client_for):
    from tests.conftest import ask

    chat = services.session_create(owner=alice, title="Lessons")
    run = ask(chat, "What is 6*7?")
    Reflection.objects.update_or_create(
        run=run, defaults={"lessons": ["Check units first."], "confidence": 0.7}
    )
    client = client_for(alice)
    assert "Check units first." in client.get(reverse("chat:memory")).content.decode()
    client.post(reverse("chat:memory-lesson-delete"), {"text": "Check units first."})
    assert Reflection.objects.get(run=run).lessons == []
    assert client.post(reverse("chat:memory-lesson-delete"), {"text": "nope"}).status_code == 404


def test_a_chat_picks_its_mode_only_where_the_operator_allows(alice, client_for, dispatched):
    client = client_for(alice)
    chat = services.session_create(owner=alice, title="Mode")
    url = reverse("chat:session-mode", args=[chat.pk])
    client.post(url, {"mode": "cognitive"})
    assert "Agent mode" not in client.get(reverse("chat:session", args=[chat.pk])).content.decode()
    run = post(client, chat, "What is 6*7?", dispatched)
    assert not run.events.filter(kind="agent.message").exists(), "not allowed: the deployment's mode"
    with override_settings(NEXUS_CHAT_MODE_CHOICE=True):
        assert "Agent mode" in client.get(reverse("chat:session", args=[chat.pk])).content.decode()
        client.post(url, {"mode": "cognitive"})
        run = post(client, chat, "What is 7*8?", dispatched)
        assert run.events.filter(kind="agent.message").exists()
        assert client.post(url, {"mode": "telepathic"}).status_code == 302


@COGNITIVE
def test_the_panel_and_the_admin_show_the_agents_conversation(alice, auditor, client_for, dispatched):
    client = client_for(alice)
    chat = services.session_create(owner=alice, title="Agents")
    run = post(client, chat, FACT, dispatched)
    post(client, chat, QUESTION, dispatched)
    page = client.get(reverse("chat:session", args=[chat.pk])).content.decode()
    assert "asks" in page and "perception" in page and "Memory recalled 2 items" in page
    staff = client_for(auditor)
    admin_page = staff.get(reverse("admin:chat_reasoningrun_change", args=[run.pk])).content.decode()
    assert re.search(r"Agents(&#x27;|')s? conversation \(\d+ messages\)", admin_page)
    assert "<td>perception</td><td>cortex</td><td>perceive</td>" in admin_page
    for name in ("episodicmemory", "semanticmemory"):
        listing = staff.get(reverse(f"admin:chat_{name}_changelist"))
        assert listing.status_code == 200
    assert "db-2 in Frankfurt" in staff.get(reverse("admin:chat_semanticmemory_changelist")).content.decode()


@COGNITIVE
def test_a_cognitive_run_left_by_a_dead_worker_resumes_after_its_finished_steps(alice_session):
    from datetime import timedelta

    from django.utils import timezone

    from chat.models import TraceEvent
    from tests.conftest import ask

    run = ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="light")
    assert run.status == "succeeded"
    # Rewind to just after step_1 finished, as if the worker died while step_2 ran.
    state = run.tracker_state
    state["attempts"] = state["attempts"][:1]
    state["attempts"][0].update(status="in_progress", outcome="", response=None)
    state["current_attempt"] = 0
    for step in state["plan"]["steps"][1:]:
        step.update(status="pending", findings=[], tools_used=[], completed_at=None)
    cut = run.events.filter(kind="step.completed", payload__step_id="step_1").get().sequence
    run.answers.all().delete()
    TraceEvent.objects.filter(run=run, sequence__gt=cut).delete()
    ReasoningRun.objects.filter(pk=run.pk).update(
        status="running",
        worker="dead-host:1",
        tracker_state=state,
        next_sequence=cut + 1,
        finished_at=None,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
    )
    assert run_now(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.answers.count() == 1 and "391" in run.answers.get().content
    after = run.events.filter(sequence__gt=cut)
    assert after.first().kind == "run.started" and after.first().payload["resumed"]
    started = [e.payload["step_id"] for e in after.filter(kind="step.started")]
    assert started == ["step_2"], "the finished step is not run again"
    assert not after.filter(kind="plan.created").exists(), "the plan survives the worker"


def test_staff_share_a_memory_with_the_team(alice, bob, auditor, client_for):
    fact = Memory.objects.create(
        owner=alice, kind=SEMANTIC, text="The release train leaves every second Wednesday"
    )
    assert memory_recall(user=bob, query="When does the release train leave?") == []
    staff = client_for(auditor)
    staff.post(
        reverse("admin:chat_semanticmemory_changelist"),
        {"action": "promote", "_selected_action": [fact.pk]},
    )
    fact.refresh_from_db()
    assert fact.shared and fact.promoted_by == auditor
    assert [m.text for m in memory_recall(user=bob, query="When does the release train leave?")] == [
        fact.text
    ]


def test_a_shared_memory_does_not_show_its_owners_private_chat(alice, bob, client_for):
    """Staff share what Nexus learned, not the name of the chat it came from (found by a review:
    bob's Memory page showed alice's confidential chat title)."""
    private = ChatSession.objects.create(owner=alice, title="Layoffs planning Q1 - confidential")
    Memory.objects.create(
        owner=alice,
        kind=SEMANTIC,
        text="The release train leaves on Wednesdays",
        session=private,
        shared=True,
    )
    bobs = client_for(bob).get(reverse("chat:memory")).content.decode()
    assert "The release train leaves on Wednesdays" in bobs
    assert "Layoffs" not in bobs and f"/sessions/{private.pk}/" not in bobs
    alices = client_for(alice).get(reverse("chat:memory")).content.decode()
    assert "Layoffs planning Q1" in alices
