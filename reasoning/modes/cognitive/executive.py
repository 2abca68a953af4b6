"""ExecutiveAgent (executive function): goals, plan, evaluation and synthesis.

It owns no reasoning of its own: it drives the adaptive engine's Planner, Critic, Evaluator
and Synthesizer (the same objects, on the same run context), so the cognitive mode plans and
judges exactly as well as the adaptive one. What it adds is the order of things: a plan
sized by what Perception read, research checked for completeness between rounds, one answer
written from the findings and checked before anyone relies on it. Each component's failure
has the adaptive mode's fallback and says so (`component.degraded`).
"""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext, describe_error
from reasoning.evaluator import Evaluator
from reasoning.modes.adaptive.parts import combine, parts_plan, question_parts
from reasoning.modes.cognitive.messaging import Agent, CognitiveContext, CognitiveMessage
from reasoning.planner import Planner, direct_plan
from reasoning.quality.critic import Critic, critique_text
from reasoning.synthesizer import Synthesizer
from reasoning.types import ComplexityAnalysis, ExecutionStrategy, ResearchPlan, require

CRITIQUE_APPROVE = 0.7


class ExecutiveAgent(Agent):
    name = "executive"

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    async def handle(
        self, message: CognitiveMessage, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        action = message.action
        if action == "plan":
            return await self.plan(ExecutionStrategy(message.payload["strategy"]), workspace)
        if action == "next_actions":
            return self.next_actions()
        if action == "evaluate":
            return await self.evaluate(workspace)
        if action == "synthesize":
            return await self.synthesize(message.payload.get("mode", "deep"), workspace)
        if action == "check":
            return await self.check(message.payload["answer"], ExecutionStrategy(message.payload["strategy"]))
        raise ValueError(f"executive has no action {action!r}")

    # --- goals and plan ------------------------------------------------------------------

    async def plan(
        self, strategy: ExecutionStrategy, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        refining = tracker.plan is not None
        if refining:
            # An escalation: the answer that fell short is no finding to build on.
            for step in require(tracker.plan, "the plan").steps:
                if step.description == ctx.question:
                    step.status = "skipped"
        plan = await self.make_plan(strategy, workspace)
        plan.complexity_analysis = tracker.complexity
        added = tracker.set_plan(plan, strategy)
        workspace.current_plan = require(tracker.plan, "the plan").to_dict()
        await ctx.emit(
            "plan.refined" if refining else "plan.created",
            plan=workspace.current_plan,
            added=[s.to_dict() for s in added],
            mode=strategy.value,
            summary=plan.strategy_summary,
            lessons_used=plan.lessons_used,
            strategy=strategy.value,
        )
        await ctx.save_checkpoint()
        steps = [s.description for s in require(tracker.plan, "the plan").steps if s.status != "skipped"]
        return {
            "steps": steps,
            "summary": plan.strategy_summary,
        }, f"{len(steps)} step(s): {plan.strategy_summary}"

    async def make_plan(self, strategy: ExecutionStrategy, workspace: CognitiveContext) -> ResearchPlan:
        ctx = self.ctx
        if strategy == ExecutionStrategy.DIRECT:
            return direct_plan(ctx.question)
        parts = question_parts(ctx.question)
        if strategy == ExecutionStrategy.LIGHT_PLANNING and len(parts) >= 2:
            return parts_plan(ctx.question, parts, ctx.lessons)
        mode = "light" if strategy == ExecutionStrategy.LIGHT_PLANNING else "deep"
        context: dict[str, Any] = {
            "mode": mode,
            "available_tools": ctx.tools.names(),
            "lessons": ctx.lessons,
            "conversation": ctx.conversation_text(),
            "attachments": ctx.attachment_titles() if ctx.attachments else "",
        }
        tracker = require(ctx.tracker, "the run's tracker")
        if tracker.plan is not None:
            context["completed_steps"] = [s.description for s in tracker.plan.get_completed_steps()]
            context["knowledge_gaps"] = tracker.insights.knowledge_gaps
        planner = Planner(ctx)
        try:
            plan = await planner.generate_plan(ctx.question, context)
        except Exception as error:
            await ctx.degrade("planner", describe_error(error), "answering the question as one step")
            return direct_plan(ctx.question)
        if mode != "deep" or not ctx.config.enable_critic:
            return plan
        try:
            critique = await Critic(ctx).critique_plan(plan, ctx.question, ctx.tools.names())
        except Exception as error:
            await ctx.degrade("critic", describe_error(error), "using the plan without a critique")
            return plan
        await ctx.emit("critique.completed", critique=critique, round=1)
        if critique["overall_score"] >= CRITIQUE_APPROVE or critique["recommendation"] == "approve":
            return plan
        try:
            return await planner.generate_plan(ctx.question, {**context, "critique": critique_text(critique)})
        except Exception as error:
            await ctx.degrade("planner", describe_error(error), "using the first plan despite its critique")
            return plan

    def next_actions(self) -> tuple[dict[str, Any], str]:
        tracker = require(self.ctx.tracker, "the run's tracker")
        ready = require(tracker.plan, "the plan").ready_steps()
        steps = [{"id": s.id, "description": s.description, "priority": s.priority} for s in ready]
        return {"steps": steps}, f"{len(steps)} step(s) ready" if steps else "nothing left to do"

    # --- evaluation and synthesis ------------------------------------------------------

    def results(self) -> list[dict[str, Any]]:
        plan = require(require(self.ctx.tracker, "the run's tracker").plan, "the plan")
        return [
            {"step_id": s.id, "query": s.description, "result": "\n".join(s.findings)}
            for s in plan.get_completed_steps()
            if any(f.strip() for f in s.findings)
        ]

    async def evaluate(self, workspace: CognitiveContext) -> tuple[dict[str, Any], str]:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        plan = require(tracker.plan, "the plan")
        plan_text = "\n".join(f"- [{s.status}] {s.description}" for s in plan.steps)
        try:
            evaluation = await Evaluator(ctx).evaluate(ctx.question, self.results(), plan_text)
        except Exception as error:
            await ctx.degrade("evaluator", describe_error(error), "treating the research as complete")
            return {
                "is_complete": True,
                "additional_queries": [],
            }, "evaluator unavailable: research taken as complete"
        tracker.insights.add_from_evaluation(evaluation)
        workspace.confidence = evaluation.confidence
        said = (
            "complete"
            if evaluation.is_complete
            else f"incomplete: {len(evaluation.additional_queries)} more question(s)"
        )
        return {
            "is_complete": evaluation.is_complete,
            "additional_queries": evaluation.additional_queries[:3],
        }, said

    async def synthesize(self, mode: str, workspace: CognitiveContext) -> tuple[dict[str, Any], str]:
        ctx = self.ctx
        results = self.results()
        if not results:
            return {"answer": "", "draft": None}, "no findings to write from"
        attempt = len(require(ctx.tracker, "the run's tracker").attempts)
        if len(results) == 1 or mode == "light":
            answer = results[0]["result"] if len(results) == 1 else combine(results)
            current = ctx.drafts.current
            if current is not None and not current.discarded and current.text.strip() == answer.strip():
                return {"answer": answer, "draft": current.id}, "the one finding is the answer"
            draft = ctx.drafts.open(attempt=attempt, strategy="cognitive")
            await draft.delta(answer)
            await draft.close()
            return {"answer": answer, "draft": draft.id}, f"combined {len(results)} finding(s), no call"
        draft = ctx.drafts.open(attempt=attempt, strategy="cognitive")
        try:
            text = await Synthesizer(ctx).synthesize(ctx.question, results, mode, on_text=draft)
        except Exception as error:
            draft.stop()
            await draft.discard("failed")
            await ctx.degrade(
                "synthesizer", describe_error(error), "returning the findings without synthesis"
            )
            return {
                "answer": combine(results),
                "draft": None,
            }, "synthesizer failed: findings returned as they are"
        await draft.close()
        return {"answer": text, "draft": draft.id}, f"wrote one answer from {len(results)} finding(s)"

    async def check(self, answer: str, strategy: ExecutionStrategy) -> tuple[dict[str, Any], str]:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        evaluation = await ctx.judge_answer(answer, strategy, tracker.complexity, draft=ctx.drafts.current_id)
        threshold = ctx.config.quality_threshold(strategy)
        verdict = "approved" if evaluation.is_complete else f"short of {threshold}"
        return {"evaluation": evaluation.to_dict()}, f"quality {evaluation.confidence:.2f} ({verdict})"


def strategy_for(analysis: ComplexityAnalysis) -> ExecutionStrategy:
    return analysis.recommended_strategy
