"""The offline model: deterministic heuristics, no network, no weights.

It lets a fresh checkout show the whole product without an API key, and it is honest about
what it is: every answer carries an "offline model" label, answers are extracted from tool
results and documents (with their sources), and a question no tool can answer gets "I
can't answer that offline" rather than an invention.

It answers the engine's structured requests (analysis, plan, quality, completeness,
filter, critique, reflection, ...) with heuristics over the question's parts. As an agent
it takes one question per turn: the first part it can act on. Multi-part questions are
therefore answered through planning, which is what makes its escalations visible.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from reasoning.llm.base import LLMClient, LLMRequest, LLMResponse, ToolCall, Usage
from reasoning.llm.offline_structured import structured_answer, synthesize
from reasoning.llm.offline_text import (
    LABEL,
    LABEL_BLOCK,
    answer_from_context,
    answer_from_results,
    answer_without_tools,
    covers,
    expression_in,
    plan_tool_call,
    question_parts,
    zone_in,
)

__all__ = ["LABEL", "LABEL_BLOCK", "OfflineClient", "covers", "expression_in", "question_parts", "zone_in"]


class OfflineClient(LLMClient):
    provider = "offline"
    supports_tools = True

    def __init__(self, model: str = "nexus-offline", *, latency: float = 0.0) -> None:
        super().__init__(model)
        self._ids = itertools.count(1)
        # Seconds each call takes; 0 by default. Demos and load tests set it to behave like a model.
        self.latency = latency

    def with_model(self, model: str) -> OfflineClient:
        return OfflineClient(model, latency=self.latency)

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        if self.latency:
            await asyncio.sleep(self.latency)
        response = self.respond(request)
        if response.text:
            yield response.text
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
            text = answer_from_results(question, results) if results else answer_without_tools(question)
            return self._response(text, [], request)
        if request.component == "synthesis":
            return self._response(synthesize(request.hints), [], request)
        if request.hints.get("json_mode"):
            return self._response(
                json.dumps(structured_answer(request.hints.get("output", ""), request.hints)), [], request
            )
        return self.agent_turn(request)

    def agent_turn(self, request: LLMRequest) -> LLMResponse:
        context = _mentioned_context(request.messages)
        question = _current_question(request.messages)
        if context:
            return self._response(answer_from_context(question, context), [], request)
        results = _tool_results(request.messages)
        if results:
            return self._response(answer_from_results(question, results), [], request)
        if (request.tool_choice or {}).get("type") != "none":
            call = plan_tool_call(question, [t.name for t in request.tools])
            if call is not None:
                name, arguments = call
                tool_call = ToolCall(id=f"offline_{next(self._ids)}", name=name, arguments=arguments)
                return self._response("", [tool_call], request, "tool_use")
        return self._response(answer_without_tools(question), [], request)

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
    for message in reversed(messages):
        if message["role"] == "user":
            text = _text_of(message["content"]).strip()
            if text and not text.startswith("The tool-call limit"):
                return _unwrap(text)
    return ""


def _unwrap(text: str) -> str:
    """Questions enriched with @resources arrive wrapped in <query> tags."""
    match = re.search(r"<query>\s*(.*?)\s*</query>", text, re.DOTALL)
    return match.group(1) if match else text


def _mentioned_context(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(title, content) of documents the person mentioned with @, if the question carries them."""
    for message in reversed(messages):
        if message["role"] == "user":
            text = _text_of(message["content"])
            return re.findall(r'<document title="([^"]*)">\n(.*?)\n</document>', text, re.DOTALL)
    return []


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
