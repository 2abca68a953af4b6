"""A stand-in for the Anthropic Messages API over real HTTP, for the team benchmark's load
through the real `anthropic` SDK: each call takes 1 s ±30%, a forced tool gets an input made
from its own JSON schema, and anything else gets a markdown answer of about 300 tokens streamed
in 3-word deltas, as the API streams them. `python -m tests.bench.claude_wire PORT [SECONDS]`.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

ANSWER = (
    "## Answer\n\nA careful answer with **markdown**, a list and `code`:\n\n"
    + "".join(f"- point {n}: an explanation of the idea, with détails ✓\n" for n in range(20))
    + "\n```python\nprint('hello')\n```\n\nIn short: 391, and the clock gives the time in Tokyo."
)


def instance(schema: dict[str, Any], name: str = "") -> Any:
    """A small value the schema accepts: what a model fills in for a forced tool."""
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return instance(schema["anyOf"][0], name)
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        return {key: instance(value, key) for key, value in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance(schema.get("items", {}), name) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "boolean":
        return True
    if kind == "number":
        return min(schema.get("maximum", 0.9), 0.9)
    if kind == "integer":
        return max(schema.get("minimum", 1), 1)
    return f"{name or 'value'} text"


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _blocks(body: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    choice = body.get("tool_choice") or {}
    tool = next((t for t in body.get("tools", []) if t["name"] == choice.get("name")), None)
    if choice.get("type") == "tool" and tool is not None:
        raw = json.dumps(instance(tool["input_schema"]))
        start = {"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": raw[i : i + 20]} for i in range(0, len(raw), 20)
        ]
        return [("start", start), *(("delta", d) for d in deltas)], "tool_use"
    words = ANSWER.split(" ")
    pieces = [
        " ".join(words[i : i + 3]) + (" " if i + 3 < len(words) else "") for i in range(0, len(words), 3)
    ]
    deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
    return [("start", {"type": "text", "text": ""}), *(("delta", d) for d in deltas)], "end_turn"


async def _stream(body: dict[str, Any], number: int) -> AsyncIterator[bytes]:
    message = {"id": f"msg_{number}", "type": "message", "role": "assistant", "model": body["model"]}
    usage = {"input_tokens": 500, "output_tokens": 1}
    yield _event(
        "message_start",
        {"type": "message_start", "message": {**message, "content": [], "stop_reason": None, "usage": usage}},
    )
    blocks, stop = _blocks(body)
    for kind, data in blocks:
        if kind == "start":
            yield _event(
                "content_block_start", {"type": "content_block_start", "index": 0, "content_block": data}
            )
        else:
            yield _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": data})
    yield _event("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _event(
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 300}},
    )
    yield _event("message_stop", {"type": "message_stop"})


def app(seconds: float) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    calls = [0]

    async def messages(request: Any) -> Any:
        body = await request.json()
        calls[0] += 1
        await asyncio.sleep(seconds * random.uniform(0.7, 1.3))
        if not body.get("stream"):
            return JSONResponse(
                {"type": "error", "error": {"type": "invalid_request_error"}}, status_code=400
            )
        return StreamingResponse(_stream(body, calls[0]), media_type="text/event-stream")

    async def count(request: Any) -> Any:
        return JSONResponse({"calls": calls[0]})

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"]), Route("/calls", count)])


@contextmanager
def claude_wire(seconds: float = 1.0) -> Iterator[str]:
    """The wire running in a process of its own; yields its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "tests.bench.claude_wire", str(port), str(seconds)])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the fake Anthropic wire did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(
        app(float(sys.argv[2]) if len(sys.argv) > 2 else 1.0),
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="warning",
    )
