"""Plan steps: making the plan an attempt runs, and running its steps as their dependencies
finish, several at a time (a step completed in an earlier attempt is not run again)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reasoning.agent import AgentResult, summarize
from reasoning.context import RunContext, describe_error
from reasoning.drafts import DraftStream
from reasoning.modes.adaptive.answering import Answerer
from reasoning.modes.adaptive.gate import PlanGate
from reasoning.modes.adaptive.parts import parts_plan, question_parts
from reasoning.tracker import PlanStep
from reasoning.types import ComplexityAnalysis, ExecutionStrategy, ResearchPlan, require


class StepRunner:
    """Plans, and runs plan steps as their dependencies finish."""

    def __init__(self, ctx: RunContext, gate: PlanGate, answerer: Answerer) -> None:
        self.ctx = ctx
        self.gate = gate
        self.answerer = answerer

    async def make_plan(
        self,
        strategy: ExecutionStrategy,
        analysis: ComplexityAnalysis,
        mode: str,
        *,
        plan: ResearchPlan | None = None,
    ) -> None:
        """Plan the attempt (`plan`: one already made from the question's own parts)."""
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        context: dict[str, Any] = {
            "mode": mode,
            "complexity": analysis.complexity_level.value,
            "available_tools": ctx.tools.names(),
            "lessons": ctx.lessons,
            "conversation": ctx.conversation_text(),
            "attachments": ctx.attachment_titles() if ctx.attachments else "",
        }
        if len(tracker.attempts) > 1:
            context["previous_attempts"] = [
                {
                    "strategy": a.strategy.value,
                    "quality": a.quality_score,
                    "evaluation": a.evaluation.reasoning if a.evaluation else None,
                }
                for a in tracker.attempts[:-1]
            ]
            context["knowledge_gaps"] = tracker.insights.knowledge_gaps
            context["completed_steps"] = (
                [s.description for s in tracker.plan.get_completed_steps()] if tracker.plan else []
            )
        deep = strategy == ExecutionStrategy.DEEP_REASONING
        parts = [] if deep or tracker.plan is not None else question_parts(ctx.question)
        if plan is not None:
            pass
        elif len(parts) >= 2:
            # The question already lists its parts: they are the light plan, no planning call.
            plan = parts_plan(ctx.question, parts, ctx.lessons)
        else:
            plan = await self.gate.vetted_plan(context, critic=deep)
        if deep:
            assessment = await self.gate.assess_plan(analysis, plan)
            if assessment is not None and assessment.action == "replan":
                plan = await self.gate.vetted_plan(
                    {**context, "critique": self.gate.replan_note(assessment)}, critic=True
                )
                assessment = await self.gate.assess_plan(analysis, plan)
            self.gate.route(assessment)
        plan.complexity_analysis = analysis
        refining = tracker.plan is not None
        added = tracker.set_plan(plan, strategy)
        await ctx.emit(
            "plan.refined" if refining else "plan.created",
            plan=self.plan_payload(),
            added=[s.to_dict() for s in added],
            mode=mode,
            summary=plan.strategy_summary,
            lessons_used=plan.lessons_used,
            strategy=strategy.value,
        )
        await ctx.save_checkpoint()

    def plan_payload(self) -> dict[str, Any] | None:
        tracker = self.ctx.tracker
        return tracker.plan.to_dict() if tracker and tracker.plan else None

    async def add_step(self, description: str, *, reason: str, after: PlanStep | None = None) -> bool:
        tracker = require(self.ctx.tracker, "the run's tracker")
        plan = require(tracker.plan, "the plan")
        known = {s.description.lower() for s in plan.steps}
        if description.lower() in known or len(plan.steps) >= 3 * self.ctx.config.max_subtasks:
            return False
        step = PlanStep(
            id=f"step_dyn_{len(plan.steps) + 1}",
            description=description,
            spawned_from=after.id if after else plan.current_step_id,
        )
        if not plan.add_dynamic_step(step, after.id if after else None):
            return False
        await self.ctx.emit("plan.refined", plan=self.plan_payload(), added=[step.to_dict()], reason=reason)
        return True

    async def run_ready_steps(
        self, strategy: ExecutionStrategy, *, stream: Callable[[], DraftStream] | None = None
    ) -> None:
        """Run pending steps as their dependencies finish, at most max_parallel_steps at once."""
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        plan = require(tracker.plan, "the plan")
        limit = ctx.config.max_parallel_steps if ctx.config.parallel_execution else 1
        running: dict[asyncio.Task[None], str] = {}
        try:
            while True:
                started = set(running.values())
                for step in [] if self.gate.halted else plan.ready_steps():
                    if len(running) >= limit:
                        break
                    if step.id in started:
                        continue
                    tracker.update_step_status(step.id, "in_progress")
                    running[asyncio.create_task(self.run_step(step, strategy, stream))] = step.id
                if not running:
                    return
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.pop(task)
                    task.result()
        finally:
            for task in running:
                task.cancel()

    async def run_step(
        self, step: PlanStep, strategy: ExecutionStrategy, stream: Callable[[], DraftStream] | None = None
    ) -> None:
        ctx = self.ctx
        await self.start_step(step, strategy, mark=False)
        try:
            result = await self.answerer.answer(
                question=step.description,
                history=[],
                notes=self.step_notes(step, strategy),
                strategy=strategy,
                step_id=step.id,
                hints={
                    "query": step.description,
                    "strategy": strategy.value,
                    "step": step.id,
                    "original_query": ctx.question,
                },
                open_draft=stream,
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            await self.finish_step(step, strategy, error=describe_error(error))
            return
        await self.finish_step(step, strategy, result=result)
        if strategy == ExecutionStrategy.DEEP_REASONING and await self.gate.live_check(step, result.text):
            await self.add_step(
                f"Look more closely at: {step.description}", reason="meta-agent: think deeper", after=step
            )

    async def start_step(self, step: PlanStep, strategy: ExecutionStrategy, *, mark: bool = True) -> None:
        """Say a step started (`mark`: also mark it in progress, when no scheduler did)."""
        if mark:
            require(self.ctx.tracker, "the run's tracker").update_step_status(step.id, "in_progress")
        await self.ctx.emit(
            "step.started",
            step_id=step.id,
            description=step.description,
            strategy=strategy.value,
            depends_on=step.depends_on,
        )

    async def finish_step(
        self,
        step: PlanStep,
        strategy: ExecutionStrategy,
        *,
        result: AgentResult | None = None,
        error: str = "",
        findings: str | None = None,
        tools_used: list[str] | None = None,
    ) -> None:
        """Record a step's outcome: its answer (`findings` overrides what the trace shows of
        it, `tools_used` which of the answer's tools were the step's), or the error that failed
        it."""
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        if result is None:
            tracker.update_step_status(step.id, "failed", findings=[f"Error: {error}"])
            await ctx.emit(
                "step.completed",
                step_id=step.id,
                status="failed",
                error=error,
                findings="",
                tools_used=[],
                strategy=strategy.value,
            )
            return
        tools = result.tools_used if tools_used is None else tools_used
        tracker.update_step_status(step.id, "completed", findings=[result.text], tools_used=tools)
        await ctx.emit(
            "step.completed",
            step_id=step.id,
            status="completed",
            findings=summarize(result.text, 600) if findings is None else findings,
            tools_used=tools,
            strategy=strategy.value,
        )
        await ctx.save_checkpoint()

    def step_notes(self, step: PlanStep, strategy: ExecutionStrategy) -> str:
        tracker = require(self.ctx.tracker, "the run's tracker")
        plan = require(tracker.plan, "the plan")
        parts = [f"You are working on one part of a larger question: {self.ctx.question}"]
        if strategy == ExecutionStrategy.DEEP_REASONING and len(tracker.attempts) > 1:
            parts.append(tracker.context_for(strategy))
        else:
            needed = [plan.step(d) for d in step.depends_on]
            earlier = [s for s in needed if s and s.status == "completed"]
            if earlier:
                parts.append("Findings from the steps this one builds on:")
                parts += [f"- {s.description}: {summarize('; '.join(s.findings), 1500)}" for s in earlier]
            if tracker.insights.knowledge_gaps:
                parts.append("Address these gaps if they concern this part:")
                parts += [f"- {gap}" for gap in tracker.insights.knowledge_gaps[:3]]
        parts.append("Answer only this part, precisely; another step covers the rest.")
        return "\n".join(parts)

    def results(self) -> list[dict[str, Any]]:
        plan = require(require(self.ctx.tracker, "the run's tracker").plan, "the plan")
        return [
            {"step_id": s.id, "query": s.description, "result": "\n".join(s.findings)}
            for s in plan.get_completed_steps()
            if any(f.strip() for f in s.findings)
        ]
