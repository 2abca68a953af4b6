"""MotorAgent (the motor cortex): carries out one plan step with the run's tools.

A step is answered by the adaptive engine's answering loop (the tool loop, or the
reasoning-driven loop when EXECUTION_STYLE asks for it), whose tool calls go through the
run's ToolExecutor: the existing registry, the tracker's de-duplication of a call already
made, and each tool's no-cache policy. Recalled memories reach the step as material, in the
person's turn, never as instructions.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reasoning.agent import summarize
from reasoning.context import RunContext, describe_error
from reasoning.modes.adaptive.answering import Answerer
from reasoning.modes.cognitive.messaging import Agent, CognitiveContext, CognitiveMessage
from reasoning.types import ExecutionStrategy, require


class MotorAgent(Agent):
    name = "motor"

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.answerer = Answerer(ctx)

    async def handle(
        self, message: CognitiveMessage, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        if message.action != "execute":
            raise ValueError(f"motor has no action {message.action!r}")
        return await self.execute(
            message.payload["step_id"],
            ExecutionStrategy(message.payload["strategy"]),
            stream=bool(message.payload.get("stream")),
            workspace=workspace,
        )

    async def execute(
        self, step_id: str, strategy: ExecutionStrategy, *, stream: bool, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        ctx = self.ctx
        tracker = require(ctx.tracker, "the run's tracker")
        plan = require(tracker.plan, "the plan")
        step = require(plan.step(step_id), f"plan step {step_id}")
        tracker.update_step_status(step.id, "in_progress")
        await ctx.emit(
            "step.started",
            step_id=step.id,
            description=step.description,
            strategy=strategy.value,
            depends_on=step.depends_on,
        )
        single = step.description == ctx.question
        attempt = len(tracker.attempts)
        try:
            result = await self.answerer.answer(
                question=step.description,
                history=ctx.history if single else [],
                notes=self.notes(step_id),
                strategy=strategy,
                step_id=step.id,
                hints={
                    "query": step.description,
                    "strategy": strategy.value,
                    "step": step.id,
                    "original_query": ctx.question,
                },
                open_draft=(lambda: ctx.drafts.open(attempt=attempt, strategy="cognitive"))
                if stream
                else None,
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            message = describe_error(error)
            tracker.update_step_status(step.id, "failed", findings=[f"Error: {message}"])
            await ctx.emit(
                "step.completed",
                step_id=step.id,
                status="failed",
                error=message,
                findings="",
                tools_used=[],
                strategy=strategy.value,
            )
            await ctx.save_checkpoint()
            return {"status": "failed", "error": message}, f"failed: {message}"
        tracker.update_step_status(step.id, "completed", findings=[result.text], tools_used=result.tools_used)
        workspace.accumulated_results.append({"step_id": step.id, "result": result.text})
        await ctx.emit(
            "step.completed",
            step_id=step.id,
            status="completed",
            findings=summarize(result.text, 600),
            tools_used=result.tools_used,
            strategy=strategy.value,
        )
        await ctx.save_checkpoint()
        tools = ", ".join(result.tools_used) or "no tools"
        return {"status": "completed", "tools_used": result.tools_used}, f"done with {tools}"

    def notes(self, step_id: str) -> str:
        ctx = self.ctx
        plan = require(require(ctx.tracker, "the run's tracker").plan, "the plan")
        step = require(plan.step(step_id), f"plan step {step_id}")
        if step.description == ctx.question and len(plan.steps) == 1:
            return ""
        parts = [f"You are working on one part of a larger question: {ctx.question}"]
        earlier = [s for s in (plan.step(d) for d in step.depends_on) if s and s.status == "completed"]
        if earlier:
            parts.append("Findings from the steps this one builds on:")
            parts += [f"- {s.description}: {summarize('; '.join(s.findings), 1500)}" for s in earlier]
        parts.append("Answer only this part, precisely; another step covers the rest.")
        return "\n".join(parts)
