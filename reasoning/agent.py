"""The agent loop: the model and the tools take turns until the model stops asking.

Tool calls go through a ToolExecutor, which consults the run's tracker first (a call made
in an earlier attempt is answered from its recorded result), shares identical calls that
are in flight at the same time, and reports each call and result as events.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reasoning.calls import ComponentLLM
from reasoning.drafts import DraftStream
from reasoning.events import Emitter
from reasoning.llm.base import LLMRequest, LLMResponse, ToolCall, ToolDef
from reasoning.text import documents_cited
from reasoning.tools.approval import ApprovalRequest, InputRequest, declined_message, edit_refusal
from reasoning.tools.registry import ToolOutcome, ToolRegistry
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import ExecutionStrategy

# Seconds between two progress events of one tool call (the final one always goes).
PROGRESS_INTERVAL = 0.25

RESULT_SUMMARY_CHARS = 300
STORED_RESULT_CHARS = 4000


def summarize(text: str, limit: int = RESULT_SUMMARY_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass
class ToolRecord:
    name: str
    arguments: dict[str, Any]
    outcome: ToolOutcome
    # For a call foreseen for an answer that covers several parts at once: the parts (by
    # index) it was run for. Empty for a call the model asked for itself.
    parts: tuple[int, ...] = ()


@dataclass
class AgentResult:
    text: str
    tools: list[ToolRecord] = field(default_factory=list)
    rounds: int = 0
    hit_limit: bool = False

    @property
    def tools_used(self) -> list[str]:
        return list(dict.fromkeys(record.name for record in self.tools))


def _sampling_request(approved: dict[str, Any], shown: dict[str, Any]) -> dict[str, Any]:
    """The request for a completion as the person approved it: their edit when it is still a
    request (a system prompt, messages of a role and text, a token count), else as shown."""
    messages = approved.get("messages")
    well_formed = (
        isinstance(approved.get("system", ""), str)
        and isinstance(approved.get("max_tokens", 1), int)
        and isinstance(messages, list)
        and bool(messages)
        and all(
            isinstance(m, dict)
            and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str)
            for m in messages
        )
    )
    if not well_formed:
        return shown
    return {
        "system": approved.get("system", ""),
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "max_tokens": approved.get("max_tokens", shown["max_tokens"]),
    }


class ToolExecutor:
    def __init__(
        self,
        registry: ToolRegistry,
        emitter: Emitter,
        tracker: Callable[[], ResearchProgressTracker | None],
        *,
        timeout: float,
        llm: Callable[[], ComponentLLM] | None = None,
    ) -> None:
        # The model that answers servers' requests for a completion (sampling), counted in the
        # run's tokens and cost like every other call.
        self.llm = llm
        self.registry = registry
        self.emitter = emitter
        self.tracker = tracker
        self.timeout = timeout
        self._in_flight: dict[str, asyncio.Future[ToolOutcome]] = {}

    def definitions(self) -> list[ToolDef]:
        return self.registry.definitions()

    async def run(
        self, call: ToolCall, *, strategy: ExecutionStrategy | None, step_id: str | None
    ) -> ToolOutcome:
        spec = self.registry.spec(call.name)
        server = spec.server if spec else "unknown"
        tool = spec.provider_tool if spec else call.name
        arg_hash = ResearchProgressTracker.hash_arguments(call.name, call.arguments)
        base = {
            "call_id": call.id,
            "tool": call.name,
            "server": server,
            "server_tool": tool,
            "arguments": call.arguments,
            "argument_hash": arg_hash,
            "strategy": strategy.value if strategy else None,
            "step_id": step_id,
        }
        await self.emitter.emit("tool.called", **base)
        call, refusal, base = await self._approve(
            call, spec.approval if spec else "auto", base, schema=spec.input_schema if spec else None
        )
        arg_hash = base["argument_hash"]
        outcome = refusal or await self._outcome(
            call, arg_hash, step_id, self._progress(base), self._elicit(base), self._sample(base, spec)
        )
        await self.emitter.emit(
            "tool.result",
            **base,
            success=outcome.success,
            cached=outcome.cached,
            truncated=outcome.truncated,
            duration_ms=round(outcome.duration_ms, 1),
            summary=summarize(outcome.content if outcome.success else f"Error: {outcome.error}"),
            result=outcome.content[:STORED_RESULT_CHARS],
            error=outcome.error,
            **({"detail": outcome.detail} if outcome.detail else {}),
            **({"parts": outcome.parts} if outcome.parts else {}),
            **({"documents": cited} if (cited := documents_cited(outcome.content)) else {}),
        )
        return outcome

    async def _approve(
        self,
        call: ToolCall,
        policy: str,
        base: dict[str, Any],
        *,
        in_call: bool = False,
        schema: dict[str, Any] | None = None,
    ) -> tuple[ToolCall, ToolOutcome | None, dict[str, Any]]:
        """Ask the host's approver when the tool's policy says so. Returns the call to make
        (with the person's edited arguments), or the refusal the model hears instead. The
        request carries the tool's input `schema`, which an edit must fit (the host checks it
        as the person decides; checked again here, for a host that did not)."""
        tool = base["server_tool"]
        if policy == "never":
            return (
                call,
                ToolOutcome(False, "", f"{tool} is switched off by an administrator; answer without it"),
                base,
            )
        approver = self.registry.approver
        if policy != "ask" or approver is None:
            return call, None, base
        if (refused := self.registry.refused_now(call.name)) is not None:
            return call, refused, base  # a paused server: nobody is asked to approve a refused call
        request = ApprovalRequest(
            call.id, call.name, base["server"], tool, dict(call.arguments), base["argument_hash"], in_call
        )
        decision = await approver.known(request)
        if decision is None:
            await self.emitter.emit(
                "tool.approval.requested",
                **base,
                mode="Awaiting approval",
                **({"input_schema": schema} if schema else {}),
            )
            decision = await approver.wait(request)
        edited = decision.arguments is not None and decision.arguments != call.arguments
        await self.emitter.emit(
            "tool.approval.decided",
            **base,
            approved=decision.approved,
            scope=decision.scope,
            by=decision.by,
            note=decision.note,
            **({"edited_arguments": decision.arguments} if edited else {}),
        )
        if not decision.approved:
            return call, ToolOutcome(False, "", declined_message(tool, decision.note)), base
        if edited and (refusal := edit_refusal(decision.arguments or {}, schema, call.arguments)) is not None:
            return call, ToolOutcome(False, "", f"{tool} was not run: {refusal}"), base
        if edited:
            arguments = dict(decision.arguments or {})
            call = ToolCall(call.id, call.name, arguments)
            argument_hash = ResearchProgressTracker.hash_arguments(call.name, arguments)
            base = {**base, "arguments": arguments, "argument_hash": argument_hash}
        return call, None, base

    def _sample(self, base: dict[str, Any], spec: Any) -> Any:
        """Serve a server's request for a completion with the run's model, under the same
        approval rules as a tool call (the card shows what the server asks the model)."""
        if self.llm is None:
            return None
        policy = getattr(spec, "sampling_approval", "ask")

        async def sample(
            system: str, messages: list[dict[str, str]], max_tokens: int
        ) -> tuple[str, str] | None:
            request = {"system": system[:4000], "messages": messages[-20:], "max_tokens": max_tokens}
            asked = {
                **base,
                "tool": f"{base['server']}__sampling",
                "server_tool": "sampling",
                "arguments": request,
                "argument_hash": ResearchProgressTracker.hash_arguments("sampling", request),
            }
            sampling = ToolCall(f"{base['call_id']}:sampling", asked["tool"], request)
            approved, refusal, _ = await self._approve(sampling, policy, asked, in_call=True)
            if refusal is not None:
                return None
            # What the card showed and the person approved (as they edited it), no more: the
            # model was sent the server's whole request, and never the person's edit.
            request = _sampling_request(approved.arguments, request)
            llm = self.llm()
            response = await llm.complete(
                LLMRequest(
                    messages=request["messages"],
                    system=request["system"],
                    max_tokens=max(1, min(int(request["max_tokens"]), 4096)),
                )
            )
            return response.text, llm.client.model

        sample.asker = id(self.registry.approver)  # type: ignore[attr-defined]
        return sample

    def _elicit(self, base: dict[str, Any]) -> Any:
        """The person answers a server's request for input during this call (a form in the
        chat), when the host can ask; otherwise the server hears a decline."""
        approver = self.registry.approver
        if approver is None:
            return None
        asked = 0

        async def ask(
            message: str, schema: dict[str, Any], url: str = "", *, refused: str = ""
        ) -> tuple[str, dict[str, Any] | None]:
            nonlocal asked
            if refused:  # declined for the person: said in the trace, nobody asked
                await self.emitter.emit(
                    "elicitation.answered",
                    tool=base["server_tool"],
                    server=base["server"],
                    action="decline",
                    refused=refused,
                    message=message[:500],
                )
                return "decline", None
            asked += 1
            key = hashlib.sha256(f"{base['argument_hash']}:{asked}:{message}".encode()).hexdigest()[:32]
            request = InputRequest(
                key, base["server_tool"], base["server"], message[:2000], schema, url[:2000]
            )
            await self.emitter.emit(
                "elicitation.requested",
                key=key,
                call_id=base["call_id"],
                tool=base["server_tool"],
                server=base["server"],
                message=request.message,
                schema=schema,
                url=request.url,
                mode="Waiting for your answer",
            )
            action, content = await approver.answer(request)
            await self.emitter.emit(
                "elicitation.answered",
                key=key,
                tool=base["server_tool"],
                server=base["server"],
                action=action,
            )
            return action, content

        ask.asker = id(approver)  # type: ignore[attr-defined]  # whose person answers (one run's)
        return ask

    def _progress(self, base: dict[str, Any]) -> Any:
        """Emit a long tool's progress as `mcp.progress`, at most a few a second (and the last)."""
        last = 0.0

        async def report(progress: float, total: float | None, message: str | None) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last < PROGRESS_INTERVAL and not (total and progress >= total):
                return
            last = now
            await self.emitter.emit(
                "mcp.progress",
                call_id=base["call_id"],
                tool=base["tool"],
                server=base["server"],
                progress=progress,
                total=total,
                message=(message or "")[:300],
            )

        return report

    async def _outcome(
        self,
        call: ToolCall,
        arg_hash: str,
        step_id: str | None,
        on_progress: Any = None,
        on_elicit: Any = None,
        on_sample: Any = None,
    ) -> ToolOutcome:
        if call.malformed is not None:
            return ToolOutcome(False, "", f"the arguments were not a JSON object: {call.malformed[:200]}")
        tracker = self.tracker()
        policy = self.registry.cache_policy(call.name)
        if tracker is not None:
            execute, cached = tracker.should_execute_tool(call.name, call.arguments, policy)
            if not execute:
                failed = (cached or "").startswith("Error:")
                return ToolOutcome(
                    not failed,
                    "" if failed else cached or "",
                    cached[7:].strip() if failed and cached else None,
                    cached=True,
                )
        shared = policy == "cache"
        if shared and arg_hash in self._in_flight:
            outcome = await asyncio.shield(self._in_flight[arg_hash])
            return ToolOutcome(
                outcome.success, outcome.content, outcome.error, 0.0, outcome.truncated, cached=True
            )
        future: asyncio.Future[ToolOutcome] = asyncio.get_running_loop().create_future()
        if shared:
            self._in_flight[arg_hash] = future
        try:
            outcome = await self.registry.execute(
                call.name,
                call.arguments,
                timeout=self.timeout,
                on_progress=on_progress,
                on_elicit=on_elicit,
                on_sample=on_sample,
            )
            future.set_result(outcome)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved; waiters re-raise it themselves
            raise
        finally:
            if shared:
                self._in_flight.pop(arg_hash, None)
        if tracker is not None:
            tracker.log_tool_execution(
                call.name,
                call.arguments,
                success=outcome.success,
                result=outcome.content if outcome.success else None,
                error=outcome.error,
                execution_time_ms=outcome.duration_ms,
                step_id=step_id,
            )
        return outcome


async def run_agent(
    llm: ComponentLLM,
    *,
    system: str,
    messages: list[dict[str, Any]],
    executor: ToolExecutor | None,
    max_rounds: int,
    strategy: ExecutionStrategy | None = None,
    step_id: str | None = None,
    max_tokens: int = 4096,
    hints: dict[str, Any] | None = None,
    open_draft: Callable[[], DraftStream] | None = None,
    offered: list[ToolDef] | None = None,
    tool_choice: dict[str, Any] | None = None,
    prior: list[ToolRecord] | None = None,
) -> AgentResult:
    """Call the model, run the tools it asks for, feed results back; stop when it answers.

    With `open_draft`, each call streams into a new answer draft; a call that turns to tools
    discards its draft (its text was the model thinking aloud, not the answer). `offered`
    narrows the tools the model sees (default: all of the executor's), `tool_choice` says
    whether it may call them, and `prior` are the calls already made for it (foresight), whose
    results `messages` already hold."""
    messages = list(messages)
    tools = offered if offered is not None else (executor.definitions() if executor else [])
    records: list[ToolRecord] = list(prior or [])
    for round_number in range(1, max_rounds + 1):
        request = LLMRequest(
            messages=messages,
            system=system,
            tools=tools,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            hints=dict(hints or {}),
        )
        response, draft = await streamed_call(llm, request, open_draft)
        if not response.tool_calls or executor is None:
            return AgentResult(unfinished_notice(response), records, round_number)
        if draft is not None:
            await draft.discard("tool_call")
        messages.append(response.assistant_message())
        outcomes = await asyncio.gather(
            *(executor.run(call, strategy=strategy, step_id=step_id) for call in response.tool_calls)
        )
        blocks: list[dict[str, Any]] = []
        for call, outcome in zip(response.tool_calls, outcomes, strict=True):
            records.append(ToolRecord(call.name, call.arguments, outcome))
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": outcome.for_model(),
                    "is_error": not outcome.success,
                }
            )
        messages.append({"role": "user", "content": blocks})
    # Out of tool rounds: ask for an answer from what is known, with tools switched off.
    last = messages[-1]
    last["content"] = [
        *last["content"],
        {
            "type": "text",
            "text": "The tool-call limit for this turn is reached. Answer now from the results above, "
            "and say what is still unknown.",
        },
    ]
    request = LLMRequest(
        messages=messages,
        system=system,
        tools=tools,
        tool_choice={"type": "none"},
        max_tokens=max_tokens,
        hints=dict(hints or {}),
    )
    response, _ = await streamed_call(llm, request, open_draft)
    return AgentResult(unfinished_notice(response), records, max_rounds + 1, hit_limit=True)


# What an answer the model did not finish gets at its end: it stops mid-sentence otherwise,
# and reads as if it were whole.
UNFINISHED = {
    "max_tokens": "*(This answer was cut off: it reached the length limit for one answer.)*",
    "refusal": "*(The model stopped here: it declined to continue this answer.)*",
}


def unfinished_notice(response: LLMResponse) -> str:
    """The response's text, with a line saying so when the model did not finish it."""
    notice = UNFINISHED.get(response.stop_reason)
    if notice is None:
        return response.text
    return f"{response.text.rstrip()}\n\n{notice}" if response.text.strip() else notice


async def streamed_call(
    llm: ComponentLLM, request: LLMRequest, open_draft: Callable[[], DraftStream] | None
) -> tuple[LLMResponse, DraftStream | None]:
    """One model call, streamed into a fresh draft when `open_draft` is given."""
    draft = open_draft() if open_draft is not None else None
    try:
        response = await llm.complete(request, on_text=draft)
    except BaseException:
        if draft is not None:
            draft.stop()
        raise
    if draft is not None:
        await draft.close()
    return response, draft
