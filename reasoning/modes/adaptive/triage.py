"""Triage: how an adaptive run gets its first strategy, and the speculative DIRECT start.

The local router decides when it is sure. Otherwise the analysis model is asked (its verdict
cached), and a question the router leans to call simple starts its DIRECT answer at once;
the analysis then keeps that answer or has it discarded. A resumed run keeps the analysis
it had; a forced strategy skips routing.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from reasoning.analyzer import QueryComplexityAnalyzer, fallback_analysis, forced_analysis
from reasoning.cache import AnalysisCache
from reasoning.context import RunContext, describe_error
from reasoning.modes.adaptive.strategies import Strategies
from reasoning.routing import RouteDecision, Router
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import ComplexityAnalysis, ComplexityLevel, ExecutionStrategy, require

PHASE_ANALYSIS = "Phase 0: Complexity Analysis"


class Triage:
    def __init__(
        self,
        ctx: RunContext,
        strategies: Strategies,
        *,
        analysis_cache: AnalysisCache | None,
        force: ExecutionStrategy | None,
        tracker_state: dict[str, Any] | None,
    ) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.strategies = strategies
        self.analysis_cache = analysis_cache
        self.force = force
        self.tracker_state = tracker_state
        # Who chose the first strategy: router, analysis, cache, forced, resumed or fallback.
        self.routed_by = ""
        # The local router's reading of the question (None when it was not asked).
        self.decision: RouteDecision | None = None
        self.speculation: asyncio.Task[str] | None = None

    async def analyze(self) -> ComplexityAnalysis:
        ctx = self.ctx
        await ctx.emit("analysis.started", PHASE_ANALYSIS, mode="Analyzing")
        cached = False
        decision: RouteDecision | None = None
        if self.tracker_state is not None:
            ctx.tracker = ResearchProgressTracker.from_dict(self.tracker_state)
            analysis, self.routed_by, cached = ctx.tracker.complexity, "resumed", True
        elif self.force is not None:
            analysis, self.routed_by = forced_analysis(self.force, self.config.max_iterations), "forced"
        else:
            decision = Router().route(
                ctx.question, attachments=len(ctx.attachments), conversation=len(ctx.history)
            )
            self.decision = decision
            if decision.confidence >= self.config.router_min_confidence:
                analysis, self.routed_by = decision.analysis(), "router"
            else:
                analysis, cached = await self.ask_analyzer(decision)
        if ctx.tracker is None:
            ctx.tracker = ResearchProgressTracker(
                ctx.question, analysis, failure_window=self.config.tool_failure_window
            )
        ctx.tracker.complexity = analysis
        await ctx.emit(
            "analysis.completed",
            forced=self.force is not None,
            cached=cached,
            analysis=analysis,
            routed_by=self.routed_by,
            router=decision.to_dict() if decision else None,
        )
        return analysis

    async def ask_analyzer(self, decision: RouteDecision) -> tuple[ComplexityAnalysis, bool]:
        """The analysis model's verdict on a question the router is unsure about; a likely-
        simple question starts its DIRECT answer meanwhile."""
        ctx = self.ctx
        analyzer = QueryComplexityAnalyzer(ctx, self.analysis_cache)
        tools = ctx.tools.names()
        # Only a question asked alone: an analysis made with a chat's turns or attachments
        # speaks of them, and the cache is everyone's (keyed by the question's words).
        alone = not ctx.history and not ctx.attachments
        known = analyzer.cached(ctx.question, tools) if alone else None
        if known is not None:
            self.routed_by = "cache"
            return known, True
        ctx.tracker = ResearchProgressTracker(
            ctx.question, decision.analysis(), failure_window=self.config.tool_failure_window
        )
        if self.config.speculative_direct and decision.level == ComplexityLevel.SIMPLE:
            self.speculation = asyncio.create_task(self.strategies.direct(speculative=True))
        try:
            analysis = await analyzer.analyze(
                ctx.question, tools, ctx.conversation_text(), attachments=ctx.attachment_titles()
            )
            self.routed_by = "analysis"
        except Exception as error:
            # The seed's fallback is MEDIUM; the router's lean raises it, never lowers it.
            analysis = fallback_analysis(describe_error(error))
            if decision.level == ComplexityLevel.COMPLEX:
                analysis = forced_analysis(ExecutionStrategy.DEEP_REASONING, self.config.max_iterations)
                analysis.rationale = (
                    f"Complexity analysis failed ({describe_error(error)}); the router leans complex."
                )
                analysis.confidence = 0.0
            self.routed_by = "fallback"
            await ctx.degrade(
                "complexity_analysis",
                describe_error(error),
                f"treating the question as {analysis.complexity_level.value} complexity",
            )
        return analysis, False

    async def take_speculation(self) -> str:
        task = require(self.speculation, "the speculative answer")
        self.speculation = None
        return await task

    async def drop_speculation(self, chosen: ExecutionStrategy | None) -> None:
        """Stop the speculative draft and say so: the analysis chose `chosen`, a deeper
        strategy (None: the run failed and falls back)."""
        if self.speculation is None:
            return
        task, self.speculation = self.speculation, None
        before = self.ctx.totals.cancelled
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task  # a discarded draft's own failure does not matter
        draft = self.ctx.drafts.current
        if draft is not None and draft.speculative:
            detail = {"chosen_strategy": chosen.value} if chosen else {}
            await draft.discard(
                "speculation" if chosen else "failed",
                always=True,
                cancelled_calls=self.ctx.totals.cancelled - before,
                **detail,
            )
        self.ctx.drafts.current = None

    def cancel_speculation(self) -> None:
        """The run itself is cancelled: cancel the speculative answer with it."""
        if self.speculation is not None:
            self.speculation.cancel()
