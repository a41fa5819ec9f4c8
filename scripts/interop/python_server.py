"""An MCP server on the official Python SDK (mcp 2.x) for our client's interop test: one of each
feature the test exercises. `python_server.py --stdio`, or `python_server.py --port N`
(Streamable HTTP at /mcp)."""

import sys

from pydantic import BaseModel

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("interop-python", version="1.0.0")


class Name(BaseModel):
    name: str


@server.tool()
def echo(message: str) -> str:
    """Echoes the message."""
    return message


@server.tool()
def add(a: float, b: float) -> float:
    """Adds two numbers."""
    return a + b


@server.tool()
async def work(ctx: Context) -> str:
    """Reports progress twice, then answers."""
    await ctx.report_progress(1, 2, "half")
    await ctx.report_progress(2, 2)
    return "done"


@server.tool()
async def ask_user(ctx: Context) -> str:
    """Elicits a name."""
    answer = await ctx.elicit("name?", Name)
    return f"hello {answer.data.name}" if answer.action == "accept" else "declined"


@server.tool()
async def ask_model(ctx: Context) -> str:
    """Samples the client's model."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
        max_tokens=10,
    )
    return f"model said {result.model}"


@server.resource("test://a")
def alpha() -> str:
    """A fixed text resource."""
    return "alpha"


@server.prompt()
def greet(who: str) -> str:
    """Greets someone."""
    return f"hello {who}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stdio"]:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
