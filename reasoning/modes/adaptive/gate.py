"""Where the quality layers act on a plan (seed 004).

Before a plan runs: structural validation (no model call), then, for DEEP plans, the critic;
plans scoring below the approval threshold go back to the planner with the critique, a
bounded number of rounds. Then the meta-agent evaluates the reasoning and the confidence
scorer routes the decision: execute, execute with caution, replan, ask the user one
clarifying question, or say plainly that the system is not confident. While DEEP steps run,
the meta-agent assesses each finding. LIGHT plans (one or two steps) get the structural
check only: a critique would cost as much as the plan it reviews.
"""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext, describe_error
from reasoning.planner import Planner, direct_plan
from reasoning.quality.confidence import ConfidenceAssessment, calculate_confidence
from reasoning.quality.critic import Critic, critique_text, quick_validate
from reasoning.quality.meta import MetaAgent
from reasoning.tracker import PlanStep
from reasoning.types import ComplexityAnalysis, ResearchPlan

PHASE_PLAN_REVIEW = "Plan Review"


class EarlyAnswer(Exception):
    """The quality layers decided to answer without executing (a clarifying question, or a
    plain statement that the system is not confident)."""

    def __init__(self, answer: str, kind: str) -> None:
        super().__init__(answer)
        self.answer = answer
        self.kind = kind


class PlanGate:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.critiques: list[dict[str, Any]] = []
        self.meta_evaluation: dict[str, Any] | None = None
        self.halted = False
        self.confidence = 0.7

    async def vetted_plan(self, context: dict[str, Any], *, critic: bool) -> ResearchPlan:
        """A plan that passed validation (and the critic, if asked and enabled), or the
        single-step fallback."""
        ctx = self.ctx
        config = ctx.config
        tools = ctx.tools.names()
        use_critic = critic and config.enable_critic
        rounds = 1 + config.max_critique_rounds
        best: ResearchPlan | None = None
        problem = ""
        for round_number in range(1, rounds + 1):
            try:
                plan = await Planner(ctx).generate_plan(ctx.question, context)
            except Exception as error:
                problem = describe_error(error)
                await ctx.degrade(
                    "planner",
                    problem,
                    "retrying" if round_number < rounds else "answering the question as a single step",
                )
                continue
            quick = quick_validate(plan, tools)
            if not quick["valid"]:
                await self.record_critique(quick, round_number, quick=True)
                problem = "; ".join(i["description"] for i in quick["issues"])
                context = {**context, "critique": critique_text(quick)}
                continue
            best = plan
            if not use_critic:
                return plan
            try:
                critique = await Critic(ctx).critique_plan(plan, ctx.question, tools, self.critiques)
            except Exception as error:
                await ctx.degrade("critic", describe_error(error), "executing the plan without a critique")
                return plan
            await self.record_critique(critique, round_number)
            if critique["overall_score"] >= config.critique_approval_threshold:
                return plan
            if critique["recommendation"] == "reject":
                best = None
            context = {**context, "critique": critique_text(critique)}
        if best is not None:
            return best
        await ctx.degrade(
            "planner",
            f"no executable plan after {rounds} attempt(s): {problem or 'rejected'}",
            "answering the question as a single step",
        )
        fallback = direct_plan(ctx.question)
        fallback.lessons_used = list(ctx.lessons)
        return fallback

    async def record_critique(
        self, critique: dict[str, Any], round_number: int, *, quick: bool = False
    ) -> None:
        clean = {k: v for k, v in critique.items() if k != "valid"}
        self.critiques.append(clean)
        await self.ctx.emit(
            "critique.completed", PHASE_PLAN_REVIEW, critique=clean, round=round_number, quick=quick
        )

    async def assess_plan(
        self, analysis: ComplexityAnalysis, plan: ResearchPlan
    ) -> ConfidenceAssessment | None:
        """The meta-agent's evaluation and the scorer's decision (None with both layers off)."""
        ctx = self.ctx
        if not (ctx.config.enable_critic or ctx.config.enable_meta):
            return None
        critique = self.critiques[-1] if self.critiques else None
        self.meta_evaluation = None
        if ctx.config.enable_meta:
            try:
                self.meta_evaluation = await MetaAgent(ctx).evaluate_reasoning(
                    ctx.question,
                    [{"reasoning": analysis.rationale, "confidence": analysis.confidence}],
                    {
                        "goal": ctx.question,
                        "steps": [s.query for s in plan.subtasks],
                        "confidence": plan.confidence,
                    },
                    critique,
                )
                await ctx.emit(
                    "meta.assessment", PHASE_PLAN_REVIEW, assessment="evaluation", **self.meta_evaluation
                )
            except Exception as error:
                await ctx.degrade("meta_agent", describe_error(error), "continuing without a meta-evaluation")
        thought = analysis.confidence if "complexity_analysis" not in ctx.degraded else 0.5
        assessment = calculate_confidence(thought, plan.confidence, critique, self.meta_evaluation)
        await ctx.emit("confidence.assessed", **assessment.to_dict())
        return assessment

    def replan_note(self, assessment: ConfidenceAssessment) -> str:
        """What the planner is told when the scorer asks for a new plan."""
        meta = self.meta_evaluation or {}
        lines = [
            f"The last plan scored {assessment.overall_confidence:.2f} confidence: {assessment.reasoning}"
        ]
        lines += [f"- concern: {c}" for c in meta.get("concerns", [])]
        if self.critiques:
            lines.append(critique_text(self.critiques[-1]))
        return "\n".join(lines)

    def route(self, assessment: ConfidenceAssessment | None) -> None:
        """Clarify or decline instead of executing, when confidence is too low to guess."""
        if assessment is None:
            return
        question = (self.meta_evaluation or {}).get("clarifying_question")
        if assessment.action == "clarify" and question:
            raise EarlyAnswer(question, "clarification")
        if assessment.action == "escalate":
            risks = "; ".join(assessment.risk_factors) or "the plan and its review disagree"
            raise EarlyAnswer(
                "I'm not confident I can answer this well, so I'd rather not guess. "
                f"{assessment.reasoning} What worries me: {risks}. Could you rephrase the question, narrow "
                "it down, or ask someone who knows?",
                "low_confidence",
            )

    async def live_check(self, step: PlanStep, finding: str) -> bool:
        """The meta-agent's live look at one step's finding; True when it asks to look deeper."""
        ctx = self.ctx
        if not ctx.config.enable_meta:
            return False
        try:
            live = await MetaAgent(ctx).live_self_assessment(step.description, finding, self.confidence)
        except Exception as error:
            await ctx.degrade("meta_agent", describe_error(error), "continuing without live assessment")
            return False
        self.confidence = max(0.0, min(1.0, self.confidence + live["confidence_adjustment"] * 0.2))
        await ctx.emit(
            "meta.assessment", assessment="live", step_id=step.id, confidence=self.confidence, **live
        )
        if not live["should_continue"]:
            self.halted = True
            return False
        return bool(live["should_deepen"])
