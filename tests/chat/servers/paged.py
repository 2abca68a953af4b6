"""An MCP server that lists its tools, resources and prompts in pages of 10, as the protocol
allows any server to: a client that reads the first page only misses the rest."""

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
RESOURCES = [types.Resource(uri=f"paged://notes/{n:02d}", name=f"note{n:02d}.md") for n in range(25)]
PROMPTS = [types.Prompt(name=f"prompt{n:02d}", description=f"Prompt {n}.") for n in range(25)]


def page(items: list, params: types.PaginatedRequestParams | None) -> tuple[list, str | None]:
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


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ran")])


server = Server(
    "paged",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_prompts=list_prompts,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
