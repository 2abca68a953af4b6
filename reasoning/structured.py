"""Structured outputs: a JSON schema per answer kind, and readers that never raise.

Each kind is asked for with a forced tool call whose input schema is the kind's schema.
When a provider answers in text instead, the same normaliser reads JSON found in the text,
or the seeds' markdown format. A reply with none of the kind's fields is "unrecognised",
and the component that asked treats that as a failure (its fallback takes over).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reasoning.parsing import (
    extract_json_object,
    field_value,
    fields_from,
    section_list,
    to_bool,
    to_choice,
    to_int,
    to_list,
    to_score,
    to_text,
)


class StructuredOutputError(ValueError):
    """The model's reply could not be read as the structured answer that was asked for."""


@dataclass(frozen=True)
class OutputKind:
    name: str
    description: str
    schema: dict[str, Any]
    # Reads a dict (tool input or JSON found in text); None when no known field is present.
    from_dict: Callable[[dict[str, Any]], dict[str, Any] | None]
    # Reads the markdown format; None when nothing is recognised.
    from_markdown: Callable[[str], dict[str, Any] | None]

    def read(self, tool_input: Any = None, text: str = "") -> dict[str, Any] | None:
        """The normalised answer from a tool call's input or from text; None if unreadable."""
        if isinstance(tool_input, dict):
            result = self.from_dict(tool_input)
            if result is not None:
                return result
        if isinstance(text, str) and text.strip():
            found = extract_json_object(text)
            if found is not None:
                result = self.from_dict(found)
                if result is not None:
                    return result
            return self.from_markdown(text)
        return None


def _score(name: str, description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1, "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _has_any(data: dict[str, Any], *keys: str) -> bool:
    return any(key in data for key in keys)


# --- complexity analysis ------------------------------------------------------------------

_LEVELS = {
    "simple": "simple",
    "low": "simple",
    "medium": "medium",
    "moderate": "medium",
    "complex": "complex",
    "high": "complex",
}
_STRATEGIES = {
    "direct": "direct",
    "light_planning": "light_planning",
    "light": "light_planning",
    "deep_reasoning": "deep_reasoning",
    "deep": "deep_reasoning",
}
_LEVEL_TO_STRATEGY = {"simple": "direct", "medium": "light_planning", "complex": "deep_reasoning"}


def _analysis_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not _has_any(data, "complexity_level", "recommended_strategy", "complexity_score"):
        return None
    level = to_choice(data.get("complexity_level"), _LEVELS, "")
    strategy = to_choice(data.get("recommended_strategy"), _STRATEGIES, "")
    if not level and strategy:
        level = {v: k for k, v in _LEVEL_TO_STRATEGY.items()}[strategy]
    level = level or "medium"
    score = data.get("complexity_score")
    return {
        "complexity_level": level,
        "recommended_strategy": strategy or _LEVEL_TO_STRATEGY[level],
        "complexity_score": None if score is None else to_score(score),
        "estimated_iterations": to_int(data.get("estimated_iterations"), 1, low=0, high=5),
        "confidence": to_score(data.get("confidence"), 0.5),
        "rationale": to_text(data.get("rationale") or data.get("reasoning")),
        "requires_research": to_bool(data.get("requires_research")),
        "requires_synthesis": to_bool(data.get("requires_synthesis")),
        "multi_part_query": to_bool(data.get("multi_part_query")),
        "tool_count_estimate": to_int(data.get("tool_count_estimate"), 0, low=0, high=50),
    }


def _analysis_from_markdown(text: str) -> dict[str, Any] | None:
    data = fields_from(
        text,
        {
            "complexity_level": ("Complexity Level", "Complexity"),
            "recommended_strategy": ("Recommended Strategy", "Strategy"),
            "estimated_iterations": ("Estimated Iterations",),
            "confidence": ("Confidence",),
            "rationale": ("Reasoning", "Rationale"),
            "requires_research": ("Requires Research",),
            "requires_synthesis": ("Requires Synthesis",),
            "multi_part_query": ("Multi-Part Query", "Multi Part Query"),
            "tool_count_estimate": ("Tool Count Estimate",),
            "complexity_score": ("Complexity Score",),
        },
    )
    return _analysis_from_dict(data)


ANALYSIS = OutputKind(
    name="record_complexity_analysis",
    description="Record how complex the user's query is and which strategy should answer it.",
    schema={
        "type": "object",
        "properties": {
            "complexity_level": {"type": "string", "enum": ["simple", "medium", "complex"]},
            "complexity_score": _score("complexity_score", "0 = trivial, 1 = open-ended research"),
            "recommended_strategy": {
                "type": "string",
                "enum": ["direct", "light_planning", "deep_reasoning"],
            },
            "estimated_iterations": {"type": "integer", "minimum": 0, "maximum": 5},
            "confidence": _score("confidence", "confidence in this assessment"),
            "rationale": {"type": "string"},
            "requires_research": {"type": "boolean"},
            "requires_synthesis": {"type": "boolean"},
            "multi_part_query": {"type": "boolean"},
            "tool_count_estimate": {"type": "integer", "minimum": 0},
        },
        "required": ["complexity_level", "complexity_score", "recommended_strategy", "rationale"],
    },
    from_dict=_analysis_from_dict,
    from_markdown=_analysis_from_markdown,
)


# --- plans ----------------------------------------------------------------------------

_PRIORITIES = {"high": 1, "critical": 1, "medium": 2, "normal": 2, "low": 3}


def _priority(value: Any) -> int:
    if isinstance(value, str) and not re.search(r"\d", value):
        return _PRIORITIES.get(to_choice(value, {k: k for k in _PRIORITIES}, "medium"), 2)
    return to_int(value, 2, low=1, high=5)


def _plan_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    raw = data.get("subtasks", data.get("steps"))
    if not isinstance(raw, list):
        return None
    subtasks = []
    for index, item in enumerate(raw[:20]):
        if isinstance(item, str):
            item = {"description": item}
        if not isinstance(item, dict):
            continue
        description = to_text(item.get("description") or item.get("query") or item.get("task"), limit=1000)
        if not description:
            continue
        step_id = to_text(item.get("id"), limit=40) or f"step_{index + 1}"
        subtasks.append(
            {
                "id": re.sub(r"\s+", "_", step_id),
                "description": description,
                "priority": _priority(item.get("priority")),
                "tools": to_list(item.get("tools") or item.get("tool_hints"), limit=10, item_limit=100),
                "depends_on": to_list(
                    item.get("depends_on") or item.get("dependencies"), limit=10, item_limit=40
                ),
            }
        )
    return {
        "subtasks": subtasks,
        "estimated_complexity": to_choice(
            data.get("estimated_complexity"), {"low": "low", "medium": "medium", "high": "high"}, "medium"
        ),
        "strategy_summary": to_text(data.get("strategy_summary") or data.get("summary")),
        "confidence": to_score(data.get("confidence"), 0.7),
    }


_PLAN_LINE = re.compile(r"^\s*(\d+)[.)]\s*(?:\[(HIGH|MEDIUM|LOW)(?:\s+PRIORITY)?\]\s*)?(.+)$", re.IGNORECASE)


def _plan_from_markdown(text: str) -> dict[str, Any] | None:
    subtasks: list[dict[str, Any]] = []
    for line in text.splitlines():
        match = _PLAN_LINE.match(line)
        if match:
            subtasks.append(
                {
                    "id": f"step_{match.group(1)}",
                    "description": match.group(3).strip(),
                    "priority": _PRIORITIES.get((match.group(2) or "medium").lower(), 2),
                    "tools": [],
                    "depends_on": [],
                }
            )
            continue
        tools = re.match(r"^\s+(?:Tools|Tool hints)\s*:\s*(.+)$", line, re.IGNORECASE)
        if tools and subtasks:
            names = [t for t in to_list(tools.group(1)) if t.lower() != "none"]
            subtasks[-1]["tools"] = names
    if not subtasks:
        return None
    level = "low" if len(subtasks) == 1 else "high" if len(subtasks) >= 4 else "medium"
    summary_lines = [
        line
        for line in text.splitlines()
        if line.strip() and not _PLAN_LINE.match(line) and not line.startswith((" ", "\t"))
    ]
    return {
        "subtasks": subtasks,
        "estimated_complexity": level,
        "strategy_summary": " ".join(summary_lines)[:1000],
    }


PLAN = OutputKind(
    name="record_plan",
    description="Record the plan: the subtasks that together answer the query.",
    schema={
        "type": "object",
        "properties": {
            "subtasks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "short unique id, e.g. step_1"},
                        "description": {
                            "type": "string",
                            "description": "a self-contained question or action",
                        },
                        "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                        "tools": _strings("names of tools likely to help"),
                        "depends_on": _strings("ids of steps whose findings this step needs"),
                    },
                    "required": ["id", "description"],
                },
            },
            "estimated_complexity": {"type": "string", "enum": ["low", "medium", "high"]},
            "strategy_summary": {"type": "string"},
            "confidence": _score("confidence", "how sure you are this plan answers the question"),
        },
        "required": ["subtasks", "confidence"],
    },
    from_dict=_plan_from_dict,
    from_markdown=_plan_from_markdown,
)


# --- response quality -------------------------------------------------------------------


def _quality_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not _has_any(data, "is_sufficient", "assessment", "quality_assessment", "confidence", "quality_score"):
        return None
    sufficient = data.get("is_sufficient")
    if sufficient is None:
        verdict = to_text(data.get("assessment") or data.get("quality_assessment")).upper()
        sufficient = verdict.startswith("SUFFICIENT") if verdict else None
    confidence = to_score(data.get("confidence", data.get("quality_score")), 0.5)
    is_sufficient = to_bool(sufficient, confidence >= 0.7)
    deeper = data.get("deeper_would_help", data.get("escalation_recommended"))
    return {
        "is_sufficient": is_sufficient,
        "confidence": confidence,
        "reasoning": to_text(data.get("reasoning")),
        "missing_aspects": to_list(data.get("missing_aspects")),
        # Unsaid, the seed's rule holds: an answer below its threshold is worth a deeper attempt.
        "deeper_would_help": to_bool(deeper, True),
    }


def _quality_from_markdown(text: str) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    verdict = field_value(text, "Quality Assessment", "Assessment")
    if verdict is not None:
        data["assessment"] = verdict
    score = field_value(text, "Confidence Score", "Quality Score", "Confidence")
    if score is not None:
        data["confidence"] = score
    data["reasoning"] = field_value(text, "Reasoning")
    data["missing_aspects"] = section_list(text, "Missing Aspects", "Missing")
    recommendation = field_value(text, "Escalation Recommendation", "Deeper Strategy Would Help")
    if recommendation is not None:
        lowered = str(recommendation).lower()
        data["deeper_would_help"] = not any(
            marker in lowered for marker in ("no", "accept", "best effort", "would not", "won't", "none")
        )
    return _quality_from_dict({k: v for k, v in data.items() if v is not None})


QUALITY = OutputKind(
    name="record_quality_assessment",
    description="Record whether the response is good enough to show the user.",
    schema={
        "type": "object",
        "properties": {
            "is_sufficient": {"type": "boolean"},
            "confidence": _score("confidence", "overall quality of the response"),
            "reasoning": {"type": "string"},
            "missing_aspects": _strings("parts of the query the response misses or gets wrong"),
            "deeper_would_help": {
                "type": "boolean",
                "description": "whether more planning and research could produce a better answer; false "
                "when the answer is as good as it can be (e.g. it honestly says the information is not "
                "available)",
            },
        },
        "required": ["is_sufficient", "confidence", "reasoning", "missing_aspects", "deeper_would_help"],
    },
    from_dict=_quality_from_dict,
    from_markdown=_quality_from_markdown,
)


# --- research completeness ---------------------------------------------------------------


def _evaluation_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    if not _has_any(data, "is_complete", "confidence", "missing_aspects", "additional_queries"):
        return None
    confidence = to_score(data.get("confidence"), 0.5)
    return {
        "is_complete": to_bool(data.get("is_complete"), confidence >= 0.8),
        "confidence": confidence,
        "reasoning": to_text(data.get("reasoning")),
        "missing_aspects": to_list(data.get("missing_aspects")),
        "additional_queries": to_list(data.get("additional_queries"), limit=5),
    }


def _evaluation_from_markdown(text: str) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    score = field_value(text, "Confidence Score", "Confidence")
    if score is not None:
        data["confidence"] = score
    missing = section_list(text, "Missing Aspects")
    queries = section_list(text, "Additional Queries Needed", "Additional Queries")
    if missing:
        data["missing_aspects"] = missing
    if queries:
        data["additional_queries"] = queries
    if re.search(r"^\s*\**\s*COMPLETE\b", text, re.MULTILINE):
        data["is_complete"] = True
    data["reasoning"] = field_value(text, "Completeness Assessment", "Reasoning")
    return _evaluation_from_dict({k: v for k, v in data.items() if v is not None})


EVALUATION = OutputKind(
    name="record_completeness",
    description="Record whether the findings so far answer the query, and what is still missing.",
    schema={
        "type": "object",
        "properties": {
            "is_complete": {"type": "boolean"},
            "confidence": _score("confidence", "confidence that the findings are complete"),
            "reasoning": {"type": "string"},
            "missing_aspects": _strings("what is still missing"),
            "additional_queries": _strings("concrete questions that would fill the gaps"),
        },
        "required": ["is_complete", "confidence", "reasoning"],
    },
    from_dict=_evaluation_from_dict,
    from_markdown=_evaluation_from_markdown,
)


# --- result filtering -------------------------------------------------------------------


def _filter_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    kept = data.get("kept", data.get("results"))
    if not isinstance(kept, list):
        return None
    items = []
    for item in kept[:50]:
        if isinstance(item, int | str) and not isinstance(item, bool):
            item = {"id": item}
        if not isinstance(item, dict):
            continue
        result_id = to_int(item.get("id", item.get("result_id")), -1, low=-1, high=10_000)
        if result_id < 0:
            continue
        items.append(
            {
                "id": result_id,
                "relevance": to_score(item.get("relevance"), 5.0, high=10.0),
                "key_information": to_text(item.get("key_information")),
            }
        )
    return {"kept": items}


def _filter_from_markdown(text: str) -> dict[str, Any] | None:
    items = []
    for block in re.split(r"(?=Result ID\s*:)", text, flags=re.IGNORECASE):
        result_id = field_value(block, "Result ID")
        if result_id is None:
            continue
        items.append(
            {
                "id": result_id,
                "relevance": field_value(block, "Relevance"),
                "key_information": field_value(block, "Key Information"),
            }
        )
    return _filter_from_dict({"kept": items}) if items else None


FILTER = OutputKind(
    name="record_relevant_results",
    description="Record which results are relevant to the query, most important first.",
    schema={
        "type": "object",
        "properties": {
            "kept": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "relevance": {"type": "number", "minimum": 0, "maximum": 10},
                        "key_information": {"type": "string"},
                    },
                    "required": ["id", "relevance"],
                },
                "description": "kept results, most important first",
            }
        },
        "required": ["kept"],
    },
    from_dict=_filter_from_dict,
    from_markdown=_filter_from_markdown,
)
