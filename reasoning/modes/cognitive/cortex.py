"""CortexCoordinator (the prefrontal cortex): runs the cognitive loop by messaging the agents.

Perceive → recall → plan → (act → evaluate)* → synthesize → check → store. The coordinator
holds no reasoning itself; it asks the agents, in order, over the bus, and decides only what
the answers imply: whether to run another round, and whether a deeper plan can help after
a quality check falls short (the adaptive mode's escalation rule). An agent that fails
answers with an ERROR message; the coordinator falls back (no memory, a one-step plan, the
answer unchecked) and reports `component.degraded`, so a run always ends with an answer or
a clear failure. A resumed run keeps its plan and completed steps (from the tracker).
"""

from __future__ import annotations

import asyncio
from typing import Any

from reasoning.agent import summarize
from reasoning.analyzer import fallback_analysis
from reasoning.context import RunContext, describe_error
from reasoning.memory import MemoryItem, MemoryStore
from reasoning.modes.adaptive.answering import Answerer
from reasoning.modes.adaptive.run import with_notice
from reasoning.modes.base import ReasoningFailed, ReasoningResult
from reasoning.modes.cognitive.executive import ExecutiveAgent
from reasoning.modes.cognitive.memory import MemoryAgent, memory_attachment_text, stated_fact
from reasoning.modes.cognitive.messaging import PHASE, CognitiveBus, CognitiveContext, MessageError
from reasoning.modes.cognitive.motor import MotorAgent
from reasoning.modes.cognitive.perception import PerceptionAgent
from reasoning.planner import direct_plan
from reasoning.progress import PlanStep
from reasoning.text import markdown_inline
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import (
    Attachment,
    ComplexityAnalysis,
    EvaluationResult,
    ExecutionStrategy,
    RunInput,
    require,
)

CORTEX = "cortex"
MEMORY_TITLE = "What Nexus remembers that may be relevant"


class CortexCoordinator:
    def __init__(
        self,
        ctx: RunContext,
        *,
        memory: MemoryStore | None = None,
        tracker_state: dict[str, Any] | None = None,
    ) -> None:
        self.ctx = ctx
        self.tracker_state = tracker_state
        self.memory = memory
        self.keep_plan = False
        self.finishing = False
        self.workspace = CognitiveContext(
            user_query=ctx.question, original_query=ctx.question, conversation_history=list(ctx.history)
        )
        self.bus = CognitiveBus(ctx, self.workspace)
        for agent in (PerceptionAgent(ctx), MemoryAgent(ctx, memory), ExecutiveAgent(ctx), MotorAgent(ctx)):
            self.bus.register(agent)

    async def ask(
        self,
        recipient: str,
        action: str,
        payload: dict[str, Any] | None = None,
        *,
        summary: str,
        priority: int = 0,
    ) -> dict[str, Any]:
        return await self.bus.request(
            CORTEX, recipient, action, payload or {}, summary=summary, priority=priority
        )

    # --- the loop ----------------------------------------------------------------------

    async def run(self) -> ReasoningResult:
        """The loop, or (when the loop itself breaks) one plain answer that says it degraded."""
        try:
            return await self.process()
        except (ReasoningFailed, asyncio.CancelledError):
            raise
        except Exception as error:
            if self.finishing:
                raise
            await self.ctx.degrade(
                "cognitive_loop", describe_error(error), "answering directly without the agents"
            )
            return await self.plain_answer(error)

    async def plain_answer(self, cause: Exception) -> ReasoningResult:
        ctx = self.ctx
        analysis = ctx.tracker.complexity if ctx.tracker else fallback_analysis(describe_error(cause))
        if ctx.tracker is None:
            ctx.tracker = ResearchProgressTracker(ctx.question, analysis)
        strategy = ExecutionStrategy.DIRECT
        ctx.tracker.start_attempt(strategy)
        await ctx.drafts.discard_current("failed")
        try:
            result = await Answerer(ctx).answer(
                question=ctx.question,
                history=ctx.history,
                strategy=strategy,
                hints={"query": ctx.question, "fallback": True},
                open_draft=lambda: ctx.drafts.open(attempt=len(ctx.tracker.attempts), strategy="direct"),
            )
        except Exception as error:
            raise await ctx.fail(error) from error
        if not result.text.strip():
            raise await ctx.fail(None, message="The model returned an empty answer.")
        ctx.tracker.end_attempt(
            "Answered without the agents (fallback)", status="completed", response=result.text
        )
        evaluation = EvaluationResult(True, 0.0, "Not checked (fallback).")
        return await self.finish(
            result.text, ctx.drafts.current_id, analysis, strategy, strategy, evaluation, 0, checked=False
        )

    async def process(self) -> ReasoningResult:
        ctx, ws = self.ctx, self.workspace
        await ctx.emit(
            "run.started",
            PHASE,
            mode="Perceiving",
            query=summarize(ctx.question, 500),
            attachments=[{"kind": a.kind, "title": a.title} for a in ctx.attachments],
            resumed=self.tracker_state is not None,
            agent_mode="cognitive",
        )
        await ctx.tools.ensure_loaded()
        for server, error in ctx.tools.errors.items():
            await ctx.degrade(
                f"tools:{server}",
                error,
                "the run goes on without this tool server",
                detail=ctx.tools.error_details.get(server),
            )
        ws.update_stage("perception")
        analysis = await self.perceive()
        ws.update_stage("memory_retrieval")
        await self.recall()
        strategy = self.start(analysis)
        fact = stated_fact(ctx.question) if self.memory is not None else None
        if fact and "?" not in fact and self.tracker_state is None:
            return await self.acknowledge(fact, analysis)
        escalations = sum(1 for a in require(ctx.tracker, "tracker").attempts if a.status == "escalated")
        initial = (
            require(ctx.tracker, "tracker").attempts[0].strategy
            if ctx.tracker and ctx.tracker.attempts
            else strategy
        )
        while True:
            answer, draft, evaluation = await self.attempt(strategy, analysis)
            following = strategy.next()
            escalate = not evaluation.is_complete and following is not None and evaluation.deeper_would_help
            escalate = escalate and not await ctx.budget_stops(escalate)
            tracker = require(ctx.tracker, "tracker")
            tracker.end_attempt(
                "Escalated: quality insufficient" if escalate else "Answered",
                status="escalated" if escalate else "completed",
                response=answer,
                evaluation=evaluation,
                quality_score=evaluation.confidence,
            )
            await ctx.save_checkpoint()
            if not escalate:
                return await self.finish(answer, draft, analysis, initial, strategy, evaluation, escalations)
            following = require(following, "a deeper strategy")
            await ctx.drafts.discard_current(
                "quality",
                quality=evaluation.confidence,
                threshold=ctx.config.quality_threshold(strategy),
                missing_aspects=evaluation.missing_aspects,
            )
            await ctx.emit(
                "escalation",
                from_strategy=strategy.value,
                to_strategy=following.value,
                reason=evaluation.reasoning or "the answer was judged insufficient",
                quality=evaluation.confidence,
                threshold=ctx.config.quality_threshold(strategy),
                missing_aspects=evaluation.missing_aspects,
            )
            escalations += 1
            strategy = following

    async def perceive(self) -> ComplexityAnalysis:
        try:
            reading = await self.ask(
                "perception", "perceive", summary=f"What does this ask? {self.ctx.question}"
            )
            analysis = ComplexityAnalysis.from_dict(reading["analysis"])
        except MessageError as error:
            await self.ctx.degrade("perception", error.error, "planning for a medium question")
            analysis = fallback_analysis(error.error)
        await self.ctx.emit(
            "analysis.completed",
            analysis=analysis,
            routed_by="perception",
            router=self.workspace.perception.get("router"),
        )
        return analysis

    async def acknowledge(self, fact: str, analysis: ComplexityAnalysis) -> ReasoningResult:
        """A request to remember something is answered by remembering it, and saying so (there
        is nothing to search or compute: "I found nothing about 'Remember that…'" misread it)."""
        tracker = require(self.ctx.tracker, "tracker")
        strategy = ExecutionStrategy.DIRECT
        tracker.start_attempt(strategy)
        said = fact.rstrip(" .!")
        answer = (
            f"Noted: {markdown_inline(said)}. I'll recall it in later chats; "
            "you can delete it on the Memory page."
        )
        evaluation = EvaluationResult(True, 0.9, "A fact to remember: kept and acknowledged.")
        tracker.end_attempt(
            "Acknowledged a fact to remember", status="completed", response=answer, evaluation=evaluation
        )
        return await self.finish(answer, None, analysis, strategy, strategy, evaluation, 0)

    async def recall(self) -> None:
        ctx = self.ctx
        try:
            await self.ask("memory", "recall", summary="What do we remember that bears on this?", priority=1)
        except MessageError as error:
            await ctx.degrade("memory", error.error, "answering without long-term memory")
            return
        items: list[MemoryItem] = [i for i in self.workspace.memories if i.kind != "procedural"]
        if items:
            memory = Attachment("resource", MEMORY_TITLE, memory_attachment_text(items), source="memory")
            ctx.input = RunInput(ctx.input.question, ctx.input.conversation, (*ctx.input.attachments, memory))

    def start(self, analysis: ComplexityAnalysis) -> ExecutionStrategy:
        """The tracker (new, or the interrupted run's) and the strategy to (re)start at."""
        ctx = self.ctx
        if self.tracker_state is not None:
            ctx.tracker = ResearchProgressTracker.from_dict(self.tracker_state)
            if ctx.tracker.plan is not None:
                for step in ctx.tracker.plan.steps:
                    if step.status == "in_progress":
                        step.status = "pending"
            last = ctx.tracker.attempts[-1] if ctx.tracker.attempts else None
            if last is not None and last.status == "in_progress":
                last.status, last.outcome = "failed", "Interrupted (the worker stopped)"
                self.keep_plan = ctx.tracker.plan is not None
                return last.strategy
            if last is not None and last.status == "escalated":
                return last.strategy.next() or last.strategy
        else:
            ctx.tracker = ResearchProgressTracker(
                ctx.question, analysis, failure_window=ctx.config.tool_failure_window
            )
        return ctx.config.force_strategy or analysis.recommended_strategy

    async def attempt(
        self, strategy: ExecutionStrategy, analysis: ComplexityAnalysis
    ) -> tuple[str, str | None, EvaluationResult]:
        ctx, ws = self.ctx, self.workspace
        tracker = require(ctx.tracker, "tracker")
        tracker.start_attempt(strategy)
        ctx.drafts.current = None
        await ctx.emit(
            "strategy.selected",
            PHASE,
            strategy=strategy.value,
            mode=strategy.label,
            rationale=analysis.rationale,
            attempt=len(tracker.attempts),
            speculative_start=False,
        )
        ws.update_stage("planning")
        if self.keep_plan:
            self.keep_plan = False  # a resumed run goes on with its plan and completed steps
        else:
            try:
                await self.ask(
                    "executive",
                    "plan",
                    {"strategy": strategy.value},
                    summary=f"Plan a {strategy.label.lower()} answer",
                    priority=1,
                )
            except MessageError as error:
                await ctx.degrade("executive", error.error, "answering the question as one step")
                tracker.set_plan(direct_plan(ctx.question), strategy)
        ws.update_stage("execution")
        await self.act(strategy)
        ws.update_stage("synthesis")
        mode = "deep" if strategy == ExecutionStrategy.DEEP_REASONING else "light"
        try:
            written = await self.ask(
                "executive", "synthesize", {"mode": mode}, summary="Write the answer from the findings"
            )
            answer, draft = written["answer"], written["draft"]
        except MessageError as error:
            await ctx.degrade("executive", error.error, "answering without synthesis")
            answer, draft = "", None
        if not answer.strip():
            raise ReasoningFailed("No step of the plan produced a finding to answer from.")
        ws.update_stage("evaluation")
        try:
            checked = await self.ask(
                "executive",
                "check",
                {"answer": answer, "strategy": strategy.value},
                summary="Is this answer good enough to show?",
            )
            evaluation = EvaluationResult.from_dict(checked["evaluation"])
        except MessageError as error:
            await ctx.degrade("evaluator", error.error, "accepting the answer without a quality check")
            evaluation = EvaluationResult(
                True, ctx.config.quality_threshold(strategy), "Quality check unavailable."
            )
        ws.confidence = evaluation.confidence
        return answer, draft, evaluation

    async def act(self, strategy: ExecutionStrategy) -> None:
        """Rounds of ready steps (at once, as Motor requests), research checked between rounds."""
        ctx, ws = self.ctx, self.workspace
        total = 1 if strategy == ExecutionStrategy.DIRECT else ctx.config.max_iterations
        plan = require(require(ctx.tracker, "tracker").plan, "the plan")
        for iteration in range(1, total + 1):
            ws.iteration_count = iteration
            ready = (await self.ask("executive", "next_actions", summary="What can be done now?"))["steps"]
            if not ready:
                break
            await ctx.emit(
                "iteration",
                current=iteration,
                total=total,
                subtask="; ".join(s["description"] for s in ready[:4]),
            )
            stream = len(plan.steps) == 1
            limit = ctx.config.max_parallel_steps if ctx.config.parallel_execution else 1
            for start in range(0, len(ready), max(1, limit)):
                await asyncio.gather(
                    *(
                        self.ask(
                            "motor",
                            "execute",
                            {"step_id": s["id"], "strategy": strategy.value, "stream": stream},
                            summary=f"Do: {s['description']}",
                            priority=4 - int(s.get("priority") or 2),
                        )
                        for s in ready[start : start + max(1, limit)]
                    )
                )
            if strategy == ExecutionStrategy.DIRECT or iteration == total:
                break
            if not plan.ready_steps() and strategy == ExecutionStrategy.LIGHT_PLANNING:
                break
            if plan.ready_steps():
                continue
            verdict = await self.ask("executive", "evaluate", summary="Do the findings answer the question?")
            if verdict["is_complete"]:
                break
            added = 0
            for query in verdict["additional_queries"]:
                added += await self.add_step(query)
            if not added:
                break

    async def add_step(self, description: str) -> int:
        plan = require(require(self.ctx.tracker, "tracker").plan, "the plan")
        if description.lower() in {s.description.lower() for s in plan.steps}:
            return 0
        step = PlanStep(id=f"step_dyn_{len(plan.steps) + 1}", description=description)
        if not plan.add_dynamic_step(step, None):
            return 0
        await self.ctx.emit(
            "plan.refined", plan=plan.to_dict(), added=[step.to_dict()], reason="research incomplete"
        )
        return 1

    # --- the end ----------------------------------------------------------------------

    async def finish(
        self,
        answer: str,
        draft: str | None,
        analysis: ComplexityAnalysis,
        initial: ExecutionStrategy,
        final: ExecutionStrategy,
        evaluation: EvaluationResult,
        escalations: int,
        *,
        checked: bool = True,
    ) -> ReasoningResult:
        ctx = self.ctx
        self.finishing = True
        self.workspace.update_stage("memory_storage")
        try:
            await self.ask(
                "memory",
                "store",
                {"answer": answer, "quality": evaluation.confidence},
                summary="Remember this exchange",
            )
        except MessageError as error:
            await ctx.degrade("memory", error.error, "this exchange is not remembered")
        self.workspace.update_stage("complete")
        answer = with_notice(answer, ctx.models.base.answer_notice)
        live = ctx.drafts.current_id
        await ctx.show_answer(
            answer,
            kind="answer",
            draft=draft if draft == live else None,
            evaluation=evaluation if checked else None,
        )
        result = await ctx.finish_run(
            answer,
            analysis=analysis,
            initial=initial,
            final=final,
            evaluation=evaluation if checked else None,
            escalations=escalations,
            routed_by="perception",
            agent_mode="cognitive",
            messages=len(self.bus.log),
        )
        # Procedural memory: like the adaptive mode, learn only when there is something to
        # learn, after the run is finished (the person already has the answer).
        trigger = result.reflection_trigger
        if trigger is not None:
            try:
                await self.ask(
                    "memory",
                    "learn",
                    {
                        "trigger": trigger,
                        "final": final.value,
                        "escalations": escalations,
                        "evaluation": evaluation.to_dict() if checked else None,
                        "answer": answer,
                    },
                    summary=f"What should we learn from this run ({trigger.replace('_', ' ')})?",
                )
            except MessageError as error:
                await ctx.degrade("reflection", error.error, "no lessons recorded for this run")
        return result
