"""Fake wires that speak the providers' real HTTP formats, streaming included.

The real SDKs talk to these through httpx2.MockTransport: every request is recorded with
its JSON body, and each reply is an SSE stream or an error status exactly as the API sends.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

import httpx2


def sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    chunks = []
    for name, data in events:
        body = data if isinstance(data, str) else json.dumps(data)
        chunks.append((f"event: {name}\n" if name else "") + f"data: {body}\n\n")
    return "".join(chunks).encode()


def anthropic_stream(
    *,
    text: str = "",
    tool: tuple[str, str, dict[str, Any] | str] | None = None,
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 50,
    output_tokens: int = 12,
    cache_read: int = 0,
    cache_write: int = 0,
    cut_after: int | None = None,
    stop_reason: str | None = None,
) -> bytes:
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": input_tokens,
                        "output_tokens": 1,
                        "cache_read_input_tokens": cache_read,
                        "cache_creation_input_tokens": cache_write,
                    },
                },
            },
        )
    ]
    index = 0
    if text:
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if tool:
        tool_id, name, arguments = tool
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
                },
            )
        )
        encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)  # a str: as sent
        for piece in (encoded[:5], encoded[5:]):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": stop_reason or ("tool_use" if tool else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    if cut_after is not None:
        events = events[:cut_after]
    return sse(events)


def anthropic_error(status: int, error_type: str, message: str = "") -> httpx2.Response:
    return httpx2.Response(
        status, json={"type": "error", "error": {"type": error_type, "message": message or error_type}}
    )


class BrokenStream(httpx2.AsyncByteStream):
    """A response body that delivers `data`, then fails as the connection would: dropped
    mid-body (RemoteProtocolError, "incomplete chunked read") or silent past the read timeout."""

    def __init__(self, data: bytes, error: Exception) -> None:
        self.data = data
        self.error = error

    async def __aiter__(self):  # type: ignore[override]
        yield self.data
        raise self.error


def broken_stream(data: bytes, error: Exception) -> Callable[[httpx2.Request], httpx2.Response]:
    """A reply whose SSE body stops after `data` with `error` raised by the transport."""
    return lambda request: httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, stream=BrokenStream(data, error)
    )


Reply = httpx2.Response | bytes | Exception | Callable[[httpx2.Request], httpx2.Response]


class FakeWire:
    """Queue replies; record requests. Use `.transport` with the SDK's http client."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[httpx2.Request] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request {len(self.requests)} to {request.url}")
        reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        if callable(reply) and not isinstance(reply, httpx2.Response):
            return reply(request)
        if isinstance(reply, bytes):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=reply)
        return reply

    @property
    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self.handler)

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=self.transport)


def openai_stream(
    *,
    text: str = "",
    tool_calls: list[tuple[str, str, str]] | None = None,
    model: str = "llama3",
    prompt_tokens: int = 30,
    completion_tokens: int = 9,
    cached_tokens: int = 0,
    cut: bool = False,
) -> bytes:
    """Chat-completion chunks; `tool_calls` are (id, name, raw arguments) and may be malformed."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        return None, {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[tuple[str | None, dict[str, Any] | str]] = [chunk({"role": "assistant", "content": ""})]
    if text:
        events += [chunk({"content": text[: len(text) // 2]}), chunk({"content": text[len(text) // 2 :]})]
    for index, (call_id, name, raw) in enumerate(tool_calls or []):
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": raw[:4]},
                        }
                    ]
                }
            )
        )
        events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": raw[4:]}}]}))
    if cut:
        return sse(events)
    events.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    events.append(
        (
            None,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": cached_tokens},
                },
            },
        )
    )
    events.append((None, "[DONE]"))
    return sse(events)


def openai_error(status: int, message: str) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": "error", "code": status}})


class LoopbackWire:
    """A real HTTP/1.1 server on 127.0.0.1 for the faults a mock transport cannot make: a
    stream that stalls or whose connection drops after some events. Each reply is the list of
    raw SSE event bytes to send in a chunked body, then what to do: "end" (finish the body),
    "drop" (abort the connection mid-body) or "stall" (send nothing more)."""

    def __init__(self, *replies: tuple[bytes, str]) -> None:
        self.replies: deque[tuple[bytes, str]] = deque(replies)
        self.requests = 0
        self._server: Any = None
        self._stalled: list[Any] = []

    async def __aenter__(self) -> str:
        import asyncio

        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._stalled:
            writer.transport.abort()
        self._server.close()

    async def _serve(self, reader: Any, writer: Any) -> None:
        import asyncio

        try:
            while True:
                headers = (await reader.readuntil(b"\r\n\r\n")).decode().lower()
                length = next(
                    (
                        int(line.split(":")[1])
                        for line in headers.split("\r\n")
                        if line.startswith("content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                self.requests += 1
                body, then = self.replies.popleft()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
                writer.write(b"transfer-encoding: chunked\r\n\r\n")
                if body:
                    writer.write(b"%x\r\n%s\r\n" % (len(body), body))
                await writer.drain()
                if then == "drop":
                    writer.transport.abort()
                    return
                if then == "stall":
                    self._stalled.append(writer)
                    await asyncio.sleep(3600)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            writer.close()
