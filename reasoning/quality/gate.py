"""Where the quality layers act in a run (seed 004).

Before a plan runs: structural validation, then the critic; plans scoring below the
approval threshold go back to the planner with the critique, a bounded number of rounds.
Then the meta-agent evaluates the reasoning and the confidence scorer routes the decision:
execute, execute with caution, replan, ask the user one clarifying question, or say plainly
that the system is not confident. While steps run, the meta-agent assesses each finding.
After the answer, the reflection agent extracts lessons for later runs.
"""

from __future__ import annotations

from typing import Any

from reasoning.context import describe_error
from reasoning.execution import EarlyAnswer
from reasoning.planner import Planner, direct_plan
from reasoning.quality.confidence import calculate_confidence
from reasoning.quality.critic import Critic, critique_text, quick_validate
from reasoning.quality.meta import MetaAgent
from reasoning.quality.reflection import ReflectionAgent
from reasoning.tracker import PlanStep
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy, ResearchPlan

PHASE_PLAN_REVIEW = "Plan Review"


class QualityMixin:
    """Quality gates for `_Run` (reasoning/loop.py)."""

    async def vetted_plan(self, context: dict[str, Any]) -> ResearchPlan:
        """A plan that passed validation (and the critic, if enabled), or the single-step fallback."""
        tools = self.engine.tools.names()
        rounds = 1 + self.config.max_critique_rounds
        best: ResearchPlan | None = None
        problem = ""
        for round_number in range(1, rounds + 1):
            try:
                plan = await Planner(self.ctx).generate_plan(self.query, context)
            except Exception as error:
                problem = describe_error(error)
                await self.degrade(
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
            if not self.config.enable_critic:
                return plan
            try:
                critique = await Critic(self.ctx).critique_plan(plan, self.query, tools, self.critiques)
            except Exception as error:
                await self.degrade("critic", describe_error(error), "executing the plan without a critique")
                return plan
            await self.record_critique(critique, round_number)
            if critique["overall_score"] >= self.config.critique_approval_threshold:
                return plan
            if critique["recommendation"] == "reject":
                best = None
            context = {**context, "critique": critique_text(critique)}
        if best is not None:
            return best
        await self.degrade(
            "planner",
            f"no executable plan after {rounds} attempt(s): {problem or 'rejected'}",
            "answering the question as a single step",
        )
        fallback = direct_plan(self.query)
        fallback.lessons_used = list(self.lessons)
        return fallback

    async def record_critique(
        self, critique: dict[str, Any], round_number: int, *, quick: bool = False
    ) -> None:
        clean = {k: v for k, v in critique.items() if k != "valid"}
        self.critiques.append(clean)
        await self.emit(
            "critique.completed", PHASE_PLAN_REVIEW, critique=clean, round=round_number, quick=quick
        )

    async def assess_plan(self, analysis: ComplexityAnalysis, plan: ResearchPlan) -> Any:
        """The meta-agent's evaluation and the scorer's decision (None with both layers off)."""
        if not (self.config.enable_critic or self.config.enable_meta):
            return None
        critique = self.critiques[-1] if self.critiques else None
        self.meta_evaluation = None
        if self.config.enable_meta:
            try:
                self.meta_evaluation = await MetaAgent(self.ctx).evaluate_reasoning(
                    self.query,
                    [{"reasoning": analysis.rationale, "confidence": analysis.confidence}],
                    {
                        "goal": self.query,
                        "steps": [s.query for s in plan.subtasks],
                        "confidence": plan.confidence,
                    },
                    critique,
                )
                await self.emit(
                    "meta.assessment", PHASE_PLAN_REVIEW, assessment="evaluation", **self.meta_evaluation
                )
            except Exception as error:
                await self.degrade(
                    "meta_agent", describe_error(error), "continuing without a meta-evaluation"
                )
        thought = analysis.confidence if "complexity_analysis" not in self.degraded else 0.5
        assessment = calculate_confidence(thought, plan.confidence, critique, self.meta_evaluation)
        await self.emit("confidence.assessed", **assessment.to_dict())
        return assessment

    def replan_note(self, assessment: Any) -> str:
        """What the planner is told when the scorer asks for a new plan."""
        meta = self.meta_evaluation or {}
        lines = [
            f"The last plan scored {assessment.overall_confidence:.2f} confidence: {assessment.reasoning}"
        ]
        lines += [f"- concern: {c}" for c in meta.get("concerns", [])]
        if self.critiques:
            lines.append(critique_text(self.critiques[-1]))
        return "\n".join(lines)

    def route(self, assessment: Any) -> None:
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

    async def live_check(self, step: PlanStep, finding: str, strategy: ExecutionStrategy) -> None:
        """The meta-agent's live look at one step's finding."""
        if not self.config.enable_meta:
            return
        try:
            live = await MetaAgent(self.ctx).live_self_assessment(step.description, finding, self.confidence)
        except Exception as error:
            await self.degrade("meta_agent", describe_error(error), "continuing without live assessment")
            return
        self.confidence = max(0.0, min(1.0, self.confidence + live["confidence_adjustment"] * 0.2))
        await self.emit(
            "meta.assessment", assessment="live", step_id=step.id, confidence=self.confidence, **live
        )
        if not live["should_continue"]:
            self.halted = True
        elif live["should_deepen"] and strategy == ExecutionStrategy.DEEP_REASONING:
            await self.add_step(
                f"Look more closely at: {step.description}", reason="meta-agent: think deeper", after=step
            )

    async def reflect(
        self, final_strategy: ExecutionStrategy, evaluation: EvaluationResult | None, escalations: int
    ) -> None:
        """After the answer: lessons for later runs (stored by the host as a Reflection)."""
        if not self.config.enable_reflection or self.tracker is None:
            return
        tracker = self.tracker
        summary = {
            "strategies": " → ".join(a.strategy.value for a in tracker.attempts),
            "quality": "n/a" if evaluation is None else f"{evaluation.confidence:.2f}",
            "escalations": escalations,
            "steps": [
                {"status": s.status, "description": s.description}
                for s in (tracker.plan.steps if tracker.plan else [])
            ],
            "tools": [
                {"tool": t.tool_name, "success": t.success, "error": t.error} for t in tracker.tool_executions
            ],
            "tools_used": [t.tool_name for t in tracker.tool_executions if t.success],
            "degraded": ", ".join(self.degraded),
            "final_strategy": final_strategy.value,
        }
        try:
            reflection = await ReflectionAgent(self.ctx).reflect(self.query, summary)
        except Exception as error:
            await self.degrade("reflection", describe_error(error), "no lessons recorded for this run")
            return
        await self.emit("reflection.completed", "Reflection", reflection=reflection)
