"""The offline model's structured answers: analysis, plan, quality, critique, reflection, ...

Each builder answers one forced tool call from the request's hints, with the same question
reading the offline agent uses, so its judgements match what it can actually do.
"""

from __future__ import annotations

import re
from typing import Any

from reasoning.llm.offline_text import (
    CANNOT,
    answer_without_tools,
    covers,
    declined_for,
    declined_whole,
    found_nothing,
    honestly_unanswerable,
    is_refusal,
    keywords,
    part_kind,
    plan_tool_call,
    question_parts,
    shorten,
    strip_label,
    tool_named,
)
from reasoning.routing import Router
from reasoning.text import as_ask, counted, under_heading
from reasoning.tools.labels import tool_label


def structured_answer(kind: str, hints: dict[str, Any]) -> dict[str, Any]:
    builder = _BUILDERS.get(kind)
    if builder is None:
        return {}
    return builder(hints)


def _analysis(hints: dict[str, Any]) -> dict[str, Any]:
    """The offline model triages with the project's router: its best guess, sure or not."""
    query = hints.get("query", "")
    decision = Router().route(query, attachments=1 if hints.get("attachments") else 0)
    analysis = decision.analysis()
    band = {"simple": 0.15, "medium": 0.5, "complex": 0.85}[analysis.complexity_level.value]
    return {
        **analysis.to_dict(),
        "complexity_score": band,
        "confidence": round(decision.confidence, 2),
        "rationale": analysis.rationale.replace("(router,", "(offline model,"),
    }


_TOOL_FOR_KIND = {"arithmetic": "calculator", "time": "clock", "documents": "search_documents"}


def _plan(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    parts = question_parts(query) or [query.strip() or "Answer the message"]
    if hints.get("mode") == "light":
        parts = parts[:2] if len(parts) <= 2 else [parts[0], "; ".join(parts[1:])]
    tools = hints.get("tools", [])
    subtasks = []
    for index, part in enumerate(parts, 1):
        base = _TOOL_FOR_KIND.get(part_kind(part))
        named = tool_named(tools, base) if base else None
        subtasks.append(
            {
                "id": f"step_{index}",
                "description": as_ask(part),
                "priority": "high",
                "tools": [named] if named else [],
                "depends_on": [],
            }
        )
    return {
        "subtasks": subtasks,
        "estimated_complexity": "low" if len(parts) == 1 else "medium",
        "strategy_summary": f"Answer each of the {counted(len(parts), 'part')} separately, then combine."
        if len(parts) > 1
        else "Answer the question directly.",
        "confidence": 0.8,
    }


def _quality(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    response = hints.get("response", "")
    parts = question_parts(query)
    if not parts:
        return {
            "is_sufficient": True,
            "confidence": 0.7,
            "reasoning": "There was no question to answer.",
            "missing_aspects": [],
        }
    missing = [p for p in parts if not covers(p, response)]
    # An honest "I can't answer that" about general knowledge, or about the team's documents
    # when their search found nothing, is all the offline model can give at any depth: the
    # same tools give the same results however the question is planned.
    # So is "you declined the calculator, so I didn't compute …": the person said no to it.
    unanswerable = [
        p for p in missing if honestly_unanswerable(p, response) or declined_for(p, strip_label(response))
    ]
    if missing and len(unanswerable) == len(missing):
        return {
            "is_sufficient": True,
            # Enough for the strategy that asks: an honest "I can't" is no answer to double-check,
            # and the same decline passed under DIRECT and was flagged "low confidence" under LIGHT.
            "confidence": max(0.65, float(hints.get("threshold") or 0)),
            "reasoning": (
                "You declined the tool this part needed; planning deeper would only ask again, "
                "and the answer says so."
                if any(declined_for(p, strip_label(response)) for p in missing)
                else "The offline model cannot answer this part; a deeper strategy would not help, "
                "and the answer says so honestly."
            ),
            "missing_aspects": [],
            "deeper_would_help": False,
        }
    coverage = (len(parts) - len(missing)) / len(parts)
    confidence = round(0.9 * coverage + (0.05 if coverage == 1 else 0), 2)
    reasoning = (
        f"The answer covers {len(parts) - len(missing)} of the question's {counted(len(parts), 'part')}."
    )
    return {
        "is_sufficient": not missing,
        "confidence": confidence,
        "reasoning": reasoning,
        "missing_aspects": [as_ask(m) for m in missing],
        # A plan answers the parts one by one, so a direct answer that missed a part gains from
        # one; once the parts were planned, the offline model's tools give the same answers
        # however deep the strategy.
        "deeper_would_help": bool(missing) and len(parts) > 1 and hints.get("strategy") == "direct",
    }


def _completeness(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    findings = "\n".join(str(r.get("result", "")) for r in hints.get("results", []))
    parts = question_parts(query)
    missing = [p for p in parts if not covers(p, findings)]
    coverage = 1.0 if not parts else (len(parts) - len(missing)) / len(parts)
    return {
        "is_complete": not missing,
        "confidence": round(coverage, 2),
        "reasoning": f"Findings cover {coverage:.0%} of the question's parts.",
        "missing_aspects": missing,
        "additional_queries": [as_ask(m) for m in missing][:3],
    }


def _filter(hints: dict[str, Any]) -> dict[str, Any]:
    wanted = set(keywords(hints.get("query", "")))
    kept = []
    for index, result in enumerate(hints.get("results", []), 1):
        text = f"{result.get('query', '')} {result.get('result', '')}"
        overlap = len(wanted & set(keywords(text)))
        relevance = 10 if not wanted else round(10 * min(1.0, overlap / max(1, len(wanted)) + 0.3), 1)
        kept.append({"id": index, "relevance": relevance, "key_information": shorten(strip_label(text), 120)})
    return {"kept": kept}


def synthesize(hints: dict[str, Any]) -> str:
    results = hints.get("results", [])
    blocks, findings = [], []
    for result in results:
        finding = strip_label(str(result.get("result", "")))
        if finding:
            findings.append(finding)
            blocks.append(under_heading(str(result.get("query", "")), finding))
    if not blocks:
        return answer_without_tools(hints.get("query", ""))
    # Steps the offline model declined, every one: one plain decline, not each fragment of a
    # pasted email as a bold heading over the same paragraph (nor one heading over one decline).
    if all(finding.startswith(CANNOT) for finding in findings):
        return declined_whole(findings) or findings[0]
    return "\n\n".join(blocks)


def _critique(hints: dict[str, Any]) -> dict[str, Any]:
    steps = hints.get("steps", [])
    tools = set(hints.get("tools", []))
    issues = []
    for step in steps:
        for tool in step.get("tools", []):
            if tools and tool not in tools:
                issues.append(
                    {
                        "severity": "high",
                        "category": "feasibility",
                        "description": f"{step.get('id')} uses unknown tool {tool}",
                        "suggestion": "use an available tool",
                        "affected_steps": [step.get("id")],
                    }
                )
    parts = question_parts(hints.get("query", ""))
    covered = sum(
        1 for p in parts if any(set(keywords(p)) & set(keywords(s.get("description", ""))) for s in steps)
    )
    completeness = 1.0 if not parts else covered / len(parts)
    if completeness < 1:
        issues.append(
            {
                "severity": "medium",
                "category": "completeness",
                "description": "some parts of the question have no step",
                "suggestion": "add a step for each part",
                "affected_steps": [],
            }
        )
    overall = round(max(0.0, 0.95 * completeness - 0.2 * sum(i["severity"] == "high" for i in issues)), 2)
    return {
        "overall_score": overall,
        "feasibility_score": 0.9,
        "correctness_score": overall,
        "efficiency_score": 0.9 if len(steps) <= max(1, len(parts)) + 1 else 0.6,
        "safety_score": 1.0,
        "issues": issues,
        "strengths": ["one step per part of the question"] if completeness == 1 else [],
        "suggestions": [i["suggestion"] for i in issues],
        "recommendation": "approve" if overall >= 0.8 else "revise",
        "rationale": f"The steps cover {completeness:.0%} of the question's parts.",
    }


def _reflection(hints: dict[str, Any]) -> dict[str, Any]:
    """Lessons only from what the run's record shows: escalations with what was missing,
    tools that returned something, tools that failed."""
    try:
        quality = float(hints.get("quality"))
    except (TypeError, ValueError):
        quality = None
    lessons = []
    insights = []
    escalated = [a for a in hints.get("attempts", []) if a.get("status") == "escalated"]
    for attempt in escalated[:1]:
        missed = len(attempt.get("missing", []))
        if attempt.get("strategy") == "direct" and missed:
            lessons.append(
                "Questions with several separate parts need one plan step per part; a direct answer "
                f"left {counted(missed, 'part')} unanswered."
            )
        insights.append(
            {
                "category": "failure",
                "description": f"The {attempt.get('strategy')} attempt fell short and was escalated.",
                "evidence": [f"missing: {'; '.join(attempt.get('missing', [])) or 'not stated'}"],
                "impact": "medium",
            }
        )
    tools = hints.get("tools", [])
    helpful = [t["tool"] for t in tools if t.get("success") and not found_nothing(t.get("result", ""))]
    empty = [t["tool"] for t in tools if t.get("success") and found_nothing(t.get("result", ""))]
    failed = [t for t in tools if not t.get("success")]
    for tool in dict.fromkeys(helpful):
        if quality is not None and quality >= 0.7:
            lessons.append(
                f"The {tool.split('__')[-1]} tool gave the facts for this kind of question; use it again."
            )
    for tool in dict.fromkeys(empty):
        insights.append(
            {
                "category": "approach",
                "description": f"{tool.split('__')[-1]} returned nothing for this question.",
                "evidence": ["the tool's result said nothing matched"],
                "impact": "low",
            }
        )
    for tool in failed[:2]:
        lessons.append(_failure_lesson(str(tool["tool"]), str(tool.get("error") or "")))
    if hints.get("feedback"):
        feedback = hints["feedback"]
        insights.append(
            {
                "category": "success" if feedback.get("rating") == "up" else "failure",
                "description": "The person rated the answer "
                + str(feedback.get("rating") or "without a rating")
                + ".",
                "evidence": [shorten(str(feedback.get("comment") or "no comment"), 200)],
                "impact": "high",
            }
        )
    return {
        "insights": insights,
        "lessons": lessons[:3],
        "improvements": [
            {
                "area": "planning",
                "suggestion": "split multi-part questions early",
                "priority": "medium",
                "expected_impact": "fewer escalations",
            }
        ]
        if escalated
        else [],
        "confidence": 0.6,
    }


def _meta(hints: dict[str, Any]) -> dict[str, Any]:
    return {
        "reasoning_quality": 0.75,
        "confidence": 0.75,
        "concerns": [],
        "should_replan": False,
        "should_think_deeper": False,
        "recommended_passes": 1,
        "feedback": "Heuristic review: the plan follows the question's parts.",
        "clarifying_question": "",
    }


def _live(hints: dict[str, Any]) -> dict[str, Any]:
    finding = hints.get("finding", "")
    refused = is_refusal(finding)
    return {
        "should_continue": True,
        "should_deepen": False,
        "confidence_adjustment": -0.3 if refused else 0.1,
        "feedback": "The step could not be answered offline." if refused else "The step produced a finding.",
    }


def _thought(hints: dict[str, Any]) -> dict[str, Any]:
    text = hints.get("text", "")
    about = hints.get("about", "user")
    tools = hints.get("tools", [])
    if about == "assistant":
        parts = question_parts(hints.get("query", ""))
        missing = [p for p in parts if not covers(p, text)]
        call = plan_tool_call("; ".join(missing), tools) if missing else None
        return {
            "intent": "check my answer",
            "needs": missing,
            "plan": "answer the missing parts" if missing else "the answer is complete",
            "proposed_tools": [{"tool": call[0], "parameters": call[1]}] if call else [],
            "turn_complete": call is None,
            "confidence": 0.8 if not missing else 0.5,
        }
    call = plan_tool_call(text, tools)
    return {
        "intent": "get an exact answer",
        "needs": question_parts(text),
        "plan": "use a tool" if call else "answer directly",
        "proposed_tools": [{"tool": call[0], "parameters": call[1]}] if call else [],
        "turn_complete": False,
        "confidence": 0.7,
    }


_BUILDERS = {
    "record_complexity_analysis": _analysis,
    "record_plan": _plan,
    "record_quality_assessment": _quality,
    "record_completeness": _completeness,
    "record_relevant_results": _filter,
    "record_critique": _critique,
    "record_reflection": _reflection,
    "record_meta_evaluation": _meta,
    "record_live_assessment": _live,
    "record_thought": _thought,
}

# A failure of the server or the connection, not of what the tool was asked: no input fixes it.
# Nexus's own words for those (the registry's and the pool's), not a tool's about its input
# ("Issue #12 is already closed", "invalid connection string").
_SERVER_FAILURE = re.compile(
    r"\btimed out after\b|\bis unavailable\b|\bdid not answer\b|\bpaused until\b|"
    r"\bconnection (?:closed|lost|refused)\b|\bcrashed\b",
    re.I,
)


def _failure_lesson(tool: str, error: str) -> str:
    """The lesson of a failed tool call, naming the tool with its server ("Calculator (H hang)":
    a bare "calculator" read as Nexus's own), and advice that fits the failure: checking the
    input does nothing for a server that timed out or is down."""
    said = shorten(error, 80)
    if _SERVER_FAILURE.search(error):
        return f"{tool_label(tool)} may be unavailable or slow ({said}); answer without it when it fails."
    return f"{tool_label(tool)} can fail ({said}); check its input before calling it."
