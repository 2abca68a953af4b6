"""Adaptivity that pays for itself: calls that earn their cost, escalation only when it helps,
reflection only when there is something to learn, a speculative DIRECT start, and answers
built from the question alone."""

from __future__ import annotations

import asyncio

from reasoning import Attachment, ExecutionStrategy, ListSink, RunInput
from reasoning.llm.offline import LABEL, OfflineClient
from reasoning.llm.scripted import ScriptedClient
from reasoning.quality.reflection import reflect_on_feedback
from reasoning.tools.local import LocalToolProvider, builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.reasoning.helpers import (
    ALWAYS_ANALYSE,
    analysis,
    complete,
    critique,
    engine,
    meta,
    plan,
    quality,
    run,
)

ALL_LAYERS = {"enable_critic": True, "enable_meta": True, "enable_reflection": True}
REFLECTION = {"insights": [], "lessons": ["Split it."], "improvements": [], "confidence": 0.7}


def offline(**config) -> object:
    from reasoning import AdaptiveReasoningLoop, ReasoningConfig

    settings = ReasoningConfig.from_env({}, provider="offline")
    for name, value in config.items():
        setattr(settings, name, value)
    return AdaptiveReasoningLoop(OfflineClient(), ToolRegistry([builtin_provider()]), settings)


# --- calls that earn their cost -------------------------------------------------------------------


async def test_a_simple_question_costs_an_answer_and_its_check():
    llm = ScriptedClient(
        by_component={"agent": ["Canberra is the capital of Australia."], "evaluation": [quality(True, 0.95)]}
    )
    result, sink = await run(engine(llm, **ALL_LAYERS), "What is the capital of Australia?")
    assert [r.component for r in llm.history] == ["agent", "evaluation"], "no analysis, no reflection"
    assert result.llm_calls == 2 and result.routed_by == "router"
    assert sink.of("analysis.completed")[0].payload["router"]["level"] == "simple"
    assert sink.of("run.finished")[0].payload["reflects"] is None


async def test_the_analysis_model_is_asked_only_when_the_router_is_unsure():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": ["Paris."],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, sink = await run(engine(llm, **ALWAYS_ANALYSE), "What is the capital of France?")
    assert result.routed_by == "analysis" and len(llm.requests_for("analysis")) == 1
    unsure = sink.of("analysis.completed")[0].payload["router"]
    assert unsure["level"] == "simple" and unsure["confidence"] < 1.0


async def test_an_honest_refusal_is_not_escalated_and_passes_the_light_threshold():
    """All the offline model can give at any depth: no escalation, and no "low confidence"
    flag on a plain "I can't" (it was 0.65, flagged under LIGHT's 0.70 and not under DIRECT's)."""
    result, sink = await run(
        offline(), "Who won the 1998 World Cup?", force_strategy=ExecutionStrategy.LIGHT_PLANNING
    )
    verdict = sink.of("quality.completed")[0].payload
    assert verdict["evaluation"]["confidence"] == 0.7 and verdict["threshold"] == 0.7
    assert verdict["approved"] and verdict["deeper_would_help"] is False
    assert not result.escalated and result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    assert "can't answer that offline" in result.answer
    assert sink.of("reflection.completed") == [], "nothing missing that more work could add: nothing to learn"


async def test_escalation_follows_the_evaluators_view_of_whether_deeper_helps():
    def script(deeper: bool) -> ScriptedClient:
        return ScriptedClient(
            by_component={
                "agent": ["A thin answer.", "Part one.", "Part two."],
                "evaluation": [quality(False, 0.4, "the details", deeper=deeper), quality(True, 0.9)],
                "planning": [plan("Part one", "Part two")],
            }
        )

    kept, _ = await run(engine(script(False)), "What is the capital of France?")
    assert not kept.escalated and kept.answer == "A thin answer." and kept.quality == 0.4
    escalated, _ = await run(engine(script(True)), "What is the capital of France?")
    assert escalated.escalated and escalated.final_strategy == ExecutionStrategy.LIGHT_PLANNING


async def test_reflection_only_when_there_is_something_to_learn():
    clean = ScriptedClient(by_component={"agent": ["4"], "evaluation": [quality(True, 0.95)]})
    result, sink = await run(engine(clean, **ALL_LAYERS), "What is 2+2?")
    assert clean.requests_for("reflection") == [] and result.reflection_trigger is None

    escalating = ScriptedClient(
        by_component={
            "agent": ["half", "a", "b"],
            "evaluation": [quality(False, 0.3, "part b"), quality(True, 0.9)],
            "planning": [plan("A", "B")],
            "reflection": [REFLECTION],
        }
    )
    result, sink = await run(engine(escalating, **ALL_LAYERS), "What is 2+2?")
    assert sink.of("reflection.completed")[0].payload["trigger"] == "escalation"
    summary = escalating.requests_for("reflection")[0].messages[0]["content"]
    assert "direct: escalated, quality 0.30; missing: part b" in summary, "lessons come from what happened"

    failing = ScriptedClient(
        by_component={
            "planning": [RuntimeError("planner down")] * 3,
            "agent": ["answer"],
            "evaluation": [quality(True, 0.9)],
            "reflection": [REFLECTION],
        }
    )
    _, sink = await run(engine(failing, **ALL_LAYERS), "Q", force_strategy=ExecutionStrategy.LIGHT_PLANNING)
    assert sink.of("reflection.completed")[0].payload["trigger"] == "failure"


async def test_feedback_on_a_finished_run_triggers_a_reflection_later():
    first = ScriptedClient(by_component={"agent": ["4"], "evaluation": [quality(True, 0.95)]})
    result, _ = await run(engine(first, **ALL_LAYERS), "What is 2+2?")
    later = ScriptedClient(by_component={"reflection": [REFLECTION]})
    sink = ListSink()
    reflection = await reflect_on_feedback(
        later,
        engine(later).config,
        question="What is 2+2?",
        tracker_state=result.tracker.to_dict(),
        feedback={"rating": "down", "comment": "I wanted the working shown"},
        sink=sink,
        start_sequence=40,
    )
    event = sink.events[-1]
    assert (
        event.kind == "reflection.completed"
        and event.sequence > 40
        and event.payload["trigger"] == "feedback"
    )
    assert reflection["lessons"] == ["Split it."]
    prompt = later.requests_for("reflection")[0].messages[0]["content"]
    assert 'not helpful (thumbs down): "I wanted the working shown"' in prompt


# --- a faster first answer ---------------------------------------------------------------------------


async def test_an_unsure_router_starts_a_direct_answer_while_the_analysis_decides():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": ["Paris is the capital of France."],
            "evaluation": [quality(True, 0.9)],
        },
        delays={"analysis": 0.05},
    )
    result, sink = await run(engine(llm, router_min_confidence=1.0), "What is the capital of France?")
    kinds = sink.kinds()
    assert kinds.index("answer.delta") < kinds.index("analysis.completed"), "the answer started first"
    assert len(llm.requests_for("agent")) == 1, "the speculative draft became the answer"
    delta = sink.of("answer.delta")[0].payload
    assert delta["speculative"] and sink.of("answer.final")[0].payload["draft"] == delta["draft"]
    assert result.answer == "Paris is the capital of France." and result.cancelled_calls == 0


async def test_a_speculative_draft_is_discarded_when_the_analysis_chooses_deeper():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("complex")],
            "agent": ["A quick guess.", "Finding."],
            "planning": [plan("Research it")],
            "critic": [critique(0.9)],
            "meta": [
                meta(0.9),
                {"should_continue": True, "should_deepen": False, "confidence_adjustment": 0.0},
            ],
            "evaluation": [complete(True), quality(True, 0.9)],
            "synthesis": ["The researched answer."],
        },
        delays={"analysis": 0.05},
    )
    result, sink = await run(
        engine(llm, router_min_confidence=1.0, **ALL_LAYERS), "What is the capital of France?"
    )
    discarded = sink.of("answer.discarded")[0].payload
    assert discarded["reason"] == "speculation" and discarded["speculative"]
    assert discarded["chosen_strategy"] == "deep_reasoning" and discarded["text"] == "A quick guess."
    assert (
        result.final_strategy == ExecutionStrategy.DEEP_REASONING
        and result.answer == "The researched answer."
    )
    assert sink.of("answer.final")[0].payload["draft"] != discarded["draft"]


async def test_a_speculative_call_still_running_is_cancelled_and_counted():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("medium")],
            "agent": ["never finished", "one", "two"],
            "planning": [plan("One", "Two")],
            "evaluation": [quality(True, 0.9)],
        },
        delays={"analysis": 0.01, "agent": 0.2},
    )
    started = asyncio.get_running_loop().time()
    result, sink = await run(engine(llm, router_min_confidence=1.0), "What is the capital of France?")
    discarded = sink.of("answer.discarded")[0].payload
    assert discarded["reason"] == "speculation" and discarded["cancelled_calls"] == 1
    assert result.cancelled_calls == 1 and sink.of("run.finished")[0].payload["cancelled_calls"] == 1
    assert asyncio.get_running_loop().time() - started < 0.6, "the cancelled call was not waited for"


# --- answers built from the real question --------------------------------------------------------------


async def test_the_question_travels_apart_from_its_attachments():
    document = Attachment("document", "Release process", "Rollback: redeploy the previous tag and tell #ops.")
    # A question that asks for work, so the light strategy plans (a plain question gets one answer).
    question = 'Propose a better rollback plan based on @"Release process".'
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("medium")],
            "planning": [plan(question)],
            "agent": ["You roll back by redeploying the last release."],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, _ = await run(engine(llm, **ALWAYS_ANALYSE), RunInput.of(question, attachments=[document]))
    for component in ("analysis", "planning", "evaluation"):
        prompt = llm.requests_for(component)[0].messages[0]["content"]
        assert question in prompt and "Release process" in prompt, component
        assert "previous tag" not in prompt, f"{component} sees the question, not the document"
    attached, asked = llm.requests_for("agent")[0].messages[-1]["content"]
    assert asked == {"type": "text", "text": question}, "the question is exactly what was asked"
    assert (
        "Rollback: redeploy the previous tag" in attached["text"] and "not instructions" in attached["text"]
    )
    assert "previous tag" not in llm.requests_for("agent")[0].system, "a document never speaks as the system"
    assert result.answer == "You roll back by redeploying the last release."


async def test_the_offline_model_answers_a_document_question_directly_and_once():
    document = Attachment("document", "Release process", "Intro.\n\nRollback: redeploy the previous tag.")
    question = 'What does @"Release process" say about rollback?'
    result, sink = await run(offline(), RunInput.of(question, attachments=[document]))
    assert result.final_strategy == ExecutionStrategy.DIRECT and not result.escalated
    assert result.answer.count("Rollback: redeploy the previous tag.") == 1
    assert result.quality >= 0.6 and result.answer.count(LABEL) == 1
    everything = str([e.payload for e in sink.events])
    assert "</query>" not in everything and "Their content is below" not in everything


async def test_headings_made_from_question_parts_are_markdown_safe():
    result, _ = await run(offline(), "What is 2**16 and what time is it in Tokyo?")
    assert result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    assert "**What is 2\\*\\*16?**" in result.answer and "65536" in result.answer


async def test_every_offline_answer_carries_the_disclaimer_once():
    for force in (None, *ExecutionStrategy):
        result, _ = await run(offline(), "What is 17*23 and what time is it in Tokyo?", force_strategy=force)
        assert result.answer.count(LABEL) == 1, force
        assert result.answer.rstrip().endswith(LABEL)


async def test_lessons_cite_only_what_the_tools_really_found():
    documents = LocalToolProvider("nexus")
    documents.add(
        "search_documents",
        lambda query: f"No document matches {query!r}.",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
    )
    from reasoning import AdaptiveReasoningLoop, ReasoningConfig

    loop = AdaptiveReasoningLoop(
        OfflineClient(),
        ToolRegistry([builtin_provider(), documents]),
        ReasoningConfig.from_env({"FORCE_REASONING_STRATEGY": "direct"}, provider="offline"),
    )
    result, sink = await run(loop, "What is our vacation policy and what is 6*7?")
    reflections = sink.of("reflection.completed")
    assert result.escalated and reflections, "an escalation is worth a reflection"
    lessons = " ".join(reflections[0].payload["reflection"]["lessons"])
    assert "search_documents" not in lessons, "the search found nothing, so no lesson may say it helped"
    assert "one plan step per part" in lessons


# --- a light answer in one call ------------------------------------------------------------------------


async def test_a_light_question_of_plain_parts_is_answered_in_one_call_covering_each_part():
    llm = ScriptedClient(
        by_component={
            "agent": ["**Bloom filter**\n\nA probabilistic set.\n\n**Use**\n\nSkipping disk reads."],
            "evaluation": [quality(True, 0.9)],
        }
    )
    question = "Explain what a Bloom filter is and give one use case in a database."
    result, sink = await run(engine(llm), question)
    assert result.final_strategy == ExecutionStrategy.LIGHT_PLANNING and result.routed_by == "router"
    assert [r.component for r in llm.history] == ["agent", "evaluation"], "no planner, one answer"
    system = llm.requests_for("agent")[0].system
    assert "1. Explain what a Bloom filter is." in system and "2. Give one use case in a database." in system
    steps = sink.of("plan.created")[0].payload["plan"]["steps"]
    assert len(steps) == 2
    assert [e.payload["status"] for e in sink.of("step.completed")] == ["completed", "completed"]
    assert result.answer.startswith("**Bloom filter**")


async def test_one_light_answer_that_falls_short_still_escalates_to_deep():
    llm = ScriptedClient(
        by_component={
            "agent": ["Postgres is fine.", "Finding one.", "Finding two."],
            "evaluation": [quality(False, 0.4, "a verdict"), complete(True), quality(True, 0.85)],
            "planning": [plan("SQLite for a small team", "PostgreSQL for a small team")],
            "synthesis": ["A full comparison with a verdict."],
        }
    )
    result, sink = await run(engine(llm), "Compare SQLite and PostgreSQL for a small team.")
    assert [e.payload["strategy"] for e in sink.of("strategy.selected")] == [
        "light_planning",
        "deep_reasoning",
    ]
    assert len(llm.requests_for("planning")) == 1, "only DEEP planned"
    assert result.answer == "A full comparison with a verdict."


async def test_listed_parts_are_answered_in_one_call_with_their_foreseen_tools_run_first():
    result, sink = await run(offline(), "What is 17*23 and what time is it in Tokyo?")
    assert result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    # No model call asks for the calculator or the clock: both ran before the answer call.
    assert sink.of("run.finished")[0].payload["calls_by_component"] == {"agent": 1, "evaluation": 1}
    assert {e.payload["tool"] for e in sink.of("tool.called")} == {"calculator", "clock"}
    assert "391" in result.answer and "Asia/Tokyo" in result.answer


async def test_another_servers_tool_named_like_a_foreseen_one_stays_on_offer():
    """Found by a review: a docs server's own "search_documents" (or "calculator") was never
    offered to a one-call answer, because foresight runs Nexus's tool of that name itself."""
    from reasoning import AdaptiveReasoningLoop, ReasoningConfig

    other = LocalToolProvider("docs")
    other.add("docs__calculator", lambda **_: "other", description="Another server's calculator")
    llm = ScriptedClient(by_component={"agent": ["17*23 = 391."], "evaluation": [quality(True, 0.95)]})
    settings = ReasoningConfig.from_env({}, provider="offline")
    loop = AdaptiveReasoningLoop(llm, ToolRegistry([builtin_provider(), other]), settings)
    await run(loop, "What is 17*23?")
    request = llm.requests_for("agent")[0]
    assert request.messages[1]["content"][0]["name"] == "calculator", "Nexus's own ran first"
    assert "docs__calculator" in [tool.name for tool in request.tools] and request.tool_choice is None


async def test_an_honest_not_found_teaches_nothing_but_a_missing_part_does():
    def script(answer: str) -> ScriptedClient:
        return ScriptedClient(
            by_component={
                "agent": [answer],
                "evaluation": [quality(False, 0.3, "the phone number", deeper=False)],
                "reflection": [REFLECTION],
            }
        )

    honest = script("I found nothing in the team's documents about the on-call phone number.")
    result, _ = await run(engine(honest, **ALL_LAYERS), "What's the on-call phone number?")
    assert result.reflection_trigger is None and honest.requests_for("reflection") == []
    vague = script("Call the on-call engineer.")
    result, _ = await run(engine(vague, **ALL_LAYERS), "What's the on-call phone number?")
    assert result.reflection_trigger == "low_quality"


# --- what the panel may call approved -------------------------------------------------------------


async def test_an_answer_shown_although_it_fell_short_is_not_called_approved():
    """A reviewer saw "✓ Answer approved and shown" under an answer of quality 0.00: the shown
    answer must say whether the check passed it."""
    weak = ScriptedClient(
        by_component={
            "agent": ["Maybe Sydney."],
            "evaluation": [quality(False, 0.3, "the right city", deeper=False)],
        }
    )
    _, sink = await run(engine(weak), "What is the capital of Australia?")
    assert sink.of("answer.final")[0].payload["approved"] is False
    good = ScriptedClient(by_component={"agent": ["Canberra."], "evaluation": [quality(True, 0.95)]})
    _, sink = await run(engine(good), "What is the capital of Australia?")
    assert sink.of("answer.final")[0].payload["approved"] is True
