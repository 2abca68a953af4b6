"""ConfidenceScorer: one number from every layer's confidence, and what to do about it.

A pure function, so its arithmetic can be pinned by table tests (seed 004): weights
0.3/0.3/0.2/0.2 for thought, plan, critique and meta; a missing component's weight moves to
thought and plan (+0.1 each); 0.2 off per critical issue and 0.05 per meta concern; the
result clamped to [0, 1]; then overrides and thresholds choose the action.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXECUTE = 0.8
EXECUTE_WITH_CAUTION = 0.6
CLARIFY = 0.4
REPLAN = 0.2

ACTIONS = ("execute", "execute_with_caution", "clarify", "replan", "escalate")


@dataclass
class ConfidenceAssessment:
    overall_confidence: float
    components: dict[str, float | None]
    action: str
    reasoning: str
    risk_factors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall_confidence": self.overall_confidence,
            "components": dict(self.components),
            "action": self.action,
            "reasoning": self.reasoning,
            "risk_factors": list(self.risk_factors),
        }


def calculate_confidence(
    thought: float,
    plan: float,
    critique: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> ConfidenceAssessment:
    """`critique` and `meta` are the critic's and meta-agent's outputs (dicts), or None if absent."""
    critique_score = critique["overall_score"] if critique is not None else None
    meta_score = meta["confidence"] if meta is not None else None
    weights = {"thought": 0.3, "plan": 0.3, "critique": 0.2, "meta": 0.2}
    for value in (critique_score, meta_score):
        if value is None:
            weights["thought"] += 0.1
            weights["plan"] += 0.1
    overall = thought * weights["thought"] + plan * weights["plan"]
    if critique_score is not None:
        overall += critique_score * weights["critique"]
    if meta_score is not None:
        overall += meta_score * weights["meta"]
    critical = sum(1 for i in (critique or {}).get("issues", []) if i.get("severity") == "critical")
    overall -= 0.2 * critical
    concerns = len((meta or {}).get("concerns", []))
    overall -= 0.05 * concerns
    overall = round(max(0.0, min(1.0, overall)), 6)
    action = _action(overall, critique, meta)
    risks = _risks(thought, plan, critique, meta)
    return ConfidenceAssessment(
        overall_confidence=overall,
        components={"thought": thought, "plan": plan, "critique": critique_score, "meta": meta_score},
        action=action,
        reasoning=_reasoning(overall, action, risks),
        risk_factors=risks,
    )


def _action(confidence: float, critique: dict[str, Any] | None, meta: dict[str, Any] | None) -> str:
    if critique is not None and critique.get("recommendation") == "reject" and confidence < 0.6:
        return "replan"
    if meta is not None and meta.get("should_replan") and confidence < 0.7:
        return "replan"
    if confidence >= EXECUTE:
        return "execute"
    if confidence >= EXECUTE_WITH_CAUTION:
        return "execute_with_caution"
    if confidence >= CLARIFY:
        return "clarify"
    if confidence >= REPLAN:
        return "replan"
    return "escalate"


def _risks(
    thought: float, plan: float, critique: dict[str, Any] | None, meta: dict[str, Any] | None
) -> list[str]:
    risks = []
    if thought < 0.5:
        risks.append("Low confidence in reasoning")
    if plan < 0.5:
        risks.append("Low confidence in plan")
    if critique is not None:
        if critique["overall_score"] < 0.6:
            risks.append("Plan has quality issues")
        severe = [i for i in critique.get("issues", []) if i.get("severity") in ("high", "critical")]
        if severe:
            risks.append(f"{len(severe)} high-severity issues found")
    if meta is not None and meta.get("concerns"):
        risks.append("Meta-evaluation raised concerns")
    return risks


def _reasoning(confidence: float, action: str, risks: list[str]) -> str:
    text = f"Overall confidence: {confidence * 100:.0f}%. "
    listed = ", ".join(risks)
    return (
        text
        + {
            "execute": "High confidence. Proceeding with execution.",
            "execute_with_caution": "Moderate confidence. Proceeding with caution."
            + (f" Risks: {listed}." if risks else ""),
            "clarify": "Low confidence. Requesting clarification before proceeding.",
            "replan": "Very low confidence. Replanning recommended."
            + (f" Issues: {listed}." if risks else ""),
            "escalate": "Extremely low confidence. Human assistance recommended.",
        }[action]
    )
