"""AdaptiveReasoningLoop: analyse, pick a strategy, answer, check, escalate.

DIRECT → LIGHT_PLANNING → DEEP_REASONING. Every answer is checked before anyone sees it
(buffered evaluation); an answer that falls short is discarded and the question is tried
again one level deeper, with the tracker carrying what the earlier attempt learned. Every
component failure has a fallback (the seed's matrix), reported as `component.degraded`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from reasoning.agent import ToolExecutor, run_agent, summarize
from reasoning.analyzer import QueryComplexityAnalyzer, fallback_analysis, forced_analysis
from reasoning.cache import AnalysisCache
from reasoning.config import ReasoningConfig
from reasoning.context import ModelSet, RunContext, describe_error
from reasoning.evaluator import Evaluator
from reasoning.events import Emitter, Sink
from reasoning.execution import EarlyAnswer, StrategiesMixin
from reasoning.llm.base import LLMClient, LLMError, Usage
from reasoning.quality.gate import QualityMixin
from reasoning.synthesizer import Synthesizer
from reasoning.tools.registry import ToolRegistry
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy, require

Checkpoint = Callable[[dict[str, Any]], Awaitable[None]]

PHASE_ANALYSIS = "Phase 0: Complexity Analysis"
PHASE_QUALITY = "Phase 2: Quality Evaluation"
PHASE_ESCALATION = "Phase 3: Auto-Escalation"
PHASE_COMPLETE = "Complete"
HISTORY_TURNS = 6


def execution_phase(strategy: ExecutionStrategy) -> str:
    return f"Phase 1: Execution ({strategy.name})"


class ReasoningFailed(Exception):
    """Nothing could produce an answer. `user_message` is safe and specific to show."""

    def __init__(self, user_message: str) -> None:
        super().__init__(user_message)
        self.user_message = user_message


@dataclass
class ReasoningResult:
    answer: str
    analysis: ComplexityAnalysis
    initial_strategy: ExecutionStrategy
    final_strategy: ExecutionStrategy
    attempts: int
    quality: float | None
    evaluation: EvaluationResult | None
    escalations: int
    tracker: ResearchProgressTracker
    usage: Usage
    cost: Decimal
    llm_calls: int
    latency_ms: float
    degraded: list[str] = field(default_factory=list)
    kind: str = "answer"

    @property
    def escalated(self) -> bool:
        return self.escalations > 0


class AdaptiveReasoningLoop:
    """The engine. Dependencies come in as arguments; results go out as events."""

    def __init__(
        self,
        llm: LLMClient,
        tools: ToolRegistry | None = None,
        config: ReasoningConfig | None = None,
        *,
        analysis_cache: AnalysisCache | None = None,
        prompts_dir: Path | None = None,
    ) -> None:
        self.config = config or ReasoningConfig()
        self.models = ModelSet(llm, self.config)
        self.tools = tools or ToolRegistry(
            timeout=self.config.tool_timeout, max_result_chars=self.config.max_tool_result_chars
        )
        self.analysis_cache = analysis_cache
        self.prompts_dir = prompts_dir

    async def run(
        self,
        query: str,
        *,
        history: list[dict[str, Any]] | None = None,
        sink: Sink | None = None,
        force_strategy: ExecutionStrategy | None = None,
        tracker_state: dict[str, Any] | None = None,
        start_sequence: int = 1,
        lessons: list[str] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> ReasoningResult:
        """Answer `query`; raises ReasoningFailed only when even the plain fallback fails."""
        emitter = Emitter(sink, start_sequence=start_sequence)
        ctx = RunContext(
            config=self.config, models=self.models, emitter=emitter, prompts_dir=self.prompts_dir
        )
        run = _Run(self, ctx, query, history or [], lessons or [], checkpoint)
        return await run.execute(force_strategy or self.config.force_strategy, tracker_state)


class _Run(StrategiesMixin, QualityMixin):
    """The state of one run; methods are the phases."""

    def __init__(
        self,
        engine: AdaptiveReasoningLoop,
        ctx: RunContext,
        query: str,
        history: list[dict[str, Any]],
        lessons: list[str],
        checkpoint: Checkpoint | None,
    ) -> None:
        self.engine = engine
        self.ctx = ctx
        self.config = ctx.config
        self.emit = ctx.emitter.emit
        self.query = query
        self.history = history[-HISTORY_TURNS:]
        self.lessons = lessons
        self.checkpoint = checkpoint
        self.tracker: ResearchProgressTracker | None = None
        self.degraded: list[str] = []
        self.finishing = False
        self.critiques: list[dict[str, Any]] = []
        self.meta_evaluation: dict[str, Any] | None = None
        self.halted = False
        self.confidence = 0.7
        self.started = time.perf_counter()
        self.executor = ToolExecutor(
            engine.tools, ctx.emitter, lambda: self.tracker, timeout=self.config.tool_timeout
        )

    # --- the whole run --------------------------------------------------------------

    async def execute(
        self, force: ExecutionStrategy | None, tracker_state: dict[str, Any] | None
    ) -> ReasoningResult:
        await self.emit(
            "run.started",
            PHASE_ANALYSIS,
            mode="Analyzing",
            query=summarize(self.query, 500),
            resumed=tracker_state is not None,
        )
        try:
            await self.engine.tools.ensure_loaded()
            for server, error in self.engine.tools.errors.items():
                detail = self.engine.tools.error_details.get(server)
                await self.degrade(
                    f"tools:{server}", error, "the run goes on without this tool server", detail=detail
                )
            analysis = await self.analyze(force, tracker_state)
            return await self.adaptive(analysis, force)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if self.finishing:
                raise
            await self.degrade("adaptive_loop", describe_error(error), "answering directly without reasoning")
            return await self.plain_fallback(error)

    async def analyze(
        self, force: ExecutionStrategy | None, tracker_state: dict[str, Any] | None
    ) -> ComplexityAnalysis:
        await self.emit("analysis.started", PHASE_ANALYSIS, mode="Analyzing")
        cached = False
        if tracker_state is not None:
            self.tracker = ResearchProgressTracker.from_dict(tracker_state)
            analysis = self.tracker.complexity
            cached = True
        elif force is not None:
            analysis = forced_analysis(force, self.config.max_iterations)
        else:
            try:
                analyzer = QueryComplexityAnalyzer(self.ctx, self.engine.analysis_cache)
                analysis, cached = await analyzer.analyze(
                    self.query, self.engine.tools.names(), self.conversation_text()
                )
            except Exception as error:
                analysis = fallback_analysis(describe_error(error))
                await self.degrade(
                    "complexity_analysis", describe_error(error), "treating the question as medium complexity"
                )
        if self.tracker is None:
            self.tracker = ResearchProgressTracker(
                self.query, analysis, failure_window=self.config.tool_failure_window
            )
        await self.emit("analysis.completed", forced=force is not None, cached=cached, analysis=analysis)
        return analysis

    async def adaptive(
        self, analysis: ComplexityAnalysis, force: ExecutionStrategy | None
    ) -> ReasoningResult:
        tracker = require(self.tracker, "the run's tracker")
        initial = tracker.attempts[0].strategy if tracker.attempts else force or analysis.recommended_strategy
        strategy = self.resume_strategy() or initial
        escalations = sum(1 for a in tracker.attempts if a.status == "escalated")
        while True:
            attempt_number = len(tracker.attempts) + 1
            tracker.start_attempt(strategy)
            await self.emit(
                "strategy.selected",
                execution_phase(strategy),
                strategy=strategy.value,
                mode=strategy.label,
                rationale=analysis.rationale
                if attempt_number == 1
                else f"Escalated: {', '.join(tracker.insights.knowledge_gaps[:3]) or 'quality too low'}",
                attempt=attempt_number,
            )
            try:
                answer = await self.execute_strategy(strategy, analysis)
            except EarlyAnswer as early:
                tracker.end_attempt(
                    f"Answered with a {early.kind.replace('_', ' ')}",
                    status="completed",
                    response=early.answer,
                )
                return await self.finish(
                    early.answer, analysis, initial, strategy, None, escalations, early.kind
                )
            evaluation = await self.check_quality(answer, strategy, analysis)
            approved = evaluation.is_complete
            final = approved or strategy.next() is None
            tracker.end_attempt(
                "Quality sufficient"
                if approved
                else ("Best effort at the deepest level" if final else "Escalated: quality insufficient"),
                status="completed" if final else "escalated",
                response=answer,
                evaluation=evaluation,
                quality_score=evaluation.confidence,
            )
            await self.save_checkpoint()
            if final:
                return await self.finish(answer, analysis, initial, strategy, evaluation, escalations)
            following = require(strategy.next(), "a strategy to escalate to")
            escalations += 1
            reason = evaluation.reasoning or "the answer was judged insufficient"
            await self.emit(
                "escalation",
                PHASE_ESCALATION,
                mode="Refining",
                from_strategy=strategy.value,
                to_strategy=following.value,
                reason=reason,
                quality=evaluation.confidence,
                threshold=self.config.quality_threshold(strategy),
                missing_aspects=evaluation.missing_aspects,
            )
            strategy = following

    def resume_strategy(self) -> ExecutionStrategy | None:
        """Where a resumed run picks up: the interrupted attempt's level, or the next one."""
        require(self.tracker, "the run's tracker")
        if not self.tracker.attempts:
            return None
        last = self.tracker.attempts[-1]
        if last.status == "in_progress":
            last.status, last.outcome = "failed", "Interrupted (the worker stopped)"
            return last.strategy
        if last.status == "escalated":
            return last.strategy.next() or last.strategy
        return last.strategy

    async def finish(
        self,
        answer: str,
        analysis: ComplexityAnalysis,
        initial: ExecutionStrategy,
        final: ExecutionStrategy,
        evaluation: EvaluationResult | None,
        escalations: int,
        kind: str = "answer",
    ) -> ReasoningResult:
        require(self.tracker, "the run's tracker")
        totals = self.ctx.totals
        latency = (time.perf_counter() - self.started) * 1000
        self.finishing = True
        await self.emit("answer.final", PHASE_COMPLETE, answer=answer, answer_kind=kind)
        quality = evaluation.confidence if evaluation else None
        await self.emit(
            "run.finished",
            PHASE_COMPLETE,
            mode="Complete",
            initial_strategy=initial.value,
            final_strategy=final.value,
            attempts=len(self.tracker.attempts),
            quality=quality,
            escalated=escalations > 0,
            escalations=escalations,
            usage=totals.usage,
            cost=str(totals.cost),
            llm_calls=totals.calls,
            latency_ms=round(latency, 1),
            degraded=self.degraded,
            answer_kind=kind,
        )
        # Reflection comes after the run is finished: the person has the answer and may ask
        # the next question while Nexus learns from this one.
        await self.reflect(final, evaluation, escalations)
        return ReasoningResult(
            answer=answer,
            analysis=analysis,
            initial_strategy=initial,
            final_strategy=final,
            attempts=len(self.tracker.attempts),
            quality=quality,
            evaluation=evaluation,
            escalations=escalations,
            tracker=self.tracker,
            usage=totals.usage,
            cost=totals.cost,
            llm_calls=totals.calls,
            latency_ms=latency,
            degraded=list(self.degraded),
            kind=kind,
        )

    async def plain_fallback(self, cause: Exception) -> ReasoningResult:
        """Last resort: the agent loop alone, no analysis, no plan, no quality check."""
        analysis = self.tracker.complexity if self.tracker else fallback_analysis(describe_error(cause))
        if self.tracker is None:
            self.tracker = ResearchProgressTracker(self.query, analysis)
        self.tracker.start_attempt(ExecutionStrategy.DIRECT)
        try:
            result = await run_agent(
                self.ctx.llm("agent"),
                system=self.system_prompt(),
                messages=self.messages(self.query),
                executor=self.executor,
                max_rounds=self.config.max_tool_rounds,
                strategy=ExecutionStrategy.DIRECT,
                max_tokens=self.config.max_tokens,
                hints={"query": self.query, "fallback": True},
            )
        except Exception as error:
            message = (
                error.user_message()
                if isinstance(error, LLMError)
                else ("The reasoning engine could not produce an answer.")
            )
            self.tracker.end_attempt("Error occurred", status="failed")
            await self.emit(
                "run.failed",
                PHASE_COMPLETE,
                mode="Complete",
                error=message,
                detail=describe_error(error),
                usage=self.ctx.totals.usage,
                cost=str(self.ctx.totals.cost),
            )
            raise ReasoningFailed(message) from error
        if not result.text.strip():
            await self.emit(
                "run.failed",
                PHASE_COMPLETE,
                mode="Complete",
                error="The model returned an empty answer.",
                detail="empty fallback answer",
            )
            raise ReasoningFailed("The model returned an empty answer.")
        self.tracker.end_attempt(
            "Answered without reasoning (fallback)", status="completed", response=result.text
        )
        strategy = ExecutionStrategy.DIRECT
        return await self.finish(result.text, analysis, strategy, strategy, None, 0)

    async def check_quality(
        self, answer: str, strategy: ExecutionStrategy, analysis: ComplexityAnalysis
    ) -> EvaluationResult:
        threshold = self.config.quality_threshold(strategy)
        await self.emit("quality.started", PHASE_QUALITY, strategy=strategy.value, threshold=threshold)
        if not answer.strip():
            evaluation = EvaluationResult(False, 0.0, "The answer was empty.", missing_aspects=["an answer"])
        else:
            try:
                evaluation = await self.evaluator().evaluate_response_quality(
                    self.query, answer, strategy, analysis
                )
            except Exception as error:
                await self.degrade(
                    "evaluator", describe_error(error), "accepting the answer without a quality check"
                )
                evaluation = EvaluationResult(True, threshold, "Quality check unavailable; answer accepted.")
        await self.emit(
            "quality.completed",
            strategy=strategy.value,
            evaluation=evaluation,
            threshold=threshold,
            approved=evaluation.is_complete,
        )
        return evaluation

    # --- helpers -----------------------------------------------------------------------

    def evaluator(self) -> Evaluator:
        return Evaluator(self.ctx)

    def synthesizer(self) -> Synthesizer:
        return Synthesizer(self.ctx)

    def system_prompt(self, context: str = "") -> str:
        base = self.ctx.prompt(self.config.system_prompt_path)[1]
        return f"{base}\n\n# Notes for this answer\n{context}" if context else base

    def messages(self, content: str) -> list[dict[str, Any]]:
        return [*self.history, {"role": "user", "content": content}]

    def conversation_text(self) -> str:
        lines = []
        for turn in self.history[-4:]:
            content = turn["content"] if isinstance(turn["content"], str) else str(turn["content"])
            lines.append(f"{turn['role']}: {summarize(content, 400)}")
        return "\n".join(lines)

    def plan_payload(self) -> dict[str, Any] | None:
        return self.tracker.plan.to_dict() if self.tracker and self.tracker.plan else None

    async def degrade(self, component: str, error: str, fallback: str, *, detail: str | None = None) -> None:
        """`error` is shown to the user; `detail` (if any) only to staff auditing the run."""
        self.degraded.append(component)
        extra = {"detail": detail} if detail and detail != error else {}
        await self.emit("component.degraded", component=component, error=error, fallback=fallback, **extra)

    async def save_checkpoint(self) -> None:
        if self.checkpoint is not None and self.tracker is not None:
            await self.checkpoint(self.tracker.to_dict())
