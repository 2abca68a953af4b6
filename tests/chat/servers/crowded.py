"""An MCP server (raw JSON-RPC over stdio) that lists as many tools as its argument says, with
long descriptions and schemas, all in one message: a megabytes-long line."""

import json
import sys

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 300
TOOLS = [
    {
        "name": f"tool{number}",
        "description": "D" * 2000,
        "inputSchema": {
            "type": "object",
            "properties": {f"x{field}": {"type": "string", "description": "y" * 100} for field in range(10)},
        },
    }
    for number in range(COUNT)
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    ident, method = message.get("id"), message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "crowded", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "done"}]}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
