"""A deliberately badly behaved MCP server for tests: it hangs, crashes, floods and injects HTML."""

import asyncio
import base64
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp_types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel

server = MCPServer("faulty")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, with this server's process id."""
    return f"{text} (pid {os.getpid()})"


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)


@server.tool()
def block(seconds: float = 3600) -> str:
    """Never answers, and cannot be cancelled: a blocking call in the server's thread pool."""
    time.sleep(seconds)
    return "woke"
    return "unreachable"


@server.tool()
async def freeze(seconds: float = 3600) -> str:
    """Blocks the server's own event loop: it answers nothing, not even a ping, until it wakes."""
    time.sleep(seconds)  # noqa: ASYNC251 - the point: a tool that blocks its loop
    return "thawed"


@server.tool()
def shout(lines: int = 1, word: str = "noise") -> str:
    """Writes `lines` lines to stderr, each naming the FAULTY_TOKEN it was started with."""
    token = os.environ.get("FAULTY_TOKEN", "")
    for number in range(lines):
        sys.stderr.write(f"{word} {number} token={token}\n")
    sys.stderr.flush()
    return f"wrote {lines}"


@server.tool()
def spawn() -> str:
    """Starts a long-lived helper process (in this server's process group) and returns its pid."""
    import subprocess

    helper = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return str(helper.pid)


@server.tool()
def crash() -> str:
    """Kills this server process mid-call."""
    sys.stderr.write("faulty: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(7)


@server.tool()
async def refuse(delay: float = 0, code: int = -32603) -> str:
    """Answers with a JSON-RPC error, as a fetch server reports a page it could not fetch
    (-32000, the generic server error many libraries answer with, is also the code the SDK
    gives a connection it saw close)."""
    from mcp import MCPError

    await asyncio.sleep(delay)
    raise MCPError(code, "Failed to fetch https://example.com/missing: status 404")


@server.tool()
async def nap(seconds: float = 1) -> str:
    """Answers after a while, with this server's process id."""
    await asyncio.sleep(seconds)
    return f"rested (pid {os.getpid()})"


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


# A 1x1 PNG, and an "image" whose bytes are a script.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()
FAKE = base64.b64encode(b"<svg onload=alert(1)>").decode()


@server.tool()
def picture() -> list:
    """Returns a PNG, an SVG that must not be shown, and a caption."""
    return [
        TextContent(type="text", text="a tiny picture"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        ImageContent(type="image", data=FAKE, mime_type="image/svg+xml"),
    ]


@server.tool()
def report() -> list:
    """Returns a binary report as an embedded resource and a link to another."""
    blob = BlobResourceContents(
        uri="faulty://report.bin",
        mime_type="application/octet-stream",
        blob=base64.b64encode(b"\x00\x01report").decode(),
    )
    return [
        EmbeddedResource(type="resource", resource=blob),
        ResourceLink(type="resource_link", uri="faulty://notes", name="notes", description="the notes"),
    ]


@server.tool()
async def slow(ctx: Context, steps: int = 3) -> str:
    """Reports progress while it works."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1} of {steps}")
        await asyncio.sleep(0.05)
    return "done"


@server.tool(name="lookup.v2/beta")
def lookup_v2(key: str) -> str:
    """A name MCP allows and model APIs refuse (dots, a slash)."""
    return f"v2 {key}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True))
def lookup(key: str) -> str:
    """A read-only lookup in a closed world: its result may be reused."""
    return f"{key} (pid {os.getpid()})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def now() -> str:
    """Read-only, but says nothing about giving the same answer twice: never reused."""
    return str(asyncio.get_event_loop().time())


@server.prompt()
def trip(city: str, state: str | None = None) -> str:
    """A prompt with an optional argument."""
    return f"Plan a trip to {city}{f', {state}' if state else ''}."


@server.prompt()
def huge(size: str = "3000000") -> list[UserMessage]:
    """A prompt of megabytes: context, then the request."""
    return [UserMessage("Background: " + "z" * int(size)), UserMessage("Summarise this: " + "y" * int(size))]


@server.prompt()
async def stall(topic: str) -> str:
    """A prompt that never comes back."""
    await asyncio.sleep(3600)
    return topic


@server.prompt()
def summarize(topic: str) -> str:
    """The same name as the built-in server's prompt."""
    return f"Faulty summary of {topic}."


@server.prompt()
def chart() -> list[UserMessage]:
    """A prompt that brings a picture and a binary file along with its text."""
    blob = BlobResourceContents(
        uri="faulty://chart.bin",
        mime_type="application/octet-stream",
        blob=base64.b64encode(b"chart").decode(),
    )
    return [
        UserMessage("Describe the attached chart."),
        UserMessage(ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage(EmbeddedResource(type="resource", resource=blob)),
    ]


@server.resource("faulty://report.bin", name="report", mime_type="application/octet-stream")
def report_bin() -> bytes:
    return b"\x00\x01report"


@server.resource("faulty://broken", name="broken", description="Fails whenever it is read")
def broken() -> str:
    raise RuntimeError("the disk is on fire")


@server.resource("faulty://notes", name="notes", description="Some notes")
def notes() -> str:
    return "The faulty server's notes: deploys happen on Tuesdays."


class Name(BaseModel):
    name: str


@server.tool()
async def greet(ctx: Context) -> str:
    """Asks the person for their name mid-call (an elicitation, as most Python servers ask)."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"hello {answer.data.name}" if answer.action == "accept" else f"no name ({answer.action})"


@server.tool()
async def open_link(ctx: Context, url: str = "javascript:alert(1)") -> str:
    """Asks the person to open an address (URL-mode elicitation), any address it is given."""
    answer = await ctx.elicit_url("Open this to sign in", url, "e1")
    return f"open link: {answer.action}"


@server.tool()
async def muse(ctx: Context, topic: str = "tea") -> str:
    """Asks the client's model for a line mid-call (sampling, through the session)."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=f"A line on {topic}"))],
        max_tokens=50,
    )
    return f"the model said: {result.content.text}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        # `--stateless`: each request answered alone, with no way to ask anything mid-call.
        stateless = sys.argv[3:] == ["--stateless"]
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), stateless_http=stateless)
    else:
        server.run("stdio")
