"""How the adaptive mode writes an answer or a step's finding: the tool loop, or seed 003's
reasoning-driven loop (EXECUTION_STYLE, or AGENT_MODE=reasoning_driven)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasoning.agent import AgentResult, run_agent
from reasoning.context import RunContext
from reasoning.drafts import DraftStream
from reasoning.driven import run_reasoning_driven
from reasoning.types import ExecutionStrategy


class Answerer:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    async def answer(
        self,
        *,
        question: str,
        history: list[dict[str, Any]],
        strategy: ExecutionStrategy,
        notes: str = "",
        step_id: str | None = None,
        hints: dict[str, Any] | None = None,
        open_draft: Callable[[], DraftStream] | None = None,
    ) -> AgentResult:
        """Answer `question` after `history`; `notes` say what this call should know (earlier
        attempts, the step's place in the plan)."""
        ctx = self.ctx
        hints = {**(hints or {}), "attachments": ctx.attachment_hints()}
        if ctx.config.execution_style == "reasoning_driven":
            return await run_reasoning_driven(
                ctx,
                query=question,
                history=history,
                executor=ctx.executor,
                max_iterations=ctx.config.max_tool_rounds,
                strategy=strategy,
                step_id=step_id,
                context="\n\n".join(part for part in (ctx.attachments_text(), notes) if part),
                hints=hints,
                open_draft=open_draft,
            )
        return await run_agent(
            ctx.llm("agent"),
            system=ctx.system_prompt(notes),
            messages=[*history, ctx.user_turn(question)],
            executor=ctx.executor,
            max_rounds=ctx.config.max_tool_rounds,
            strategy=strategy,
            step_id=step_id,
            max_tokens=ctx.config.max_tokens,
            hints=hints,
            open_draft=open_draft,
        )
