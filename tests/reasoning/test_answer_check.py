"""A simple question answered with a tool costs at most 2 model calls: the local answer check
approves a tool-grounded answer, and stays unsure (the model evaluator decides) otherwise."""

from __future__ import annotations

import pytest

from reasoning import ReasoningConfig
from reasoning.agent import ToolRecord
from reasoning.answer_check import LOCAL_SCORE, check_answer
from reasoning.llm.scripted import ScriptedClient
from reasoning.tools.builtin import CLOCK_SCHEMA
from reasoning.tools.local import LocalToolProvider
from reasoning.tools.registry import ToolOutcome, ToolRegistry
from tests.reasoning.helpers import ALWAYS_ANALYSE, analysis, engine, quality, run, tool

CLOCK = "Friday 03 January 2025, 14:05:22 Asia/Tokyo (ISO 2025-01-03T14:05:22+09:00)"
CLOCK_PURPOSE = {"clock": "The current date and time in a time zone."}


def used(name: str, result: str, ok: bool = True, **arguments: str) -> ToolRecord:
    return ToolRecord(name, arguments, ToolOutcome(ok, result if ok else "", None if ok else result))


@pytest.mark.parametrize(
    ("question", "answer", "records"),
    [
        (
            "What's a 15% tip on $86.40?",
            "A 15% tip on $86.40 is **$12.96**.",
            [used("calculator", "86.40*0.15 = 12.96", expression="86.40*0.15")],
        ),
        (
            "What time is it in Tokyo?",
            "It's 2:05 PM in Tokyo.",
            [used("clock", CLOCK, timezone="Asia/Tokyo")],
        ),
        (
            "What's today's date in Tokyo?",
            "Today is Friday, 3 January 2025.",
            [used("clock", CLOCK, timezone="Asia/Tokyo")],
        ),
        (
            "What is 10 divided by 3?",
            "10 divided by 3 is about 3.33.",
            [used("calculator", "10/3 = 3.3333333333333335", expression="10/3")],
        ),
    ],
)
def test_an_answer_that_states_what_the_tool_returned_is_approved(question, answer, records):
    verdict = check_answer(question, answer, records, asks=1, descriptions=CLOCK_PURPOSE)
    assert verdict.approved, verdict.reason
    assert "without a model call" in verdict.reason


@pytest.mark.parametrize(
    ("question", "answer", "records", "why"),
    [
        (
            "What's a 15% tip on $86.40?",
            "A 15% tip is $12.96, so you pay $99.36 in total.",
            [used("calculator", "86.40*0.15 = 12.96", expression="86.40*0.15")],
            "99.36",
        ),
        (
            "What's 17 * 23?",
            "I'm sorry, I couldn't compute that.",
            [used("calculator", "17*23 = 391", expression="17*23")],
            "answer says",
        ),
        ("What's 17 * 23?", "17 * 23 is 391.", [used("calculator", "division by zero", ok=False)], "failed"),
        (
            "How many vacation days do we get?",
            "You get 25 days.",
            [used("search_documents", "No document matches 'vacation days'.", query="vacation days")],
            "found nothing",
        ),
        (
            "What's our policy on expense reports?",
            "Reports are due by the 5th.",
            [
                used(
                    "search_documents",
                    "Handbook: expense reports are due by the 5th of each month.",
                    query="x",
                )
            ],
            "more than a value",
        ),
        ("What's 17 * 23?", "It is 391.", [], "no tool result"),
        (
            "What time is it in Tokyo?",
            "It's 3:40 PM in Tokyo.",
            [used("clock", CLOCK, timezone="Asia/Tokyo")],
            "no value",
        ),
        (
            "What time is it in Tokyo?",
            "It's 2:05 PM in Tokyo and 5:05 AM in London.",
            [used("clock", CLOCK, timezone="Asia/Tokyo")],
            "a time no tool returned",
        ),
        (
            "How many seconds are in a day?",
            "It is 14:05 on Friday 3 January 2025.",
            [used("clock", CLOCK, timezone="UTC")],
            "cover",
        ),
        ("What is 17*23?", "", [used("calculator", "17*23 = 391", expression="17*23")], "empty"),
    ],
)
def test_the_local_check_is_unsure_unless_the_answer_rests_on_the_tools(question, answer, records, why):
    verdict = check_answer(question, answer, records, asks=1, descriptions=CLOCK_PURPOSE)
    assert not verdict.approved and why in verdict.reason, verdict.reason


def test_a_question_of_several_parts_is_never_checked_locally():
    records = [used("calculator", "17*23 = 391", expression="17*23")]
    verdict = check_answer("What's 17*23 and what time is it?", "391.", records, asks=2)
    assert not verdict.approved and "2 parts" in verdict.reason


# --- in a run -------------------------------------------------------------------------------------


async def test_a_tool_question_the_router_is_sure_of_costs_two_calls_and_says_what_checked_it():
    llm = ScriptedClient(by_component={"agent": [tool("calculator", expression="17*23"), "17 × 23 = 391."]})
    result, sink = await run(engine(llm, enable_reflection=True), "What's 17*23?")
    assert [r.component for r in llm.history] == ["agent", "agent"], "no evaluator call"
    verdict = sink.of("quality.completed")[0].payload
    assert verdict["checked_by"] == "local" and verdict["approved"]
    assert "Checked locally" in verdict["evaluation"]["reasoning"]
    assert result.quality == LOCAL_SCORE and result.answer.startswith("17 × 23 = 391.")
    assert sink.of("run.finished")[0].payload["llm_calls"] == 2


async def test_a_function_named_in_words_is_covered_by_what_the_calculator_says_it_does():
    # "square root" appears in neither the answer nor its expression: the calculator's
    # description names it, so the check approves without an evaluator call.
    llm = ScriptedClient(
        by_component={"agent": [tool("calculator", expression="sqrt(1764)"), "`sqrt(1764)` = **42**."]}
    )
    _, sink = await run(engine(llm), "What is the square root of 1764?")
    assert [r.component for r in llm.history] == ["agent", "agent"]
    assert sink.of("quality.completed")[0].payload["checked_by"] == "local"


async def test_a_greeting_around_the_question_is_not_a_part_the_answer_must_cover():
    clock = LocalToolProvider("builtin")
    clock.add(
        "clock", lambda timezone="UTC": CLOCK, description=CLOCK_PURPOSE["clock"], input_schema=CLOCK_SCHEMA
    )
    llm = ScriptedClient(
        by_component={"agent": [tool("clock", timezone="Asia/Tokyo"), "It is Friday 03 January 2025."]}
    )
    _, sink = await run(engine(llm, tools=ToolRegistry([clock])), "Good morning! What's the date today?")
    assert [r.component for r in llm.history] == ["agent", "agent"]
    assert sink.of("quality.completed")[0].payload["checked_by"] == "local"


async def test_when_the_local_check_is_unsure_the_model_evaluator_decides():
    llm = ScriptedClient(
        by_component={
            "agent": [tool("calculator", expression="17*23"), "391, or about 400."],
            "evaluation": [quality(True, 0.8)],
        }
    )
    _, sink = await run(engine(llm), "What's 17*23?")
    assert [r.component for r in llm.history] == ["agent", "agent", "evaluation"]
    verdict = sink.of("quality.completed")[0].payload
    assert verdict["checked_by"] == "model"
    assert verdict["local_check"] == "unsure: the answer states 400, which nothing computed"


async def test_only_a_sure_router_and_the_setting_let_the_local_check_decide():
    def script() -> ScriptedClient:
        return ScriptedClient(
            by_component={
                "analysis": [analysis("simple")],
                "agent": [tool("calculator", expression="17*23"), "17*23 = 391."],
                "evaluation": [quality(True, 0.9)],
            }
        )

    analysed = script()
    await run(engine(analysed, **ALWAYS_ANALYSE), "What's 17*23?")
    assert len(analysed.requests_for("evaluation")) == 1, "the analysis model routed it: a model checks it"
    switched_off = script()
    await run(engine(switched_off, local_answer_check=False), "What's 17*23?")
    assert len(switched_off.requests_for("evaluation")) == 1


def test_the_setting_is_read_from_the_environment():
    assert ReasoningConfig.from_env({"LOCAL_ANSWER_CHECK": "false"}).local_answer_check is False
    assert ReasoningConfig().local_answer_check is True
    with pytest.raises(ValueError, match="LOCAL_ANSWER_CHECK"):
        ReasoningConfig.from_env({"LOCAL_ANSWER_CHECK": "sometimes"})
