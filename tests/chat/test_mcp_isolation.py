"""One hung or crashing tool server never stalls anyone: real processes, no mocks.

The hung server is `sleep 600`: it starts, reads nothing and never answers. Nothing here
asserts an absolute time: each test shows that an answer came while the hung server was
still hung (its process alive, its connection attempt still running), or that a paused
server is refused without starting another process.
"""

import asyncio
import contextlib
import gc
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.urls import reverse

from chat import tools
from chat.models import MCPServer
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig, MCPToolProvider, MCPUnavailable
from reasoning.tools.mcp_pool import LIVENESS_TIMEOUT, CircuitBreaker, _alive
from reasoning.tools.registry import ToolRegistry
from tests.conftest import django_process_env, wait_until

FAULTY = str(Path(__file__).parent / "servers" / "faulty.py")
SLEEP = shutil.which("sleep") or "/bin/sleep"


def hung(**overrides) -> MCPServerConfig:
    options = {"connect_timeout": 1.0, "list_timeout": 1.0, "breaker_threshold": 2, "breaker_cooldown": 600.0}
    return MCPServerConfig(name="hung", command=SLEEP, args=("600",), **{**options, **overrides})


def faulty(**overrides) -> MCPServerConfig:
    return MCPServerConfig(name="faulty", command=sys.executable, args=(FAULTY,), **overrides)


@pytest.fixture
def pool():
    pool = MCPConnectionPool()
    yield pool
    pool.close_sync()


@pytest.fixture
def never_retrieved(caplog):
    """Log records of futures or tasks whose exception nobody read."""
    caplog.set_level(logging.ERROR, logger="asyncio")

    def found() -> list[str]:
        gc.collect()
        return [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()]

    return found


async def test_a_hung_server_fails_alone_with_a_clear_error_and_is_then_paused(pool, never_retrieved):
    registry = ToolRegistry([MCPToolProvider(pool, hung()), MCPToolProvider(pool, faulty())])
    await registry.refresh()
    assert "faulty__echo" in registry.names(), "the working server's tools are offered"
    assert registry.errors["hung"] == "tool server hung is unavailable"
    assert "did not answer within 1s" in registry.error_details["hung"], registry.error_details
    connection = pool.connection(hung())
    first_pids = list(connection.pids)
    assert len(first_pids) == 1
    assert wait_until(lambda: not _alive(first_pids[0])), "the hung process is stopped, not leaked"

    await registry.refresh()  # the second failure in a row opens the circuit
    assert "did not answer" in registry.error_details["hung"]
    spawned = len(connection.pids)
    await registry.refresh()
    assert (
        "paused" in registry.error_details["hung"] and "2 failures in a row" in registry.error_details["hung"]
    )
    assert len(connection.pids) == spawned, "a paused server is refused without starting it again"
    assert (await registry.execute("faulty__echo", {"text": "still here"})).success
    assert not never_retrieved()


async def test_a_server_hung_at_start_costs_its_first_seconds_not_every_run(pool, never_retrieved):
    """Every run waited the whole start wait (3 s by default) for a server hung at start, for
    as long as it hung: each of a burst of 100 runs began 3 s late."""
    config = hung(connect_timeout=60.0, start_wait=1.0, breaker_threshold=50)
    first = ToolRegistry([MCPToolProvider(pool, config), MCPToolProvider(pool, faulty())])
    await first.refresh()
    assert "no tools listing after 1s" in first.error_details["hung"], first.error_details
    assert "faulty__echo" in first.names()
    await asyncio.sleep(0.5)  # the start wait is over, whenever the attempt began
    later = ToolRegistry([MCPToolProvider(pool, config), MCPToolProvider(pool, faulty())])
    await later.refresh()
    assert "is still starting: it did not answer in the 1s" in later.error_details["hung"]
    assert "faulty__echo" in later.names()
    # Each run's words were new ("after 0.0297335s", "after 3s", "after 4s"), so the server's
    # status row was written again for every run of a burst.
    await asyncio.sleep(1.1)
    again = ToolRegistry([MCPToolProvider(pool, config)])
    await again.refresh()
    assert again.error_details["hung"] == later.error_details["hung"]
    assert len(pool.connection(config).pids) == 1, "the one attempt goes on for the next run"
    assert not never_retrieved()


async def test_waiting_callers_do_not_queue_behind_a_hung_connection(pool, never_retrieved):
    config = hung(connect_timeout=600.0)
    provider = MCPToolProvider(pool, config)
    results = await asyncio.gather(
        *(asyncio.wait_for(pool._run(pool.connection(config).ensure(budget=0.5)), 60) for _ in range(3)),
        return_exceptions=True,
    )
    assert all(isinstance(r, MCPUnavailable) and "still connecting after 0.5s" in str(r) for r in results)
    connection = pool.connection(config)
    assert len(connection.pids) == 1, "one shared connection attempt, not one per caller"
    assert _alive(connection.pids[0]), "the answers came while the server was still hung"
    assert provider.name == "hung"
    assert not never_retrieved()


async def test_a_server_killed_mid_call_fails_that_call_and_the_next_one_reconnects(pool):
    config = faulty(call_timeout=600.0)
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    call = asyncio.ensure_future(registry.execute("faulty__hang", {}))
    connection = pool.connection(config)
    await asyncio.to_thread(wait_until, lambda: bool(connection.pids))
    await asyncio.sleep(0.5)  # the call is on its way
    os.killpg(connection.pids[0], signal.SIGKILL)
    outcome = await asyncio.wait_for(call, 120)
    assert not outcome.success and outcome.error == "tool server faulty is unavailable"
    assert "failed during hang" in outcome.detail
    again = await registry.execute("faulty__echo", {"text": "back"})
    assert again.success and again.content.startswith("back")


def test_no_server_process_outlives_the_process_that_started_it(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, sys, time
            from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig
            pool = MCPConnectionPool()
            config = MCPServerConfig(name="hung", command={SLEEP!r}, args=("600",), connect_timeout=600)
            connection = pool.connection(config)
            pool.submit(connection.ensure())
            while not connection.pids:
                time.sleep(0.05)
            print(connection.pids[0], flush=True)
            sys.exit(0)  # like daphne on SIGTERM: a normal exit while the server is still hung
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env, check=True
    )
    pid = int(done.stdout.split()[0])
    assert wait_until(lambda: not _pid_exists(pid), 10), f"server process {pid} leaked"


def _descendants(pids: list[int]) -> set[int]:
    """Every live process below `pids` (read from /proc), the roots included."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found = {pid for pid in pids if _pid_exists(pid)}
    while True:
        more = {pid for pid, parent in parents.items() if parent in found and pid not in found}
        if not more:
            return found
        found |= more


def _owner_of_servers(tmp_path: Path, configs: str) -> subprocess.Popen[str]:
    """A process that starts stdio servers from `configs` (Python source for a list of
    MCPServerConfig), connects to each (or waits for the hung), prints the pids, then waits."""
    script = tmp_path / "owner.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig
            pool = MCPConnectionPool()
            for config in {configs}:
                connection = pool.connection(config)
                pool.submit(connection.ensure())
                while not connection.pids:
                    time.sleep(0.05)
                if config.name != "hung":
                    while connection.client is None:
                        time.sleep(0.05)
                print(connection.pids[0], flush=True)
            print("ready", flush=True)
            time.sleep(600)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )


def _kill_owner_and_check(tmp_path: Path, configs: str) -> None:
    """Start an owner of the servers in `configs`, SIGKILL it, and check none of them, nor
    what they started, outlives it."""
    owner = _owner_of_servers(tmp_path, configs)
    try:
        _check_servers_die_with(owner)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(owner.pid, signal.SIGKILL)


def _check_servers_die_with(owner: subprocess.Popen[str]) -> None:
    pids = []
    for line in owner.stdout:
        if line.strip() == "ready":
            break
        pids.append(int(line))
    servers = _descendants(pids)
    assert len(servers) > len(pids), "each server process runs (below its launcher)"
    os.kill(owner.pid, signal.SIGKILL)  # the owner alone: no cleanup code of its runs
    owner.wait(30)
    assert wait_until(lambda: not any(_pid_exists(pid) for pid in servers), 20), (
        f"server processes {sorted(pid for pid in servers if _pid_exists(pid))} outlived their owner"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_servers_die_with_a_process_killed_without_warning(tmp_path):
    """SIGKILL leaves a daphne or Celery worker no chance to stop its tool servers: a working
    server, a hung one and what they started all go with it."""
    configs = (
        f"[MCPServerConfig(name='faulty', command={sys.executable!r}, args=({FAULTY!r},)),"
        f" MCPServerConfig(name='hung', command={SLEEP!r}, args=('600',), connect_timeout=600)]"
    )
    _kill_owner_and_check(tmp_path, configs)


ESCAPING_SERVER = f"""
import os, subprocess, sys
subprocess.Popen([{SLEEP!r}, "601"], start_new_session=True)  # its own session and group
os.execv(sys.executable, [sys.executable, {FAULTY!r}])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_what_a_server_started_in_a_session_of_its_own_dies_with_it_too(tmp_path):
    """A helper a server detached (setsid, Node's detached spawn) left the process group the
    launcher stops: it outlived every shutdown, one more for each server start."""
    server = tmp_path / "escaping.py"
    server.write_text(ESCAPING_SERVER)
    configs = f"[MCPServerConfig(name='escaping', command={sys.executable!r}, args=({str(server)!r},))]"
    _kill_owner_and_check(tmp_path, configs)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_server_everything_dies_with_a_process_killed_without_warning(tmp_path, everything):
    node = shutil.which("node")
    configs = f"[MCPServerConfig(name='everything', command={node!r}, args=({everything!r}, 'stdio'))]"
    _kill_owner_and_check(tmp_path, configs)


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return _alive(pid)


@pytest.mark.django_db(transaction=True)
def test_completions_answer_from_what_is_known_while_a_server_hangs(alice, client_for, settings):
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {SLEEP: (SLEEP, "600")}
    client = client_for(alice)
    # The built-in server's prompts become known (the first request may come before it started).
    assert wait_until(lambda: "summarize" in client.get("/complete/", {"q": "/"}).content.decode(), 60)
    MCPServer.objects.create(name="hung", command=SLEEP, args=["600"])
    answered = client.get("/complete/", {"q": "/"}).json()["items"]
    assert any(item["label"].startswith("/summarize") for item in answered)
    server = MCPServer.objects.get(name="hung")
    connection = tools.POOL.connection(tools.config_for(server))
    assert connection.pids and _alive(connection.pids[0]), (
        "answered while the hung server was still connecting"
    )
    assert connection._connecting is not None and not connection._connecting.done()
    again = client.get("/complete/", {"q": "/sum"}).json()["items"]
    assert [item["label"] for item in again] == ["/summarize topic"]
    assert again[0]["detail"].endswith("(on nexus)"), "the server offering it is shown"
    assert len(connection.pids) == 1, "the hung server's refresh is shared, not restarted per request"
    tools.POOL.submit(connection.close()).result(30)


@pytest.mark.django_db(transaction=True)
def test_a_server_paused_by_one_process_shows_paused_in_the_admin_of_another(auditor, client_for, settings):
    """A worker pauses a server whose calls keep timing out; the admin, served by another
    process, shows it paused (and until when) from the stored state."""
    MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])
    code = textwrap.dedent(
        f"""
        import asyncio, time
        from chat import tools
        from reasoning.tools.mcp import MCPServerConfig
        config = MCPServerConfig(name="faulty", command={sys.executable!r}, args=({FAULTY!r},),
                                 call_timeout=0.5, breaker_threshold=2, breaker_cooldown=600)
        async def main():
            for _ in range(2):
                print((await tools.POOL.call(config, "hang", {{}})).text, flush=True)
        asyncio.run(main())
        time.sleep(2)  # the stored state is written in a thread of the pool
        """
    )
    env = django_process_env()
    worker = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=str(settings.BASE_DIR),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.stdout.count("timed out") == 2, worker.stdout + worker.stderr
    server = MCPServer.objects.get(name="faulty")
    assert server.last_status == "paused" and "timed out" in server.last_error
    page = client_for(auditor).get(reverse("admin:chat_mcpserver_changelist")).content.decode()
    assert "paused until" in page and "after repeated failures" in page
    # Disabled, it is not tried again: no pause (or its end) to speak of.
    MCPServer.objects.filter(pk=server.pk).update(enabled=False)
    page = client_for(auditor).get(reverse("admin:chat_mcpserver_changelist")).content.decode()
    assert "paused until" not in page and '<span class="server-status paused">disabled</span>' in page


async def test_a_server_that_died_while_idle_is_restarted_for_the_next_request(pool):
    """Its process killed between requests, a daphne kept asking the dead session: /commands
    failed with "Connection closed" and, once the listing expired, were unknown for good. Then
    the next request after the death still failed (a person's tool call, counted toward
    pausing the server) and only the one after it restarted the server. Now the request that
    finds the server's process gone starts it again first."""
    config = faulty()
    provider = MCPToolProvider(pool, config)
    registry = ToolRegistry([provider])
    assert "trip" in [prompt.name for prompt in await provider.list_prompts()]
    connection = pool.connection(config)

    async def kill_the_server() -> None:
        dead = connection.pids[-1]
        os.killpg(dead, signal.SIGKILL)
        await asyncio.to_thread(wait_until, lambda: not _alive(dead))

    await kill_the_server()
    said = await provider.get_prompt("trip", {"city": "Oslo"})
    assert "Plan a trip to Oslo" in said[0]["content"]
    await registry.ensure_loaded()
    await kill_the_server()
    outcome = await registry.execute("faulty__echo", {"text": "back"})
    assert outcome.success and outcome.content.startswith("back"), outcome.error
    assert connection.breaker.failures == 0, "no failure counted toward a pause"
    await kill_the_server()
    connection.listings.clear()  # the listing expired
    assert "trip" in [p.name for p in await pool._run(connection.listing("prompts"))]


async def test_a_run_waits_only_briefly_for_a_server_hung_at_start(pool, never_retrieved):
    """Every run waited the whole 20 s connect budget for a server that never finished starting."""
    config = hung(connect_timeout=600.0, start_wait=0.5)
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.refresh()
    assert registry.names() == [] and "no tools listing after 0.5s" in registry.error_details["hung"]
    connection = pool.connection(config)
    assert len(connection.pids) == 1 and _alive(connection.pids[0]), "still trying, for later runs"
    await registry.refresh()
    assert len(connection.pids) == 1, "the next run joins the same attempt"
    assert not never_retrieved()


@pytest.mark.django_db
def test_added_servers_get_the_short_wait_and_the_built_in_one_the_whole_budget(settings):
    settings.NEXUS_TOOL_SERVER_START_WAIT = 4
    added = MCPServer(name="remote", transport="http", url="https://mcp.example.com/mcp")
    assert tools.config_for(added).start_wait == 4
    assert tools.config_for(MCPServer.objects.get(builtin=True)).start_wait == 0


async def test_a_paused_server_is_refused_at_once_even_while_connected(pool):
    """A connected server kept getting calls (each waiting out its timeout) after it was paused;
    and its listing refreshes, which still worked, reset the failure count."""
    config = faulty(call_timeout=0.5, breaker_threshold=2, breaker_cooldown=600.0, listing_ttl=0.0)
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    first = await registry.execute("faulty__hang", {})
    await registry.refresh()  # a listing that works between the failing calls
    second = await registry.execute("faulty__hang", {})
    assert "timed out" in first.error and "timed out" in second.error
    third = await registry.execute("faulty__echo", {"text": "hi"})
    assert not third.success and "unavailable" in third.error and "is paused" in third.detail, third


async def test_calls_in_flight_when_a_server_is_paused_do_not_double_its_pause(pool):
    """Found by a review: hung calls at once paused a server "after 4 failures", for twice its
    first cooldown: a failure that ended while the circuit was already open (a call begun before
    it opened, or one on the session the liveness probe replaced) was counted on top."""
    config = faulty(call_timeout=0.5, breaker_threshold=3, breaker_cooldown=600.0)
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    hung = await asyncio.gather(*(registry.execute("faulty__freeze", {}) for _ in range(4)))
    assert all("timed out" in outcome.error for outcome in hung)
    await asyncio.sleep(LIVENESS_TIMEOUT + 0.5)  # the probe the first timeout started has failed
    refused = await registry.execute("faulty__echo", {"text": "hi"})
    assert "3 failures in a row" in refused.detail, refused.detail
    breaker = pool.connection(config).breaker
    assert breaker.failures == 3 and breaker.paused_for() <= 600, "the first cooldown, not doubled"


def test_a_failure_after_the_pause_ends_doubles_it():
    """What the pause doubles for: the server failing again once it is tried after the pause."""
    breaker = CircuitBreaker(threshold=2, cooldown=10.0)
    for _ in range(3):
        breaker.failure("timed out")
    assert breaker.failures == 2 and 9 < breaker.paused_for() <= 10
    breaker.open_until = 0.0  # the cooldown is over: the next call is a trial
    breaker.failure("timed out again")
    assert breaker.failures == 3 and 19 < breaker.paused_for() <= 20


async def test_a_listing_while_paused_reports_the_server_paused_not_connected(pool):
    """The listing is served from what is known while calls are refused: it reported the server
    connected, and the admin showed "connected" for a server whose every call was refused."""
    reported = []

    async def on_status(name, error, tools, paused_for):
        reported.append((error, paused_for))

    config = faulty(call_timeout=0.5, breaker_threshold=1, breaker_cooldown=600.0)
    provider = MCPToolProvider(pool, config, on_status=on_status)
    registry = ToolRegistry([provider])
    await registry.ensure_loaded()
    assert reported[-1] == (None, None)
    await registry.execute("faulty__hang", {})
    await provider.list_tools()
    error, paused_for = reported[-1]
    assert error and "is paused" in error and paused_for and paused_for > 500, reported[-1]


async def test_a_server_that_lists_after_the_wait_is_then_reported_connected(pool):
    """A run waits a server's start only briefly: a server slow to start was recorded as "no
    tools listing after 0.5s" and stayed so in the admin once connected, until a later run in
    that very process listed it."""
    reported = []

    async def on_status(name, error, tools, paused_for):
        reported.append((error, len(tools)))

    slow = f"import runpy, time; time.sleep(2); runpy.run_path({FAULTY!r}, run_name='__main__')"
    config = MCPServerConfig(name="slow", command=sys.executable, args=("-c", slow), start_wait=0.5)
    provider = MCPToolProvider(pool, config, on_status=on_status)
    with pytest.raises(MCPUnavailable):
        await provider.list_tools()
    assert reported[-1][0] and "no tools listing" in reported[-1][0]
    for _ in range(300):
        if reported[-1][0] is None:
            break
        await asyncio.sleep(0.1)
    assert reported[-1][0] is None and reported[-1][1] > 0, reported


@pytest.mark.django_db(transaction=True)
def test_a_disabled_or_changed_server_stops_its_process(settings):
    """Disabled servers' processes (and ones with an old secret) ran on in every worker and web
    process until that process stopped."""
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {sys.executable: (sys.executable,)}
    server = MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])

    def started() -> int:
        provider = next(p for p in tools.providers_for(None) if p.name == "faulty")
        tools.POOL.submit(provider.list_tools()).result(30)
        return tools.POOL.connection(provider.config).pids[-1]

    first = started()
    server.env = {"TOKEN": "a-new-secret"}
    server.save()
    second = started()  # the next run's look at the servers
    wait_until(lambda: not _alive(first))
    assert _alive(second)
    server.enabled = False
    server.save()
    tools.providers_for(None)
    wait_until(lambda: not _alive(second))
    assert all(c.config.name != "faulty" for c in tools.POOL._connections.values())


@pytest.mark.django_db(transaction=True)
def test_the_composers_look_at_the_servers_stops_a_disabled_ones_process(settings):
    """A web process looks at the servers only for the composer (@ and / lists): there, a
    disabled or changed server's process, with its old secret, ran on until daphne stopped."""
    from chat import mentions

    settings.NEXUS_MCP_ALLOWED_COMMANDS = {sys.executable: (sys.executable,)}
    server = MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])
    mentions.resources(None, 10.0)
    connection = next(c for c in tools.POOL._connections.values() if c.config.name == "faulty")
    assert wait_until(lambda: bool(connection.pids))
    started = connection.pids[-1]
    server.enabled = False
    server.save()
    mentions.prompts(None)
    assert wait_until(lambda: not _alive(started), 20), "the disabled server's process runs on"


@pytest.mark.django_db(transaction=True)
def test_disabling_a_server_in_the_admin_ends_its_process_in_that_process_at_once(
    auditor, client_for, settings
):
    """A disabled or deleted server's process ran on in the web process until someone's next
    request there (with no traffic, for good)."""
    from django.urls import reverse

    settings.NEXUS_MCP_ALLOWED_COMMANDS = {sys.executable: (sys.executable,)}
    server = MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])
    provider = next(p for p in tools.providers_for(None) if p.name == "faulty")
    tools.POOL.submit(provider.list_tools()).result(30)
    started = tools.POOL.connection(provider.config).pids[-1]
    form = {"enabled": "", "call_timeout": "30", "tool_policies": "{}", "approval_policies": "{}"}
    form |= {"name": "faulty", "transport": "stdio", "command": sys.executable, "args": f'["{FAULTY}"]'}
    form |= {"cwd": "", "url": "", "default_approval": "", "env_secret": "", "headers_secret": ""}
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_change", args=[server.pk]), form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert not MCPServer.objects.get(pk=server.pk).enabled
    assert wait_until(lambda: not _alive(started), 20), "the disabled server's process runs on"


def test_a_transport_failure_is_named_not_its_task_groups():
    """A server at an SSE address showed only "ExceptionGroup: unhandled errors in a TaskGroup
    (1 sub-exception)"; the HTTP error inside it, and what to do, are what the operator needs."""
    import httpx2 as httpx

    from reasoning.tools.mcp_config import _short

    request = httpx.Request("POST", "http://127.0.0.1:8331/sse")
    refused = httpx.HTTPStatusError(
        "Client error '405 Method Not Allowed' for url 'http://127.0.0.1:8331/sse'",
        request=request,
        response=httpx.Response(405, request=request),
    )
    nested = ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [refused])])
    text = _short(nested)
    assert "TaskGroup" not in text and "405 Method Not Allowed" in text
    assert "SSE-only" in text and text.startswith("HTTPStatusError")


async def test_a_url_that_refuses_with_an_http_error_is_named_with_its_status(pool):
    """A URL that is not an MCP endpoint (a web app answering 403 with an HTML page, a proxy's
    401) showed in the admin as "Server returned an error response", mcp's words for every
    status but 404: the status and what the URL sent are said."""
    import http.server
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = b"<html><body>CSRF verification failed</body></html>"
            self.send_response(403)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_DELETE = do_POST

        def log_message(self, *args):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        config = MCPServerConfig(
            name="webapp",
            transport="http",
            url=f"http://127.0.0.1:{web.server_address[1]}/",
            connect_timeout=5.0,
        )
        registry = ToolRegistry([MCPToolProvider(pool, config)])
        await registry.refresh()
        assert "HTTP 403 Forbidden, text/html" in registry.error_details["webapp"], registry.error_details
    finally:
        web.shutdown()
        web.server_close()
