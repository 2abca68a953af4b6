"""No engine identifier reaches what people read: real runs (offline model, real tools) in
every agent mode and strategy, rendered as the chat page renders them, panels open."""

import json
import re

import pytest
from django.test import override_settings
from django.urls import reverse

from chat import services
from chat.documents import document_create
from chat.models import MCPServer, Preference, ToolApproval
from chat.sink import RunSink
from tests.conftest import ask, run_now

pytestmark = pytest.mark.django_db(transaction=True)

# Settings named on purpose (the offline model tells operators which variable to set).
SETTINGS_NAMES = {"ANTHROPIC_API_KEY", "NEXUS_LLM_PROVIDER", "CLAUDE_MODEL"}
FILE_NAMES = (".md", ".txt", ".com", ".org")
RAW = [
    re.compile(r"\b\w+__\w+\b"),  # a server-qualified tool name: nexus__calculator
    re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),  # snake_case keys and enums: light_planning
    re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"),  # upper enums: LIGHT_PLANNING
    re.compile(r"\b(?:DIRECT|LIGHT|DEEP|SIMPLE|MODERATE|COMPLEX)\b"),  # shouted strategy names
    re.compile(r"\b[a-z]+\.[a-z]+(?:\.[a-z]+)*\b"),  # event kinds: run.stopped
]


def visible_text(html: str) -> str:
    """What a reader sees: no tags, scripts, templates, or the raw-arguments disclosures
    (the JSON a tool was called with is shown as it was sent, on request)."""
    for pattern in (
        r"<(script|style|template)\b.*?</\1>",
        r'<details class="args">.*?</details>',
        r"<(?:pre|code)\b.*?</(?:pre|code)>",
    ):
        html = re.sub(pattern, " ", html, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", html)
    return re.sub(r"\s+", " ", text)


def raw_identifiers(text: str) -> set[str]:
    found = {m.group(0) for pattern in RAW for m in pattern.finditer(text)}
    return {word for word in found if word not in SETTINGS_NAMES and not word.endswith(FILE_NAMES)}


def page_text(client, session) -> str:
    return visible_text(client.get(reverse("chat:session", args=[session.pk])).content.decode())


@pytest.mark.parametrize("mode", ["adaptive", "reasoning_driven", "cognitive"])
def test_the_page_names_tools_strategies_and_steps_in_plain_language(mode, alice, alice_session, client_for):
    Preference.objects.create(user=alice, trace_open=True)
    document_create(owner=alice, title="Travel plans", content="The plans for Paris and Tokyo: fly in May.")
    with override_settings(AGENT_MODE=mode):
        ask(alice_session, "What is 2+2?")  # approved by the local check, which names its tools
        ask(alice_session, "What is 17*23 and what time is it in Tokyo?")  # a light plan, one reply
        ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="direct")  # escalates
        ask(alice_session, "What is 17*23 and what time is it in Tokyo?", start="deep")
        ask(alice_session, "Compare the plans in our documents")  # low confidence, a critique
    stopped = services.message_post(session=alice_session, content="Tell me about Paris")
    services.run_stop(stopped)
    RunSink(stopped).record_stopped()
    text = page_text(client_for(alice), alice_session)
    assert "Calculator (Nexus)" in text and "Stopped by you" in text
    assert "Travel plans" in text and "nexus://" not in text, "a search hit reads as its title"
    assert raw_identifiers(text) == set(), sorted(raw_identifiers(text))


def test_the_approval_card_the_mode_picker_and_the_documents_page_use_words(
    alice, alice_session, client_for, settings
):
    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    settings.NEXUS_CHAT_MODE_CHOICE = True
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 17*23?")
    assert run_now(run.pk) == "parked"
    client = client_for(alice)
    document_create(owner=alice, title="Travel plans", content="Fly in May.")
    html = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    text = visible_text(html)
    card = visible_text(re.search(r'<div class="approval-card.*?</form>', html, re.S).group(0))
    assert "Approve once" in card and "Calculator (Nexus)" in card and "on nexus" not in card
    assert "Reasoning-driven" in text and "Cognitive (multi-agent)" in text
    documents_html = client.get(reverse("chat:documents")).content.decode()
    assert "search_documents" not in documents_html, "the intro names the tool as people see it"
    documents = visible_text(documents_html)
    assert "Travel plans" in documents
    assert raw_identifiers(text) | raw_identifiers(documents) == set()


def test_an_approval_with_edited_arguments_shows_what_ran(alice, alice_session, client_for, settings):
    settings.NEXUS_APPROVAL_PARK_SECONDS = 0
    MCPServer.objects.filter(builtin=True).update(approval_policies={"calculator": "ask"})
    run = services.message_post(session=alice_session, content="What is 17*23?")
    assert run_now(run.pk) == "parked"
    asked = ToolApproval.objects.get(run=run, status="pending")
    edited = {key: "17*24" for key in asked.arguments}
    response = client_for(alice).post(
        reverse("chat:approval-decide", args=[asked.pk]),
        {"decision": "edit", "arguments": json.dumps(edited)},
        HTTP_HX_REQUEST="true",
    )
    card = response.content.decode()
    shown = re.search(r'<pre class="approval-args">(.*?)</pre>', card, re.S).group(1)
    assert "with edited arguments" in card and "17*24" in shown and "17*23" not in shown


def test_errors_the_engine_recorded_read_as_sentences(alice, alice_session, client_for):
    """A model's malformed reply showed "StructuredOutputError: analysis: unreadable
    record_complexity_analysis reply: ..." in the panel (found in review); the admin keeps the
    error as recorded, the page says what happened."""
    import html
    import time

    from asgiref.sync import async_to_sync

    from chat.models import TraceEvent
    from reasoning.events import Event

    Preference.objects.create(user=alice, trace_open=True)
    run = services.message_post(session=alice_session, content="What is 2+2?")
    errors = {
        "analysis": "StructuredOutputError: analysis: unreadable record_complexity_analysis reply: "
        '\'{"complexity_level": "hard"}\'',
        "evaluator": "TimeoutError",
        "planner": "KeyError: 'steps_json'",
        "meta_agent": "OverloadedError: the model is overloaded (529); try again in a minute",
        "synthesizer": "ValueError: the synthesis came back empty",
        "tools:weather": "ClosedResourceError",
        "critic": "ReadTimeout",
    }

    async def record() -> None:
        sink = RunSink(run)
        for sequence, (component, error) in enumerate(errors.items(), 1):
            payload = {"component": component, "error": error, "fallback": "went on without it"}
            await sink(Event(sequence, time.time(), "component.degraded", "Phase 1", "trace", payload))

    async_to_sync(record)()
    text = html.unescape(page_text(client_for(alice), alice_session))
    assert "The model's reply was not in the form asked for, so it could not be used." in text
    assert "It took longer than allowed." in text
    assert "An unexpected error inside Nexus (staff can see the details in the admin)." in text
    assert "the model is overloaded (529); try again in a minute" in text
    assert "the synthesis came back empty" in text and "The connection was lost." in text
    assert text.count("It took longer than allowed.") == 2 and text.count("inside Nexus") == 1
    assert "Error" not in text.replace("An unexpected error", ""), text
    assert raw_identifiers(text) == set(), sorted(raw_identifiers(text))
    stored = TraceEvent.objects.filter(run=run, kind="component.degraded").values_list("payload", flat=True)
    assert [p["error"] for p in stored] == list(errors.values()), "the audit trail keeps them as they were"
