"""The official MCP Python SDK client against a server without sessions (`mcp-everything
--sessionless`): initialize, every page of tools/list and a tools/call over Streamable HTTP, and
no response may name a session. Usage: sessionless_client.py URL. Exits non-zero on a failure."""

import asyncio
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

EXPECTED_TEXT = "This is a simple text response for testing."


async def main(url: str) -> None:
    named: list[str] = []

    async def record(response) -> None:
        if "mcp-session-id" in response.headers:
            named.append(response.headers["mcp-session-id"])

    http = create_mcp_http_client()
    http.event_hooks = {"request": [], "response": [record]}
    async with http, streamable_http_client(url, http_client=http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            names: set[str] = set()
            cursor = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                listed = await session.list_tools(params=params)
                names.update(tool.name for tool in listed.tools)
                cursor = listed.next_cursor
                if not cursor:
                    break
            if "test_simple_text" not in names:
                raise SystemExit(f"test_simple_text is not listed: {sorted(names)}")
            result = await session.call_tool("test_simple_text", {})
            if result.is_error or [item.text for item in result.content] != [EXPECTED_TEXT]:
                raise SystemExit(f"unexpected answer: {result}")
    if named:
        raise SystemExit(f"the server named a session: {named}")
    print(
        f"sessionless: {initialized.protocol_version} negotiated, {len(names)} tools listed, "
        "tools/call answered, no session named"
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
