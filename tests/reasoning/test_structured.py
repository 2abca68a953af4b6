"""Structured outputs: forced tool input, JSON in prose, the seeds' markdown; never a crash."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning.structured import ANALYSIS, EVALUATION, FILTER, PLAN, QUALITY

KINDS = [ANALYSIS, PLAN, QUALITY, EVALUATION, FILTER]
SCORE_FIELDS = {"confidence", "complexity_score"}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    [
        "complexity_level",
        "complexity_score",
        "recommended_strategy",
        "confidence",
        "estimated_iterations",
        "subtasks",
        "steps",
        "is_sufficient",
        "assessment",
        "missing_aspects",
        "is_complete",
        "additional_queries",
        "kept",
        "relevance",
        "id",
        "priority",
        "depends_on",
        "tools",
        "tool_count_estimate",
        "rationale",
    ]
)


def _assert_in_range(result):
    if result is None:
        return
    for key, value in result.items():
        if key in SCORE_FIELDS and value is not None:
            assert 0.0 <= value <= 1.0
    for item in result.get("kept", []):
        assert 0.0 <= item["relevance"] <= 10.0
    for step in result.get("subtasks", []):
        assert 1 <= step["priority"] <= 5 and step["description"]
    if "estimated_iterations" in result:
        assert 0 <= result["estimated_iterations"] <= 5


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(field_names, json_values, max_size=8))
def test_tool_input_of_any_shape_never_raises(kind, data):
    _assert_in_range(kind.read(data, ""))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=400))
def test_any_text_never_raises(kind, text):
    _assert_in_range(kind.read(None, text))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=60, deadline=None)
@given(
    data=st.dictionaries(field_names, json_values, max_size=6), cut=st.integers(min_value=0, max_value=200)
)
def test_truncated_json_never_raises(kind, data, cut):
    text = "Here you go:\n```json\n" + json.dumps(data, default=str)[:cut]
    _assert_in_range(kind.read(None, text))


def test_reads_the_seed_analysis_markdown():
    text = """**Complexity Level:** COMPLEX
**Recommended Strategy:** DEEP_REASONING
**Estimated Iterations:** 3
**Confidence:** 0.85

**Reasoning:**
Several sources and synthesis.

**Analysis Flags:**
- Requires Research: Yes
- Requires Synthesis: Yes
- Multi-Part Query: Yes
- Tool Count Estimate: 4
"""
    result = ANALYSIS.read(None, text)
    assert result["complexity_level"] == "complex" and result["recommended_strategy"] == "deep_reasoning"
    assert result["estimated_iterations"] == 3 and result["confidence"] == 0.85
    assert result["requires_research"] and result["multi_part_query"] and result["tool_count_estimate"] == 4
    assert result["rationale"] == "Several sources and synthesis."


def test_reads_the_seed_quality_markdown():
    text = """**Quality Assessment:** INSUFFICIENT
**Confidence Score:** 0.35
**Reasoning:** Too thin.
**Missing Aspects:** (if INSUFFICIENT)
- Lacks technical depth
- Missing key concepts
"""
    result = QUALITY.read(None, text)
    assert result == {
        "is_sufficient": False,
        "confidence": 0.35,
        "reasoning": "Too thin.",
        "missing_aspects": ["Lacks technical depth", "Missing key concepts"],
        "deeper_would_help": True,
    }


def test_reads_the_seed_plan_and_evaluation_formats():
    plan = PLAN.read(
        None,
        """1. [HIGH PRIORITY] Research quantum computing basics
   Tools: search, wikipedia
2. [MEDIUM PRIORITY] Analyze market trends
   Tools: search
3. [LOW PRIORITY] Synthesize recommendations
   Tools: none
Strategy: go wide, then narrow.""",
    )
    assert [s["priority"] for s in plan["subtasks"]] == [1, 2, 3]
    assert plan["subtasks"][0]["tools"] == ["search", "wikipedia"] and plan["subtasks"][2]["tools"] == []
    evaluation = EVALUATION.read(
        None,
        """## Completeness Assessment
Half done.

## Confidence Score
0.6

## Missing Aspects
- Pricing

## Additional Queries Needed
1. What does it cost?
""",
    )
    assert evaluation["confidence"] == 0.6 and not evaluation["is_complete"]
    assert evaluation["additional_queries"] == ["What does it cost?"]


def test_reads_json_in_prose_and_clamps_scores():
    result = QUALITY.read(
        None, 'Sure! {"is_sufficient": true, "confidence": 7, "reasoning": "ok"} hope that helps'
    )
    assert result["confidence"] == 1.0 and result["is_sufficient"]
    assert QUALITY.read(None, "Confidence: 85%")["confidence"] == 0.85


def test_unreadable_replies_are_unrecognised_not_guessed():
    assert ANALYSIS.read(None, "I like turtles.") is None
    assert PLAN.read({"foo": 1}, "") is None


def test_the_seed_escalation_recommendation_says_whether_a_deeper_strategy_helps():
    text = """**Quality Assessment:** INSUFFICIENT
**Confidence Score:** 0.55
**Escalation Recommendation:** Accept as best effort
"""
    assert QUALITY.read(None, text)["deeper_would_help"] is False
    answered = QUALITY.read({"is_sufficient": False, "confidence": 0.4, "deeper_would_help": False})
    assert answered["deeper_would_help"] is False
    assert QUALITY.read({"is_sufficient": False, "confidence": 0.4})["deeper_would_help"] is True


def test_json_with_trailing_commas_is_read_and_commas_in_strings_are_kept():
    text = (
        '{"is_sufficient": false, "confidence": 0.3, "reasoning": "misses [a,] {b,}", '
        '"missing_aspects": ["X",],}'
    )
    result = QUALITY.read(None, f"```json\n{text}\n```")
    assert result["is_sufficient"] is False and result["confidence"] == 0.3
    assert result["reasoning"] == "misses [a,] {b,}"
    plan = PLAN.read(
        None,
        '{"subtasks": [{"id": "step_1", "description": "Look up A",}, {"id": "step_2",'
        ' "description": "Compare", "depends_on": ["step_1",],},],}',
    )
    assert [s["id"] for s in plan["subtasks"]] == ["step_1", "step_2"]
