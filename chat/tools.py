"""The tools a user's runs may use: every enabled MCP server, through one process-wide pool.

The built-in server runs as `manage.py nexus_mcp` with this process's settings (its database
included), and learns each run's user from the request metadata. Any other stdio server
starts only if its command is one the operator allowed (NEXUS_MCP_ALLOWED_COMMANDS): the
database, and so the admin, never decides alone what this process executes.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection
from django.utils import timezone

from chat.crypto import UnreadableSecrets
from chat.logging import SECRET_VARIABLES
from chat.models import MCPServer
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig, MCPToolProvider, MCPUnavailable
from reasoning.tools.registry import ToolOutput, ToolProvider, ToolRegistry, ToolSpec

POOL = MCPConnectionPool()
atexit.register(POOL.close_sync)
USER_META = "nexus/user_id"
# Environment variables that make an allowed program load other code; a server may not set them.
FORBIDDEN_ENV = re.compile(
    r"^(PATH|LD_\w*|DYLD_\w*|PYTHON\w*|NODE_OPTIONS|NODE_PATH|PERL5\w*|RUBYOPT|RUBYLIB|BASH_ENV|ENV"
    r"|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|GIT_\w*)$",
    re.IGNORECASE,
)


def command_refusal(command: str) -> str | None:
    """Why `command` may not be started as a stdio server, or None if the operator allowed it."""
    if command not in settings.NEXUS_MCP_ALLOWED_COMMANDS:
        allowed = sorted({Path(p).name for p in settings.NEXUS_MCP_ALLOWED_COMMANDS.values()})
        return (
            f"{command!r} is not an allowed command; the operator lists the programs tool servers "
            f"may run in NEXUS_MCP_ALLOWED_COMMANDS (now: {', '.join(allowed) or 'none'})"
        )
    return None


def env_refusal(names: Any) -> str | None:
    forbidden = sorted(name for name in names if FORBIDDEN_ENV.match(str(name)))
    if forbidden:
        return f"these environment variables may not be set for a tool server: {', '.join(forbidden)}"
    return None


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
    values = [os.environ.get(name, "") for name in (*SECRET_VARIABLES, "DATABASE_URL", "REDIS_URL")]
    values += [
        settings.SECRET_KEY,
        *settings.NEXUS_SECRETS_KEYS,
        connection.settings_dict.get("PASSWORD") or "",
    ]
    return tuple(v for v in values if v)


def config_for(server: MCPServer) -> MCPServerConfig:
    """How to reach `server`; raises MCPUnavailable when it may not be started at all."""
    policies = tuple(sorted((str(k), str(v)) for k, v in (server.tool_policies or {}).items()))
    if server.builtin:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "_"))}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "nexus.settings",
                "DATABASE_URL": _database_url(),
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
            tool_policies=policies,
        )
    command = server.command
    if server.transport == MCPServer.Transport.STDIO:
        refusal = command_refusal(command) or env_refusal(server.env or {})
        if refusal:
            raise MCPUnavailable(f"MCP server {server.name!r} is unavailable: {refusal}", server=server.name)
        command = settings.NEXUS_MCP_ALLOWED_COMMANDS[command]
    if isinstance(server.env, UnreadableSecrets) or isinstance(server.headers, UnreadableSecrets):
        raise MCPUnavailable(
            f"MCP server {server.name!r} is unavailable: its stored secrets cannot be decrypted with "
            "NEXUS_SECRETS_KEY (was the key changed without keeping the old one?)",
            server=server.name,
        )
    env = tuple(sorted((str(k), str(v)) for k, v in (server.env or {}).items()))
    headers = tuple(sorted((str(k), str(v)) for k, v in (server.headers or {}).items()))
    return MCPServerConfig(
        name=server.name,
        transport=server.transport,
        command=command,
        args=tuple(str(a) for a in server.args or []),
        env=env,
        cwd=server.cwd or None,
        url=server.url,
        headers=headers,
        secret_values=tuple(value for _, value in (*env, *headers)),
        call_timeout=server.call_timeout,
        tool_policies=policies,
    )


@database_sync_to_async
def record_status(name: str, error: str | None, tool_count: int) -> None:
    """What the admin's status column shows: the last time a worker reached the server."""
    MCPServer.objects.filter(name=name).update(
        last_status=MCPServer.Status.ERROR if error else MCPServer.Status.OK,
        last_error=error or "",
        tool_count=tool_count,
        last_checked=timezone.now(),
    )


class RefusedServer(ToolProvider):
    """A configured server that may not be started: every request fails with the reason."""

    def __init__(self, name: str, error: MCPUnavailable) -> None:
        self.name = name
        self.error = error

    async def list_tools(self) -> list[ToolSpec]:
        await record_status(self.name, str(self.error), 0)
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
    return [provider_for(server, user) for server in MCPServer.objects.filter(enabled=True)]


def registry_for(user: Any) -> ToolRegistry:
    config = settings.NEXUS_REASONING
    return ToolRegistry(
        providers_for(user), timeout=config.tool_timeout, max_result_chars=config.max_tool_result_chars
    )


async def check_server(server: MCPServer) -> str | None:
    """Connect now and list tools; returns the error (for staff), or None when the server answers."""
    provider = provider_for(server)
    try:
        await provider.list_tools()
    except Exception as exc:
        return str(exc)
    return None
