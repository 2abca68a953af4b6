"""Serve Nexus's built-in MCP server over stdio (workers start it; you rarely need to)."""

from typing import Any

from django.core.management.base import BaseCommand

from chat.mcp_server import build_server


class Command(BaseCommand):
    help = "Run the built-in Nexus MCP server (calculator, clock, team documents) over stdio."

    def handle(self, *args: Any, **options: Any) -> None:
        build_server().run("stdio")
