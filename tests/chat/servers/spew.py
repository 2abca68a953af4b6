"""A tool server that writes hundreds of lines of junk where the MCP client expects JSON-RPC,
before it serves as it should: a server with a stray print in a loop."""

import sys

from mcp.server.mcpserver import MCPServer

for number in range(300):
    print(f"garbage {number} " * 20, flush=True)

server = MCPServer("spew")


@server.tool()
def echo(text: str) -> str:
    """Says it back."""
    return text


server.run("stdio")
sys.exit(0)
