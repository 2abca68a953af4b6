"""Claude through the official `anthropic` SDK: streaming, tools, prompt caching, retries.

The SDK's own retries are switched off so that every retry goes through one policy the
engine can observe and tests can drive (RetryPolicy in base.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic

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

_ERROR_TYPES = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "server",
    "timeout_error": "timeout",
    "authentication_error": "auth",
    "permission_error": "auth",
}


class AnthropicClient(LLMClient):
    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        http_client: Any = None,
        retry: RetryPolicy | None = None,
        sdk_client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        super().__init__(model, retry=retry)
        self._sdk = sdk_client or anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=http_client,
        )

    def with_model(self, model: str) -> AnthropicClient:
        return AnthropicClient(model, retry=self.retry, sdk_client=self._sdk)

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        params = self._params(request)
        try:
            async with self._sdk.messages.stream(**params) as stream:
                async for event in stream:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        yield event.delta.text
                message = await stream.get_final_message()
        except anthropic.APITimeoutError as exc:
            raise LLMError(f"request timed out: {exc}", kind="timeout", provider=self.provider) from exc
        except anthropic.APIConnectionError as exc:
            raise LLMError(f"connection failed: {exc}", kind="connection", provider=self.provider) from exc
        except anthropic.APIStatusError as exc:
            raise _status_error(exc) from exc
        yield _to_response(message, self.provider)

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens,
            "messages": _messages(request.messages),
        }
        if request.system:
            block: dict[str, Any] = {"type": "text", "text": request.system}
            if request.cache_system:
                block["cache_control"] = {"type": "ephemeral"}
            params["system"] = [block]
        if request.tools:
            tools = [t.to_dict() for t in request.tools]
            if request.cache_tools:
                # A breakpoint on the last tool caches the whole tool list.
                tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
            params["tools"] = tools
            if request.tool_choice:
                params["tool_choice"] = request.tool_choice
        # The current Messages API has no temperature parameter; the request's value is
        # for providers that still take one (OpenAI-compatible servers).
        return params


def _messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our neutral format is Anthropic's; drop keys the API does not accept."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = [
                {k: v for k, v in block.items() if k in _BLOCK_KEYS[block["type"]]} for block in content
            ]
        out.append({"role": message["role"], "content": content})
    return out


_BLOCK_KEYS = {
    "text": {"type", "text", "cache_control"},
    "tool_use": {"type", "id", "name", "input"},
    "tool_result": {"type", "tool_use_id", "content", "is_error"},
}


def _to_response(message: Any, provider: str) -> LLMResponse:
    text_parts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            text_parts.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            malformed = None if isinstance(block.input, dict) else str(block.input)
            calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments, malformed=malformed))
    usage = message.usage
    return LLMResponse(
        text="".join(text_parts),
        tool_calls=calls,
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        stop_reason=message.stop_reason or "end_turn",
        model=message.model,
        provider=provider,
    )


def _status_error(exc: anthropic.APIStatusError) -> LLMError:
    status = exc.status_code
    kind = kind_for_status(status) if status and status >= 400 else "server"
    body = exc.body if isinstance(exc.body, dict) else {}
    error_type = (body.get("error") or {}).get("type") if isinstance(body.get("error"), dict) else None
    if error_type in _ERROR_TYPES:
        kind = _ERROR_TYPES[error_type]
    retry_after = None
    header = exc.response.headers.get("retry-after") if exc.response is not None else None
    if header:
        try:
            retry_after = float(header)
        except ValueError:
            retry_after = None
    message = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
    return LLMError(
        f"Anthropic API error {status}: {message or exc.message}",
        kind=kind,
        status=status,
        provider="anthropic",
        retry_after=retry_after,
    )
