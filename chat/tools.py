"""The tools a user's runs may use: every enabled MCP server, through one process-wide pool.

The built-in server runs as `manage.py nexus_mcp` with this process's settings (its database
included), and learns each run's user from the request metadata.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection
from django.utils import timezone

from chat.models import MCPServer
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig, MCPToolProvider
from reasoning.tools.registry import ToolRegistry

POOL = MCPConnectionPool()
atexit.register(POOL.close_sync)
USER_META = "nexus/user_id"


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


def config_for(server: MCPServer) -> MCPServerConfig:
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
            call_timeout=server.call_timeout,
            tool_policies=policies,
        )
    return MCPServerConfig(
        name=server.name,
        transport=server.transport,
        command=server.command,
        args=tuple(str(a) for a in server.args or []),
        env=tuple(sorted((str(k), str(v)) for k, v in (server.env or {}).items())),
        cwd=server.cwd or None,
        url=server.url,
        headers=tuple(sorted((str(k), str(v)) for k, v in (server.headers or {}).items())),
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


def providers_for(user: Any) -> list[MCPToolProvider]:
    providers = []
    for server in MCPServer.objects.filter(enabled=True):
        meta = {USER_META: user.pk} if server.builtin else None
        providers.append(MCPToolProvider(POOL, config_for(server), meta=meta, on_status=record_status))
    return providers


def registry_for(user: Any) -> ToolRegistry:
    config = settings.NEXUS_REASONING
    return ToolRegistry(
        providers_for(user), timeout=config.tool_timeout, max_result_chars=config.max_tool_result_chars
    )


async def check_server(server: MCPServer) -> str | None:
    """Connect now and list tools; returns the error, or None when the server answers."""
    provider = MCPToolProvider(POOL, config_for(server), on_status=record_status)
    try:
        await provider.list_tools()
    except Exception as exc:
        return str(exc)
    return None
