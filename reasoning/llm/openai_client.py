"""OpenAI-compatible servers (Ollama, vLLM, llama.cpp server, LM Studio) through the `openai` SDK.

Chat completions with streaming, tool calling and usage, mapped onto the engine's protocol.
Servers whose model cannot call tools are detected from their error and answered in JSON
mode instead: the forced tool's schema becomes an instruction and `response_format`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import openai

from reasoning.llm.base import (
    LLMClient,
    LLMError,
    LLMRequest,
    LLMResponse,
    RetryPolicy,
    ToolCall,
    Usage,
    kind_for_status,
)

_TOOLS_UNSUPPORTED = (
    "does not support tools",
    "tools are not supported",
    "tool use is not supported",
    "tool_choice is not supported",
    "does not support function",
    "tools not supported",
)


class _ToolsUnsupported(Exception):
    pass


class OpenAIClient(LLMClient):
    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        http_client: Any = None,
        retry: RetryPolicy | None = None,
        sdk_client: openai.AsyncOpenAI | None = None,
    ) -> None:
        super().__init__(model, retry=retry)
        # Local servers usually need no key, but the SDK insists on one.
        self._sdk = sdk_client or openai.AsyncOpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=http_client,
        )
        self.supports_tools = True

    def with_model(self, model: str) -> OpenAIClient:
        return OpenAIClient(model, retry=self.retry, sdk_client=self._sdk)

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        if request.tools and not self.supports_tools:
            request = without_tools(request)
        try:
            async for item in self._stream_once(request):
                yield item
        except _ToolsUnsupported:
            self.supports_tools = False
            async for item in self._stream_once(without_tools(request)):
                yield item

    async def _stream_once(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        params = self._params(request)
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        finish: str | None = None
        model = request.model or self.model
        try:
            stream = await self._sdk.chat.completions.create(**params)
            async for chunk in stream:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        text.append(delta.content)
                        yield delta.content
                    for call in (delta.tool_calls or []) if delta is not None else []:
                        entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                        entry["id"] = call.id or entry["id"]
                        if call.function is not None:
                            # OpenAI sends the name once; servers that send it again with
                            # each piece of the arguments mean the same name.
                            name = call.function.name or ""
                            if name != entry["name"]:
                                entry["name"] += name
                            entry["arguments"] += call.function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.APITimeoutError as exc:
            raise LLMError(f"request timed out: {exc}", kind="timeout", provider=self.provider) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"connection failed: {exc}", kind="connection", provider=self.provider) from exc
        except openai.APIStatusError as exc:
            message = _message(exc)
            if (
                request.tools
                and exc.status_code in (400, 404, 422, 500)
                and any(marker in message.lower() for marker in _TOOLS_UNSUPPORTED)
            ):
                raise _ToolsUnsupported from exc
            raise LLMError(
                f"OpenAI-compatible server error {exc.status_code}: {message}",
                kind=kind_for_status(exc.status_code),
                status=exc.status_code,
                provider=self.provider,
                retry_after=_retry_after(exc),
            ) from exc
        except openai.APIError as exc:
            # An error the server sent inside the stream after it began (vLLM, Ollama: a data
            # line holding an `error` object): the answer broke off, like a 5xx mid-way.
            raise LLMError(
                f"OpenAI-compatible server error mid-stream: {_message(exc)}",
                kind=_midstream_kind(exc.body),
                provider=self.provider,
            ) from exc
        if finish is None:
            raise LLMError(
                "the server's stream ended before the answer was complete",
                kind="connection",
                provider=self.provider,
            )
        tool_calls = [_tool_call(index, entry) for index, entry in sorted(calls.items())]
        yield LLMResponse(
            text="".join(text),
            tool_calls=tool_calls,
            usage=usage,
            model=model,
            provider=self.provider,
            stop_reason={"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}.get(
                finish, finish
            ),
        )

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend(to_openai_messages(request.messages))
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in request.tools
            ]
            choice = request.tool_choice or {}
            if choice.get("type") == "tool":
                params["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
            elif choice.get("type") == "any":
                params["tool_choice"] = "required"
            elif choice.get("type") == "none":
                params["tool_choice"] = "none"
        if request.hints.get("json_mode"):
            params["response_format"] = {"type": "json_object"}
        return params


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        texts = [b["text"] for b in content if b["type"] == "text"]
        if message["role"] == "assistant":
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                for b in content
                if b["type"] == "tool_use"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        for block in content:
            if block["type"] == "tool_result":
                out.append(
                    {"role": "tool", "tool_call_id": block["tool_use_id"], "content": str(block["content"])}
                )
        if texts:
            out.append({"role": "user", "content": "\n".join(texts)})
    return out


def without_tools(request: LLMRequest) -> LLMRequest:
    """The same request for a model that cannot call tools: history as text, JSON mode if forced."""
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        content = message["content"]
        if isinstance(content, str):
            messages.append(message)
            continue
        parts = []
        for block in content:
            if block["type"] == "text":
                parts.append(block["text"])
            elif block["type"] == "tool_use":
                parts.append(f"(called {block['name']} with {json.dumps(block['input'])})")
            elif block["type"] == "tool_result":
                parts.append(f"(result: {block['content']})")
        messages.append({"role": message["role"], "content": "\n".join(parts)})
    hints = dict(request.hints)
    choice = request.tool_choice or {}
    if choice.get("type") == "tool":
        schema = next((t.input_schema for t in request.tools if t.name == choice["name"]), {})
        instruction = (
            "\n\nReply with one JSON object only, no prose, matching this JSON schema:\n" + json.dumps(schema)
        )
        last = messages[-1]
        messages[-1] = {**last, "content": f"{last['content']}{instruction}"}
        hints["json_mode"] = True
    return replace(request, messages=messages, tools=[], tool_choice=None, hints=hints)


def _tool_call(index: int, entry: dict[str, str]) -> ToolCall:
    raw = entry["arguments"] or "{}"
    try:
        arguments = json.loads(raw)
    except ValueError:
        return ToolCall(entry["id"] or f"call_{index}", entry["name"], {}, malformed=raw)
    if not isinstance(arguments, dict):
        return ToolCall(entry["id"] or f"call_{index}", entry["name"], {}, malformed=raw)
    return ToolCall(entry["id"] or f"call_{index}", entry["name"], arguments)


def _usage(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details else 0
    return Usage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cached),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )


def _midstream_kind(body: Any) -> str:
    """The kind of an error sent inside a stream: its `code` when that is an HTTP status."""
    code = body.get("code") if isinstance(body, dict) else None
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    return kind_for_status(code) if isinstance(code, int) and code >= 400 else "server"


def _message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return exc.message


def _retry_after(exc: openai.APIStatusError) -> float | None:
    header = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(header) if header else None
    except ValueError:
        return None
