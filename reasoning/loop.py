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
from reasoning.context import ModelSet, RunContext
from reasoning.evaluator import Evaluator
from reasoning.events import Emitter, Sink
from reasoning.llm.base import LLMClient, LLMError, Usage
from reasoning.planner import Planner, direct_plan
from reasoning.synthesizer import Synthesizer
from reasoning.tools.registry import ToolRegistry
from reasoning.tracker import PlanStep, ResearchProgressTracker
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy, ResearchPlan

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


class _Run:
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
                await self.degrade(f"tools:{server}", error, "the run goes on without this tool server")
            analysis = await self.analyze(force, tracker_state)
            return await self.adaptive(analysis, force)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if self.finishing:
                raise
            await self.degrade("adaptive_loop", _describe(error), "answering directly without reasoning")
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
                analysis = fallback_analysis(_describe(error))
                await self.degrade(
                    "complexity_analysis", _describe(error), "treating the question as medium complexity"
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
        tracker = self.tracker
        assert tracker is not None
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
            answer = await self.execute_strategy(strategy, analysis)
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
            following = strategy.next()
            assert following is not None
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
        assert self.tracker is not None
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
        assert self.tracker is not None
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
        analysis = self.tracker.complexity if self.tracker else fallback_analysis(_describe(cause))
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
                detail=_describe(error),
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

    # --- strategies ---------------------------------------------------------------

    async def execute_strategy(self, strategy: ExecutionStrategy, analysis: ComplexityAnalysis) -> str:
        if strategy == ExecutionStrategy.DIRECT:
            return await self.execute_direct()
        if strategy == ExecutionStrategy.LIGHT_PLANNING:
            return await self.execute_light(analysis)
        return await self.execute_deep(analysis)

    async def execute_direct(self) -> str:
        assert self.tracker is not None
        context = ""
        if len(self.tracker.attempts) > 1:
            context = self.tracker.context_for(ExecutionStrategy.DIRECT)
        result = await run_agent(
            self.ctx.llm("agent"),
            system=self.system_prompt(context),
            messages=self.messages(self.query),
            executor=self.executor,
            max_rounds=self.config.max_tool_rounds,
            strategy=ExecutionStrategy.DIRECT,
            max_tokens=self.config.max_tokens,
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
        tracker = self.tracker
        assert tracker is not None
        await self.make_plan(strategy, analysis, "deep")
        total = self.config.max_iterations
        for iteration in range(1, total + 1):
            assert tracker.plan is not None
            ready = tracker.plan.ready_steps()
            if not ready:
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
                step = PlanStep(
                    id=f"step_dyn_{iteration}_{len(tracker.plan.steps) + 1}",
                    description=extra,
                    spawned_from=tracker.plan.current_step_id,
                )
                known = {s.description.lower() for s in tracker.plan.steps}
                if extra.lower() not in known and tracker.plan.add_dynamic_step(step):
                    await self.emit(
                        "plan.refined",
                        plan=self.plan_payload(),
                        added=[step.to_dict()],
                        reason="research incomplete",
                    )
        results = self.step_results()
        if not results:
            return await self.execute_direct()
        try:
            kept = await self.synthesizer().filter_results(self.query, results)
        except Exception as error:
            kept = results
            await self.degrade("filter", _describe(error), "using every finding unfiltered")
        return await self.synthesize(kept, "deep")

    # --- planning and steps ----------------------------------------------------------

    async def make_plan(self, strategy: ExecutionStrategy, analysis: ComplexityAnalysis, mode: str) -> None:
        tracker = self.tracker
        assert tracker is not None
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
        plan = await self.plan_with_fallback(context)
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

    async def plan_with_fallback(self, context: dict[str, Any]) -> ResearchPlan:
        try:
            return await Planner(self.ctx).generate_plan(self.query, context)
        except Exception as error:
            reason = _describe(error)
            await self.degrade("planner", reason, "answering the question as a single step")
            plan = direct_plan(self.query)
            plan.lessons_used = list(self.lessons)
            return plan

    async def run_ready_steps(self, strategy: ExecutionStrategy) -> None:
        """Run pending steps as their dependencies finish, at most max_parallel_steps at once."""
        tracker = self.tracker
        assert tracker is not None and tracker.plan is not None
        plan = tracker.plan
        limit = self.config.max_parallel_steps if self.config.parallel_execution else 1
        running: dict[asyncio.Task[None], str] = {}
        try:
            while True:
                started = set(running.values())
                for step in plan.ready_steps():
                    if len(running) >= limit:
                        break
                    if step.id in started:
                        continue
                    tracker.update_step_status(step.id, "in_progress")
                    task = asyncio.create_task(self.run_step(step, strategy))
                    running[task] = step.id
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
        tracker = self.tracker
        assert tracker is not None
        await self.emit(
            "step.started",
            step_id=step.id,
            description=step.description,
            strategy=strategy.value,
            depends_on=step.depends_on,
        )
        try:
            result = await run_agent(
                self.ctx.llm("agent"),
                system=self.system_prompt(self.step_context(step, strategy)),
                messages=[{"role": "user", "content": step.description}],
                executor=self.executor,
                max_rounds=self.config.max_tool_rounds,
                strategy=strategy,
                step_id=step.id,
                max_tokens=self.config.max_tokens,
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
            tracker.update_step_status(step.id, "failed", findings=[f"Error: {_describe(error)}"])
            await self.emit(
                "step.completed",
                step_id=step.id,
                status="failed",
                error=_describe(error),
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

    def step_context(self, step: PlanStep, strategy: ExecutionStrategy) -> str:
        tracker = self.tracker
        assert tracker is not None and tracker.plan is not None
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
        assert self.tracker is not None and self.tracker.plan is not None
        return [
            {"step_id": s.id, "query": s.description, "result": "\n".join(s.findings)}
            for s in self.tracker.plan.get_completed_steps()
            if any(f.strip() for f in s.findings)
        ]

    async def evaluate_research(self) -> EvaluationResult | None:
        assert self.tracker is not None and self.tracker.plan is not None
        plan_text = "\n".join(f"- [{s.status}] {s.description}" for s in self.tracker.plan.steps)
        try:
            evaluation = await self.evaluator().evaluate(self.query, self.step_results(), plan_text)
        except Exception as error:
            await self.degrade("evaluator", _describe(error), "treating the research as complete")
            return None
        self.tracker.insights.add_from_evaluation(evaluation)
        return evaluation

    async def synthesize(self, results: list[dict[str, Any]], mode: str) -> str:
        try:
            return await self.synthesizer().synthesize(self.query, results, mode)
        except Exception as error:
            await self.degrade("synthesizer", _describe(error), "returning the findings without synthesis")
            return "\n\n".join(f"**{r['query']}**\n\n{r['result']}" for r in results)

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
                    "evaluator", _describe(error), "accepting the answer without a quality check"
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

    async def degrade(self, component: str, error: str, fallback: str) -> None:
        self.degraded.append(component)
        await self.emit("component.degraded", component=component, error=error, fallback=fallback)

    async def save_checkpoint(self) -> None:
        if self.checkpoint is not None and self.tracker is not None:
            await self.checkpoint(self.tracker.to_dict())


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}"[:1000] if text else type(error).__name__
