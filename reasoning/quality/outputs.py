"""Structured outputs of the quality layers, readable from tool input, JSON or seed 004's format."""

from __future__ import annotations

import re
from typing import Any

from reasoning.parsing import (
    field_value,
    fields_from,
    section_body,
    section_list,
    to_bool,
    to_choice,
    to_int,
    to_list,
    to_score,
    to_text,
)
from reasoning.structured import OutputKind

SEVERITIES = {"low": "low", "medium": "medium", "moderate": "medium", "high": "high", "critical": "critical"}
CATEGORIES = {c: c for c in ("logic", "feasibility", "efficiency", "safety", "completeness")}
RECOMMENDATIONS = {"approve": "approve", "accept": "approve", "revise": "revise", "reject": "reject"}
INSIGHT_CATEGORIES = {c: c for c in ("success", "failure", "efficiency", "approach")}
IMPACTS = {"low": "low", "medium": "medium", "high": "high"}
AREAS = {
    "planning": "planning",
    "execution": "execution",
    "tool_usage": "tool-usage",
    "tool-usage": "tool-usage",
    "tools": "tool-usage",
    "reasoning": "reasoning",
}


def _score(description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1, "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _items(value: Any, limit: int = 20) -> list[dict[str, Any]]:
    return [item for item in (value if isinstance(value, list) else [])[:limit] if isinstance(item, dict)]


# --- critique ---------------------------------------------------------------------------------


def _issue(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "severity": to_choice(item.get("severity"), SEVERITIES, "medium"),
        "category": to_choice(item.get("category"), CATEGORIES, "logic"),
        "description": to_text(item.get("description"), limit=1000),
        "suggestion": to_text(item.get("suggestion"), limit=1000),
        "affected_steps": to_list(item.get("affected_steps"), limit=10, item_limit=40),
    }


def _critique_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not any(k in data for k in ("overall_score", "recommendation", "issues")):
        return None
    overall = to_score(data.get("overall_score"), 0.5)
    recommendation = to_choice(data.get("recommendation"), RECOMMENDATIONS, "")
    return {
        "overall_score": overall,
        "feasibility_score": to_score(data.get("feasibility_score"), overall),
        "correctness_score": to_score(data.get("correctness_score"), overall),
        "efficiency_score": to_score(data.get("efficiency_score"), overall),
        "safety_score": to_score(data.get("safety_score"), 1.0),
        "issues": [_issue(i) for i in _items(data.get("issues"))],
        "strengths": to_list(data.get("strengths")),
        "suggestions": to_list(data.get("suggestions")),
        "recommendation": recommendation or ("approve" if overall >= 0.8 else "revise"),
        "rationale": to_text(data.get("rationale")),
    }


_ISSUE = re.compile(
    r"\d+\.\s*\[SEVERITY:\s*(\w+)\]\s*\[CATEGORY:\s*(\w+)\]\s*([^\n]*)\s*(?:Suggestion:\s*([^\n]*))?"
    r"(?:\s*Affected Steps:\s*([^\n]*))?",
    re.IGNORECASE,
)


def _critique_from_markdown(text: str) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    for key, labels in {
        "overall_score": ("OVERALL_SCORE", "Overall Score"),
        "feasibility_score": ("FEASIBILITY_SCORE", "Feasibility Score"),
        "correctness_score": ("CORRECTNESS_SCORE", "Correctness Score"),
        "efficiency_score": ("EFFICIENCY_SCORE", "Efficiency Score"),
        "safety_score": ("SAFETY_SCORE", "Safety Score"),
        "recommendation": ("RECOMMENDATION", "Recommendation"),
        "rationale": ("RATIONALE", "Rationale"),
    }.items():
        value = field_value(text, *labels)
        if value is not None:
            data[key] = value
    block_match = re.search(
        r"ISSUES\s*:(.*?)(?:SUGGESTIONS\s*:|RECOMMENDATION\s*:|$)", text, re.DOTALL | re.IGNORECASE
    )
    if block_match:
        data["issues"] = [
            {
                "severity": m[0],
                "category": m[1],
                "description": m[2],
                "suggestion": m[3] or "",
                "affected_steps": m[4] or "",
            }
            for m in _ISSUE.findall(block_match.group(1))
        ]
    data["strengths"] = section_list(text, "STRENGTHS", "Strengths")
    data["suggestions"] = section_list(text, "SUGGESTIONS", "Suggestions")
    return _critique_from_dict(data) if "overall_score" in data or "recommendation" in data else None


CRITIQUE = OutputKind(
    name="record_critique",
    description="Record your critique of the plan before it is executed.",
    schema={
        "type": "object",
        "properties": {
            "overall_score": _score("overall quality of the plan"),
            "feasibility_score": _score("can this plan work with the available tools?"),
            "correctness_score": _score("is it logically sound and does it answer the question?"),
            "efficiency_score": _score("is it the most direct approach?"),
            "safety_score": _score("1 = no risk"),
            "issues": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "severity": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
                        "category": {"type": "string", "enum": list(CATEGORIES)},
                        "description": {"type": "string"},
                        "suggestion": {"type": "string"},
                        "affected_steps": _strings("step ids"),
                    },
                    "required": ["severity", "category", "description"],
                },
            },
            "strengths": _strings("what the plan does well"),
            "suggestions": _strings("improvements"),
            "recommendation": {"type": "string", "enum": ["approve", "revise", "reject"]},
            "rationale": {"type": "string"},
        },
        "required": ["overall_score", "recommendation", "issues", "rationale"],
    },
    from_dict=_critique_from_dict,
    from_markdown=_critique_from_markdown,
)


# --- meta-agent ----------------------------------------------------------------------------------


def _meta_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not any(k in data for k in ("reasoning_quality", "should_replan", "concerns", "confidence")):
        return None
    return {
        "reasoning_quality": to_score(data.get("reasoning_quality"), 0.5),
        "confidence": to_score(data.get("confidence"), 0.5),
        "concerns": to_list(data.get("concerns"), limit=10),
        "should_replan": to_bool(data.get("should_replan")),
        "should_think_deeper": to_bool(data.get("should_think_deeper")),
        "recommended_passes": to_int(data.get("recommended_passes"), 1, low=1, high=3),
        "feedback": to_text(data.get("feedback")),
        "clarifying_question": to_text(data.get("clarifying_question"), limit=500),
    }


def _meta_from_markdown(text: str) -> dict[str, Any] | None:
    data = fields_from(
        text,
        {
            "reasoning_quality": ("REASONING_QUALITY",),
            "confidence": ("CONFIDENCE",),
            "should_replan": ("SHOULD_REPLAN",),
            "should_think_deeper": ("SHOULD_THINK_DEEPER",),
            "recommended_passes": ("RECOMMENDED_PASSES",),
            "feedback": ("FEEDBACK",),
            "clarifying_question": ("CLARIFYING_QUESTION",),
        },
    )
    data["concerns"] = section_list(text, "CONCERNS", "Concerns")
    return _meta_from_dict(data) if len(data) > 1 else None


META = OutputKind(
    name="record_meta_evaluation",
    description="Record your assessment of the reasoning so far.",
    schema={
        "type": "object",
        "properties": {
            "reasoning_quality": _score("quality of the reasoning and plan"),
            "confidence": _score("confidence that this reasoning will answer the question well"),
            "concerns": _strings("specific weaknesses"),
            "should_replan": {"type": "boolean"},
            "should_think_deeper": {"type": "boolean"},
            "recommended_passes": {"type": "integer", "minimum": 1, "maximum": 3},
            "feedback": {"type": "string"},
            "clarifying_question": {
                "type": "string",
                "description": "if the request is too ambiguous to "
                "answer well, the one question you would ask the person; else empty",
            },
        },
        "required": ["reasoning_quality", "confidence", "concerns", "should_replan", "feedback"],
    },
    from_dict=_meta_from_dict,
    from_markdown=_meta_from_markdown,
)


def _live_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not any(k in data for k in ("should_continue", "should_deepen", "confidence_adjustment")):
        return None
    return {
        "should_continue": to_bool(data.get("should_continue"), True),
        "should_deepen": to_bool(data.get("should_deepen")),
        "confidence_adjustment": to_score(data.get("confidence_adjustment"), 0.0, low=-1.0, high=1.0),
        "feedback": to_text(data.get("feedback")) or "No specific feedback",
    }


def _live_from_markdown(text: str) -> dict[str, Any] | None:
    data = fields_from(
        text,
        {
            "should_continue": ("SHOULD_CONTINUE",),
            "should_deepen": ("SHOULD_DEEPEN",),
            "confidence_adjustment": ("CONFIDENCE_ADJUSTMENT",),
            "feedback": ("FEEDBACK",),
        },
    )
    return _live_from_dict(data)


LIVE = OutputKind(
    name="record_live_assessment",
    description="Record your live assessment of the reasoning step just taken.",
    schema={
        "type": "object",
        "properties": {
            "should_continue": {"type": "boolean"},
            "should_deepen": {"type": "boolean"},
            "confidence_adjustment": {"type": "number", "minimum": -1, "maximum": 1},
            "feedback": {"type": "string"},
        },
        "required": ["should_continue", "should_deepen", "confidence_adjustment", "feedback"],
    },
    from_dict=_live_from_dict,
    from_markdown=_live_from_markdown,
)


# --- reflection ---------------------------------------------------------------------------------


def _reflection_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not any(k in data for k in ("lessons", "lessons_learned", "insights", "improvements")):
        return None
    insights = [
        {
            "category": to_choice(i.get("category"), INSIGHT_CATEGORIES, "approach"),
            "description": to_text(i.get("description"), limit=1000),
            "evidence": to_list(i.get("evidence"), limit=5),
            "impact": to_choice(i.get("impact"), IMPACTS, "medium"),
        }
        for i in _items(data.get("insights"))
    ]
    improvements = [
        {
            "area": to_choice(i.get("area"), AREAS, "planning"),
            "suggestion": to_text(i.get("suggestion"), limit=1000),
            "priority": to_choice(i.get("priority"), IMPACTS, "medium"),
            "expected_impact": to_text(i.get("expected_impact"), limit=500),
        }
        for i in _items(data.get("improvements"))
    ]
    return {
        "insights": insights,
        "lessons": to_list(data.get("lessons", data.get("lessons_learned")), limit=5, item_limit=300),
        "improvements": improvements,
        "confidence": to_score(data.get("confidence"), 0.7),
    }


_INSIGHT = re.compile(
    r"\d+\.\s*\[CATEGORY:\s*(\w+)\]\s*Description:\s*([^\n]+)\s*Evidence:\s*([^\n]+)\s*"
    r"Impact:\s*(\w+)",
    re.IGNORECASE,
)
_IMPROVEMENT = re.compile(
    r"\d+\.\s*\[AREA:\s*([\w-]+)\]\s*Suggestion:\s*([^\n]+)\s*Priority:\s*(\w+)\s*"
    r"Expected Impact:\s*([^\n]+)",
    re.IGNORECASE,
)


def _reflection_from_markdown(text: str) -> dict[str, Any] | None:
    insights_block = section_body(text.split("INSIGHTS:", 1)[1]) if "INSIGHTS:" in text else ""
    data: dict[str, Any] = {
        "insights": [
            {"category": m[0], "description": m[1], "evidence": m[2], "impact": m[3]}
            for m in _INSIGHT.findall(text)
        ]
        if insights_block or "INSIGHTS" in text
        else [],
        "lessons": section_list(text, "LESSONS_LEARNED", "Lessons Learned", "Lessons"),
        "improvements": [
            {"area": m[0], "suggestion": m[1], "priority": m[2], "expected_impact": m[3]}
            for m in _IMPROVEMENT.findall(text)
        ],
    }
    confidence = field_value(text, "CONFIDENCE", "Confidence")
    if confidence is not None:
        data["confidence"] = confidence
    if not (data["lessons"] or data["insights"] or data["improvements"]):
        return None
    return _reflection_from_dict(data)


REFLECTION = OutputKind(
    name="record_reflection",
    description="Record what this run teaches about answering future questions.",
    schema={
        "type": "object",
        "properties": {
            "insights": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "category": {"type": "string", "enum": list(INSIGHT_CATEGORIES)},
                        "description": {"type": "string"},
                        "evidence": _strings("supporting evidence"),
                        "impact": {"type": "string", "enum": list(IMPACTS)},
                    },
                    "required": ["category", "description"],
                },
            },
            "lessons": _strings(
                "general, reusable lessons for planning future questions; never quote the "
                "question or anyone's data"
            ),
            "improvements": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "area": {
                            "type": "string",
                            "enum": ["planning", "execution", "tool-usage", "reasoning"],
                        },
                        "suggestion": {"type": "string"},
                        "priority": {"type": "string", "enum": list(IMPACTS)},
                        "expected_impact": {"type": "string"},
                    },
                    "required": ["area", "suggestion"],
                },
            },
            "confidence": _score("confidence in these insights"),
        },
        "required": ["insights", "lessons", "improvements", "confidence"],
    },
    from_dict=_reflection_from_dict,
    from_markdown=_reflection_from_markdown,
)


# --- thoughts (the reasoning-driven loop) ----------------------------------------------------------


def _thought_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not any(k in data for k in ("intent", "proposed_tools", "turn_complete", "plan")):
        return None
    tools = []
    for item in _items(data.get("proposed_tools"), limit=5):
        name = to_text(item.get("tool") or item.get("tool_name") or item.get("name"), limit=100)
        parameters = item.get("parameters") or item.get("arguments") or {}
        if name:
            tools.append({"tool": name, "parameters": parameters if isinstance(parameters, dict) else {}})
    return {
        "intent": to_text(data.get("intent")),
        "needs": to_list(data.get("needs"), limit=10),
        "plan": to_text(data.get("plan")),
        "proposed_tools": tools,
        "turn_complete": to_bool(data.get("turn_complete")),
        "confidence": to_score(data.get("confidence"), 0.5),
    }


def _thought_from_markdown(text: str) -> dict[str, Any] | None:
    data = fields_from(
        text,
        {
            "intent": ("Intent",),
            "plan": ("Plan",),
            "turn_complete": ("Turn Complete",),
            "confidence": ("Confidence",),
        },
    )
    data["needs"] = section_list(text, "Needs")
    return _thought_from_dict(data) if "intent" in data or "turn_complete" in data else None


THOUGHT = OutputKind(
    name="record_thought",
    description="Record your structured reasoning before acting.",
    schema={
        "type": "object",
        "properties": {
            "intent": {"type": "string", "description": "what the person is trying to achieve"},
            "needs": _strings("what a good answer needs"),
            "plan": {"type": "string", "description": "what to do next"},
            "proposed_tools": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"tool": {"type": "string"}, "parameters": {"type": "object"}},
                    "required": ["tool"],
                },
            },
            "turn_complete": {
                "type": "boolean",
                "description": "true when the answer so far fully serves "
                "the person and nothing more should be done",
            },
            "confidence": _score("confidence in this reasoning"),
        },
        "required": ["intent", "needs", "plan", "proposed_tools", "turn_complete", "confidence"],
    },
    from_dict=_thought_from_dict,
    from_markdown=_thought_from_markdown,
)
