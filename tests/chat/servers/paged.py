"""An MCP server that lists its tools, resources and prompts in pages of 10, as the protocol
allows any server to: a client that reads the first page only misses the rest. With a second
argument `stuck`, its cursor never advances: every page is the first, with a next cursor."""

import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 10
TOOLS = [
    types.Tool(
        name=f"tool{n:02d}", description=f"Tool {n}.", input_schema={"type": "object", "properties": {}}
    )
    for n in range(25)
]
HOST = sys.argv[1] if len(sys.argv) > 1 else "notes"  # servers started with another name differ
RESOURCES = [
    types.Resource(uri=f"paged://{HOST}/{n:02d}", name=f"note{n:02d}.md", mime_type="text/markdown")
    for n in range(25)
]
PROMPTS = [types.Prompt(name=f"prompt{n:02d}", description=f"Prompt {n}.") for n in range(25)]
STUCK = sys.argv[2:] == ["stuck"]


def page(items: list, params: types.PaginatedRequestParams | None) -> tuple[list, str | None]:
    if STUCK:
        return items[:PAGE], "again"
    start = int(params.cursor) if params and params.cursor else 0
    end = start + PAGE
    return items[start:end], (str(end) if end < len(items) else None)


async def list_tools(ctx, params):
    tools, cursor = page(TOOLS, params)
    return types.ListToolsResult(tools=tools, next_cursor=cursor)


async def list_resources(ctx, params):
    resources, cursor = page(RESOURCES, params)
    return types.ListResourcesResult(resources=resources, next_cursor=cursor)


async def list_prompts(ctx, params):
    prompts, cursor = page(PROMPTS, params)
    return types.ListPromptsResult(prompts=prompts, next_cursor=cursor)


async def read_resource(ctx, params):
    text = f"Note {params.uri} from {HOST}."
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=text)])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ran")])


server = Server(
    "paged",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_list_prompts=list_prompts,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
