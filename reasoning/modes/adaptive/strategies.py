"""How each strategy produces an answer: DIRECT asks once, LIGHT plans a little, DEEP researches.

Plan steps run as their dependencies finish, several at a time (steps.py); a step completed
in an earlier attempt is not run again. Answer-producing calls stream into drafts (DIRECT's
answer, LIGHT's single step, every synthesis); a plan step's finding is not a draft.

LIGHT in one call: a first LIGHT attempt at a question that asks for no work (no research,
diagnosis, design or plan; the router reads each part) is answered by one call. A question
that spells out its parts ("Explain X and give an example") gets them as the plan and as a
checklist, each answered under its own heading; a question that is one ask (a comparison,
an explanation, a how-to) gets one structured answer. A plan of separately answered steps
only concatenates them (the light mode has no synthesis call), so one answer is also the
more coherent one. The quality check judges it at LIGHT's bar, as any LIGHT answer, and
escalates to DEEP when a deeper strategy would help. A question asking for work, a LIGHT
reached by escalation (one answer already fell short) and a forced LIGHT (forcing a strategy
asks for all of its machinery) plan and run a call per step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reasoning.agent import AgentResult
from reasoning.context import RunContext, describe_error
from reasoning.drafts import DraftStream
from reasoning.evaluator import Evaluator
from reasoning.modes.adaptive.answering import Answerer
from reasoning.modes.adaptive.gate import PlanGate
from reasoning.modes.adaptive.parts import combine, parts_plan, question_parts
from reasoning.modes.adaptive.steps import StepRunner
from reasoning.routing import Router
from reasoning.synthesizer import Synthesizer
from reasoning.types import (
    ComplexityAnalysis,
    ComplexityLevel,
    EvaluationResult,
    ExecutionStrategy,
    require,
)

# Filtering a handful of findings rarely drops anything the synthesizer would not ignore.
FILTER_MIN_FINDINGS = 4


class Strategies:
    def __init__(self, ctx: RunContext, gate: PlanGate, *, forced: bool = False) -> None:
        self.ctx = ctx
        self.gate = gate
        # A forced strategy runs in full: a forced LIGHT always plans.
        self.forced = forced
        self.answerer = Answerer(ctx)
        self.steps = StepRunner(ctx, gate, self.answerer)
        # The last DIRECT answer with the tool calls it made: what the local check weighs.
        self.direct_result: AgentResult | None = None

    def _drafts(self, strategy: ExecutionStrategy, *, speculative: bool = False) -> Callable[[], DraftStream]:
        attempt = max(1, len(self.ctx.tracker.attempts)) if self.ctx.tracker else 1
        return lambda: self.ctx.drafts.open(attempt=attempt, strategy=strategy.value, speculative=speculative)

    async def execute(self, strategy: ExecutionStrategy, analysis: ComplexityAnalysis) -> str:
        if strategy == ExecutionStrategy.DIRECT:
            return await self.direct()
        if strategy == ExecutionStrategy.LIGHT_PLANNING:
            return await self.light(analysis)
        return await self.deep(analysis)

    async def direct(self, *, speculative: bool = False) -> str:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        first = len(tracker.attempts) <= 1
        notes = "" if first else tracker.context_for(ExecutionStrategy.DIRECT)
        result = await self.answerer.answer(
            question=ctx.question,
            history=ctx.history,
            notes=notes,
            strategy=ExecutionStrategy.DIRECT,
            hints={"query": ctx.question, "strategy": "direct"},
            open_draft=self._drafts(ExecutionStrategy.DIRECT, speculative=speculative),
            # A forced DIRECT runs the full tool loop; so does a DIRECT after another attempt.
            one_call=[ctx.question] if first and not self.forced else None,
        )
        self.direct_result = result
        return result.text

    def one_call_parts(self) -> list[str]:
        """What one LIGHT answer must cover (the question's parts, or the question itself when
        it is one ask), on a first attempt at a question that asks for no work; otherwise
        none (LIGHT then plans and runs a call per step)."""
        tracker = require(self.ctx.tracker, "the run's tracker")
        if self.forced or tracker.plan is not None or len(tracker.attempts) != 1:
            return []
        router = Router()
        whole = router.route(self.ctx.question)
        parts = question_parts(self.ctx.question)
        if not parts and len(whole.reading.asks) > 1:
            return []  # more parts than a light answer covers: plan them
        for text in parts or [self.ctx.question]:
            decision = whole if text == self.ctx.question else router.route(text)
            if decision.level == ComplexityLevel.COMPLEX or decision.asks_for_work:
                return []
        return parts or [self.ctx.question]

    async def light(self, analysis: ComplexityAnalysis) -> str:
        strategy = ExecutionStrategy.LIGHT_PLANNING
        parts = self.one_call_parts()
        if parts:
            return await self.light_in_one_call(parts, analysis)
        await self.steps.make_plan(strategy, analysis, "light")
        await self.ctx.emit("iteration", current=1, total=1, subtask="light plan")
        plan = require(require(self.ctx.tracker, "the run's tracker").plan, "the plan")
        # A one-step plan's finding is the answer: stream it as a draft.
        single = len(plan.steps) == 1 and not plan.get_completed_steps()
        await self.steps.run_ready_steps(strategy, stream=self._drafts(strategy) if single else None)
        results = self.steps.results()
        if not results:
            return await self.direct()
        if len(results) == 1:
            return results[0]["result"]
        # The seed's light synthesis "just combines": each part under its own heading, no call.
        answer = combine(results)
        draft = self._drafts(strategy)()
        await draft.delta(answer)
        await draft.close()
        return answer

    async def light_in_one_call(self, parts: list[str], analysis: ComplexityAnalysis) -> str:
        """The parts (or the one ask) as the plan, answered together by one call."""
        ctx = self.ctx
        strategy = ExecutionStrategy.LIGHT_PLANNING
        single = len(parts) == 1
        plan = parts_plan(ctx.question, parts, ctx.lessons)
        plan.strategy_summary = (
            "One ask that needs no research: one structured answer, checked at the light bar."
            if single
            else "No part needs research: one answer covers every part under its own heading, "
            "and the quality check judges each."
        )
        await self.steps.make_plan(strategy, analysis, "light", plan=plan)
        steps = require(require(ctx.tracker, "the run's tracker").plan, "the plan").steps
        await ctx.emit("iteration", current=1, total=1, subtask="every part in one answer")
        for step in steps:
            await self.steps.start_step(step, strategy)
        checklist = "\n".join(f"{index}. {step.description}" for index, step in enumerate(steps, 1))
        notes = (
            "Cover every aspect the question names (for a comparison: each option on each criterion, "
            "then a verdict); use short headings where they help."
            if single
            else f"The question has {len(steps)} parts. Answer every one of them, each under a short "
            f"heading that names it:\n{checklist}"
        )
        try:
            result = await self.answerer.answer(
                question=ctx.question,
                history=ctx.history,
                notes=notes,
                strategy=strategy,
                hints={
                    "query": ctx.question,
                    "strategy": strategy.value,
                    **({} if single else {"parts": [s.description for s in steps]}),
                },
                open_draft=self._drafts(strategy),
                one_call=[ctx.question] if single else [step.description for step in steps],
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            for step in steps:
                await self.steps.finish_step(step, strategy, error=describe_error(error))
            return await self.direct()
        # The tools foreseen for a part are its step's; those the model asked for itself served
        # the reply as a whole.
        own = [record.name for record in result.tools if not record.parts]
        for index, step in enumerate(steps):
            shared = "" if index == 0 else f"Answered in the same reply as {steps[0].id}."
            tools = [record.name for record in result.tools if index in record.parts] + own
            await self.steps.finish_step(
                step, strategy, result=result, findings=shared, tools_used=list(dict.fromkeys(tools))
            )
        return result.text

    async def deep(self, analysis: ComplexityAnalysis) -> str:
        ctx = self.ctx
        strategy = ExecutionStrategy.DEEP_REASONING
        tracker = require(ctx.tracker, "the run's tracker")
        await self.steps.make_plan(strategy, analysis, "deep")
        total = ctx.config.max_iterations
        for iteration in range(1, total + 1):
            ready = require(tracker.plan, "the plan").ready_steps()
            if not ready or self.gate.halted:
                break
            await ctx.emit(
                "iteration",
                current=iteration,
                total=total,
                subtask="; ".join(s.description for s in ready[:4]),
            )
            await self.steps.run_ready_steps(strategy)
            if iteration == total:
                break  # no iteration left to act on a completeness verdict
            evaluation = await self.evaluate_research()
            if evaluation is None or evaluation.is_complete:
                break
            for extra in evaluation.additional_queries[:3]:
                await self.steps.add_step(extra, reason="research incomplete")
        results = self.steps.results()
        if not results:
            return await self.direct()
        kept = results
        if len(results) >= FILTER_MIN_FINDINGS:
            try:
                kept = await Synthesizer(ctx).filter_results(ctx.question, results)
            except Exception as error:
                await ctx.degrade("filter", describe_error(error), "using every finding unfiltered")
        return await self.synthesize(kept, "deep", strategy)

    async def evaluate_research(self) -> EvaluationResult | None:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        plan = require(tracker.plan, "the plan")
        plan_text = "\n".join(f"- [{s.status}] {s.description}" for s in plan.steps)
        try:
            evaluation = await Evaluator(ctx).evaluate(ctx.question, self.steps.results(), plan_text)
        except Exception as error:
            await ctx.degrade("evaluator", describe_error(error), "treating the research as complete")
            return None
        tracker.insights.add_from_evaluation(evaluation)
        return evaluation

    async def synthesize(self, results: list[dict[str, Any]], mode: str, strategy: ExecutionStrategy) -> str:
        ctx = self.ctx
        draft = self._drafts(strategy)()
        try:
            text = await Synthesizer(ctx).synthesize(ctx.question, results, mode, on_text=draft)
        except Exception as error:
            draft.stop()
            await draft.discard("failed")
            await ctx.degrade(
                "synthesizer", describe_error(error), "returning the findings without synthesis"
            )
            return combine(results)
        except BaseException:
            draft.stop()
            raise
        await draft.close()
        return text
