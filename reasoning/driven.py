"""The reasoning-driven loop (seed 003): reason, act, respond, then reason about the response.

Instead of letting the model call tools directly, each iteration starts with structured
reasoning (intent, needs, plan, proposed tools, whether the turn is complete). The proposed
tools run; a response is written from the reasoning and the results; the next iteration
reasons about that response. Reasoning ends the turn, or the iteration limit does. Every
reasoning result is a `thought` event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reasoning.agent import AgentResult, ToolExecutor, ToolRecord, streamed_call, unfinished_notice
from reasoning.drafts import DraftStream
from reasoning.llm.base import LLMRequest, ToolCall
from reasoning.quality.outputs import THOUGHT
from reasoning.types import ExecutionStrategy

if TYPE_CHECKING:
    from reasoning.context import RunContext

RESULT_CHARS = 4000


def _results_text(records: list[ToolRecord]) -> str:
    if not records:
        return "(none yet)"
    return "\n".join(f"- {r.name}({r.arguments}): {r.outcome.for_model()[:RESULT_CHARS]}" for r in records)


async def run_reasoning_driven(
    ctx: RunContext,
    *,
    query: str,
    history: list[dict[str, Any]],
    executor: ToolExecutor,
    max_iterations: int,
    strategy: ExecutionStrategy | None,
    step_id: str | None = None,
    context: str = "",
    hints: dict[str, Any] | None = None,
    open_draft: Callable[[], DraftStream] | None = None,
) -> AgentResult:
    """`context` is what the answer may draw on besides tools (attachments, a step's notes).
    Each response streams into a new draft when `open_draft` is given; a newer response
    revises the previous one, whose draft is then discarded."""
    thinker = ctx.llm("agent")
    tool_names = executor.registry.names()
    records: list[ToolRecord] = []
    draft = ""
    streamed: DraftStream | None = None
    text, about = query, "user"
    extra = dict(hints or {})
    for iteration in range(1, max_iterations + 1):
        system, prompt = ctx.prompt(
            "reasoning/thought.txt",
            about="person" if about == "user" else "assistant (you)",
            text=text,
            query=query,
            tools=", ".join(tool_names) or "(no tools)",
            results=_results_text(records),
            context=context or "(none)",
        )
        thought = await thinker.structured(
            THOUGHT,
            system=system,
            prompt=prompt,
            max_tokens=1200,
            hints={**extra, "text": text, "about": about, "query": query, "tools": tool_names},
        )
        await ctx.emitter.emit("thought", iteration=iteration, about=about, step_id=step_id, **thought)
        if draft and (thought["turn_complete"] or not thought["proposed_tools"]):
            break
        for index, proposed in enumerate(thought["proposed_tools"]):
            call = ToolCall(f"reasoning_{iteration}_{index}", proposed["tool"], proposed["parameters"])
            outcome = await executor.run(call, strategy=strategy, step_id=step_id)
            records.append(ToolRecord(call.name, call.arguments, outcome))
        system, prompt = ctx.prompt(
            "reasoning/respond.txt",
            query=query,
            reasoning=thought["plan"] or thought["intent"],
            results=_results_text(records),
            draft=draft or "(none)",
            context=context or "(none)",
        )
        request = LLMRequest(
            messages=[*history, {"role": "user", "content": prompt}],
            system=system,
            max_tokens=ctx.config.max_tokens,
            hints={
                **extra,
                "respond": True,
                "query": query,
                "tool_results": [
                    (r.name, r.arguments, r.outcome.for_model(), not r.outcome.success) for r in records
                ],
            },
        )
        if streamed is not None:
            await streamed.discard("revised")
        response, streamed = await streamed_call(thinker, request, open_draft)
        draft = unfinished_notice(response)
        text, about = draft, "assistant"
    return AgentResult(draft, records, iteration)
