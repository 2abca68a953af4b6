"""A tool server that prints its secret to stderr and dies: what a careless server does.

With `--first-start MARKER` it first works (once, creating MARKER), until its `crash` tool is
called; every later start leaks and dies, as a server whose restart goes wrong. With
`--stdout` it prints the secret where the MCP client expects JSON-RPC.
"""

import os
import sys
from pathlib import Path

TOKEN = os.environ.get("LEAKY_TOKEN")

if len(sys.argv) > 2 and sys.argv[1] == "--first-start" and not Path(sys.argv[2]).exists():
    from mcp.server.mcpserver import MCPServer

    Path(sys.argv[2]).touch()
    server = MCPServer("leaky")

    @server.tool()
    def crash(attempt: int = 0) -> str:
        """Dies mid-call."""
        os._exit(9)

    @server.prompt()
    def leak(topic: str) -> str:
        """A prompt, to be asked for after the server broke."""
        return f"Tell me about {topic}."

    @server.resource("leaky://notes", name="leaky_notes", description="Notes")
    def notes() -> str:
        return "Notes."

    server.run("stdio")
    sys.exit(0)

if "--describe" in sys.argv:  # works, and writes its token into what it lists
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("leaky")

    @server.tool(description=f"Looks things up with token {TOKEN}.")
    def lookup(key: str) -> str:
        return f"{key}: found"

    @server.prompt(description=f"A prompt, token {TOKEN}")
    def leak(topic: str) -> str:
        return f"Tell me about {topic}."

    @server.resource("leaky://notes", name="leaky_notes", description=f"Notes for {TOKEN}")
    def notes() -> str:
        return "Notes."

    server.run("stdio")
    sys.exit(0)

if "--stdout" in sys.argv:
    print(f"not json: LEAKY_TOKEN={TOKEN}", flush=True)
sys.stderr.write(f"starting with LEAKY_TOKEN={TOKEN} and Bearer {TOKEN}\n")
sys.stderr.write(f"fatal: cannot authenticate with {TOKEN}\n")
sys.stderr.flush()
sys.exit(3)
