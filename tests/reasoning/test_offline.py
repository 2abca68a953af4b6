"""The offline model: honest heuristics that show the whole engine working without a key."""

import pytest

from reasoning import AdaptiveReasoningLoop, ExecutionStrategy, ListSink, ReasoningConfig
from reasoning.llm.offline import LABEL, OfflineClient, covers, expression_in, question_parts, zone_in
from reasoning.tools.local import LocalToolProvider, builtin_provider
from reasoning.tools.registry import ToolRegistry


def offline_engine(**env: str) -> AdaptiveReasoningLoop:
    return AdaptiveReasoningLoop(
        OfflineClient(), ToolRegistry([builtin_provider()]), ReasoningConfig.from_env(env, provider="offline")
    )


async def ask(question: str, *, force: str = ""):
    sink = ListSink()
    result = await offline_engine(FORCE_REASONING_STRATEGY=force).run(question, sink=sink)
    return result, sink


async def test_two_plus_two_is_four_via_the_calculator():
    result, sink = await ask("What is 2+2?")
    assert "**4**" in result.answer and LABEL in result.answer
    calls = sink.of("tool.called")
    assert [c.payload["tool"] for c in calls] == ["calculator"] and calls[0].payload["arguments"] == {
        "expression": "2+2"
    }
    assert result.final_strategy == ExecutionStrategy.DIRECT and not result.escalated


async def test_two_part_question_is_routed_to_light_at_once():
    result, sink = await ask("What is 17*23 and what time is it in Tokyo?")
    assert result.initial_strategy == result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    assert result.routed_by == "router" and not result.escalated
    assert sink.of("quality.completed")[0].payload["approved"]
    assert "391" in result.answer and "Asia/Tokyo" in result.answer
    assert result.answer.count(LABEL) == 1


async def test_each_part_of_a_one_call_answer_lists_only_the_tools_it_needed():
    """One call answers both parts with both tools' results; the plan said each step had used
    both ("Step 1 done · tools: calculator, clock"), though the clock only served the second."""
    result, sink = await ask("What is 17*23 and what time is it in Tokyo?")
    steps = {e.payload["step_id"]: e.payload["tools_used"] for e in sink.of("step.completed")}
    assert list(steps.values()) == [["calculator"], ["clock"]], steps
    assert "391" in result.answer


async def test_a_direct_answer_that_misses_a_part_escalates_and_reuses_tool_results():
    question = "What is 17*23 and what time is it in Tokyo?"
    result, sink = await ask(question, force="direct")
    first_quality = sink.of("quality.completed")[0].payload
    assert not first_quality["approved"] and first_quality["deeper_would_help"]
    assert first_quality["evaluation"]["missing_aspects"] == ["What time is it in Tokyo?"]
    assert result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    assert "391" in result.answer and "Asia/Tokyo" in result.answer and result.answer.count(LABEL) == 1
    assert [e.payload["cached"] for e in sink.of("tool.result") if e.payload["tool"] == "calculator"] == [
        False,
        True,
    ]
    discarded = sink.of("answer.discarded")
    assert [d.payload["reason"] for d in discarded] == ["quality"] and discarded[0].payload["quality"] < 0.6


async def test_it_says_what_it_cannot_know():
    result, _ = await ask("Who won the 1998 World Cup?")
    assert "can't answer that offline" in result.answer and "ANTHROPIC_API_KEY" in result.answer
    assert not result.escalated, "escalating cannot help a model that has no knowledge"


@pytest.mark.parametrize("question", ["", "?!?!... ---", "¿Qué hora es en Madrid?", "東京は今何時ですか"])
async def test_odd_input_gets_an_honest_answer(question):
    result, sink = await ask(question)
    assert LABEL in result.answer
    assert "didn't find a question" in result.answer or "can't answer that offline" in result.answer
    assert sink.of("tool.called") == [] and "run.finished" in sink.kinds()


async def test_a_20000_character_question():
    result, _ = await ask("What is 6*7? " + "please " * 2900)
    assert "42" in result.answer


def test_reading_questions():
    assert question_parts("What is 2+2 and what time is it in Paris?") == [
        "What is 2+2",
        "what time is it in Paris",
    ]
    assert question_parts("Compare Python and Java") == ["Compare Python and Java"]
    assert question_parts("!!!") == []
    assert expression_in("what is 12 times 3 plus 1") == "12 * 3 + 1"
    # "a.m." ends no sentence: the question stays one part.
    assert question_parts("Convert 9 a.m. Chicago time to Tokyo time.") == [
        "Convert 9 a.m. Chicago time to Tokyo time"
    ]
    assert expression_in("square root of 81") == "sqrt(81)"
    # The asked expression, not one quoted before it (it answered 49 at 0.95).
    assert expression_in("<script>alert(1)</script> {{ 7*7 }} What is 5*5?") == "5*5"
    assert expression_in("What is 17*23 and what time is it in Tokyo?") == "17*23"
    assert expression_in("Ignore 2+2. Calculate 3*3+1 please") == "3*3+1"
    assert (
        zone_in("time in new york please") == "America/New_York"
        and zone_in("in Europe/Oslo") == "Europe/Oslo"
    )
    assert covers("What is 17*23", "The answer is 391.") and not covers("What is 17*23", "It is 390.")


async def test_a_jittered_offline_call_takes_between_the_bounds_and_varies(monkeypatch):
    from reasoning.llm.base import LLMRequest

    waited: list[float] = []

    async def record(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr("reasoning.llm.offline.asyncio.sleep", record)
    client = OfflineClient(latency=1.0, jitter=0.3)
    totals = []
    for _ in range(20):
        waited.clear()
        async for _chunk in client.stream(LLMRequest(messages=[{"role": "user", "content": "What is 2+2?"}])):
            pass
        totals.append(sum(waited))
    assert all(0.7 - 1e-9 <= total <= 1.3 + 1e-9 for total in totals) and len(set(totals)) > 1
    assert OfflineClient(latency=1.0, jitter=0.3).with_model("other").jitter == 0.3


class _Declines:
    """A person who declines every call they are asked about."""

    async def known(self, request):
        from reasoning.tools.approval import ApprovalDecision

        return ApprovalDecision(False, note="declined by the user")

    async def wait(self, request):  # pragma: no cover - `known` always decides
        raise AssertionError("not asked")

    async def answer(self, request):  # pragma: no cover
        return "decline", None


async def test_a_declined_calculator_is_said_plainly_and_not_scored_as_a_miss():
    """A reviewer read "The calculator tool could not help: the user declined this call of
    calculator ...; do not call it again" (words meant for the model), scored 0.00."""
    import dataclasses

    class AskFirst(type(builtin_provider())):
        async def list_tools(self):
            return [dataclasses.replace(spec, approval="ask") for spec in await super().list_tools()]

    provider = builtin_provider()
    provider.__class__ = AskFirst
    registry = ToolRegistry([provider], approver=_Declines())
    engine = AdaptiveReasoningLoop(
        OfflineClient(), registry, ReasoningConfig.from_env({}, provider="offline")
    )
    sink = ListSink()
    result = await engine.run("What is 19*21?", sink=sink)
    assert "You declined the calculator, so I didn't compute `19*21`." in result.answer
    assert "do not call it again" not in result.answer and "could not help" not in result.answer
    quality = sink.of("quality.completed")[-1].payload
    assert quality["approved"] and quality["evaluation"]["confidence"] > 0.5 and not result.escalated, quality


def test_a_documents_section_heading_is_quoted_once_for_its_passages():
    """Two paragraphs under "## Release process" were quoted with "**Release process**" each."""
    from reasoning.llm.offline_text import answer_from_context

    handbook = (
        "# Handbook\n\n## Release process\n\nReleases are cut on Tuesday from main.\n\n"
        "Release notes are written by the release captain before the release.\n\n"
        "## Security\n\nRotate keys every release.\n"
    )
    answer = answer_from_context("How does the release process work?", [("Handbook", handbook)])
    assert answer.count("**Release process**") == 1, answer
    assert "cut on Tuesday" in answer and "release captain" in answer


def test_a_decline_excuses_only_the_part_whose_tool_was_declined():
    from reasoning.llm.offline_structured import structured_answer

    answer = "**What is 19\\*21?**\n\nYou declined the calculator, so I didn't compute `19*21`."
    honest = structured_answer("record_quality_assessment", {"query": "What is 19*21?", "response": answer})
    assert honest["is_sufficient"] and honest["deeper_would_help"] is False
    assert honest["reasoning"].startswith("You declined"), "not 'the offline model cannot answer'"
    other = structured_answer(
        "record_quality_assessment", {"query": "What is 19*21 and what is 3*4?", "response": answer}
    )
    assert not other["is_sufficient"] and other["missing_aspects"], "3*4 was never declined"


def test_a_thought_driven_answer_with_a_document_keeps_the_calculators_result():
    from reasoning.llm.base import LLMRequest

    question = 'Summarize the security section of @"Team Handbook" and what is 12*12?'
    handbook = "## Security\n\nLock your laptop when you leave your desk.\n"
    request = LLMRequest(
        messages=[{"role": "user", "content": question}],
        hints={
            "respond": True,
            "query": question,
            "attachments": [{"kind": "document", "title": "Team Handbook", "content": handbook}],
            "tool_results": [("calculator", {"expression": "12*12"}, "12*12 = 144", False)],
        },
    )
    text = OfflineClient().respond(request).text
    assert "**144**" in text and "Lock your laptop" in text, text


def test_places_are_found_as_the_one_pattern_of_every_name_found_them():
    """The place finder looks up each word's names instead of trying 671 names at every word
    (a sixth of the CPU); it must find what `\\b(longest|…|shortest)\\b` found, text for text."""
    import random
    import re

    from reasoning import foresight

    places, finder = foresight._places()
    names = sorted(places, key=len, reverse=True)
    pattern = re.compile(rf"\b({'|'.join(re.escape(name) for name in names)})\b")
    rng = random.Random(11)
    words = [*places, "the", "time", "in", "and", "new", "york", "yorkshire", "newark", "st", "-", "é", "2+2"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(3000)]
    texts += [
        "what time is it in new york and los angeles?",
        "in port-au-prince now",
        "dar es salaam, rio de janeiro",
    ]
    for text in texts:
        expected = [(m.start(), m.end(), m.group(1)) for m in pattern.finditer(text)]
        assert [(m.start(), m.end(), m.group(1)) for m in finder.finditer(text)] == expected, text


async def test_another_servers_calculator_and_clock_that_ask_approval_do_not_displace_the_built_in_ones():
    """An added tool server offering its own "calculator" and "clock" (no annotations, so each
    call asks a person) was offered to the answer call ahead of the built-in tools foresight had
    just run: the offline model matched the results against the other server's tools, found
    none, and answered "What time is it in Tokyo?" with "I can't answer that offline" (the
    quality check then failed it at 0.45) though the clock had told the time."""
    from dataclasses import replace

    class Named(LocalToolProvider):
        """Tools named as the host names a server's tools: "server__tool"."""

        def __init__(self, name: str, tools: LocalToolProvider, approval: str = "auto") -> None:
            super().__init__(name)
            self._tools = {
                tool: (
                    replace(spec, name=f"{name}__{tool}", server=name, tool=tool, approval=approval),
                    function,
                )
                for tool, (spec, function) in tools._tools.items()
            }

    other = LocalToolProvider()
    other.add("calculator", lambda expression: "42")
    other.add("clock", lambda timezone="UTC": "25:99")
    registry = ToolRegistry([Named("nexus", builtin_provider()), Named("acme", other, approval="ask")])
    engine = AdaptiveReasoningLoop(
        OfflineClient(), registry, ReasoningConfig.from_env({}, provider="offline")
    )
    sink = ListSink()
    result = await engine.run("What is 17*23 and what time is it in Tokyo?", sink=sink)
    assert [c.payload["tool"] for c in sink.of("tool.called")] == ["nexus__calculator", "nexus__clock"]
    assert "391" in result.answer and "Asia/Tokyo" in result.answer, result.answer
    assert "can't answer" not in result.answer
    assert sink.of("quality.completed")[0].payload["approved"]
