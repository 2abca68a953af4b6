"""MCP tools against real server processes: the built-in Nexus server and a faulty one."""

import asyncio
import dataclasses
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.template.loader import render_to_string

from chat import documents, services, tools
from chat.models import Document, MCPServer, ToolExecution
from chat.presenters import events_context
from reasoning.tools import mcp_pool
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig, MCPToolProvider, MCPUnavailable
from reasoning.tools.mcp_pool import LIVENESS_TIMEOUT
from reasoning.tools.registry import ToolRegistry
from tests.conftest import ask, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

FAULTY = str(Path(__file__).parent / "servers" / "faulty.py")


def faulty(timeout: float = 5.0) -> MCPServerConfig:
    return MCPServerConfig(name="faulty", command=sys.executable, args=(FAULTY,), call_timeout=timeout)


@pytest.fixture
def pool():
    pool = MCPConnectionPool()
    yield pool
    pool.close_sync()


async def call(registry: ToolRegistry, name: str, **arguments):
    await registry.ensure_loaded()
    return await registry.execute(name, arguments)


def builtin_registry(user) -> ToolRegistry:
    return tools.registry_for(user)


def test_builtin_server_runs_as_a_subprocess_and_serves_each_tool(alice):
    registry = builtin_registry(alice)
    outcome = async_to_sync(call)(registry, "nexus__calculator", expression="17*23")
    assert outcome.success and outcome.content == "17*23 = 391"
    assert sorted(registry.names()) == ["nexus__calculator", "nexus__clock", "nexus__search_documents"]
    assert registry.cache_policy("nexus__clock") == "no-cache"
    assert registry.cache_policy("nexus__calculator") == "cache", "its annotations say it may be reused"
    clock = async_to_sync(registry.execute)("nexus__clock", {"timezone": "Asia/Tokyo"})
    assert clock.success and "Asia/Tokyo" in clock.content
    for expression, message in [
        ("__import__('os')", "not allowed"),
        ("10**10**10", "digits"),
        ("1/0", "division by zero"),
    ]:
        refused = async_to_sync(registry.execute)("nexus__calculator", {"expression": expression})
        assert not refused.success and message in refused.error, expression
    server = MCPServer.objects.get(name="nexus")
    assert server.last_status == "ok" and server.tool_count == 3


def test_documents_are_searched_only_where_the_user_may_look(alice, bob):
    documents.document_create(
        owner=alice, title="Release plan", content="The release train leaves on Friday."
    )
    documents.document_create(
        owner=bob, title="Bob notes", content="Bob's release thoughts: ship Monday.", shared=True
    )
    alice_result = async_to_sync(call)(builtin_registry(alice), "nexus__search_documents", query="release")
    assert "Release plan" in alice_result.content and "Friday" in alice_result.content
    assert "Bob notes" in alice_result.content, "shared documents are visible to everyone"
    bob_result = async_to_sync(call)(
        builtin_registry(bob), "nexus__search_documents", query="release train Friday"
    )
    assert "Release plan" not in bob_result.content and "Friday" not in bob_result.content


def test_documents_are_resources_read_with_the_users_rights(alice, bob):
    document = documents.document_create(owner=alice, title="Secret", content="alice only")
    provider = next(p for p in tools.providers_for(alice) if p.name == "nexus")
    assert "alice only" in async_to_sync(provider.read_resource)(document.uri)
    outsider = next(p for p in tools.providers_for(bob) if p.name == "nexus")
    with pytest.raises(Exception, match="no document"):
        async_to_sync(outsider.read_resource)(document.uri)


async def test_a_server_whose_command_does_not_exist_is_reported_and_skipped(pool):
    from reasoning.tools.local import builtin_provider

    missing = MCPServerConfig(name="ghost", command="/nonexistent/mcp-server")
    registry = ToolRegistry([MCPToolProvider(pool, missing), builtin_provider()])
    await registry.refresh()
    assert "calculator" in registry.names()
    assert registry.errors["ghost"] == "tool server ghost is unavailable", "all a user sees"
    assert "cannot start '/nonexistent/mcp-server'" in registry.error_details["ghost"]


async def test_a_crash_mid_call_fails_that_call_and_the_next_call_reconnects(pool):
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    first = await call(registry, "faulty__echo", text="hi")
    crashed = await registry.execute("faulty__crash", {})
    # All a user (and the model) sees, as the README promises; staff get what happened.
    assert not crashed.success and crashed.error == "tool server faulty is unavailable"
    assert "failed during crash" in crashed.detail and "restarted" in crashed.detail, crashed.detail
    again = await registry.execute("faulty__echo", {"text": "back"})
    assert again.success and again.content.startswith("back")
    assert again.content != first.content.replace("hi", "back"), "a new server process answered"


CROWDED = str(Path(__file__).parent / "servers" / "crowded.py")


async def test_a_server_listing_hundreds_of_tools_is_offered_up_to_the_limits_and_the_others_keep_theirs(
    pool,
):
    """Found by a review: a server listing 3000 tools held the pool's loop for most of a minute
    (every other server's calls timed out meanwhile), and every model request then carried
    3000 tools, which OpenAI refuses past 128: every run of every user failed."""
    crowded = MCPServerConfig(name="crowded", command=sys.executable, args=(CROWDED, "300"), call_timeout=30)
    registry = ToolRegistry([MCPToolProvider(pool, faulty()), MCPToolProvider(pool, crowded)], timeout=60)
    await registry.ensure_loaded()
    assert registry.errors == {}
    names = registry.names()
    faultys = [name for name in names if name.startswith("faulty__")]
    crowds = [name for name in names if name.startswith("crowded__")]
    assert len(names) == registry.max_tools == 128, "no request carries more than 128 tools"
    assert faultys and len(crowds) == 128 - len(faultys), "the first server's tools first, then the next's"
    assert crowds[:2] == ["crowded__tool0", "crowded__tool1"], "as the server listed them"
    assert len(await pool.tools(crowded)) == mcp_pool.MAX_TOOLS_PER_SERVER
    assert (await call(registry, "faulty__echo", text="still here")).content.startswith("still here")


async def test_whole_lines_hands_on_a_stdio_servers_output_up_to_the_end_of_its_last_line():
    """What the SDK's line reader is given: whole lines, however the pipe cut them (it
    re-split everything it held for every chunk: quadratic in a line's length)."""
    import anyio

    send, receive = anyio.create_memory_object_stream[bytes](100)
    for chunk in [b'{"a":', b" 1", b'}\n{"b"', b": 2}\n", b'{"c": 3}\n{"d"', b": 4}"]:
        send.send_nowait(chunk)
    send.close()

    class Pipe(anyio.abc.ByteReceiveStream):
        async def receive(self, max_bytes: int = 65536) -> bytes:
            return await receive.receive()

        async def aclose(self) -> None:
            await receive.aclose()

    lines = mcp_pool.WholeLines(Pipe())
    got = [await lines.receive() for _ in range(4)]
    assert got == [b'{"a": 1}\n', b'{"b": 2}\n', b'{"c": 3}\n', b'{"d": 4}'], "the last, unended, at the end"
    with pytest.raises(anyio.EndOfStream):
        await lines.receive()


@pytest.mark.parametrize("code", [-32603, -32000])
async def test_an_error_the_server_answers_with_fails_only_that_call(pool, code):
    """A JSON-RPC error from a live server (a fetch server's "status 404") was taken for a
    broken connection: the session was replaced, every other call in flight on it failed with
    "Connection closed", and each counted toward pausing the server. Found again by a review
    for -32000, the generic server error, which the SDK also gives a connection that closed."""
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    before = await call(registry, "faulty__echo", text="hi")
    napping = [asyncio.create_task(registry.execute("faulty__nap", {"seconds": 1.5})) for _ in range(3)]
    await asyncio.sleep(0.3)
    refused = await registry.execute("faulty__refuse", {"code": code})
    assert not refused.success and "status 404" in refused.error and "restarted" not in refused.error
    for outcome in await asyncio.gather(*napping):
        assert outcome.success and outcome.content.startswith("rested"), outcome.error
    for _ in range(4):  # an answer, however unwelcome, never pauses the server
        await registry.execute("faulty__refuse", {"code": code})
    after = await call(registry, "faulty__echo", text="hi")
    assert after.content == before.content, "the same server process answers"


async def test_a_server_that_dies_on_every_call_is_paused_after_three(pool):
    """Each reconnect reset the failure count: a server crashing on every call was restarted
    for every call, never paused, and the admin said "connected"."""
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    await registry.ensure_loaded()
    for _ in range(3):
        crashed = await registry.execute("faulty__crash", {})
        assert not crashed.success and "failed during crash" in crashed.detail
    spawned = len(pool.connection(faulty()).pids)
    refused = await registry.execute("faulty__echo", {"text": "hi"})
    assert not refused.success and refused.error == "tool server faulty is unavailable"
    assert "paused" in refused.detail and "3 failures in a row" in refused.detail, refused.detail
    assert len(pool.connection(faulty()).pids) == spawned, "not started again while paused"


async def test_closing_a_server_ends_the_processes_it_started(pool):
    """A server that exits when its input closes took its launcher with it, and the group
    was only killed when the leader was still alive: a helper it had started (a watcher, a
    browser) outlived the connection, an orphan, after every edit of the server's settings."""
    import os

    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    helper = int((await call(registry, "faulty__spawn")).content)
    os.kill(helper, 0)  # running
    crashed = await registry.execute("faulty__crash", {})  # the server exits by itself
    assert not crashed.success

    def gone() -> bool:
        try:
            with open(f"/proc/{helper}/stat", encoding="ascii") as stat:
                return stat.read().rsplit(")", 1)[-1].split()[0] == "Z"
        except OSError:
            return True

    assert await asyncio.to_thread(wait_until, gone, 10), "the server's helper outlived it"


async def test_a_hanging_tool_times_out_and_the_server_keeps_working(pool):
    registry = ToolRegistry([MCPToolProvider(pool, faulty(timeout=0.5))])
    hung = await call(registry, "faulty__hang")
    assert not hung.success and "timed out after 0.5s" in hung.error
    assert (await registry.execute("faulty__echo", {"text": "alive"})).success


async def test_a_server_stuck_as_a_whole_is_started_afresh_after_a_timeout(pool):
    """A tool that blocked the server's event loop left it stuck: every later call timed out on
    the same process, and pausing it only delayed the next timeout."""
    registry = ToolRegistry([MCPToolProvider(pool, faulty(timeout=0.5))])
    before = (await call(registry, "faulty__echo", text="hi")).content
    frozen = await registry.execute("faulty__freeze", {})
    assert not frozen.success and "timed out after 0.5s" in frozen.error
    # The stuck process is replaced once it fails to answer within LIVENESS_TIMEOUT.
    await asyncio.sleep(LIVENESS_TIMEOUT + 1)
    after = await registry.execute("faulty__echo", {"text": "back"})
    assert after.success, after.error
    assert after.content.split("pid ")[1] != before.split("pid ")[1], "the stuck process was kept"


async def test_checking_a_stuck_server_asks_it_instead_of_its_cached_listing(pool):
    """The admin's "Check the connection now" said "connected, 3 tools" for a stuck server:
    its listing came from the cache."""
    provider = MCPToolProvider(pool, faulty(timeout=20))
    registry = ToolRegistry([provider])
    await registry.ensure_loaded()
    await provider.check()  # a live server answers
    frozen = asyncio.create_task(registry.execute("faulty__freeze", {}))
    await asyncio.sleep(0.5)
    assert [t.name for t in await provider.list_tools()], "the cached listing is still served"
    with pytest.raises(MCPUnavailable, match="did not answer"):
        await provider.check()
    assert not (await frozen).success  # its process was replaced under it
    assert (await registry.execute("faulty__echo", {"text": "fresh"})).success


async def test_a_noisy_servers_stderr_stays_bounded_and_redacted_on_disk(pool, monkeypatch):
    """20,000 lines of stderr, each with the server's secret, grew a 4.9 MB file holding the
    secret 20,000 times, for as long as the server ran."""
    monkeypatch.setattr(mcp_pool, "STDERR_CHECK_SECONDS", 0.2)
    secret = "sk-live-SECRET-123456"
    config = dataclasses.replace(faulty(), env=(("FAULTY_TOKEN", secret),), secret_values=(secret,))
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    assert (await call(registry, "faulty__shout", lines=20000)).success
    connection = pool.connection(config)
    await asyncio.sleep(1)
    on_disk = await asyncio.to_thread(Path(f"/proc/self/fd/{connection._stderr.fileno()}").read_bytes)
    assert len(on_disk) <= mcp_pool.STDERR_KEEP
    # What was cut back is redacted; lines written after the last cut stay as written until
    # the next one (the file is never rewritten under the server's feet below its bound).
    assert on_disk.count(secret.encode()) < 20000 // 3
    assert secret not in connection.config.redact(connection.stderr_tail())
    assert (await registry.execute("faulty__shout", {"lines": 1, "word": "afterwards"})).success
    await asyncio.sleep(0.3)
    assert "afterwards 0 token=" in connection.stderr_tail(), "the server's later lines still arrive"


async def test_a_slow_call_leaves_a_server_that_still_answers_alone(pool):
    registry = ToolRegistry([MCPToolProvider(pool, faulty(timeout=0.5))])
    before = (await call(registry, "faulty__echo", text="hi")).content
    assert not (await registry.execute("faulty__hang", {})).success
    await asyncio.sleep(1)
    after = await registry.execute("faulty__echo", {"text": "still"})
    assert after.success and after.content.split("pid ")[1] == before.split("pid ")[1]


async def test_huge_and_hostile_results_are_truncated_and_inert(pool, alice_session):
    registry = ToolRegistry([MCPToolProvider(pool, faulty())], max_result_chars=5000)
    flood = await call(registry, "faulty__flood")
    assert flood.truncated and len(flood.content) < 5100
    hostile = await registry.execute("faulty__html", {})
    assert "<script>" in hostile.content, "the model sees the raw text"
    from chat.models import TraceEvent

    run = await asyncio.to_thread(services.message_post, session=alice_session, content="x")
    event = await asyncio.to_thread(
        TraceEvent.objects.create,
        run=run,
        sequence=1,
        kind="tool.result",
        payload={
            "tool": "faulty__html",
            "server": "faulty",
            "success": True,
            "summary": hostile.content,
            "cached": False,
            "duration_ms": 1,
        },
    )
    html = render_to_string("chat/session.html#trace-event", {"item": events_context([event])[0]})
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html


def test_a_servers_tool_named_like_nexus_own_is_shown_as_that_servers(alice_session):
    """A server listing a tool "nexus__calculator" showed in the panel as Nexus's own
    "Calculator (Nexus)", and its result's words were rewritten the same way; its progress
    line named the server twice."""
    from chat.models import TraceEvent

    run = services.message_post(session=alice_session, content="What is 2+3?")
    common = {"call_id": "c1", "tool": "weird__nexus__calculator", "server": "weird"}
    payloads = [
        ("tool.called", {**common, "server_tool": "nexus__calculator", "arguments": {"expression": "2+3"}}),
        (
            "tool.result",
            {**common, "success": True, "summary": "weird nexus__calculator got 5", "duration_ms": 1},
        ),
        ("mcp.progress", {**common, "progress": 1, "total": 2, "message": "half"}),
    ]
    events = [
        TraceEvent.objects.create(run=run, sequence=n, kind=kind, payload=payload)
        for n, (kind, payload) in enumerate(payloads, 1)
    ]
    called, result, progress = (
        render_to_string("chat/session.html#trace-event", {"item": item}) for item in events_context(events)
    )
    assert "Nexus calculator (Weird)" in called and "Calculator (Nexus)" not in called
    assert "weird nexus__calculator got 5" in result
    assert "Nexus calculator (Weird):" in progress and "(Weird) (Weird)" not in progress


async def test_a_nul_character_from_a_server_becomes_storable_text(pool):
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    outcome = await call(registry, "faulty__nul")
    assert outcome.success and outcome.content == "before\ufffdafter"


async def test_one_connection_per_server_shared_by_concurrent_runs(pool):
    provider = MCPToolProvider(pool, faulty())
    registries = [ToolRegistry([provider]) for _ in range(4)]
    outcomes = await asyncio.gather(
        *(call(r, "faulty__echo", text=f"run {n}") for n, r in enumerate(registries))
    )
    pids = {o.content.split("pid ")[1] for o in outcomes}
    assert all(o.success for o in outcomes) and len(pids) == 1 and len(pool._connections) == 1


async def test_resources_and_prompts_are_listed(pool):
    provider = MCPToolProvider(pool, faulty())
    assert sorted(r.name for r in await provider.list_resources()) == ["broken", "notes", "report"]
    assert "Tuesdays" in await provider.read_resource("faulty://notes")


async def http_faulty(
    pool_config: dict, *options: str, port: str | None = None
) -> tuple[asyncio.subprocess.Process, MCPServerConfig]:
    """The faulty server over streamable HTTP on `port` (else a free one), once it accepts
    connections."""
    import socket

    if port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        FAULTY,
        "--http",
        str(port),
        *options,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    return process, MCPServerConfig(
        name="remote", transport="http", url=f"http://127.0.0.1:{port}/mcp", **pool_config
    )


async def test_streamable_http_servers_are_reached_by_url(pool):
    process, config = await http_faulty({"headers": (("Authorization", "Bearer s3cret"),)})
    try:
        registry = ToolRegistry([MCPToolProvider(pool, config)])
        outcome = await call(registry, "remote__echo", text="over http")
        assert outcome.success and outcome.content.startswith("over http")
        assert "s3cret" not in repr(config)
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


async def test_over_http_a_session_the_server_forgot_is_started_again(pool):
    """A server that forgets its sessions (restarted; the Python SDK's also expire idle ones)
    answers a request on one with 404, and the spec has the client start a new session. Every
    later call, listing and check failed with "Session not found" until Nexus restarted, and
    counted for nothing: the server was never paused nor reconnected."""
    process, config = await http_faulty({})
    port = config.url.split(":")[-1].split("/")[0]
    try:
        registry = ToolRegistry([MCPToolProvider(pool, config)])
        first = await call(registry, "remote__echo", text="before")
        for step in ("call", "resources", "check"):
            process.kill()
            await process.wait()
            process, _ = await http_faulty({}, port=port)
            if step == "call":
                again = await registry.execute("remote__echo", {"text": "after"})
                assert again.success, again.error
                assert again.content.split("pid ")[1] != first.content.split("pid ")[1]
            elif step == "resources":
                assert [r.name for r in await MCPToolProvider(pool, config).list_resources()]
            else:
                await MCPToolProvider(pool, config).check()
    finally:
        process.kill()
        await asyncio.wait_for(process.wait(), 10)


async def test_over_http_a_forgotten_session_whose_server_cannot_be_reached_again_is_unavailable(pool):
    """Starting a new session for one the server forgot can fail (the server is gone for good
    now): the call says the server is unavailable, not that its answer could not be read."""
    import http.server
    import threading

    process, config = await http_faulty({"connect_timeout": 2.0})
    port = int(config.url.split(":")[-1].split("/")[0])
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    assert (await call(registry, "remote__echo", text="before")).success
    process.kill()
    await process.wait()

    class Forgetful(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # every session unknown, and no new one either
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = (
                b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Session not found"}}'
            )
            self.send_response(404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.allow_reuse_address = True
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", port), Forgetful)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    try:
        outcome = await registry.execute("remote__echo", {"text": "after"})
        assert not outcome.success and "could not read" not in outcome.error
        assert "remote is unavailable" in outcome.error
    finally:
        stub.shutdown()
        stub.server_close()


async def test_over_http_one_call_timing_out_leaves_the_others_on_that_connection_alone(pool):
    """The HTTP transport's read timeout was the call's own: when it fired before the call's
    clock, it failed the whole session, and every other call in flight on it was told the
    server had failed ("Connection closed") and counted toward pausing it."""
    process, config = await http_faulty({"call_timeout": 2.0})
    try:
        registry = ToolRegistry([MCPToolProvider(pool, config)])
        await registry.ensure_loaded()

        async def block(delay: float):
            await asyncio.sleep(delay)
            return await registry.execute("remote__block", {"seconds": 30})

        outcomes = await asyncio.gather(*(block(0.5 * n) for n in range(6)))
        assert [o.error for o in outcomes] == ["block on remote timed out after 2s"] * 6
    finally:
        process.kill()  # its threads sleep on: a graceful stop would wait for them
        await asyncio.wait_for(process.wait(), 10)


def test_a_mentioned_resource_its_server_cannot_read_is_said_to_be_unreadable_not_missing(alice, settings):
    """A resource whose read failed (the server hung, crashed or refused) was reported as if
    nothing by that name existed."""
    from chat.mentions import attachments_for, resources

    settings.NEXUS_MCP_ALLOWED_COMMANDS = {sys.executable: (sys.executable,)}
    MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])
    wait_until(lambda: resources(alice, 5))  # the server started (a cold start is not the point)
    found, notes = attachments_for(alice, "Compare @notes with @broken and @nothing-here")
    assert [a.title for a in found] == ["notes"] and "Tuesdays" in found[0].content
    assert notes == [
        "@broken was not included: the faulty tool server could not read it just now.",
        "@nothing-here was not included: there is no document or resource by that name that you may see.",
    ]


def test_a_run_goes_on_without_a_broken_server(alice_session, settings):
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {"/nonexistent/server": ("/nonexistent/server",)}
    MCPServer.objects.create(name="broken", command="/nonexistent/server")
    run = ask(alice_session, "What is 6*7?")
    assert run.status == "succeeded" and "42" in run.answers.get().content
    degraded = run.events.get(kind="component.degraded").payload
    assert (
        degraded["component"] == "tools:broken" and degraded["error"] == "tool server broken is unavailable"
    )
    assert "cannot start" in degraded["detail"]
    broken = MCPServer.objects.get(name="broken")
    assert broken.last_status == "error" and "cannot start" in broken.last_error
    tool = ToolExecution.objects.get(run=run)
    assert (tool.server, tool.tool) == ("nexus", "calculator")


def test_the_unavailable_error_names_the_server():
    error = MCPUnavailable("MCP server 'x' is unavailable: boom")
    assert "'x'" in str(error)


def test_uploaded_documents_reach_the_uploader_only(alice, bob, client_for):
    client_for(alice).post(
        "/documents/upload/", {"title": "Onboarding", "content": "Laptops ship on day one."}
    )
    assert Document.objects.get().owner == alice
    alice_page = client_for(alice).get("/documents/").content.decode()
    assert "Onboarding" in alice_page
    assert "Onboarding" not in client_for(bob).get("/documents/").content.decode()
    assert client_for(bob).post(f"/documents/{Document.objects.get().pk}/delete/").status_code == 404
    alice_run = ask(services.session_create(owner=alice), "What do our documents say about laptops?")
    bob_run = ask(services.session_create(owner=bob), "What do our documents say about laptops?")
    assert "day one" in alice_run.answers.get().content
    assert "day one" not in bob_run.answers.get().content
    assert "day one" not in "".join(
        ToolExecution.objects.filter(run=bob_run).values_list("result", flat=True)
    )


PAGED = str(Path(__file__).parent / "servers" / "paged.py")


async def test_a_listing_in_pages_is_read_whole(pool):
    """The protocol lets a server page its listings: read the first page alone, a server of 25
    tools offered 10 to the model, and 10 of its resources and prompts to the composer."""
    config = MCPServerConfig(name="paged", command=sys.executable, args=(PAGED,))
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    names = sorted(spec.tool for spec in registry.specs())
    assert names == [f"tool{n:02d}" for n in range(25)]
    outcome = await registry.execute("paged__tool24", {})
    assert outcome.success and "tool24 ran" in outcome.content
    connection = pool.connection(config)
    resources = await asyncio.wrap_future(pool.submit(connection.listing("resources")))
    prompts = await asyncio.wrap_future(pool.submit(connection.listing("prompts")))
    assert len(resources) == 25 and len(prompts) == 25


async def test_a_listing_whose_cursor_never_advances_is_read_once(pool):
    """A server that answers every page with the first one and a next cursor was read 50
    times: its tools were offered, stored and shown in the admin 50 times over (300 for 6),
    and its resources filled the composer's list with copies of one."""
    config = MCPServerConfig(name="paged", command=sys.executable, args=(PAGED, "notes", "stuck"))
    connection = pool.connection(config)
    for kind in ("tools", "resources", "prompts"):
        listed = await asyncio.wrap_future(pool.submit(connection.listing(kind)))
        assert len(listed) == 10, kind


RAW = str(Path(__file__).parent / "servers" / "raw.py")


async def test_a_tool_the_protocol_does_not_allow_leaves_the_others_offered(pool, caplog):
    """One tool whose input schema was not an object made the SDK refuse the whole listing:
    the server (written without an SDK, as third-party ones are) offered none of its tools."""
    config = MCPServerConfig(name="raw", command=sys.executable, args=(RAW,))
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    assert sorted(spec.tool for spec in registry.specs()) == ["defined", "echo", "shout", "typed"]
    assert all(spec.input_schema["type"] == "object" for spec in registry.specs())
    outcome = await registry.execute("raw__shout", {})
    assert outcome.success and "shout ran" in outcome.content
    assert (
        "tool server 'raw' lists tools the protocol does not allow, left out: broken, loose, dangling"
        in caplog.text
    )


async def test_a_server_that_says_its_tools_changed_is_listed_again_for_the_next_run(pool):
    """A server's `notifications/tools/list_changed` was ignored: its listing was kept for
    `listing_ttl` (a minute), and a tool it added (once a person signed in to it, say) was
    unknown to every run meanwhile."""
    config = MCPServerConfig(name="raw", command=sys.executable, args=(RAW, "changing"))
    first = ToolRegistry([MCPToolProvider(pool, config)])
    await first.ensure_loaded()
    assert "raw__grown" not in first.names() and "raw__grow" in first.names()
    assert (await first.execute("raw__grow", {})).success
    for _ in range(50):  # the new listing is fetched at once, in the background
        later = ToolRegistry([MCPToolProvider(pool, config)])
        await later.ensure_loaded()
        if "raw__grown" in later.names():
            break
        await asyncio.sleep(0.05)
    assert "raw__grown" in later.names(), later.names()


async def test_a_server_with_no_tools_offers_its_resources_and_prompts(pool):
    """A server with only resources and prompts (one written with the TypeScript SDK that
    registers no tool) answers tools/list with "Method not found", as the spec allows a
    server without the tools capability: connecting failed on it, and the server was
    reported unavailable, its resources and prompts out of reach."""
    config = MCPServerConfig(name="raw", command=sys.executable, args=(RAW, "toolless"))
    provider = MCPToolProvider(pool, config)
    registry = ToolRegistry([provider])
    await registry.ensure_loaded()
    assert registry.errors == {} and registry.names() == []
    assert [r.name for r in await provider.list_resources()] == ["handbook"]
    assert await provider.read_resource("raw://handbook") == "Be kind."
    assert [p.name for p in await provider.list_prompts()] == ["review"]
    await provider.check()


@pytest.mark.parametrize("args", [(RAW,), (RAW, "objects")], ids=["listing-refused", "listing-read"])
async def test_a_tool_schema_a_model_api_would_refuse_is_left_out(pool, caplog, args):
    """Found by a review: an object schema that is not valid JSON Schema ("properties": "oops")
    or refers to a definition it lacks was offered to the model as it was, and Anthropic and
    OpenAI refuse a whole request for one such tool: every run offered that server failed.
    The others are offered, each with "properties" (OpenAI requires it; MCP does not)."""
    config = MCPServerConfig(name="raw", command=sys.executable, args=args)
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    offered = {spec.tool: spec.input_schema for spec in registry.specs()}
    assert "loose" not in offered and "dangling" not in offered
    assert offered["defined"]["$defs"] == {"place": {"type": "string"}}, "a $ref it can follow is kept"
    assert offered["shout"] == {"type": "object", "properties": {}}
    assert "left out: " in caplog.text and "loose, dangling" in caplog.text
    assert len([r for r in caplog.records if "left out" in r.getMessage()]) == 1, "one line names them all"


async def test_an_answer_the_sdk_cannot_read_is_a_plain_error_without_the_servers_secret(pool):
    """Found by a review: structured content its own output schema refused reached the user
    and the model as the SDK's RuntimeError, quoting the server's secret."""
    secret = "rawtok-SECRET-98765"
    config = MCPServerConfig(
        name="raw", command=sys.executable, args=(RAW,), env=(("RAW_TOKEN", secret),), secret_values=(secret,)
    )
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    outcome = await registry.execute("raw__typed", {})
    assert not outcome.success and outcome.error == "typed on raw answered with a result Nexus could not read"
    assert secret not in (outcome.detail or "") and "[redacted]" in (outcome.detail or "")
    assert (await registry.execute("raw__echo", {})).success, "the server itself is fine"


async def test_a_server_that_lists_a_tool_the_sdk_refuses_still_passes_the_connection_check(pool):
    """Found by a review: the check (and the probe after a timed-out call) asked for the
    listing through the SDK, which refused it: "did not answer", and a working server was
    restarted."""
    config = MCPServerConfig(name="raw", command=sys.executable, args=(RAW,))
    provider = MCPToolProvider(pool, config)
    await provider.list_tools()
    pids = list(pool.connection(config).pids)
    await provider.check()
    assert pool.connection(config).pids == pids, "not restarted"


async def test_a_retired_connection_lets_go_of_its_stderr_file(pool):
    """Found by a review: a disabled server's stderr file (deleted, with whatever the server
    wrote, secrets too) stayed open in the web process until it exited."""
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    assert (await call(registry, "faulty__shout", lines=10)).success
    held = Path(f"/proc/self/fd/{pool.connection(faulty())._stderr.fileno()}")
    before = held.readlink()  # noqa: ASYNC240 - /proc, not a disk
    pool.retire_all_but(set())
    await asyncio.sleep(3)
    assert not held.exists() or held.readlink() != before  # noqa: ASYNC240 - /proc, not a disk


async def test_a_python_sdk_server_can_ask_the_person_and_the_model_mid_call(pool):
    """Found by a review: a tool of a Python-SDK server that calls ctx.elicit() or
    create_message() failed with "Cannot send 'elicitation/create': this transport context has
    no back-channel for server-initiated requests". The client negotiated the 2026-07-28
    protocol, which such a server also speaks and where it may not ask anything mid-call."""
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    await registry.ensure_loaded()
    asked, sampled = [], []

    async def progress(*_):
        return None

    async def ask(message, schema, url=""):
        asked.append((message, sorted(schema.get("properties", {}))))
        return "accept", {"name": "Ada"}

    async def sample(system, messages, max_tokens):
        sampled.append(messages[0]["content"])
        return "steeped in calm", "model-x"

    greeted = await registry.execute("faulty__greet", {}, on_progress=progress, on_elicit=ask)
    assert greeted.success and greeted.content == "hello Ada", greeted.error
    assert asked == [("What is your name?", ["name"])]
    mused = await registry.execute("faulty__muse", {"topic": "tea"}, on_progress=progress, on_sample=sample)
    assert mused.success and mused.content == "the model said: steeped in calm", mused.error
    assert sampled == ["A line on tea"]


async def test_a_server_that_speaks_only_the_newest_protocol_is_still_reached(pool):
    """Nexus opens with the initialize handshake (so servers may ask mid-call); a server that
    refuses it as not its protocol version is reached with the per-request protocol instead."""
    config = MCPServerConfig(name="raw", command=sys.executable, args=(RAW, "modern"))
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    assert not registry.errors, registry.error_details
    assert pool.connection(config).client.protocol_version == "2026-07-28"
    outcome = await registry.execute("raw__echo", {})
    assert outcome.success and "echo ran" in outcome.content


async def test_a_server_that_cannot_ask_mid_call_says_so_in_plain_words(pool):
    """A stateless HTTP server (each request answered alone) cannot ask anything mid-call: its
    tool that tries answered "Cannot send 'elicitation/create': this transport context has no
    back-channel for server-initiated requests", the SDK's words, to the person and the model."""
    process, config = await http_faulty({}, "--stateless")
    try:
        registry = ToolRegistry([MCPToolProvider(pool, config)])
        await registry.ensure_loaded()

        async def ask(message, schema, url=""):
            return "accept", {"name": "Ada"}

        async def progress(*_):
            return None

        outcome = await registry.execute("remote__greet", {}, on_progress=progress, on_elicit=ask)
        assert not outcome.success
        assert outcome.error == (
            "greet on remote needed to ask the user something while it ran, "
            "which this server cannot do over its connection"
        )
        assert "back-channel" in outcome.detail, "staff get the SDK's words"
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


async def test_an_address_no_person_is_asked_to_open_is_declined_and_said(pool):
    """Found by a review: a server asking the person to open `javascript:alert(1)` heard
    "decline" within milliseconds, and the run's trace showed nothing of it having asked. The
    run's asker is told it was refused (the trace says so), and nobody is asked."""
    registry = ToolRegistry([MCPToolProvider(pool, faulty())])
    await registry.ensure_loaded()
    asked = []

    async def progress(*_):
        return None

    async def ask(message, schema, url="", *, refused=""):
        asked.append((message, url, refused))
        return ("decline", None) if refused else ("accept", None)

    outcome = await registry.execute("faulty__open_link", {}, on_progress=progress, on_elicit=ask)
    assert outcome.success and outcome.content == "open link: decline", outcome.error
    assert asked == [
        ("Open this to sign in", "", "an address that is not a web page (http or https) to open")
    ]
    opened = await registry.execute(
        "faulty__open_link", {"url": "https://example.com/sign-in"}, on_progress=progress, on_elicit=ask
    )
    assert opened.content == "open link: accept", (asked, opened)
    assert asked[-1] == ("Open this to sign in", "https://example.com/sign-in", "")
