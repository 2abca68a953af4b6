"""Planner: decompose a question into subtasks, using what earlier attempts learned."""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext
from reasoning.structured import PLAN
from reasoning.types import ResearchPlan, SubTask

LIGHT_MAX_SUBTASKS = 2

_MODE_GUIDANCE = {
    "light": "Light mode: one or two subtasks, only what the question directly needs.",
    "deep": "Deep mode: a thorough plan; independent subtasks run in parallel, so prefer "
    "independent subtasks and add dependencies only where a step truly needs another's result.",
}


class Planner:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("planning")

    async def generate_plan(self, query: str, context: dict[str, Any] | None = None) -> ResearchPlan:
        context = context or {}
        config = self.run.config
        mode = context.get("mode", "deep")
        limit = min(config.max_subtasks, LIGHT_MAX_SUBTASKS) if mode == "light" else config.max_subtasks
        system, prompt = self.run.prompt(
            config.planning_prompt_path,
            query=query,
            mode=mode,
            mode_guidance=_MODE_GUIDANCE.get(mode, ""),
            max_subtasks=limit,
            tools=", ".join(context.get("available_tools", [])) or "(no tools)",
            context=planning_context(context),
        )
        data = await self.llm.structured(
            PLAN,
            system=system,
            prompt=prompt,
            max_tokens=2048,
            hints={"query": query, "mode": mode, "tools": context.get("available_tools", [])},
        )
        return build_plan(
            query, data, limit=limit, min_subtasks=config.min_subtasks, lessons=context.get("lessons", [])
        )


def build_plan(
    query: str, data: dict[str, Any], *, limit: int, min_subtasks: int, lessons: list[str]
) -> ResearchPlan:
    """Turn the model's plan into a ResearchPlan (ids unique, unknown dependencies dropped)."""
    subtasks = []
    seen: set[str] = set()
    for item in data["subtasks"][:limit]:
        step_id = item["id"]
        while step_id in seen:
            step_id += "_b"
        seen.add(step_id)
        subtasks.append(
            SubTask(
                id=step_id,
                query=item["description"],
                priority=item["priority"],
                tool_hints=item["tools"],
                dependencies=[d for d in item["depends_on"] if d != step_id],
            )
        )
    for subtask in subtasks:
        subtask.dependencies = [d for d in subtask.dependencies if d in seen]
    # Empty plans and dependency cycles are returned as they are: the plan gate's
    # validation reports them and asks the planner again (reasoning/quality/gate.py).
    return ResearchPlan(
        original_query=query,
        subtasks=subtasks,
        estimated_complexity=data["estimated_complexity"],
        strategy_summary=data["strategy_summary"],
        lessons_used=list(lessons),
        confidence=data.get("confidence", 0.7),
    )


def planning_context(context: dict[str, Any]) -> str:
    """What the planner should know: earlier attempts, gaps, completed steps, lessons."""
    parts: list[str] = []
    if context.get("conversation"):
        parts.append("## Recent conversation\n" + context["conversation"])
    if context.get("attachments"):
        parts.append(
            "## Attached by the person (every step sees their content; do not plan to search for them)\n"
            + context["attachments"]
        )
    if context.get("previous_attempts"):
        parts.append("## Earlier attempts that fell short")
        for attempt in context["previous_attempts"]:
            quality = attempt.get("quality")
            quality_text = "n/a" if quality is None else f"{quality:.2f}"
            parts.append(
                f"- {attempt['strategy']}: quality {quality_text}; {attempt.get('evaluation') or ''}"
            )
    if context.get("completed_steps"):
        parts.append("## Already completed (build on these, do not repeat them)")
        parts += [f"- {step}" for step in context["completed_steps"]]
    if context.get("knowledge_gaps"):
        parts.append("## Knowledge gaps to address")
        parts += [f"- {gap}" for gap in context["knowledge_gaps"]]
    if context.get("lessons"):
        parts.append("## Lessons from earlier runs")
        parts += [f"- {lesson}" for lesson in context["lessons"]]
    if context.get("critique"):
        parts.append("## Critique of the previous version of this plan (fix these issues)")
        parts.append(context["critique"])
    return "\n".join(parts) or "(no earlier work)"


def direct_plan(query: str) -> ResearchPlan:
    """The planner's fallback: one step, the question itself."""
    return ResearchPlan(
        original_query=query,
        subtasks=[SubTask(id="step_1", query=query, priority=1)],
        estimated_complexity="low",
        strategy_summary="Answer the question directly.",
    )
