"""The meta-agent: questions the reasoning while it happens, and the whole of it before acting."""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext
from reasoning.quality.outputs import LIVE, META


class MetaAgent:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("meta")

    async def live_self_assessment(self, step: str, finding: str, confidence: float) -> dict[str, Any]:
        """After one reasoning step: continue? deepen? how much to trust it (-1 … 1)?"""
        system, prompt = self.run.prompt(
            "reasoning/live_assessment.txt", step=step, finding=finding[:4000], confidence=f"{confidence:.2f}"
        )
        return await self.llm.structured(
            LIVE, system=system, prompt=prompt, max_tokens=500, hints={"step": step, "finding": finding}
        )

    async def evaluate_reasoning(
        self,
        query: str,
        thoughts: list[dict[str, Any]],
        plan: dict[str, Any],
        critique: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Over the thoughts, plan and critique: quality, confidence, concerns, replan or not."""
        thought_text = (
            "\n".join(f"- ({t.get('confidence', 0):.2f}) {t.get('reasoning', '')[:300]}" for t in thoughts)
            or "(none)"
        )
        critique_text = (
            "(no critique)"
            if critique is None
            else f"score {critique['overall_score']:.2f}, {len(critique['issues'])} issue(s), "
            f"recommendation {critique['recommendation']}"
        )
        system, prompt = self.run.prompt(
            "reasoning/meta_evaluation.txt",
            query=query,
            thoughts=thought_text,
            goal=plan.get("goal", query),
            steps="\n".join(f"- {s}" for s in plan.get("steps", [])),
            plan_confidence=f"{plan.get('confidence', 0):.2f}",
            critique=critique_text,
        )
        return await self.llm.structured(
            META, system=system, prompt=prompt, max_tokens=1000, hints={"query": query, "plan": plan}
        )
