"""The offline model: deterministic heuristics, no network, no weights.

It lets a fresh checkout show the whole product without an API key, and it is honest about
what it is: it declares an "offline model" notice that the engine adds once to every final
answer, answers are extracted from tool results and attached documents (with their
sources), and a question no tool can answer gets "I can't answer that offline" rather than
an invention.

It answers the engine's structured requests (analysis, plan, quality, completeness,
filter, critique, reflection, ...) with heuristics over the question's parts. As an agent
it takes one question per turn: the first part it can act on. Multi-part questions are
therefore answered through planning, which is what makes its escalations visible. When the
engine lists the parts to answer (a LIGHT answer in one call), it follows the list as a
model follows a checklist: one tool call per part that needs one, in the same turn, then
every part under its own heading.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

from reasoning.foresight import zone_in
from reasoning.llm.base import LLMClient, LLMRequest, LLMResponse, ToolCall, Usage
from reasoning.llm.offline_structured import structured_answer, synthesize
from reasoning.llm.offline_text import (
    LABEL,
    answer_from_context,
    answer_from_results,
    answer_without_tools,
    covers,
    declined_whole,
    expression_in,
    part_kind,
    plan_tool_call,
    plan_tool_calls,
    question_parts,
    recalls,
    remembered_lines,
)
from reasoning.text import EARLIER_CHAT, as_ask, markdown_inline

STREAM_WORDS = 4

__all__ = ["LABEL", "OfflineClient", "covers", "expression_in", "question_parts", "zone_in"]


class OfflineClient(LLMClient):
    provider = "offline"
    supports_tools = True
    answer_notice = LABEL

    def __init__(self, model: str = "nexus-offline", *, latency: float = 0.0, jitter: float = 0.0) -> None:
        super().__init__(model)
        self._ids = itertools.count(1)
        # Seconds each call takes; 0 by default. Demos and load tests set it to behave like a
        # model, and `jitter` (a fraction, 0.3 = ±30%) varies it per call as a real model does.
        self.latency = latency
        self.jitter = jitter

    def with_model(self, model: str) -> OfflineClient:
        return OfflineClient(model, latency=self.latency, jitter=self.jitter)

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        """Like a model: with a latency set, the first words come after half of it and the
        rest stream over the other half."""
        response = self.respond(request)
        # Simulated timing, not security: any pseudo-random spread will do.
        latency = self.latency * random.uniform(1 - self.jitter, 1 + self.jitter)  # nosec B311
        pieces = re.findall(r"\S+\s*|\s+", response.text) if latency else [response.text]
        pieces = ["".join(pieces[i : i + STREAM_WORDS]) for i in range(0, len(pieces), STREAM_WORDS)]
        if latency:
            await asyncio.sleep(latency / 2)
        gap = latency / 2 / max(1, len(pieces))
        for index, piece in enumerate(p for p in pieces if p):
            if index and gap:
                await asyncio.sleep(gap)
            yield piece
        if latency:
            await asyncio.sleep(gap)
        yield response

    def respond(self, request: LLMRequest) -> LLMResponse:
        choice = request.tool_choice or {}
        if choice.get("type") == "tool":
            arguments = structured_answer(choice["name"], request.hints)
            call = ToolCall(id=f"offline_{next(self._ids)}", name=choice["name"], arguments=arguments)
            return self._response("", [call], request, "tool_use")
        if request.hints.get("respond"):
            results = [tuple(r) for r in request.hints.get("tool_results", [])]
            question = request.hints.get("query", "")
            documents, remembered = _attached(request.hints), _remembered(request.hints, question)
            if documents or remembered:
                text = answer_from_context(question, documents, remembered)
                # A calculation or the time the thinker asked a tool for answers its part too.
                tooled = [r for r in results if r[0].split("__")[-1] != "search_documents"]
                if tooled:
                    text = f"{answer_from_results(question, tooled)}\n\n{text}"
            else:
                text = (
                    answer_from_results(question, results)
                    if results
                    else answer_without_tools(question, among=request.hints.get("original_query") or None)
                )
            return self._response(text, [], request)
        if request.component == "synthesis":
            return self._response(synthesize(request.hints), [], request)
        if request.hints.get("json_mode"):
            return self._response(
                json.dumps(structured_answer(request.hints.get("output", ""), request.hints)), [], request
            )
        return self.agent_turn(request)

    def agent_turn(self, request: LLMRequest) -> LLMResponse:
        context = _attached(request.hints)
        question = _current_question(request.messages)
        parts = [str(part) for part in request.hints.get("parts") or []]
        remembered = _remembered(request.hints, question)
        if context or remembered:
            return self.parts_turn(
                parts or question_parts(question) or [question], request, context, remembered
            )
        if not parts and request.hints.get("step"):
            # A plan step that holds several asks (a light plan's last step takes every part
            # beyond its first) answers each of them.
            parts = question_parts(question) if len(question_parts(question)) > 1 else []
        if parts:
            return self.parts_turn(parts, request)
        results = _tool_results(request.messages)
        if results:
            return self._response(answer_from_results(question, results), [], request)
        if (request.tool_choice or {}).get("type") != "none":
            call = plan_tool_call(question, [t.name for t in request.tools])
            if call is not None:
                name, arguments = call
                tool_call = ToolCall(id=f"offline_{next(self._ids)}", name=name, arguments=arguments)
                return self._response("", [tool_call], request, "tool_use")
        # A plan step is read with the message it came from: "how to test it" is not a
        # follow-up to an earlier message when "it" is in the same one.
        among = request.hints.get("original_query") or None
        return self._response(answer_without_tools(question, among=among), [], request)

    def parts_turn(
        self,
        parts: list[str],
        request: LLMRequest,
        context: list[tuple[str, str]] | None = None,
        remembered: list[str] | None = None,
    ) -> LLMResponse:
        """Every part: its tool calls first (all in one turn), then each part answered under
        its heading from its own results. With attachments (`context`), only a calculation or
        the time goes to a tool; anything else is answered from the attachments."""
        results = _tool_results(request.messages)
        tools = [t.name for t in request.tools]
        wanted = [
            plan_tool_calls(part, tools)
            if context is None or part_kind(part) in ("arithmetic", "time")
            else []
            for part in parts
        ]
        if not results and any(wanted) and (request.tool_choice or {}).get("type") != "none":
            calls = [
                ToolCall(id=f"offline_{next(self._ids)}", name=name, arguments=arguments)
                for name, arguments in (call for calls in wanted for call in calls)
            ]
            return self._response("", calls, request, "tool_use")
        sections = []
        for part, calls in zip(parts, wanted, strict=True):
            mine = [r for r in results if (r[0], r[1]) in calls]
            if not mine and part_kind(part) == "documents":
                # Found by a search made for the whole question or another part: read it too.
                mine = [r for r in results if r[0].split("__")[-1] == "search_documents"]
            if mine:
                text = answer_from_results(part, mine)
            elif context is not None and part_kind(part) not in ("arithmetic", "time"):
                text = answer_from_context(part, context, remembered)
            else:
                text = answer_without_tools(part, among=" ".join(parts))
            sections.append((part, text))
        if context is not None and len(sections) == 1:
            return self._response(sections[0][1], [], request)
        if context is None and (whole := declined_whole([answer for _, answer in sections])):
            return self._response(whole, [], request)
        text = "\n\n".join(f"**{markdown_inline(as_ask(part))}**\n\n{answer}" for part, answer in sections)
        return self._response(text, [], request)

    def _response(
        self, text: str, calls: list[ToolCall], request: LLMRequest, stop: str = "end_turn"
    ) -> LLMResponse:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages) + len(request.system)
        return LLMResponse(
            text=text,
            tool_calls=calls,
            stop_reason=stop,
            model=request.model or self.model,
            provider=self.provider,
            # Estimates (characters / 4): the offline model has no tokenizer.
            usage=Usage(input_tokens=prompt_chars // 4, output_tokens=max(1, len(text) // 4)),
        )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _current_question(messages: list[dict[str, Any]]) -> str:
    """The person's latest request: a turn's last text block (attachments come before it)."""
    for message in reversed(messages):
        if message["role"] == "user":
            content = message["content"]
            texts = (
                [b.get("text", "") for b in content if b.get("type") == "text"]
                if isinstance(content, list)
                else [content]
            )
            text = (texts[-1] if texts else "").strip()
            if text and not text.startswith("The tool-call limit"):
                return text
    return ""


def _attached(hints: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, content) of what the person attached (a real model reads it in the prompt)."""
    return [
        (str(item.get("title", "")), str(item.get("content", "")))
        for item in hints.get("attachments") or []
        if isinstance(item, dict)
        and item.get("kind") in ("document", "resource")
        and item.get("source") != "memory"
    ]


def _remembered(hints: dict[str, Any], question: str) -> list[str]:
    """The recalled memories the run attached, when any bears on the question (an unrelated
    one must not keep a calculation from its calculator)."""

    lines = [
        line
        for item in hints.get("attachments") or []
        if isinstance(item, dict) and item.get("source") == "memory"
        for line in remembered_lines(str(item.get("content", "")))
    ]
    # What the person told Nexus answers better than an earlier exchange that used it.
    facts = [line for line in lines if not line.startswith(EARLIER_CHAT)]
    return facts if recalls(question, facts) else lines if recalls(question, lines) else []


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str, bool]]:
    """(tool, arguments, result, is_error) for the tool calls of the current turn."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    results = []
    for message in messages:
        content = message["content"]
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], block.get("input") or {})
            elif block.get("type") == "tool_result" and block["tool_use_id"] in calls:
                name, arguments = calls[block["tool_use_id"]]
                text = block["content"] if isinstance(block["content"], str) else _text_of(block["content"])
                results.append((name, arguments, text, bool(block.get("is_error"))))
    return results
