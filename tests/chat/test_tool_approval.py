"""Tool approval: a run that wants to call a tool the policy says to ask about waits for the
person's decision on a card in the chat, durably; every decision is stored and audited."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.urls import reverse

from chat import dispatch, services
from chat.models import MCPServer, ReasoningRun, ToolApproval, ToolExecution, TraceEvent
from reasoning.tools.approval import default_approval
from tests.conftest import django_process_env, run_now, wait_until

pytestmark = pytest.mark.django_db(transaction=True)
FAULTY = str(Path(__file__).parent / "servers" / "faulty.py")


def pending(run: ReasoningRun, count: int = 1) -> list[ToolApproval]:
    rows = list(ToolApproval.objects.filter(run=run, status="pending").order_by("pk"))
    return rows if len(rows) >= count else []


def in_background(run_id: int) -> threading.Thread:
    thread = threading.Thread(target=run_now, args=(run_id,), daemon=True)
    thread.start()
    return thread


def decide(client, approval: ToolApproval, decision: str, **extra) -> str:
    response = client.post(
        reverse("chat:approval-decide", args=[approval.pk]),
        {"decision": decision, **extra},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200, response.content
    return response.content.decode()


def test_the_default_asks_for_what_may_destroy_or_reach_out():
    from mcp_types import ToolAnnotations as A

    assert default_approval(None) == "ask", "the spec's defaults: destructive, open world"
    assert default_approval(A(read_only_hint=True, open_world_hint=False)) == "auto"
    assert default_approval(A(read_only_hint=True)) == "ask", "open world unless said otherwise"
    assert default_approval(A(destructive_hint=False, open_world_hint=False)) == "auto"
    assert default_approval(A(destructive_hint=True, open_world_hint=False)) == "ask"


def test_each_decision_reaches_the_model_and_is_stored(
    alice, bob, alice_session, client_for, settings, monkeypatch
):
    from reasoning.llm.scripted import ScriptedClient
    from tests.reasoning.helpers import analysis, quality, tool

    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {FAULTY}": (sys.executable, FAULTY)}
    MCPServer.objects.create(
        name="faulty",
        command=sys.executable,
        args=[FAULTY],
        approval_policies={"html": "never", "lookup": "ask"},
    )
    script = ScriptedClient(
        by_component={
            "analysis": [analysis("simple"), analysis("simple")],
            "agent": [
                tool("faulty__echo", text="first"),
                tool("faulty__echo", text="second"),
                tool("faulty__echo", text="third"),
                tool("faulty__html"),
                "Done.",
                tool("faulty__echo", text="fourth"),
                "Done again.",
            ],
            "evaluation": [quality(True, 0.9), quality(True, 0.9)],
        },
        default={"insights": [], "lessons": [], "improvements": [], "confidence": 0.5},
    )
    monkeypatch.setattr("chat.engine.build_llm", lambda: script)
    client = client_for(alice)
    run = services.message_post(session=alice_session, content="Echo some things")
    worker = in_background(run.pk)

    (first,) = wait_until(lambda: pending(run))
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    for button in ("Approve once", "Always for this chat", "Decline", "Edit arguments"):
        assert button in page
    assert "&quot;text&quot;: &quot;first&quot;" in page, "the card shows the arguments"
    assert (
        client_for(bob)
        .post(reverse("chat:approval-decide", args=[first.pk]), {"decision": "approve"})
        .status_code
        == 404
    )
    assert "declined" in decide(client, first, "decline")
    assert (
        "already decided"
        in client.post(
            reverse("chat:approval-decide", args=[first.pk]), {"decision": "approve"}
        ).content.decode()
    )

    second = wait_until(
        lambda: ToolApproval.objects.filter(run=run, status="pending").exclude(pk=first.pk).first()
    )
    bad = client.post(
        reverse("chat:approval-decide", args=[second.pk]), {"decision": "edit", "arguments": "{oops"}
    )
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()
    # Said inside the card, which the page swaps even for an error (it said only "The request
    # failed (400)." under the message box).
    assert bad["HX-Retarget"] == f"#approval-{second.pk}" and bad["HX-Reswap"] == "outerHTML"
    # What was typed stays, in the open editor, to be corrected (it went back to the model's).
    assert '<details class="approval-edit" open>' in bad.content.decode()
    assert ">{oops</textarea>" in bad.content.decode()
    decide(client, second, "edit", arguments=json.dumps({"text": "edited"}))

    third = wait_until(
        lambda: (
            ToolApproval.objects.filter(run=run, status="pending")
            .exclude(pk__in=[first.pk, second.pk])
            .first()
        )
    )
    decide(client, third, "always")
    worker.join(120)
    run.refresh_from_db()
    assert run.status == "succeeded"

    told = json.dumps([request.messages for request in script.requests_for("agent")])
    assert "the user declined this call of echo" in told
    assert "html is switched off by an administrator" in told, "never: refused without asking"
    executed = list(ToolExecution.objects.filter(run=run, success=True).values_list("arguments", flat=True))
    assert (
        {"text": "edited"} in executed and {"text": "first"} not in executed and {"text": "third"} in executed
    )
    assert not ToolApproval.objects.filter(run=run, model_tool="faulty__html").exists()

    again = services.message_post(session=alice_session, content="Once more")
    run_now(again.pk)
    again.refresh_from_db()
    assert again.status == "succeeded"
    assert not ToolApproval.objects.filter(run=again).exists(), "always for this chat: not asked again"
    decided = TraceEvent.objects.filter(run=again, kind="tool.approval.decided").get().payload
    assert decided["approved"] and decided["scope"] == "chat" and decided["by"] == "alice"

    rows = {
        a.arguments["text"]: (a.status, a.scope, a.decided_by) for a in ToolApproval.objects.filter(run=run)
    }
    assert rows == {
        "first": ("declined", "once", alice),
        "second": ("approved", "once", alice),
        "third": ("approved", "chat", alice),
    }


def test_a_run_waiting_for_approval_survives_its_worker_dying(alice, alice_session, client_for, settings):
    """Worker A (its own process) asks and is killed while waiting; worker B resumes the run,
    finds the same request instead of asking again, and finishes once the person approves."""
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 17*23?")
    # Killed while it still holds the run (before it would park it).
    env = django_process_env(NEXUS_APPROVAL_PARK_SECONDS="600")
    code = (
        f"import asyncio; from chat.engine import execute_run; asyncio.run(execute_run({run.pk}, worker='A'))"
    )
    worker_a = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=str(settings.BASE_DIR),
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        (asked,) = wait_until(lambda: pending(run), 120)
    finally:
        os.killpg(worker_a.pid, signal.SIGKILL)  # the worker and its tool server, no cleanup
        worker_a.wait(30)
    run.refresh_from_db()
    assert run.status == "running" and run.worker == "A"

    settings.NEXUS_RUN_STALE_SECONDS = 1
    ReasoningRun.objects.filter(pk=run.pk).update(heartbeat_at=run.heartbeat_at.replace(year=2000))
    worker_b = in_background(run.pk)
    assert wait_until(lambda: ReasoningRun.objects.get(pk=run.pk).worker != "A", 60), (
        "worker B took the run over"
    )
    time.sleep(1)  # B reaches the approval again (or not yet): either way it may not ask twice
    assert ToolApproval.objects.filter(run=run).count() == 1
    decide(client_for(alice), asked, "approve")
    worker_b.join(120)
    run.refresh_from_db()
    assert run.status == "succeeded" and "391" in run.answers.get().content
    assert ToolApproval.objects.filter(run=run).count() == 1, "asked once across both workers"
    assert ToolExecution.objects.filter(run=run, tool="calculator", success=True).exists()


def finished(run: ReasoningRun) -> ReasoningRun | None:
    run.refresh_from_db()
    return run if not run.is_active else None


@pytest.mark.parametrize("mode", ["adaptive", "cognitive"])
def test_a_run_waiting_for_approval_frees_its_worker_and_resumes_on_the_decision(
    alice, bob, alice_session, client_for, settings, mode
):
    """The run is stored as awaiting approval and its executor returns (the worker slot is
    free: someone else's run is answered meanwhile); the decision queues it through the
    normal dispatch, and it resumes without asking again. A decline reaches the model."""
    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    settings.AGENT_MODE = mode
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    client = client_for(alice)
    run = services.message_post(session=alice_session, content="What is 17*23?")
    assert run_now(run.pk) == "parked", "the executor is done with it while the person decides"
    run.refresh_from_db()
    (asked,) = pending(run)
    assert run.status == "awaiting" and run.is_active and run.delivery_count == 0
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Approve once" in page and "Awaiting approval" in page

    other = services.message_post(session=services.session_create(owner=bob), content="Hello there")
    assert run_now(other.pk) == "succeeded", "a worker slot was free for bob meanwhile"
    assert ReasoningRun.objects.get(pk=run.pk).status == "awaiting"

    decide(client, asked, "approve")
    run = wait_until(lambda: finished(run))
    assert run.status == "succeeded" and "391" in run.answers.get().content
    assert ToolApproval.objects.filter(run=run).count() == 1, "asked once, before and after parking"
    assert ToolApproval.objects.get(run=run).decided_by == alice
    assert ToolExecution.objects.filter(run=run, tool="calculator", success=True).exists()

    declined = services.message_post(session=alice_session, content="What is 19*21?")
    # The first run's executor, starting alice's next runs as it ends, may get there first.
    assert run_now(declined.pk) in ("parked", "skipped")
    wait_until(lambda: ReasoningRun.objects.filter(pk=declined.pk, status="awaiting").first())
    (asked,) = pending(declined)
    decide(client, asked, "decline")
    declined = wait_until(lambda: finished(declined))
    assert declined.status == "succeeded"
    result = TraceEvent.objects.filter(run=declined, kind="tool.result").last().payload
    assert not result["success"] and "the user declined this call of calculator" in result["error"]
    # The decisions' runs execute in this process's background loop: their last writes (after
    # the answer) are done before the test's tables are emptied, which deadlocked with them.
    wait_until(lambda: not dispatch._running)


def test_a_parked_run_nobody_answers_is_declined_and_finished_by_the_sweeper(alice_session, settings):
    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 17*23?")
    assert run_now(run.pk) == "parked"
    assert run.pk not in services.runs_to_recover(), "still waiting for the person"
    ToolApproval.objects.filter(run=run).update(created_at=run.created_at.replace(year=2000))
    assert run.pk in services.runs_to_recover()
    assert ToolApproval.objects.get(run=run).note == "nobody answered in time"
    assert run_now(run.pk) == "succeeded"
    result = TraceEvent.objects.filter(run=run, kind="tool.result").last().payload
    assert "nobody answered in time" in result["error"]


def test_a_parked_run_can_be_stopped(alice, alice_session, client_for, settings):
    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 17*23?")
    assert run_now(run.pk) == "parked"
    client_for(alice).post(reverse("chat:run-stop", args=[alice_session.pk, run.pk]), HTTP_HX_REQUEST="true")
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert TraceEvent.objects.filter(run=run, kind="run.stopped").exists()
    assert ToolApproval.objects.get(run=run).status == "declined", "its card no longer offers a decision"
    again = services.message_post(session=alice_session, content="Hello")
    assert again.status == "queued", "the chat takes a new question"


def test_stopping_a_run_that_waits_for_a_decision_closes_its_card(alice, alice_session, client_for, settings):
    """Stopped while its worker waited on the card, the run left the card open: it could still
    be approved (stored as approved, for a cancelled run), and the admin listed it as waiting."""
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 8*8?")
    worker = in_background(run.pk)
    (card,) = wait_until(lambda: pending(run))
    client = client_for(alice)
    client.post(reverse("chat:run-stop", args=[alice_session.pk, run.pk]), HTTP_HX_REQUEST="true")
    worker.join(30)
    card.refresh_from_db()
    assert card.status == "declined" and card.note == "the run was stopped"
    # The run saw the decline before its stop: it went on to write "You declined the
    # calculator…" as the answer of a stopped run.
    run.refresh_from_db()
    assert run.status == "cancelled" and not run.answers.exists()
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Approve once" not in page
    late = client.post(
        reverse("chat:approval-decide", args=[card.pk]), {"decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    assert late.status_code == 400 and "already decided" in late.content.decode()
    card.refresh_from_db()
    assert card.status == "declined" and card.decided_by is None


def test_a_run_that_sees_its_card_closed_by_a_stop_waits_to_be_stopped(alice, alice_session):
    """The card closes as the stop is stored; a run that saw the closed card before its
    executor saw the stop went on, and wrote "You declined the calculator…" as the answer of
    a stopped run (seen once in five stops in a browser). Here the card closes a second
    before the stop, so the run always sees it first."""
    from chat.approvals import approvals_decline_for_stopped

    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 8*8?")
    worker = in_background(run.pk)
    wait_until(lambda: pending(run))
    approvals_decline_for_stopped(run.pk)
    time.sleep(1.0)
    services.run_stop(run)
    worker.join(30)
    run.refresh_from_db()
    assert run.status == "cancelled" and not run.answers.exists()


def test_an_answer_says_what_the_edited_call_computed(alice, alice_session, client_for):
    """Approved with edited arguments (9*8 for 9*7), the answer read "`9*7` = **72**": the
    question's expression beside the edited call's result, a sum that is wrong as written."""
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 9*7?")
    worker = in_background(run.pk)
    (card,) = wait_until(lambda: pending(run))
    decide(client_for(alice), card, "edit", arguments=json.dumps({"expression": "9*8"}))
    answer = wait_until(lambda: ReasoningRun.objects.get(pk=run.pk).answers.first())
    worker.join(30)
    assert "`9*8` = **72**" in answer.content and "`9*7`" not in answer.content


def test_a_decision_on_a_finished_runs_card_is_refused(alice, alice_session, client_for, settings):
    """A card still open on a run that ended another way (failed, or a card from before this
    fix) takes no decision: nothing waits for it."""
    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 8*8?")
    assert run_now(run.pk) == "parked"
    ReasoningRun.objects.filter(pk=run.pk).update(status="failed")
    (card,) = pending(run)
    refused = client_for(alice).post(
        reverse("chat:approval-decide", args=[card.pk]), {"decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    assert refused.status_code == 400 and "nothing waits for this decision" in refused.content.decode()
    card.refresh_from_db()
    assert card.status == "pending" and card.decided_by is None


def start_with_everything(
    session, settings, monkeypatch, everything, agent, content, *, call_timeout=120, **more
):
    """server-everything over stdio as the chat's tool server, a scripted model asking for
    `agent`'s tool calls, and a run for `content` executing in the background."""
    from reasoning.llm.scripted import ScriptedClient
    from tests.reasoning.helpers import analysis, quality

    node = shutil.which("node")
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{node} {everything}": (node, everything)}
    MCPServer.objects.create(
        name="everything",
        command=node,
        args=[everything, "stdio"],
        default_approval="auto",
        call_timeout=call_timeout,
    )
    script = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": agent,
            "evaluation": [quality(True, 0.9)],
            **more,
        },
        default={"insights": [], "lessons": [], "improvements": [], "confidence": 0.5},
    )
    monkeypatch.setattr("chat.engine.build_llm", lambda: script)
    run = services.message_post(session=session, content=content)
    return run, in_background(run.pk), script


def test_a_server_asking_for_input_gets_the_persons_answer_from_a_form_in_the_chat(
    alice, alice_session, client_for, settings, monkeypatch, everything
):
    """@modelcontextprotocol/server-everything asks for a form's worth of input mid-call."""
    from chat.models import Elicitation
    from tests.reasoning.helpers import tool

    agent = [
        tool("everything__trigger-elicitation-request"),
        tool("everything__trigger-elicitation-request", again=1),
        "Asked.",
    ]
    run, worker, _ = start_with_everything(
        alice_session, settings, monkeypatch, everything, agent, "Ask me things"
    )
    client = client_for(alice)
    asked = wait_until(lambda: Elicitation.objects.filter(run=run, status="pending").first())
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Please provide inputs" in page and 'name="name"' in page and 'name="integer"' in page
    assert '<option value="Monica" selected>' in page, "enums are choices, with the server's default"
    url = reverse("chat:elicitation-reply", args=[asked.pk])
    bad = client.post(url, {"action": "accept", "name": "Ada", "integer": "many"})
    assert bad.status_code == 400 and "must be a number" in bad.content.decode()
    answer = {
        "action": "accept",
        "name": "Ada",
        "integer": "7",
        "check": "on",
        "untitledMultipleSelectEnum": ["Piano"],
    }
    assert "Answered" in client.post(url, answer).content.decode()
    second = wait_until(
        lambda: Elicitation.objects.filter(run=run, status="pending").exclude(pk=asked.pk).first()
    )
    client.post(reverse("chat:elicitation-reply", args=[second.pk]), {"action": "decline"})
    worker.join(120)
    results = list(
        ToolExecution.objects.filter(run=run, tool="trigger-elicitation-request")
        .order_by("created_at")
        .values_list("result", flat=True)
    )
    assert "Name: Ada" in results[0] and '"integer": 7' in results[0]
    assert "decline" in results[1].lower()
    asked.refresh_from_db()
    assert asked.content["name"] == "Ada" and asked.content["check"] is True and asked.answered_by == alice


def test_a_servers_question_waits_for_the_person_not_for_the_calls_timeout_and_a_url_is_a_link(
    alice, alice_session, client_for, settings, monkeypatch, everything
):
    """server-everything's calls may take 1 s here; the person answers its form later than
    that, within the question's own deadline (shown on the card), and the tool gets the
    answer. Its URL-mode question shows the page to open as a link, and the server hears
    that the person went on."""
    from chat.models import Elicitation
    from tests.reasoning.helpers import tool

    url = "https://example.com/connect?code=42"
    agent = [
        tool("everything__trigger-elicitation-request"),
        tool("everything__trigger-url-elicitation", url=url, message="Connect your account"),
        "Asked.",
    ]
    run, worker, _ = start_with_everything(
        alice_session, settings, monkeypatch, everything, agent, "Ask me things", call_timeout=1
    )
    client = client_for(alice)
    asked = wait_until(lambda: Elicitation.objects.filter(run=run, status="pending").first())
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Please provide inputs" in page and "Answer by" in page and "left)" in page
    time.sleep(2.5)  # longer than the call's own timeout: the person takes their time
    answer = {"action": "accept", "name": "Ada", "integer": "7", "untitledMultipleSelectEnum": ["Piano"]}
    assert (
        "Answered" in client.post(reverse("chat:elicitation-reply", args=[asked.pk]), answer).content.decode()
    )

    link = wait_until(
        lambda: Elicitation.objects.filter(run=run, status="pending").exclude(pk=asked.pk).first()
    )
    assert link.url == url and link.message == "Connect your account"
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert f'href="{url}" target="_blank" rel="noopener noreferrer nofollow"'.replace("&", "&amp;") in page
    assert "<strong>example.com</strong>" in page and "I have opened it" in page
    client.post(reverse("chat:elicitation-reply", args=[link.pk]), {"action": "accept"})
    worker.join(120)
    results = dict(ToolExecution.objects.filter(run=run).values_list("tool", "result"))
    assert "Name: Ada" in results["trigger-elicitation-request"], results
    assert "User completed the URL elicitation flow" in results["trigger-url-elicitation"], results


def test_a_question_nobody_answers_by_its_deadline_is_cancelled(
    alice, alice_session, client_for, settings, monkeypatch, everything
):
    from chat.models import Elicitation
    from tests.reasoning.helpers import tool

    settings.NEXUS_ELICITATION_WAIT_SECONDS = 1
    agent = [tool("everything__trigger-elicitation-request"), "Asked."]
    run, worker, _ = start_with_everything(alice_session, settings, monkeypatch, everything, agent, "Ask me")
    worker.join(120)
    assert Elicitation.objects.get(run=run).status == "cancel"
    result = ToolExecution.objects.get(run=run, tool="trigger-elicitation-request").result
    assert "cancel" in result.lower()
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Dismissed" in page


def test_a_server_asking_for_a_completion_is_served_by_our_model_once_approved(
    alice, alice_session, client_for, settings, monkeypatch, everything
):
    """server-everything's sampling tool: the card shows what it asks our model; once approved
    (later than the call's own 1 s timeout), the configured model answers it and the call
    counts in the run's tokens."""
    from chat.models import LLMCall
    from tests.reasoning.helpers import tool

    agent = [
        tool("everything__trigger-sampling-request", prompt="Say hello to Ada", maxTokens=50),
        "Sampled.",
    ]
    run, worker, script = start_with_everything(
        alice_session,
        settings,
        monkeypatch,
        everything,
        agent,
        "Let the server ask the model",
        call_timeout=1,
        sampling=["Hello, Ada! (from the configured model)"],
    )
    client = client_for(alice)
    (asked,) = wait_until(lambda: pending(run))
    assert asked.tool == "sampling" and "Say hello to Ada" in json.dumps(asked.arguments)
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Say hello to Ada" in page and "Approve once" in page
    time.sleep(2.5)  # the person takes longer than the call may: the call waits for them
    decide(client, asked, "approve")
    worker.join(120)
    run.refresh_from_db()
    assert run.status == "succeeded"
    result = ToolExecution.objects.get(run=run, tool="trigger-sampling-request").result
    assert "Hello, Ada! (from the configured model)" in result
    assert LLMCall.objects.filter(run=run, component="sampling").count() == 1, "counted in the run's calls"
    assert "Say hello to Ada" in json.dumps(script.requests_for("sampling")[0].messages)


def test_no_one_is_asked_to_approve_a_call_to_a_paused_server(alice, alice_session, settings, monkeypatch):
    """The card asked a person to approve a call on a server paused after repeated failures;
    once approved, the answer was "tool server … is unavailable" anyway."""
    from chat import tools
    from reasoning.llm.scripted import ScriptedClient
    from tests.reasoning.helpers import analysis, quality, tool

    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {FAULTY}": (sys.executable, FAULTY)}
    MCPServer.objects.create(
        name="faulty", command=sys.executable, args=[FAULTY], approval_policies={"echo": "ask"}
    )
    provider = next(p for p in tools.providers_for(alice) if p.name == "faulty")
    tools.POOL.submit(provider.list_tools()).result(30)  # listed: the listing is then served as known
    breaker = tools.POOL.connection(provider.config).breaker

    async def crashes() -> None:  # as the pool's calls fail, on its loop
        for _ in range(breaker.threshold):
            breaker.failure("crashed mid-call")

    tools.POOL.submit(crashes()).result(10)
    script = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": [tool("faulty__echo", text="hi"), "The echo tool is unavailable."],
            "evaluation": [quality(True, 0.9)],
        },
        default={"insights": [], "lessons": [], "improvements": [], "confidence": 0.5},
    )
    monkeypatch.setattr("chat.engine.build_llm", lambda: script)
    run = services.message_post(session=alice_session, content="Echo hi")
    run_now(run.pk)
    assert not ToolApproval.objects.filter(run=run).exists()
    execution = ToolExecution.objects.get(run=run)
    assert not execution.success and "paused" in execution.error, execution.error


def test_an_edit_that_does_not_fit_the_tools_schema_is_refused_on_the_card(alice, alice_session, client_for):
    """An edited call was stored and sent as typed: a name the calculator does not take, a
    number for its text, two megabytes in a value (the chat page then weighed 2 MB, in the
    card and the trace, and in every export). Each is refused on the card, which stays open
    for a correction; the corrected edit runs."""
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 9*7?")
    worker = in_background(run.pk)
    (card,) = wait_until(lambda: pending(run))
    assert card.input_schema["properties"]["expression"]["type"] == "string"
    client = client_for(alice)
    url = reverse("chat:approval-decide", args=[card.pk])
    for arguments, said in [
        ({"expression": "9*8", "__proto__": {"x": 1}}, "takes no argument named __proto__"),
        ({"expression": 98}, "expression: 98 is not of type"),
        ({"expression": "9*8" + " " * 2_000_000}, "too long"),
    ]:
        response = client.post(
            url, {"decision": "edit", "arguments": json.dumps(arguments)}, HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 400 and said in response.content.decode(), arguments
    card.refresh_from_db()
    assert card.status == "pending" and card.edited_arguments is None
    decide(client, card, "edit", arguments=json.dumps({"expression": "9*8"}))
    answer = wait_until(lambda: ReasoningRun.objects.get(pk=run.pk).answers.first())
    worker.join(30)
    assert "72" in answer.content
