"""Quality layers: the confidence scorer's arithmetic, the critic loop, routing, reflection."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning import ExecutionStrategy
from reasoning.llm.scripted import ScriptedClient
from reasoning.quality.confidence import calculate_confidence
from reasoning.quality.critic import quick_validate
from reasoning.quality.outputs import CRITIQUE, LIVE, META, REFLECTION, THOUGHT
from reasoning.types import ResearchPlan, SubTask
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

# --- the scorer, pinned to exact numbers ---------------------------------------------------------


@pytest.mark.parametrize(
    ("thought", "plan_", "crit", "met", "expected", "action"),
    [
        (0.9, 0.8, critique(0.85), meta(0.8), 0.84, "execute"),  # all four: .3/.3/.2/.2
        (0.9, 0.8, None, meta(0.8), 0.84, "execute"),  # no critique: .4/.4/-/.2
        (0.9, 0.8, critique(0.85), None, 0.85, "execute"),  # no meta: .4/.4/.2/-
        (0.9, 0.8, None, None, 0.85, "execute"),  # neither: .5/.5
        (0.7, 0.7, critique(0.7), meta(0.7), 0.7, "execute_with_caution"),
        (0.9, 0.8, critique(0.7, "critical", "critical"), meta(0.8), 0.41, "clarify"),  # 0.81 - 2 × 0.2
        (0.9, 0.8, critique(0.85), meta(0.8, "a", "b", "c"), 0.69, "execute_with_caution"),  # 0.84 - 3 × 0.05
        (0.5, 0.5, critique(0.5), meta(0.5), 0.5, "clarify"),
        (0.3, 0.3, critique(0.3), meta(0.3), 0.3, "replan"),
        (0.1, 0.1, critique(0.1), meta(0.1), 0.1, "escalate"),
        (0.2, 0.1, critique(0.1, "critical"), meta(0.0, "x"), 0.0, "escalate"),  # clamped at 0
        (1.0, 1.0, critique(1.0), meta(1.0), 1.0, "execute"),
    ],
)
def test_confidence_scorer_table(thought, plan_, crit, met, expected, action):
    assessment = calculate_confidence(thought, plan_, crit, met)
    assert assessment.overall_confidence == pytest.approx(expected, abs=1e-9)
    assert assessment.action == action


def test_overrides_and_thresholds():
    # reject below 0.6 → replan, although 0.55 alone would be clarify
    assert (
        calculate_confidence(0.6, 0.6, critique(0.4, recommendation="reject"), meta(0.6)).action == "replan"
    )
    assert (
        calculate_confidence(0.8, 0.8, critique(0.8, recommendation="reject"), meta(0.8)).action == "execute"
    )
    # the meta-agent asking to replan wins below 0.7 only
    assert calculate_confidence(0.7, 0.6, critique(0.7), meta(0.6, replan=True)).action == "replan"
    assert calculate_confidence(0.9, 0.9, critique(0.9), meta(0.9, replan=True)).action == "execute"
    edges = {0.8: "execute", 0.6: "execute_with_caution", 0.4: "clarify", 0.2: "replan", 0.19: "escalate"}
    for value, action in edges.items():
        assert calculate_confidence(value, value).action == action, value


def test_risk_factors_and_reasoning_sentence():
    assessment = calculate_confidence(0.4, 0.45, critique(0.5, "high", "critical"), meta(0.6, "vague"))
    assert assessment.risk_factors == [
        "Low confidence in reasoning",
        "Low confidence in plan",
        "Plan has quality issues",
        "2 high-severity issues found",
        "Meta-evaluation raised concerns",
    ]
    assert assessment.reasoning.startswith("Overall confidence: ")
    assert assessment.components == {"thought": 0.4, "plan": 0.45, "critique": 0.5, "meta": 0.6}


def test_quick_validate_needs_no_model():
    empty = quick_validate(ResearchPlan("q", []), [])
    assert not empty["valid"] and empty["overall_score"] == 0.7 and empty["recommendation"] == "reject"
    cyclic = ResearchPlan(
        "q", [SubTask("a", id="s1", dependencies=["s2"]), SubTask("b", id="s2", dependencies=["s1"])]
    )
    result = quick_validate(cyclic, [])
    assert not result["valid"] and "cycle" in result["issues"][0]["description"]
    bad_tool = ResearchPlan("q", [SubTask("a", id="s1", tool_hints=["teleport"])])
    result = quick_validate(bad_tool, ["nexus__calculator"])
    assert not result["valid"] and "teleport" in result["issues"][0]["description"]
    fine = ResearchPlan("q", [SubTask("a", id="s1", tool_hints=["calculator"])])
    assert quick_validate(fine, ["nexus__calculator"])["valid"]


# --- the critic loop and routing, with the scripted model ---------------------------------------

LAYERS_ON = {"enable_critic": True, "enable_meta": True, "enable_reflection": False}


LIVE_OK = {"should_continue": True, "should_deepen": False, "confidence_adjustment": 0.1, "feedback": "ok"}


async def test_a_weak_plan_is_refined_and_critiqued_again():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("Vague step"), plan("Look up A", "Look up B")],
            "critic": [critique(0.5, "high"), critique(0.9)],
            "meta": [meta(0.85), LIVE_OK, LIVE_OK],
            "evaluation": [complete(True), quality(True, 0.9)],
            "agent": ["a", "b"],
            "synthesis": ["a and b"],
        }
    )
    result, sink = await run(
        engine(llm, **LAYERS_ON), "Tell me about A and B", force_strategy=ExecutionStrategy.DEEP_REASONING
    )
    scores = [e.payload["critique"]["overall_score"] for e in sink.of("critique.completed")]
    assert scores == [0.5, 0.9]
    second_request = llm.requests_for("planning")[1].messages[0]["content"]
    assert "Critique of the previous version" in second_request and "high issue" in second_request
    assert [e.payload["description"] for e in sink.of("step.started")] == ["Look up A", "Look up B"]
    assert "Earlier critiques" in llm.requests_for("critic")[1].messages[0]["content"]
    assert "score 0.50" in llm.requests_for("critic")[1].messages[0]["content"]
    assert sink.of("confidence.assessed")[0].payload["action"] == "execute"
    assert result.answer == "a and b"


async def test_a_light_plan_gets_the_structural_check_but_no_critic_or_meta_calls():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("Look up A", "Look up B")],
            "evaluation": [quality(True, 0.9)],
            "agent": ["a", "b"],
        }
    )
    result, _ = await run(
        engine(llm, **LAYERS_ON), "Tell me about A and B", force_strategy=ExecutionStrategy.LIGHT_PLANNING
    )
    assert llm.requests_for("critic") == [] and llm.requests_for("meta") == []
    assert llm.requests_for("synthesis") == [], "a light plan's parts are combined, not synthesized"
    assert result.answer == "**Look up A**\n\na\n\n**Look up B**\n\nb" and result.llm_calls == 4


async def test_a_cyclic_plan_never_executes_even_with_the_critic():
    cyclic = plan(("A", ["step_2"]), ("B", ["step_1"]))
    llm = ScriptedClient(
        by_component={
            "planning": [cyclic, cyclic, cyclic],
            "meta": [meta(0.9)],
            "evaluation": [quality(True, 0.9)],
            "agent": ["direct"],
        }
    )
    result, sink = await run(engine(llm, **LAYERS_ON), "Q", force_strategy=ExecutionStrategy.LIGHT_PLANNING)
    assert llm.requests_for("critic") == [], "structural problems are caught without the model"
    assert all(e.payload["quick"] for e in sink.of("critique.completed"))
    assert [e.payload["description"] for e in sink.of("step.started")] == ["Q"]
    assert result.answer == "direct"


async def test_low_confidence_asks_one_clarifying_question():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("complex")],
            "planning": [plan("Guess what they mean")] * 3,
            "critic": [critique(0.3, "high")] * 3,
            "meta": [meta(0.4, "ambiguous", question="Do you mean the 2024 or the 2025 budget?")],
        }
    )
    result, sink = await run(engine(llm, **LAYERS_ON, **ALWAYS_ANALYSE), "How did the budget change?")
    decision = sink.of("confidence.assessed")[0].payload
    assert decision["action"] == "clarify"
    assert result.answer == "Do you mean the 2024 or the 2025 budget?" and result.kind == "clarification"
    assert sink.of("step.started") == [] and sink.of("quality.started") == [], "nothing executed or graded"
    assert sink.of("answer.final")[0].payload["answer_kind"] == "clarification"


async def test_very_low_confidence_replans_once_then_says_so_plainly():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("complex", confidence=0.1)],
            "planning": [plan("Try something")] * 6,
            "critic": [critique(0.2, "high")] * 3 + [critique(0.1, "critical")] * 3,
            "meta": [meta(0.4), meta(0.1, "still nothing fits")],
        }
    )
    result, sink = await run(engine(llm, **LAYERS_ON, **ALWAYS_ANALYSE), "Q")
    actions = [e.payload["action"] for e in sink.of("confidence.assessed")]
    assert actions == ["replan", "escalate"], actions
    assert "The last plan scored" in llm.requests_for("planning")[3].messages[0]["content"]
    assert result.kind == "low_confidence"
    assert result.answer.startswith("I'm not confident I can answer this well")
    assert "high-severity" in result.answer


async def test_live_self_assessment_can_stop_and_deepen():
    live_stop = {
        "should_continue": False,
        "should_deepen": False,
        "confidence_adjustment": -0.5,
        "feedback": "this is going nowhere",
    }
    llm = ScriptedClient(
        by_component={
            "planning": [plan("First", ("Second", ["step_1"]))],
            "critic": [critique(0.9)],
            "meta": [meta(0.9), live_stop],
            "evaluation": [{"is_complete": True, "confidence": 0.9, "reasoning": "ok"}, quality(True, 0.8)],
            "agent": ["first finding"],
            "filter": [{"kept": [{"id": 1, "relevance": 9}]}],
            "synthesis": ["done"],
        }
    )
    _, sink = await run(engine(llm, **LAYERS_ON), "Q", force_strategy=ExecutionStrategy.DEEP_REASONING)
    live = [e.payload for e in sink.of("meta.assessment") if e.payload["assessment"] == "live"]
    assert live[0]["feedback"] == "this is going nowhere" and live[0]["confidence"] < 0.7
    assert [e.payload["step_id"] for e in sink.of("step.started")] == ["step_1"], "halted before step 2"

    deepen = {"should_continue": True, "should_deepen": True, "confidence_adjustment": 0.0, "feedback": "dig"}
    calm = {**deepen, "should_deepen": False}
    llm = ScriptedClient(
        by_component={
            "planning": [plan("Only step")],
            "critic": [critique(0.9)],
            "meta": [meta(0.9), deepen, calm],
            "evaluation": [{"is_complete": True, "confidence": 0.9, "reasoning": "ok"}, quality(True, 0.8)],
            "agent": ["shallow", "deeper"],
            "filter": [{"kept": [{"id": 1, "relevance": 9}, {"id": 2, "relevance": 9}]}],
            "synthesis": ["done"],
        }
    )
    _, sink = await run(engine(llm, **LAYERS_ON), "Q", force_strategy=ExecutionStrategy.DEEP_REASONING)
    started = [e.payload["description"] for e in sink.of("step.started")]
    assert started == ["Only step", "Look more closely at: Only step"]


async def test_lessons_from_one_run_reach_the_next_runs_planner():
    reflection = {
        "insights": [
            {"category": "approach", "description": "split it", "evidence": ["x"], "impact": "high"}
        ],
        "lessons": ["Plan one step per part of a multi-part question."],
        "improvements": [
            {
                "area": "planning",
                "suggestion": "split early",
                "priority": "high",
                "expected_impact": "fewer escalations",
            }
        ],
        "confidence": 0.8,
    }
    first = ScriptedClient(
        by_component={
            "agent": ["Light scatters."],
            "evaluation": [quality(False, 0.45, "why blue scatters most", deeper=False)],
            "reflection": [reflection],
        }
    )
    _, sink = await run(engine(first, enable_reflection=True), "Why is the sky blue?")
    assert sink.of("reflection.completed")[0].payload["trigger"] == "low_quality", "kept below its threshold"
    lessons = sink.of("reflection.completed")[0].payload["reflection"]["lessons"]
    assert lessons == ["Plan one step per part of a multi-part question."]
    second = ScriptedClient(
        by_component={
            "planning": [plan("Part A", "Part B")],
            "agent": ["a", "b"],
            "synthesis": ["a, b"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    _, sink = await run(
        engine(second), "Answer A and B", force_strategy=ExecutionStrategy.LIGHT_PLANNING, lessons=lessons
    )
    assert (
        "Plan one step per part of a multi-part question."
        in second.requests_for("planning")[0].messages[0]["content"]
    )
    assert sink.of("plan.created")[0].payload["lessons_used"] == lessons


async def test_reasoning_driven_style_reasons_acts_and_reviews_itself():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis()],
            "agent": [
                {
                    "intent": "arithmetic",
                    "needs": ["exact product"],
                    "plan": "use the calculator",
                    "proposed_tools": [{"tool": "calculator", "parameters": {"expression": "17*23"}}],
                    "turn_complete": False,
                    "confidence": 0.8,
                },
                "17 × 23 = 391",
                {
                    "intent": "check",
                    "needs": [],
                    "plan": "the answer is complete",
                    "proposed_tools": [],
                    "turn_complete": True,
                    "confidence": 0.95,
                },
            ],
            "evaluation": [quality(True, 0.95)],
        }
    )
    result, sink = await run(engine(llm, execution_style="reasoning_driven"), "What is 17*23?")
    thoughts = [e.payload for e in sink.of("thought")]
    assert [t["about"] for t in thoughts] == ["user", "assistant"] and thoughts[1]["turn_complete"]
    assert sink.of("tool.result")[0].payload["summary"] == "17*23 = 391"
    respond = next(r for r in llm.requests_for("agent") if r.hints.get("respond"))
    assert "17*23 = 391" in respond.messages[-1]["content"] and respond.tools == []
    assert result.answer == "17 × 23 = 391"


async def test_offline_model_drives_every_quality_layer():
    from reasoning import AdaptiveReasoningLoop, ListSink, ReasoningConfig
    from reasoning.llm.offline import OfflineClient
    from reasoning.tools.local import builtin_provider
    from reasoning.tools.registry import ToolRegistry

    question = "What is 17*23 and what time is it in Tokyo?"
    for style, expected in [
        ("adaptive", {"critique.completed", "meta.assessment", "confidence.assessed"}),
        ("reasoning_driven", {"thought"}),
    ]:
        env = {"EXECUTION_STYLE": style, "FORCE_REASONING_STRATEGY": "deep"}
        config = ReasoningConfig.from_env(env, provider="offline")
        sink = ListSink()
        result = await AdaptiveReasoningLoop(OfflineClient(), ToolRegistry([builtin_provider()]), config).run(
            question, sink=sink
        )
        kinds = set(sink.kinds())
        assert expected <= kinds, style
        assert "391" in result.answer and "Asia/Tokyo" in result.answer
        assert "component.degraded" not in kinds
        assert "reflection.completed" not in kinds, "nothing went wrong: nothing to learn"


# --- the parsers never raise -----------------------------------------------------------------------

KINDS = [CRITIQUE, META, LIVE, REFLECTION, THOUGHT]
values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=30),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=20,
)
names = st.sampled_from(
    [
        "overall_score",
        "issues",
        "recommendation",
        "severity",
        "confidence",
        "concerns",
        "should_replan",
        "recommended_passes",
        "should_continue",
        "confidence_adjustment",
        "lessons",
        "insights",
        "improvements",
        "proposed_tools",
        "turn_complete",
        "intent",
    ]
)


def _in_range(result):
    if result is None:
        return
    for key in (
        "overall_score",
        "feasibility_score",
        "correctness_score",
        "efficiency_score",
        "safety_score",
        "confidence",
        "reasoning_quality",
    ):
        if key in result:
            assert 0.0 <= result[key] <= 1.0
    if "confidence_adjustment" in result:
        assert -1.0 <= result["confidence_adjustment"] <= 1.0
    if "recommended_passes" in result:
        assert 1 <= result["recommended_passes"] <= 3
    if "recommendation" in result:
        assert result["recommendation"] in ("approve", "revise", "reject")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(names, values, max_size=8), text=st.text(max_size=300))
def test_quality_parsers_never_raise(kind, data, text):
    _in_range(kind.read(data, ""))
    _in_range(kind.read(None, text))


def test_seed_formats_are_read():
    parsed = CRITIQUE.read(
        None,
        """OVERALL_SCORE: 0.65
FEASIBILITY_SCORE: 0.7
CORRECTNESS_SCORE: 0.6
EFFICIENCY_SCORE: 0.8
SAFETY_SCORE: 1.0
STRENGTHS:
- Clear steps
ISSUES:
1. [SEVERITY: high] [CATEGORY: feasibility] Step 2 needs a tool we lack
   Suggestion: use search instead
   Affected Steps: step-2
SUGGESTIONS:
- Merge steps 3 and 4
RECOMMENDATION: revise
RATIONALE: Fixable.""",
    )
    assert parsed["overall_score"] == 0.65 and parsed["recommendation"] == "revise"
    assert (
        parsed["issues"][0]["severity"] == "high"
        and parsed["issues"][0]["suggestion"] == "use search instead"
    )
    assert parsed["strengths"] == ["Clear steps"] and parsed["suggestions"] == ["Merge steps 3 and 4"]
    live = LIVE.read(
        None, "SHOULD_CONTINUE: no\nSHOULD_DEEPEN: yes\nCONFIDENCE_ADJUSTMENT: -3\nFEEDBACK: shaky"
    )
    assert live == {
        "should_continue": False,
        "should_deepen": True,
        "confidence_adjustment": -1.0,
        "feedback": "shaky",
    }
    evaluation = META.read(
        None,
        "REASONING_QUALITY: 0.7\nCONFIDENCE: 0.6\nCONCERNS:\n- thin\n- vague\n"
        "SHOULD_REPLAN: yes\nSHOULD_THINK_DEEPER: no\nRECOMMENDED_PASSES: 7\nFEEDBACK: ok",
    )
    assert evaluation["concerns"] == ["thin", "vague"] and evaluation["should_replan"]
    assert evaluation["recommended_passes"] == 3
    reflection = REFLECTION.read(
        None,
        """INSIGHTS:
1. [CATEGORY: success]
   Description: The calculator was exact
   Evidence: 17*23 = 391
   Impact: high
LESSONS_LEARNED:
- Use the calculator for arithmetic
IMPROVEMENTS:
1. [AREA: tool-usage]
   Suggestion: call tools early
   Priority: medium
   Expected Impact: faster answers
CONFIDENCE: 0.8""",
    )
    assert reflection["lessons"] == ["Use the calculator for arithmetic"] and reflection["confidence"] == 0.8
    assert (
        reflection["insights"][0]["category"] == "success"
        and reflection["improvements"][0]["area"] == "tool-usage"
    )
