"""Nexus's own MCP server: calculator, clock, the team's documents, and two prompts.

Runs as `python manage.py nexus_mcp` over stdio, started by the worker that needs it. Each
request carries the run's user in its `_meta` (`nexus/user_id`); document tools and
resources only ever see what that user may see.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ToolAnnotations

from chat.converters import parse_id
from chat.documents import document_get_for_user, document_search, format_results
from reasoning.tools.builtin import CALCULATOR_DESCRIPTION
from reasoning.tools.builtin import calculator as calculate_text
from reasoning.tools.builtin import clock as clock_text

USER_KEY = "nexus/user_id"
# Reads nothing outside Nexus and changes nothing: a result may be reused within a run, and no
# approval is asked. The clock, read-only too, changes between calls: its row's tool policy
# says "no-cache", and the annotations say so as well (idempotent is false).
LOOKUP = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)
CLOCK = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=False)


def _user(ctx: Context) -> Any:
    meta = ctx.request_context.meta or {}
    user_id = meta.get(USER_KEY)
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first() if user_id else None
    if user is None:
        raise ToolError("this tool needs to know which Nexus user is asking")
    return user


def build_server() -> MCPServer:
    server = MCPServer(
        "nexus",
        instructions="Nexus's built-in tools: exact arithmetic, the current time, and the team's documents.",
    )

    @server.tool(description=CALCULATOR_DESCRIPTION, annotations=LOOKUP)
    def calculator(expression: str) -> str:
        try:
            return calculate_text(expression)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        description="The current date and time in a time zone (IANA name, default UTC).", annotations=CLOCK
    )
    def clock(timezone: str = "UTC") -> str:
        try:
            return clock_text(timezone)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        description="Search the team's documents; returns the best passages with their titles. "
        "Use it for anything about the team's own work, plans, policies or notes.",
        annotations=LOOKUP,
    )
    def search_documents(query: str, ctx: Context, limit: int = 5) -> str:
        user = _user(ctx)
        return format_results(document_search(user, query, limit=max(1, min(limit, 10))), query)

    @server.resource(
        "nexus://documents/{document_id}",
        name="document",
        mime_type="text/markdown",
        description="A team document, by id.",
    )
    def document(document_id: str, ctx: Context) -> str:
        user = _user(ctx)
        number = parse_id(document_id)
        found = document_get_for_user(user, number) if number is not None else None
        if found is None:
            raise ResourceNotFoundError(f"no document {document_id} that you may see")
        return f"# {found.title}\n\n{found.content}"

    @server.prompt(description="Summarise a topic or a document in a few bullet points.")
    def summarize(topic: str) -> str:
        return (
            f"Summarise {topic} for a busy teammate: five bullet points at most, the most important "
            "first, and cite the team documents you used."
        )

    @server.prompt(description="Compare two things and recommend one.")
    def compare(first: str, second: str) -> str:
        return (
            f"Compare {first} and {second}: where each is stronger, where it is weaker, and which you "
            "recommend for our team, with the reason."
        )

    return server
