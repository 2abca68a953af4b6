"""One adaptive run: route, pick a strategy, answer, check, escalate only when it can help.

DIRECT → LIGHT_PLANNING → DEEP_REASONING. The local router decides the first strategy
when it is sure; otherwise the analysis model is asked (cached), and a likely-simple
question starts answering at once, speculatively. Every answer is checked before anyone
relies on it (buffered evaluation; drafts stream but stay drafts); an answer that falls
short is discarded and the question tried one level deeper, with the tracker carrying what
the earlier attempt learned, but only when the evaluator says a deeper strategy can help.
Every component failure has a fallback (the seed's matrix), reported as
`component.degraded`. Reflection follows only when there is something to learn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reasoning.agent import run_agent, summarize
from reasoning.analyzer import fallback_analysis
from reasoning.answer_check import LocalVerdict, check_answer
from reasoning.cache import AnalysisCache
from reasoning.context import RunContext, describe_error
from reasoning.drafts import DraftStream
from reasoning.llm.base import LLMError
from reasoning.modes.adaptive.gate import EarlyAnswer, PlanGate
from reasoning.modes.adaptive.strategies import Strategies
from reasoning.modes.adaptive.triage import PHASE_ANALYSIS, Triage
from reasoning.modes.base import ReasoningResult
from reasoning.quality.reflection import ReflectionAgent, run_summary
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import (
    ComplexityAnalysis,
    ComplexityLevel,
    EvaluationResult,
    ExecutionStrategy,
    require,
)

PHASE_QUALITY = "Phase 2: Quality Evaluation"
PHASE_ESCALATION = "Phase 3: Auto-Escalation"
PHASE_COMPLETE = "Complete"
PHASE_REFLECTION = "Reflection"


def execution_phase(strategy: ExecutionStrategy) -> str:
    return f"Phase 1: Execution ({strategy.name})"


def with_notice(answer: str, notice: str) -> str:
    """The answer with the provider's notice exactly once, at the end."""
    if not notice:
        return answer
    body = answer.replace(notice, "").rstrip()
    while body.endswith("---"):
        body = body[:-3].rstrip()
    return f"{body}\n\n---\n{notice}" if body else notice


class AdaptiveRun:
    def __init__(
        self,
        ctx: RunContext,
        *,
        analysis_cache: AnalysisCache | None,
        force: ExecutionStrategy | None,
        tracker_state: dict[str, Any] | None,
        resumed: bool = False,
    ) -> None:
        self.ctx = ctx
        self.resumed = resumed or tracker_state is not None
        self.config = ctx.config
        self.force = force
        self.tracker_state = tracker_state
        self.gate = PlanGate(ctx)
        self.strategies = Strategies(ctx, self.gate, forced=force is not None)
        self.triage = Triage(
            ctx, self.strategies, analysis_cache=analysis_cache, force=force, tracker_state=tracker_state
        )
        self.finishing = False

    # --- the whole run --------------------------------------------------------------

    async def execute(self) -> ReasoningResult:
        ctx = self.ctx
        await ctx.emit(
            "run.started",
            PHASE_ANALYSIS,
            mode="Analyzing",
            query=summarize(ctx.question, 500),
            attachments=[{"kind": a.kind, "title": a.title} for a in ctx.attachments],
            resumed=self.resumed,
        )
        try:
            await ctx.tools.ensure_loaded()
            for server, error in ctx.tools.errors.items():
                detail = ctx.tools.error_details.get(server)
                await ctx.degrade(
                    f"tools:{server}", error, "the run goes on without this tool server", detail=detail
                )
            analysis = await self.triage.analyze()
            return await self.attempts(analysis)
        except asyncio.CancelledError:
            self.triage.cancel_speculation()
            raise
        except Exception as error:
            if self.finishing:
                raise
            await self.triage.drop_speculation(None)
            if isinstance(error, LLMError) and error.provider_down:
                # The plain answer would make the same call to the same provider again.
                await ctx.drafts.discard_current("failed")
                raise await ctx.fail(error) from error
            await ctx.degrade("adaptive_loop", describe_error(error), "answering directly without reasoning")
            return await self.plain_fallback(error)

    # --- attempts ------------------------------------------------------------------------

    async def attempts(self, analysis: ComplexityAnalysis) -> ReasoningResult:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        initial = (
            tracker.attempts[0].strategy if tracker.attempts else self.force or analysis.recommended_strategy
        )
        strategy = self.resume_strategy() or initial
        triage = self.triage
        if triage.speculation is not None and strategy != ExecutionStrategy.DIRECT:
            await triage.drop_speculation(strategy)
        escalations = sum(1 for a in tracker.attempts if a.status == "escalated")
        while True:
            attempt_number = len(tracker.attempts) + 1
            tracker.start_attempt(strategy)
            if triage.speculation is None:
                ctx.drafts.current = None
            await ctx.emit(
                "strategy.selected",
                execution_phase(strategy),
                strategy=strategy.value,
                mode=strategy.label,
                rationale=self.why_attempt(analysis),
                attempt=attempt_number,
                speculative_start=triage.speculation is not None,
            )
            try:
                answer = (
                    await triage.take_speculation()
                    if triage.speculation
                    else await self.strategies.execute(strategy, analysis)
                )
            except EarlyAnswer as early:
                tracker.end_attempt(
                    f"Answered with a {early.kind.replace('_', ' ')}",
                    status="completed",
                    response=early.answer,
                )
                return await self.finish(
                    early.answer, analysis, initial, strategy, None, escalations, early.kind
                )
            evaluation, draft = await self.check_quality(answer, strategy, analysis)
            following = strategy.next()
            escalate = not evaluation.is_complete and following is not None and evaluation.deeper_would_help
            over_budget = await self.ctx.budget_stops(escalate)
            escalate = escalate and not over_budget
            tracker.end_attempt(
                "Best effort: the budget is used up"
                if over_budget
                else _outcome(evaluation, following, escalate),
                status="escalated" if escalate else "completed",
                response=answer,
                evaluation=evaluation,
                quality_score=evaluation.confidence,
            )
            await ctx.save_checkpoint()
            if not escalate:
                return await self.finish(
                    answer, analysis, initial, strategy, evaluation, escalations, draft=draft
                )
            following = require(following, "a strategy to escalate to")
            threshold = self.config.quality_threshold(strategy)
            if draft is not None:
                await draft.discard(
                    "quality",
                    quality=evaluation.confidence,
                    threshold=threshold,
                    missing_aspects=evaluation.missing_aspects,
                )
            escalations += 1
            await ctx.emit(
                "escalation",
                PHASE_ESCALATION,
                mode="Refining",
                from_strategy=strategy.value,
                to_strategy=following.value,
                reason=evaluation.reasoning or "the answer was judged insufficient",
                quality=evaluation.confidence,
                threshold=threshold,
                missing_aspects=evaluation.missing_aspects,
            )
            strategy = following

    def why_attempt(self, analysis: ComplexityAnalysis) -> str:
        """Why the attempt just started: the analysis for the first; for a later one, what the
        one before it ended with (escalated for missing parts, or cut off by a worker that
        stopped, which is no judgement on its quality)."""
        attempts = require(self.ctx.tracker, "the run's tracker").attempts
        if len(attempts) < 2:
            return analysis.rationale
        before = attempts[-2]
        if before.status == "escalated":
            gaps = require(self.ctx.tracker, "the run's tracker").insights.knowledge_gaps[:3]
            return f"Escalated: {', '.join(gaps) or 'quality too low'}"
        return f"Resumed: attempt {len(attempts) - 1} ended with {before.outcome or before.status}"

    def resume_strategy(self) -> ExecutionStrategy | None:
        """Where a resumed run picks up: the interrupted attempt's level, or the next one."""
        tracker = require(self.ctx.tracker, "the run's tracker")
        if not tracker.attempts:
            return None
        last = tracker.attempts[-1]
        if last.status == "in_progress":
            last.status, last.outcome = "failed", "Interrupted (the worker stopped)"
            return last.strategy
        if last.status == "escalated":
            return last.strategy.next() or last.strategy
        return last.strategy

    # --- quality, finishing ------------------------------------------------------------------

    async def check_quality(
        self, answer: str, strategy: ExecutionStrategy, analysis: ComplexityAnalysis
    ) -> tuple[EvaluationResult, DraftStream | None]:
        draft = self.answer_draft(answer)
        evaluation = await self.ctx.judge_answer(
            answer,
            strategy,
            analysis,
            draft=draft.id if draft else None,
            phase=PHASE_QUALITY,
            local=self.local_check(answer, strategy, analysis),
        )
        return evaluation, draft

    def local_check(
        self, answer: str, strategy: ExecutionStrategy, analysis: ComplexityAnalysis
    ) -> LocalVerdict | None:
        """The local check's verdict on a DIRECT answer the router sent there being sure the
        question is simple, on the first attempt; None where the check does not apply."""
        ctx = self.ctx
        decision = self.triage.decision
        result = self.strategies.direct_result
        if not (
            self.config.local_answer_check
            and strategy == ExecutionStrategy.DIRECT
            and self.triage.routed_by == "router"
            and analysis.complexity_level == ComplexityLevel.SIMPLE
            and decision is not None
            and result is not None
            and result.text.strip() == answer.strip()
            and len(require(ctx.tracker, "the run's tracker").attempts) == 1
        ):
            return None
        descriptions = {
            record.name: spec.description
            for record in result.tools
            if (spec := ctx.tools.spec(record.name)) is not None
        }
        # The ask as the router read it, without a greeting or polite wrapper around it:
        # "Good morning!" is not a part of the question the answer must cover.
        asks = decision.reading.asks
        question = asks[0] if len(asks) == 1 else ctx.question
        return check_answer(question, answer, result.tools, asks=len(asks), descriptions=descriptions)

    def answer_draft(self, answer: str) -> DraftStream | None:
        """The live draft whose streamed text is this answer, if it was streamed."""
        draft = self.ctx.drafts.current
        if draft is None or draft.discarded or draft.text.strip() != answer.strip():
            return None
        return draft

    async def finish(
        self,
        answer: str,
        analysis: ComplexityAnalysis,
        initial: ExecutionStrategy,
        final: ExecutionStrategy,
        evaluation: EvaluationResult | None,
        escalations: int,
        kind: str = "answer",
        *,
        draft: DraftStream | None = None,
    ) -> ReasoningResult:
        ctx = self.ctx
        self.finishing = True
        await ctx.save_checkpoint()
        stray = ctx.drafts.current
        if stray is not None and stray is not draft:
            await stray.discard("revised")
        answer = with_notice(answer, ctx.models.base.answer_notice)
        await ctx.show_answer(answer, kind=kind, draft=draft.id if draft else None, evaluation=evaluation)
        result = await ctx.finish_run(
            answer,
            analysis=analysis,
            initial=initial,
            final=final,
            evaluation=evaluation,
            escalations=escalations,
            routed_by=self.triage.routed_by,
            kind=kind,
        )
        # Reflection comes after the run is finished: the person has the answer and may ask
        # the next question while Nexus learns from this one.
        if result.reflection_trigger is not None:
            await self.reflect(result.reflection_trigger, final, evaluation, escalations, answer)
        return result

    async def reflect(
        self,
        trigger: str,
        final: ExecutionStrategy,
        evaluation: EvaluationResult | None,
        escalations: int,
        answer: str,
    ) -> None:
        ctx = self.ctx
        summary = run_summary(
            require(ctx.tracker, "the run's tracker"),
            final_strategy=final,
            evaluation=evaluation,
            escalations=escalations,
            degraded=ctx.degraded,
            answer=answer,
        )
        try:
            reflection = await ReflectionAgent(ctx).reflect(ctx.question, summary, trigger=trigger)
        except Exception as error:
            await ctx.degrade("reflection", describe_error(error), "no lessons recorded for this run")
            return
        await ctx.emit("reflection.completed", PHASE_REFLECTION, reflection=reflection, trigger=trigger)

    async def plain_fallback(self, cause: Exception) -> ReasoningResult:
        """Last resort: the agent loop alone, no analysis, no plan, no quality check."""
        ctx = self.ctx
        analysis = ctx.tracker.complexity if ctx.tracker else fallback_analysis(describe_error(cause))
        if ctx.tracker is None:
            ctx.tracker = ResearchProgressTracker(ctx.question, analysis)
        ctx.tracker.start_attempt(ExecutionStrategy.DIRECT)
        attempt = len(ctx.tracker.attempts)
        self.triage.routed_by = self.triage.routed_by or "fallback"
        try:
            result = await run_agent(
                ctx.llm("agent"),
                system=ctx.system_prompt(),
                messages=ctx.messages(ctx.question),
                executor=ctx.executor,
                max_rounds=self.config.max_tool_rounds,
                strategy=ExecutionStrategy.DIRECT,
                max_tokens=self.config.max_tokens,
                hints={"query": ctx.question, "fallback": True, "attachments": ctx.attachment_hints()},
                open_draft=lambda: ctx.drafts.open(attempt=attempt, strategy="direct"),
            )
        except Exception as error:
            ctx.tracker.end_attempt("Error occurred", status="failed")
            await ctx.drafts.discard_current("failed")
            raise await ctx.fail(error) from error
        if not result.text.strip():
            raise await ctx.fail(None, message="The model returned an empty answer.")
        ctx.tracker.end_attempt(
            "Answered without reasoning (fallback)", status="completed", response=result.text
        )
        strategy = ExecutionStrategy.DIRECT
        return await self.finish(
            result.text, analysis, strategy, strategy, None, 0, draft=self.answer_draft(result.text)
        )


def _outcome(evaluation: EvaluationResult, following: ExecutionStrategy | None, escalate: bool) -> str:
    if evaluation.is_complete:
        return "Quality sufficient"
    if escalate:
        return "Escalated: quality insufficient"
    if following is None:
        return "Best effort at the deepest level"
    return "Best effort: a deeper strategy would not help"
