"""A tool server written without any MCP SDK, line-delimited JSON-RPC over stdio, as third-party
servers are: one of its tools has an input schema the protocol does not allow (not an object),
two have object schemas no model API takes (`loose`: not valid JSON Schema; `dangling`: a $ref
to nowhere), and `typed` answers with structured content its own output schema refuses, quoting
RAW_TOKEN. With the argument `objects`, every tool's schema is an object (the SDK reads the
listing whole: the one tool it refuses is left out). With `modern`, it speaks only the
2026-07-28 protocol: it refuses the initialize handshake and answers `server/discover`. With
`toolless`, it has no tools, only a resource and a prompt, and does not know `tools/list` (as
a server written with the TypeScript SDK that registers no tool). With `changing`, its tool
`grow` adds a tool and says so (`notifications/tools/list_changed`) before it answers."""

import json
import os
import sys

TOOLS = [
    {"name": "echo", "description": "Echo the text.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "broken", "description": "Takes a list.", "inputSchema": {"type": "array"}},
    {"name": "shout", "description": "Shout the text.", "inputSchema": {"type": "object"}},
    {"name": "loose", "description": "Malformed.", "inputSchema": {"type": "object", "properties": "oops"}},
    {
        "name": "dangling",
        "description": "Refers to a definition it does not have.",
        "inputSchema": {"type": "object", "properties": {"where": {"$ref": "#/$defs/place"}}},
    },
    {
        "name": "defined",
        "description": "Refers to a definition it has.",
        "inputSchema": {
            "type": "object",
            "properties": {"where": {"$ref": "#/$defs/place"}, "kind": {"const": {"$ref": "data"}}},
            "$defs": {"place": {"type": "string"}},
        },
    },
    {
        "name": "typed",
        "description": "A number, as its output schema says (but not as it answers).",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {"value": {"type": "number"}},
            "required": ["value"],
        },
    },
]


MODERN = sys.argv[1:] == ["modern"]
TOOLLESS = sys.argv[1:] == ["toolless"]
CHANGING = sys.argv[1:] == ["changing"]
if sys.argv[1:] in (["objects"], ["changing"]):
    TOOLS = [tool for tool in TOOLS if tool["inputSchema"].get("type") == "object"]
if CHANGING:
    TOOLS.append({"name": "grow", "description": "Add a tool.", "inputSchema": {"type": "object"}})


def send(message: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "server/discover" and MODERN:
        return {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
    if method == "initialize" and MODERN:
        return {
            "error": {"code": -32022, "message": "2026-07-28 only", "data": {"supported": ["2026-07-28"]}}
        }
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"resources": {}, "prompts": {}} if TOOLLESS else {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    if TOOLLESS and method == "resources/list":
        return {"resources": [{"uri": "raw://handbook", "name": "handbook"}]}
    if TOOLLESS and method == "resources/read":
        return {"contents": [{"uri": "raw://handbook", "text": "Be kind."}]}
    if TOOLLESS and method == "prompts/list":
        return {"prompts": [{"name": "review"}]}
    if TOOLLESS:
        return None
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and params.get("name") == "typed":
        token = os.environ.get("RAW_TOKEN", "")
        return {"content": [{"type": "text", "text": token}], "structuredContent": {"value": token}}
    if method == "tools/call" and params.get("name") == "grow":
        TOOLS.append({"name": "grown", "description": "Grown.", "inputSchema": {"type": "object"}})
        send({"method": "notifications/tools/list_changed"})
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"{params.get('name')} ran"}]}
    if method == "ping":
        return {}
    return None


for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    result = answer(request)
    if result is None:
        reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "not found"}}
    elif "error" in result:
        reply = {"jsonrpc": "2.0", "id": request["id"], **result}
    elif MODERN:  # every 2026-07-28 result says whether it is complete
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": {**result, "resultType": "complete"}}
    else:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
