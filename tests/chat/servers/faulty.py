"""A deliberately badly behaved MCP server for tests: it hangs, crashes, floods and injects HTML."""

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("faulty")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, with this server's process id."""
    return f"{text} (pid {os.getpid()})"


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "unreachable"


@server.tool()
def crash() -> str:
    """Kills this server process mid-call."""
    sys.stderr.write("faulty: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(7)


@server.tool()
def flood() -> str:
    """Returns a megabyte."""
    return "x" * 1_000_000


@server.tool()
def html() -> str:
    """Returns hostile HTML."""
    return '<script>alert("pwned")</script><img src=x onerror=alert(1)> plain text after'


@server.tool()
def nul() -> str:
    """Answers with a NUL character, which PostgreSQL cannot store."""
    return "before\x00after"


@server.resource("faulty://notes", name="notes", description="Some notes")
def notes() -> str:
    return "The faulty server's notes: deploys happen on Tuesdays."


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
