"""The reference third-party server, `@modelcontextprotocol/server-everything` from npm, over
stdio and streamable HTTP: what the project's own servers show, with a server we did not write.

npm installs it once into var/npm (kept between runs). Outside CI a machine without npm
skips these tests with the reason; with CI=true a missing npm fails them.
"""

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from chat.mentions import _arguments
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig, MCPToolProvider
from reasoning.tools.registry import ToolRegistry


@pytest.fixture(scope="module")
def pool():
    pool = MCPConnectionPool()
    yield pool
    pool.close_sync()


@contextlib.contextmanager
def serving(everything: str, mode: str) -> Iterator[int]:
    """server-everything in `mode` (streamableHttp, sse) on a free port, once it listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        ["node", everything, mode],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture(scope="module")
def over_http(everything):
    with serving(everything, "streamableHttp") as port:
        yield MCPServerConfig(name="everything", transport="http", url=f"http://127.0.0.1:{port}/mcp")


async def test_over_stdio_every_content_type_reaches_the_person(pool, everything):
    config = MCPServerConfig(name="everything", command="node", args=(everything, "stdio"))
    provider = MCPToolProvider(pool, config)
    registry = ToolRegistry([provider])
    await registry.refresh()
    assert "everything__echo" in registry.names()
    assert "everything__simulate-research-query" not in registry.names(), "needs task augmentation"
    assert provider.hidden == ["simulate-research-query"]
    assert registry.cache_policy("everything__get-sum") == "cache", "read-only, closed world, idempotent"
    assert registry.cache_policy("everything__toggle-simulated-logging") == "no-cache"
    assert registry.spec("everything__gzip-file-as-resource").approval == "ask", "open world"
    assert registry.spec("everything__get-sum").approval == "auto"

    image = await registry.execute("everything__get-tiny-image", {})
    assert image.success and [p["mime_type"] for p in image.parts] == ["image/png"]
    assert "[image content]" not in image.content
    reference = await registry.execute(
        "everything__get-resource-reference", {"resourceType": "Blob", "resourceId": 1}
    )
    assert (
        reference.parts[0]["type"] == "blob" and reference.parts[0]["uri"] == "demo://resource/dynamic/blob/1"
    )
    links = await registry.execute("everything__get-resource-links", {"count": 2})
    assert [p["uri"] for p in links.parts] == [
        "demo://resource/dynamic/blob/1",
        "demo://resource/dynamic/text/2",
    ]
    assert "<demo://resource/dynamic/text/2>" in links.content, "the model sees the URI too"
    text = await provider.read_resource("demo://resource/dynamic/blob/1")
    assert "demo://resource/dynamic/blob/1" in text and "not attached" in text, "named, not read as nothing"

    prompt = next(p for p in await provider.list_prompts() if p.name == "args-prompt")
    declared = [{"name": a.name, "required": bool(a.required)} for a in prompt.arguments]
    arguments = _arguments(declared, "Paris")
    assert arguments == {"city": "Paris"}, "the optional state is left out"
    messages = await provider.get_prompt("args-prompt", arguments)
    assert "Paris" in messages[0]["content"]


async def test_over_streamable_http_with_live_progress(pool, over_http):
    registry = ToolRegistry([MCPToolProvider(pool, over_http)])
    await registry.refresh()
    assert not registry.errors and "everything__echo" in registry.names()
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    outcome = await registry.execute(
        "everything__trigger-long-running-operation", {"duration": 0.6, "steps": 3}, on_progress=on_progress
    )
    assert outcome.success and seen == [(1, 3), (2, 3), (3, 3)]
    echo = await registry.execute("everything__echo", {"message": "over http"})
    assert echo.success and "over http" in echo.content


@pytest.mark.parametrize("same_run", [True, False])
async def test_a_question_on_a_shared_connection_reaches_the_person_only_when_unambiguous(
    pool, everything, same_run
):
    """Two calls in flight on one stdio connection while the server asks for input: if both
    are one run's, its person is asked; if they are two runs', nothing says whose the
    question is, so it is declined rather than shown to the wrong person."""
    import asyncio

    config = MCPServerConfig(name="everything_shared", command="node", args=(everything, "stdio"))
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.refresh()
    asked: list[str] = []

    def person(run: str):
        async def ask(message, schema, url=""):
            asked.append(run)
            return "accept", {"name": "Ada", "integer": 7, "untitledMultipleSelectEnum": ["Piano"]}

        ask.asker = run
        return ask

    async def progress(*_):
        return None

    long = asyncio.ensure_future(
        registry.execute(
            "everything_shared__trigger-long-running-operation",
            {"duration": 3, "steps": 3},
            on_progress=progress,
            on_elicit=person("run-1"),
        )
    )
    await asyncio.sleep(0.5)  # the long call is in flight on the connection
    question = await registry.execute(
        "everything_shared__trigger-elicitation-request",
        {},
        on_progress=progress,
        on_elicit=person("run-1" if same_run else "run-2"),
    )
    assert (await long).success
    if same_run:
        assert question.success and "Name: Ada" in question.content and asked == ["run-1"]
    else:
        assert "decline" in question.content.lower() and asked == []


def test_an_sse_only_server_is_named_as_such(everything):
    """server-everything in its SSE mode, added at its /sse address: the status said only
    "MCPError: Not Found", without the hint that streamable HTTP is what Nexus speaks."""
    import asyncio

    from reasoning.tools.mcp import MCPUnavailable

    pool = MCPConnectionPool()
    try:
        with serving(everything, "sse") as port:
            config = MCPServerConfig(name="sse", transport="http", url=f"http://127.0.0.1:{port}/sse")
            with pytest.raises(MCPUnavailable) as refused:
                asyncio.run(pool.tools(config))
            assert "SSE-only" in str(refused.value), refused.value
    finally:
        pool.close_sync()
