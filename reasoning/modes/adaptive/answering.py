"""How the adaptive mode writes an answer or a step's finding: the tool loop, or seed 003's
reasoning-driven loop (EXECUTION_STYLE, or AGENT_MODE=reasoning_driven).

A one-call answer (the first DIRECT answer, a light answer that covers every part at once)
is one model call: the tools its parts need are foreseen and run first (foresight.py) and
their results handed to that call; the tools foresight judges are then not offered again,
so a model cannot spend a call asking for one. Tools foresight knows nothing about (a
team's MCP servers) stay on offer: only the model can tell when they are needed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reasoning.agent import AgentResult, ToolRecord, run_agent
from reasoning.context import RunContext
from reasoning.drafts import DraftStream
from reasoning.driven import run_reasoning_driven
from reasoning.foresight import foresee, foreseen_among
from reasoning.llm.base import ToolCall
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
        one_call: list[str] | None = None,
    ) -> AgentResult:
        """Answer `question` after `history`; `notes` say what this call should know (earlier
        attempts, the step's place in the plan). `one_call`: the question's parts, for an
        answer made in one call with the foreseen tools' results."""
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
        messages = [*history, ctx.user_turn(question)]
        foresight: dict[str, Any] = {}
        if one_call is not None and ctx.config.foresight:
            foresight = await self.foreseen(one_call, messages, strategy=strategy, step_id=step_id)
        return await run_agent(
            ctx.llm("agent"),
            system=ctx.system_prompt(notes),
            messages=messages,
            executor=ctx.executor,
            max_rounds=ctx.config.max_tool_rounds,
            strategy=strategy,
            step_id=step_id,
            max_tokens=ctx.config.max_tokens,
            hints=hints,
            open_draft=open_draft,
            **foresight,
        )

    async def foreseen(
        self,
        parts: list[str],
        messages: list[dict[str, Any]],
        *,
        strategy: ExecutionStrategy,
        step_id: str | None,
    ) -> dict[str, Any]:
        """Run the tool calls `parts` need (appending them and their results to `messages`, as
        if the model had asked) and say what the answer call is then offered. Only tools that
        run without a person's approval are run ahead of the model."""
        ctx = self.ctx
        specs = {spec.name: spec for spec in ctx.tools.specs() if spec.approval == "auto"}
        calls: list[ToolCall] = []
        served: list[list[int]] = []  # the parts each call is run for
        # A step that holds several asks ("What is 2+2; what is 3+3": a light plan's last step
        # takes the parts beyond its first) needs each one's calls.
        asks = [
            (index, ask.strip()) for index, part in enumerate(parts) for ask in part.split(";") if ask.strip()
        ]
        for index, part in asks:
            for call in foresee(part, specs, attached=bool(ctx.attachments)):
                known = [(c.name, c.arguments) for c in calls]
                if (call.name, call.arguments) in known:
                    served[known.index((call.name, call.arguments))].append(index)
                else:
                    calls.append(ToolCall(f"foreseen_{len(calls) + 1}", call.name, call.arguments))
                    served.append([index])
        # A tool foresight judges but may not run on its own (it needs a person's approval)
        # stays on offer, like the tools foresight knows nothing about.
        tools = ctx.tools.specs()
        foreseen = foreseen_among(specs)
        staying = {s.name for s in tools if s.name not in foreseen}
        if not calls:
            return {"offered": [s.definition() for s in tools if s.name in staying], "tool_choice": None}
        choice = None if staying else {"type": "none"}
        outcomes = await asyncio.gather(
            *(ctx.executor.run(call, strategy=strategy, step_id=step_id) for call in calls)
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                    for call in calls
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call.id,
                        "content": outcome.for_model(),
                        "is_error": not outcome.success,
                    }
                    for call, outcome in zip(calls, outcomes, strict=True)
                ],
            }
        )
        prior = [
            ToolRecord(c.name, c.arguments, o, tuple(p))
            for c, o, p in zip(calls, outcomes, served, strict=True)
        ]
        # Offered in the registry's order, the host's own server first: another server's
        # "calculator" that asks approval listed ahead of the one just run was taken for it
        # (by the offline model, which picks the first of a name) and the results went unread.
        used = {call.name for call in calls}
        offered = [s.definition() for s in tools if s.name in staying or s.name in used]
        return {"offered": offered, "tool_choice": choice, "prior": prior}
