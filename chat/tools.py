"""The tools a user's runs may use: every enabled MCP server, through one process-wide pool.

The built-in server runs as `manage.py nexus_mcp` with this process's settings (its database
included), and learns each run's user from the request metadata. Any other stdio server
starts only if its command is one the operator allowed (NEXUS_MCP_ALLOWED_COMMANDS): the
database, and so the admin, never decides alone what this process executes.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import logging
import os
import re
import shlex
import stat
import sys
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection
from django.utils import timezone

from chat.crypto import UnreadableSecrets
from chat.logging import environment_secrets, secrets_register
from chat.models import MCPServer
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig, MCPToolProvider, MCPUnavailable
from reasoning.tools.registry import ToolOutput, ToolProvider, ToolRegistry, ToolSpec

logger = logging.getLogger(__name__)

USER_META = "nexus/user_id"
# Environment variables that make an allowed program load or fetch other code (preloads,
# interpreter options and paths, package registries and indexes, config directories,
# proxies and CA bundles that let a download be swapped): no tool server may set them.
FORBIDDEN_ENV = re.compile(
    r"^(PATH|HOME|SHELL|ENV|BASH_ENV|BASH_FUNC_.*|CDPATH|IFS|PS4|PROMPT_COMMAND|ZDOTDIR|TMPDIR"
    r"|LD_\w*|DYLD_\w*|GCONV_PATH|GLIBC_TUNABLES|LOCPATH|NLSPATH|MALLOC_\w*|HOSTALIASES|RES_OPTIONS"
    r"|PYTHON\w*|VIRTUAL_ENV|CONDA_\w*|PIP_\w*|PIPX_\w*|UV_\w*|POETRY_\w*"
    r"|NODE_\w*|NPM_CONFIG_\w*|YARN_\w*|PNPM_\w*|COREPACK_\w*|BUN_\w*|DENO_\w*"
    r"|PERL\w*|RUBY\w*|GEM_\w*|BUNDLE_\w*|PHP\w*|LUA_\w*|TCL\w*|R_\w*"
    r"|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|JAVA_OPTS|CLASSPATH|DOTNET_\w*|CORECLR_\w*"
    r"|COMPLUS_\w*|GO(FLAGS|PATH|ROOT|PROXY|PRIVATE|NOSUMDB|NOPROXY|INSECURE|TOOLCHAIN|ENV|BIN)"
    r"|CARGO_\w*|RUSTC\w*|GIT_\w*|OPENSSL_\w*|SSL_CERT_\w*|\w*_CA_BUNDLE"
    r"|\w*_PROXY|XDG_\w*"
    # Programs a tool may start: a browser automation's browser, an editor or pager.
    r"|\w*EXECUTABLE\w*|\w*_(?:BIN|BINARY|CMD|COMMAND|PROGRAM|PRELOAD)|BROWSER|EDITOR|VISUAL|PAGER"
    r"|PUPPETEER_\w*|PLAYWRIGHT_\w*|CHROME\w*|ELECTRON_\w*)$",
    re.IGNORECASE,
)
# An allowed command line ending in "$" pins its arguments whole: "mcp-server-filesystem
# /srv/share $" refuses "/srv/share /" (which pinning the start alone allows, and the whole disk).
EXACT = "$"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def allowed_program(command: str, args: Sequence[str]) -> str | None:
    """The absolute path to start for `command args`, or None when no entry of the operator's
    NEXUS_MCP_ALLOWED_COMMANDS covers them (the program, and the arguments it pins)."""
    for written, (path, *pinned) in settings.NEXUS_MCP_ALLOWED_COMMANDS.items():
        if command not in (path, shlex.split(written)[0]):
            continue
        if pinned[-1:] == [EXACT]:  # "... /srv/share $": these arguments and no others
            if list(args) == pinned[:-1]:
                return path
        elif list(args[: len(pinned)]) == pinned:
            return path
    return None


def command_refusal(command: str, args: Sequence[str]) -> str | None:
    """Why `command args` may not be started as a stdio server, or None if the operator allowed it."""
    if allowed_program(command, args) is None:
        allowed = "; ".join(settings.NEXUS_MCP_ALLOWED_COMMANDS) or "none"
        return (
            f"{shlex.join([command, *args[:3]])}{' …' if len(args) > 3 else ''} is not an allowed "
            "command; the operator lists the programs tool servers may run, with the arguments "
            f"they must start with, in NEXUS_MCP_ALLOWED_COMMANDS (now: {allowed})"
        )
    return None


def env_refusal(names: Any) -> str | None:
    """Why a tool server may not be given these environment variables, or None."""
    malformed = sorted(str(name) for name in names if not ENV_NAME.fullmatch(str(name)))
    if malformed:
        return f"not an environment variable name: {', '.join(malformed)}"
    forbidden = sorted(str(name) for name in names if FORBIDDEN_ENV.match(str(name)))
    if forbidden:
        return (
            "these environment variables could make the program load other code, so a tool "
            f"server may not set them: {', '.join(forbidden)}"
        )
    return None


def cwd_refusal(cwd: str) -> str | None:
    """Why a tool server may not start in `cwd`, or None. An interpreter pinned to a module
    imports it from its working directory first, and package runners read their registry
    from config files there or above it: a directory anyone else may write to steers an
    allowed program as PYTHONPATH or npm_config_registry would."""
    if not cwd:
        return None
    if not os.path.isabs(cwd):
        return f"the working directory must be an absolute path, not {cwd!r}"
    path = os.path.realpath(cwd)
    if not os.path.isdir(path):
        return f"the working directory {cwd} is not a directory on this machine"
    while True:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            return (
                f"the working directory {cwd} is inside {path}, which others may write to, so "
                "they could steer the program; choose a directory only its owner may change"
            )
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _database_url() -> str:
    """The database this process uses (the test database under tests), as a URL for the child."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    credentials = db.get("USER") or ""
    if db.get("PASSWORD"):
        credentials += f":{db['PASSWORD']}"
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}@{host}{port}/{db['NAME']}"


def _builtin_secrets() -> tuple[str, ...]:
    """What the built-in server knows and must never repeat: keys, passwords, credentials."""
    values = [*environment_secrets(), os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")]
    values += [
        settings.SECRET_KEY,
        *settings.NEXUS_SECRETS_KEYS,
        connection.settings_dict.get("PASSWORD") or "",
    ]
    return tuple(v for v in values if v)


def config_for(server: MCPServer) -> MCPServerConfig:
    """How to reach `server`; raises MCPUnavailable when it may not be started at all."""
    policies = tuple(sorted((str(k), str(v)) for k, v in (server.tool_policies or {}).items()))
    approvals = {
        "approval_policies": tuple(
            sorted((str(k), str(v)) for k, v in (server.approval_policies or {}).items())
        ),
        "default_approval": server.default_approval or "",
    }
    if server.builtin:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "_"))}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "nexus.settings",
                "DATABASE_URL": _database_url(),
                # The same keys, even when this process generated them into var/ itself.
                "NEXUS_SECRETS_KEY": ",".join(settings.NEXUS_SECRETS_KEYS),
                "SECRET_KEY": settings.SECRET_KEY,
                "NEXUS_VAR_DIR": str(settings.VAR_DIR),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return MCPServerConfig(
            name=server.name,
            transport="stdio",
            command=sys.executable,
            args=(str(settings.BASE_DIR / "manage.py"), "nexus_mcp"),
            cwd=str(settings.BASE_DIR),
            env=tuple(sorted(env.items())),
            secret_values=_builtin_secrets(),
            call_timeout=server.call_timeout,
            elicitation_timeout=_person_budget(),
            tool_policies=policies,
            **approvals,
        )
    command, args = server.command, [str(a) for a in server.args or []]
    if server.transport == MCPServer.Transport.STDIO:
        refusal = command_refusal(command, args) or env_refusal(server.env or {}) or cwd_refusal(server.cwd)
        if refusal:
            raise MCPUnavailable(f"MCP server {server.name!r} is unavailable: {refusal}", server=server.name)
        command = allowed_program(command, args) or ""
    if isinstance(server.env, UnreadableSecrets) or isinstance(server.headers, UnreadableSecrets):
        raise MCPUnavailable(
            f"MCP server {server.name!r} is unavailable: its stored secrets cannot be decrypted with "
            "NEXUS_SECRETS_KEY (was the key changed without keeping the old one?)",
            server=server.name,
        )
    env = tuple(sorted((str(k), str(v)) for k, v in (server.env or {}).items()))
    headers = tuple(sorted((str(k), str(v)) for k, v in (server.headers or {}).items()))
    secret_values = tuple(value for _, value in (*env, *headers))
    secrets_register(secret_values)
    return MCPServerConfig(
        name=server.name,
        transport=server.transport,
        command=command,
        args=tuple(args),
        env=env,
        cwd=server.cwd or None,
        url=server.url,
        headers=headers,
        secret_values=secret_values,
        call_timeout=server.call_timeout,
        start_wait=settings.NEXUS_TOOL_SERVER_START_WAIT,
        elicitation_timeout=_person_budget(),
        tool_policies=policies,
        **approvals,
    )


def _person_budget() -> float:
    """The longest a call may wait for its person (an answer, or approving a completion)."""
    return float(max(settings.NEXUS_ELICITATION_WAIT_SECONDS, settings.NEXUS_APPROVAL_WAIT_SECONDS) + 60)


def record_breaker(name: str, paused_for: float | None, error: str) -> None:
    """A process paused a server after repeated failures, or found it working again: stored,
    so the admin (served by any process) shows it, whichever process saw it happen."""
    try:
        if paused_for is None:
            MCPServer.objects.filter(name=name, last_status=MCPServer.Status.PAUSED).update(
                last_status=MCPServer.Status.OK, last_error="", paused_until=None, last_checked=timezone.now()
            )
        else:
            MCPServer.objects.filter(name=name).update(
                last_status=MCPServer.Status.PAUSED,
                last_error=error[:2000],
                last_checked=timezone.now(),
                paused_until=timezone.now() + timedelta(seconds=paused_for),
            )
    finally:
        connection.close()  # a pool thread, not a request: leave no connection behind


POOL = MCPConnectionPool(on_breaker=record_breaker)
atexit.register(POOL.close_sync)


# What this process last told the database about each server, and when: a run lists the tools
# of every server, and writing the same "ok" for each run was a statement (and a hop to a
# database thread) per run on one hot row.
_recorded: dict[str, tuple[tuple[Any, ...], float]] = {}
RECORD_EVERY_SECONDS = 5.0


async def record_status(
    name: str, error: str | None, tools: list[dict[str, str]], paused_for: float | None = None
) -> None:
    """What the admin's status column shows: the last time a worker reached the server, its
    tools, and whether it is paused after repeated failures (its circuit open) and until when.
    The same news from this process is written at most every RECORD_EVERY_SECONDS."""
    news = (error or "", None if error else repr(tools), paused_for)
    now = time.monotonic()
    last = _recorded.get(name)
    if not paused_for and last is not None and last[0] == news and now - last[1] < RECORD_EVERY_SECONDS:
        return
    _recorded[name] = (news, now)
    await database_sync_to_async(_record_status)(name, error, tools, paused_for)


def _record_status(
    name: str, error: str | None, tools: list[dict[str, str]], paused_for: float | None
) -> None:
    status = MCPServer.Status.OK
    if error:
        status = MCPServer.Status.PAUSED if paused_for else MCPServer.Status.ERROR
    changes: dict[str, Any] = {
        "last_status": status,
        "last_error": error or "",
        "last_checked": timezone.now(),
        "paused_until": timezone.now() + timedelta(seconds=paused_for) if paused_for else None,
    }
    if not error:
        changes["tool_count"], changes["tools"] = len(tools), tools
    MCPServer.objects.filter(name=name).update(**changes)


class RefusedServer(ToolProvider):
    """A configured server that may not be started: every request fails with the reason."""

    def __init__(self, name: str, error: MCPUnavailable) -> None:
        self.name = name
        self.error = error

    async def list_tools(self) -> list[ToolSpec]:
        await record_status(self.name, str(self.error), [], None)
        raise self.error

    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutput:
        raise self.error

    async def list_resources(self) -> list[Any]:
        raise self.error

    async def list_prompts(self) -> list[Any]:
        raise self.error


def provider_for(server: MCPServer, user: Any = None) -> MCPToolProvider | RefusedServer:
    """`server`'s tools for `user`'s runs (the built-in server learns who asks)."""
    try:
        config = config_for(server)
    except MCPUnavailable as refused:
        return RefusedServer(server.name, refused)
    meta = {USER_META: user.pk} if server.builtin and user is not None else None
    return MCPToolProvider(POOL, config, meta=meta, on_status=record_status)


def providers_for(user: Any) -> list[MCPToolProvider | RefusedServer]:
    """The enabled servers' tools, Nexus's own server first: where two servers offer a tool of
    one name ("calculator"), foresight and the offline model take its."""
    servers = MCPServer.objects.filter(enabled=True).order_by("-builtin", "name")
    providers = [provider_for(server, user) for server in servers]
    POOL.retire_all_but({p.config.key for p in providers if isinstance(p, MCPToolProvider)})
    return providers


def warm_up() -> None:
    """Connect to every enabled tool server in the background (see NEXUS_WARM_TOOL_SERVERS);
    one that cannot start is reported as on any first use, and retried then."""
    if not settings.NEXUS_WARM_TOOL_SERVERS:
        return

    def connect() -> None:
        try:
            providers = [p for p in providers_for(None) if isinstance(p, MCPToolProvider)]
        except Exception as exc:
            logger.warning("could not read the tool servers to start: %s", exc)
            return
        finally:
            connection.close()  # a thread of its own: leave no connection behind
        for provider in providers:
            POOL.submit(provider.list_tools())

    threading.Thread(target=connect, name="nexus-warm-up", daemon=True).start()


def registry_for(user: Any) -> ToolRegistry:
    config = settings.NEXUS_REASONING
    return ToolRegistry(
        providers_for(user), timeout=config.tool_timeout, max_result_chars=config.max_tool_result_chars
    )


async def check_servers(servers: list[MCPServer]) -> list[str | None]:
    """check_server of each, side by side: checked one after the other, three servers that never
    answer kept the admin's page waiting a minute (past a proxy's timeout: a 504, no results)."""
    return list(await asyncio.gather(*(check_server(server) for server in servers)))


async def check_server(server: MCPServer) -> str | None:
    """Connect now and list tools; returns the error (for staff), or None when the server answers.
    Waits the whole connect budget: a check is asked for, unlike a run's look at its tools."""
    provider = provider_for(server)
    if isinstance(provider, MCPToolProvider):
        provider.config = dataclasses.replace(provider.config, start_wait=0.0)
        provider.try_now()  # a paused server is asked too: the person wants to know now
    try:
        await provider.list_tools()
        if isinstance(provider, MCPToolProvider):
            # The listing may be the cached one of a server stuck since: ask it something.
            await provider.check()
    except Exception as exc:
        return str(exc)
    return None
