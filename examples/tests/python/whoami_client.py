"""The official MCP Python SDK client with a bearer token: connects to URL over Streamable HTTP
sending `Authorization: Bearer TOKEN`, calls the `whoami` tool, prints its one text item.
Usage: whoami_client.py URL TOKEN. Exits non-zero when the call fails."""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, token: str) -> None:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("whoami", {})
            if result.is_error or len(result.content) != 1:
                raise SystemExit(f"unexpected answer: {result}")
            print(result.content[0].text)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
