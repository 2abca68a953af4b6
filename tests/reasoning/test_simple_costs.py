"""A simple question costs at most two model calls: its answer and that answer's evaluation.

Every simple question of the router's held-out split, with the tools the web app offers
(calculator, clock, the team's document search), answered by the offline model and by a
model that asks for a tool whenever it may. The analysis call comes only when the router is
unsure, reflection only when the run has something to learn; neither may stand in for more.
"""

from __future__ import annotations

from collections import Counter

import pytest

from reasoning import AdaptiveReasoningLoop, ListSink, ReasoningConfig
from reasoning.foresight import foresee
from reasoning.llm.base import LLMRequest, LLMResponse, ToolCall
from reasoning.llm.offline import LABEL, OfflineClient
from reasoning.llm.scripted import ScriptedClient
from reasoning.routing.dataset import load
from reasoning.tools.local import LocalToolProvider, builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.bench.adaptivity import team_documents
from tests.reasoning.helpers import QUALITY_LAYERS_OFF, quality, tool

SIMPLE = [row.question for row in load("heldout") if row.level == "simple"]


class ToolHappyClient(OfflineClient):
    """The offline model, except that whenever a tool is on offer and none has answered yet,
    it asks for one (the clock if there is one), whatever the question: the offline model's
    quirk of reaching for the clock, made the rule."""

    def agent_turn(self, request: LLMRequest) -> LLMResponse:
        offered = [tool.name for tool in request.tools]
        may = (request.tool_choice or {}).get("type") != "none"
        answered = any(
            isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
            for m in request.messages
        )
        if offered and may and not answered:
            name = "clock" if "clock" in offered else offered[0]
            return self._response("", [ToolCall(f"happy_{next(self._ids)}", name, {})], request, "tool_use")
        return super().agent_turn(request)


def test_the_held_out_split_has_simple_questions_to_measure():
    assert len(SIMPLE) >= 30


@pytest.mark.parametrize("client", [OfflineClient, ToolHappyClient], ids=["offline", "tool-happy"])
async def test_every_simple_held_out_question_costs_at_most_an_answer_and_an_evaluation(client):
    over = []
    for question in SIMPLE:
        engine = AdaptiveReasoningLoop(
            client(),
            ToolRegistry([builtin_provider(), team_documents()]),
            ReasoningConfig.from_env({}, provider="offline"),
        )
        sink = ListSink()
        result = await engine.run(question, sink=sink)
        calls = Counter(event.payload["component"] for event in sink.of("llm.call"))
        # The analysis call only when the router was unsure; reflection only with a reason.
        extra = calls["analysis"] + (calls["reflection"] if result.reflection_trigger else 0)
        answer_and_check = sum(calls.values()) + result.cancelled_calls - extra
        if answer_and_check > 2 or (result.routed_by == "router" and calls["analysis"]):
            over.append(f"{dict(calls)} ({result.routed_by}): {question}")
    assert not over, "\n".join(over)


TOOLS = ["calculator", "clock", "nexus__search_documents"]


@pytest.mark.parametrize(
    ("question", "calls"),
    [
        ("what's 17 * 23", [("calculator", {"expression": "17 * 23"})]),
        ("Calculate 15% of 2,400.", [("calculator", {"expression": "15/100*2400"})]),
        ("What time is it in Sydney right now?", [("clock", {"timezone": "Australia/Sydney"})]),
        (
            "What's the time in Berlin and in Tokyo?",
            [("clock", {"timezone": "Europe/Berlin"}), ("clock", {"timezone": "Asia/Tokyo"})],
        ),
        ("What's our VPN address?", [("nexus__search_documents", {"query": "What's our VPN address"})]),
        # "US" is the country here, not "us" the team: no search of the team's documents.
        ("What time is it in the US?", []),
        ("what's the time in the USA right now", []),
        # No present moment asked for, no team knowledge, a writing task: no tool.
        ("How many seconds are in a day?", []),
        ("What time zone should I put for a meeting in Lisbon?", []),
        ("Give me a catchy name for our hackathon.", []),
        ("Who wrote Pride and Prejudice?", []),
        # Told, not asked (found by a review: the answer was a team document that shared a word).
        ("Remember that our staging database is db-2", []),
        ("Please note: our deploys happen on Tuesdays.", []),
        (
            "Note that I am on the EU team - what is our holiday policy?",
            [
                (
                    "nexus__search_documents",
                    {"query": "Note that I am on the EU team - what is our holiday policy"},
                )
            ],
        ),
    ],
)
def test_foresight_reads_the_tool_calls_a_question_plainly_needs(question, calls):
    assert [(call.name, call.arguments) for call in foresee(question, TOOLS)] == calls


def test_foresight_does_not_search_for_documents_the_person_attached():
    assert foresee('What does @"Handbook" say about vacation?', TOOLS, attached=True) == []


async def test_an_honest_nothing_found_in_the_documents_is_kept_not_escalated():
    """Two asks about a document the search cannot find: the offline model says so plainly.
    A deeper strategy would run the same search, so the run stops there, and the disclaimer
    appears once."""
    engine = AdaptiveReasoningLoop(
        OfflineClient(),
        ToolRegistry([builtin_provider(), team_documents()]),
        ReasoningConfig.from_env({}, provider="offline"),
    )
    sink = ListSink()
    question = 'Does @"Data policy" allow using customer data for training models? Quote the relevant line.'
    result = await engine.run(question, sink=sink)
    assert not sink.of("escalation") and result.escalations == 0
    assert "found nothing" in result.answer and result.answer.count(LABEL) == 1
    assert sink.of("quality.completed")[0].payload["deeper_would_help"] is False


async def test_a_tool_foresight_knows_nothing_about_stays_on_offer_to_the_one_call_answer():
    """A team's own tool (here a ticket lookup) may be what a simple question needs; only the
    model can tell, so it is offered, while the calculator, clock and search are not."""
    tickets = LocalToolProvider("jira")
    tickets.add("ticket_status", lambda key: f"{key} is In review", description="A ticket's status.")
    llm = ScriptedClient(
        by_component={
            "agent": [tool("ticket_status", key="OPS-7"), "OPS-7 is in review."],
            "evaluation": [quality(True, 0.9)],
        }
    )
    engine = AdaptiveReasoningLoop(
        llm, ToolRegistry([builtin_provider(), tickets]), ReasoningConfig(**QUALITY_LAYERS_OFF)
    )
    result = await engine.run("What's the status of OPS-7?", sink=ListSink())
    offered = [definition.name for definition in llm.requests_for("agent")[0].tools]
    assert offered == ["ticket_status"] and result.answer == "OPS-7 is in review."


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("When are expense reports due?", "5th of each month"),
        ("How many vacation days do new employees get?", "25 vacation days"),
        ("How does a rollback after a release work?", "redeploy the previous tag"),
        ("Who is on call after this week's engineer?", "backup is the previous week's engineer"),
    ],
)
async def test_a_plain_question_about_a_team_subject_searches_the_documents(question, found):
    """A question about the team's own matters (expenses, vacation, releases) that names no
    document nor says "our": the one-call answer was offered no search (foresight read no team
    words in it), so the offline model said it needed a real model though a document held the
    answer, and Claude answered from general knowledge."""
    engine = AdaptiveReasoningLoop(
        OfflineClient(),
        ToolRegistry([builtin_provider(), team_documents()]),
        ReasoningConfig.from_env({}, provider="offline"),
    )
    result = await engine.run(question, sink=ListSink())
    assert found in result.answer, result.answer
