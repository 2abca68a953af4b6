"""How each strategy produces an answer: DIRECT asks once, LIGHT plans a little, DEEP researches.

Plan steps run as their dependencies finish, several at a time; a step completed in an
earlier attempt is not run again. The quality layers (plan critic, confidence routing, live
self-assessment) are called at their points from here; see reasoning/quality/gate.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reasoning.agent import AgentResult, run_agent, summarize
from reasoning.context import describe_error
from reasoning.driven import run_reasoning_driven
from reasoning.tracker import PlanStep
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy, require


class EarlyAnswer(Exception):
    """The quality layers decided to answer without executing (a clarifying question, or a
    plain statement that the system is not confident)."""

    def __init__(self, answer: str, kind: str) -> None:
        super().__init__(answer)
        self.answer = answer
        self.kind = kind


class StrategiesMixin:
    """Strategy execution for `_Run` (reasoning/loop.py), which provides the state used here."""

    async def execute_strategy(self, strategy: ExecutionStrategy, analysis: ComplexityAnalysis) -> str:
        if strategy == ExecutionStrategy.DIRECT:
            return await self.execute_direct()
        if strategy == ExecutionStrategy.LIGHT_PLANNING:
            return await self.execute_light(analysis)
        return await self.execute_deep(analysis)

    async def answer_with_tools(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        strategy: ExecutionStrategy,
        step_id: str | None = None,
        hints: dict[str, Any] | None = None,
    ) -> AgentResult:
        """The agent loop, or the reasoning-driven loop when EXECUTION_STYLE says so."""
        if self.config.execution_style == "reasoning_driven":
            return await run_reasoning_driven(
                self.ctx,
                query=messages[-1]["content"] if isinstance(messages[-1]["content"], str) else self.query,
                history=messages[:-1],
                executor=self.executor,
                max_iterations=self.config.max_tool_rounds,
                strategy=strategy,
                step_id=step_id,
            )
        return await run_agent(
            self.ctx.llm("agent"),
            system=system,
            messages=messages,
            executor=self.executor,
            max_rounds=self.config.max_tool_rounds,
            strategy=strategy,
            step_id=step_id,
            max_tokens=self.config.max_tokens,
            hints=hints,
        )

    async def execute_direct(self) -> str:
        require(self.tracker, "the run's tracker")
        context = ""
        if len(self.tracker.attempts) > 1:
            context = self.tracker.context_for(ExecutionStrategy.DIRECT)
        result = await self.answer_with_tools(
            system=self.system_prompt(context),
            messages=self.messages(self.query),
            strategy=ExecutionStrategy.DIRECT,
            hints={"query": self.query, "strategy": "direct"},
        )
        return result.text

    async def execute_light(self, analysis: ComplexityAnalysis) -> str:
        strategy = ExecutionStrategy.LIGHT_PLANNING
        await self.make_plan(strategy, analysis, "light")
        await self.emit("iteration", current=1, total=1, subtask="light plan")
        await self.run_ready_steps(strategy)
        results = self.step_results()
        if not results:
            return await self.execute_direct()
        if len(results) == 1:
            return results[0]["result"]
        return await self.synthesize(results, "light")

    async def execute_deep(self, analysis: ComplexityAnalysis) -> str:
        strategy = ExecutionStrategy.DEEP_REASONING
        tracker = require(self.tracker, "the run's tracker")
        await self.make_plan(strategy, analysis, "deep")
        total = self.config.max_iterations
        for iteration in range(1, total + 1):
            require(tracker.plan, "the plan")
            ready = tracker.plan.ready_steps()
            if not ready or self.halted:
                break
            await self.emit(
                "iteration",
                current=iteration,
                total=total,
                subtask="; ".join(s.description for s in ready[:4]),
            )
            await self.run_ready_steps(strategy)
            evaluation = await self.evaluate_research()
            if evaluation is None or evaluation.is_complete or iteration == total:
                break
            for extra in evaluation.additional_queries[:3]:
                await self.add_step(extra, reason="research incomplete")
        results = self.step_results()
        if not results:
            return await self.execute_direct()
        try:
            kept = await self.synthesizer().filter_results(self.query, results)
        except Exception as error:
            kept = results
            await self.degrade("filter", describe_error(error), "using every finding unfiltered")
        return await self.synthesize(kept, "deep")

    async def add_step(self, description: str, *, reason: str, after: PlanStep | None = None) -> bool:
        tracker = require(self.tracker, "the run's tracker")
        require(tracker.plan, "the plan")
        known = {s.description.lower() for s in tracker.plan.steps}
        if description.lower() in known or len(tracker.plan.steps) >= 3 * self.config.max_subtasks:
            return False
        step = PlanStep(
            id=f"step_dyn_{len(tracker.plan.steps) + 1}",
            description=description,
            spawned_from=after.id if after else tracker.plan.current_step_id,
        )
        if not tracker.plan.add_dynamic_step(step, after.id if after else None):
            return False
        await self.emit("plan.refined", plan=self.plan_payload(), added=[step.to_dict()], reason=reason)
        return True

    # --- planning and steps ----------------------------------------------------------

    async def make_plan(self, strategy: ExecutionStrategy, analysis: ComplexityAnalysis, mode: str) -> None:
        tracker = require(self.tracker, "the run's tracker")
        context: dict[str, Any] = {
            "mode": mode,
            "complexity": analysis.complexity_level.value,
            "available_tools": self.engine.tools.names(),
            "lessons": self.lessons,
            "conversation": self.conversation_text(),
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
        plan = await self.vetted_plan(context)
        assessment = await self.assess_plan(analysis, plan)
        if assessment is not None and assessment.action == "replan":
            plan = await self.vetted_plan({**context, "critique": self.replan_note(assessment)})
            assessment = await self.assess_plan(analysis, plan)
        self.route(assessment)
        plan.complexity_analysis = analysis
        refining = tracker.plan is not None
        added = tracker.set_plan(plan, strategy)
        await self.emit(
            "plan.refined" if refining else "plan.created",
            plan=self.plan_payload(),
            added=[s.to_dict() for s in added],
            mode=mode,
            summary=plan.strategy_summary,
            lessons_used=plan.lessons_used,
            strategy=strategy.value,
        )
        await self.save_checkpoint()

    async def run_ready_steps(self, strategy: ExecutionStrategy) -> None:
        """Run pending steps as their dependencies finish, at most max_parallel_steps at once."""
        tracker = require(self.tracker, "the run's tracker")
        require(tracker.plan, "the plan")
        plan = tracker.plan
        limit = self.config.max_parallel_steps if self.config.parallel_execution else 1
        running: dict[asyncio.Task[None], str] = {}
        try:
            while True:
                started = set(running.values())
                for step in [] if self.halted else plan.ready_steps():
                    if len(running) >= limit:
                        break
                    if step.id in started:
                        continue
                    tracker.update_step_status(step.id, "in_progress")
                    running[asyncio.create_task(self.run_step(step, strategy))] = step.id
                if not running:
                    return
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.pop(task)
                    task.result()
        finally:
            for task in running:
                task.cancel()

    async def run_step(self, step: PlanStep, strategy: ExecutionStrategy) -> None:
        tracker = require(self.tracker, "the run's tracker")
        await self.emit(
            "step.started",
            step_id=step.id,
            description=step.description,
            strategy=strategy.value,
            depends_on=step.depends_on,
        )
        try:
            result = await self.answer_with_tools(
                system=self.system_prompt(self.step_context(step, strategy)),
                messages=[{"role": "user", "content": step.description}],
                strategy=strategy,
                step_id=step.id,
                hints={
                    "query": step.description,
                    "strategy": strategy.value,
                    "step": step.id,
                    "original_query": self.query,
                },
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            tracker.update_step_status(step.id, "failed", findings=[f"Error: {describe_error(error)}"])
            await self.emit(
                "step.completed",
                step_id=step.id,
                status="failed",
                error=describe_error(error),
                findings="",
                tools_used=[],
                strategy=strategy.value,
            )
            return
        tracker.update_step_status(step.id, "completed", findings=[result.text], tools_used=result.tools_used)
        await self.emit(
            "step.completed",
            step_id=step.id,
            status="completed",
            findings=summarize(result.text, 600),
            tools_used=result.tools_used,
            strategy=strategy.value,
        )
        await self.save_checkpoint()
        await self.live_check(step, result.text, strategy)

    def step_context(self, step: PlanStep, strategy: ExecutionStrategy) -> str:
        tracker = require(self.tracker, "the run's tracker")
        require(tracker.plan, "the plan")
        parts = [f"You are working on one part of a larger question: {self.query}"]
        if strategy == ExecutionStrategy.DEEP_REASONING and len(tracker.attempts) > 1:
            parts.append(tracker.context_for(strategy))
        else:
            needed = [tracker.plan.step(d) for d in step.depends_on]
            earlier = [s for s in needed if s and s.status == "completed"]
            if earlier:
                parts.append("Findings from the steps this one builds on:")
                parts += [f"- {s.description}: {summarize('; '.join(s.findings), 1500)}" for s in earlier]
            if tracker.insights.knowledge_gaps:
                parts.append("Address these gaps if they concern this part:")
                parts += [f"- {gap}" for gap in tracker.insights.knowledge_gaps[:3]]
        parts.append("Answer only this part, precisely; another step covers the rest.")
        return "\n".join(parts)

    def step_results(self) -> list[dict[str, Any]]:
        require(require(self.tracker, "the run's tracker").plan, "the plan")
        return [
            {"step_id": s.id, "query": s.description, "result": "\n".join(s.findings)}
            for s in self.tracker.plan.get_completed_steps()
            if any(f.strip() for f in s.findings)
        ]

    async def evaluate_research(self) -> EvaluationResult | None:
        require(require(self.tracker, "the run's tracker").plan, "the plan")
        plan_text = "\n".join(f"- [{s.status}] {s.description}" for s in self.tracker.plan.steps)
        try:
            evaluation = await self.evaluator().evaluate(self.query, self.step_results(), plan_text)
        except Exception as error:
            await self.degrade("evaluator", describe_error(error), "treating the research as complete")
            return None
        self.tracker.insights.add_from_evaluation(evaluation)
        return evaluation

    async def synthesize(self, results: list[dict[str, Any]], mode: str) -> str:
        try:
            return await self.synthesizer().synthesize(self.query, results, mode)
        except Exception as error:
            await self.degrade(
                "synthesizer", describe_error(error), "returning the findings without synthesis"
            )
            return "\n\n".join(f"**{r['query']}**\n\n{r['result']}" for r in results)
