"""The critic: checks a plan before it runs. quick_validate needs no model; critique_plan does."""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext
from reasoning.quality.outputs import CRITIQUE
from reasoning.tracker import find_cycle
from reasoning.types import ResearchPlan

APPROVAL_THRESHOLD = 0.8


def quick_validate(plan: ResearchPlan, available_tools: list[str]) -> dict[str, Any]:
    """Empty plans, dependency cycles and unknown tools, caught without a model call."""
    issues = []
    if not plan.subtasks:
        issues.append(
            {
                "severity": "critical",
                "category": "completeness",
                "description": "The plan has no steps.",
                "suggestion": "Add at least one step that answers the question.",
                "affected_steps": [],
            }
        )
    cycle = find_cycle({s.id: s.dependencies for s in plan.subtasks})
    if cycle:
        issues.append(
            {
                "severity": "critical",
                "category": "logic",
                "description": "The steps depend on each other in a cycle: " + " → ".join(cycle),
                "suggestion": "Remove a dependency so the steps can run in order.",
                "affected_steps": sorted(set(cycle)),
            }
        )
    known = set(available_tools)
    for step in plan.subtasks:
        unknown = [
            t
            for t in step.tool_hints
            if t not in known and t.split("__")[-1] not in {k.split("__")[-1] for k in known}
        ]
        if unknown:
            issues.append(
                {
                    "severity": "high",
                    "category": "feasibility",
                    "description": f"{step.id} names tools that do not exist: {', '.join(unknown)}",
                    "suggestion": f"Use only available tools: {', '.join(sorted(known)) or 'none'}.",
                    "affected_steps": [step.id],
                }
            )
    score = 0.9 if not issues else max(0.3, 0.9 - 0.2 * len(issues))
    return {
        "overall_score": score,
        "feasibility_score": score,
        "correctness_score": score,
        "efficiency_score": 0.9,
        "safety_score": 1.0,
        "issues": issues,
        "strengths": [],
        "suggestions": [i["suggestion"] for i in issues],
        "recommendation": "approve"
        if score >= APPROVAL_THRESHOLD
        else "reject"
        if cycle or not plan.subtasks
        else "revise",
        "rationale": "Structural check passed."
        if not issues
        else "Structural problems found before execution.",
        "valid": score >= APPROVAL_THRESHOLD,
    }


class Critic:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("critic")

    async def critique_plan(
        self,
        plan: ResearchPlan,
        query: str,
        available_tools: list[str],
        previous: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        steps = "\n".join(
            f"{s.id}. {s.query}\n   tools: {', '.join(s.tool_hints) or 'none'}\n   depends on: "
            f"{', '.join(s.dependencies) or 'none'}"
            for s in plan.subtasks
        )
        earlier = (
            "\n".join(
                f"- score {c['overall_score']:.2f}, {len(c['issues'])} issue(s): {c['rationale']}"
                for c in previous or []
            )
            or "(first critique)"
        )
        system, prompt = self.run.prompt(
            "reasoning/critique.txt",
            query=query,
            steps=steps,
            tools=", ".join(available_tools) or "(no tools)",
            previous=earlier,
        )
        return await self.llm.structured(
            CRITIQUE,
            system=system,
            prompt=prompt,
            max_tokens=1500,
            hints={
                "query": query,
                "tools": available_tools,
                "steps": [{"id": s.id, "description": s.query, "tools": s.tool_hints} for s in plan.subtasks],
            },
        )


def critique_text(critique: dict[str, Any]) -> str:
    """A critique as instructions for the planner's next version of the plan."""
    lines = [f"Score {critique['overall_score']:.2f} ({critique['recommendation']}): {critique['rationale']}"]
    lines += [f"- [{i['severity']}] {i['description']} → {i['suggestion']}" for i in critique["issues"]]
    lines += [f"- suggestion: {s}" for s in critique["suggestions"]]
    return "\n".join(lines)
