#!/usr/bin/env python3
"""Drain under SIGTERM, measured (not part of CI; examples/tests/drain.rs is the test): starts
the all-protocols binary given as the first argument on a free loopback port, puts IN_FLIGHT
(default 50) slow calls in flight (a quarter each: MCP tools/call answered as JSON and as SSE,
A2A SendMessage and SendStreamingMessage; the demo's `slow` takes 8 s), sends SIGTERM once each
call is under way, and reports how many answers carried their result, how long the process took
to exit after the signal, and its exit status. Exits 1 unless every answer carried its result
and the process exited 0.

    scripts/drain_measure.py target/release/all-protocols
"""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak_load import (  # noqa: E402  (the soak's HTTP/1.1 client, reused)
    A2A_HEADERS,
    Connection,
    HttpError,
    a2a_message,
    open_mcp_session,
    rpc,
    sse_events,
)

IN_FLIGHT = int(os.environ.get("IN_FLIGHT", "50"))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def mcp_call(port, answer_kind, started):
    connection = Connection(port)
    try:
        _, in_session = await open_mcp_session(connection, "drain")
        if in_session is None:
            return False
        if answer_kind == "json":
            in_session["Accept"] = "application/json"
        params = {"name": "demo", "arguments": {"text": "slow drain"}}
        if answer_kind == "sse":
            params["_meta"] = {"progressToken": "p"}
        started.reached()
        status, headers, body = await connection.request("POST", "/mcp", in_session, rpc("tools/call", params, 2))
        if "event-stream" in headers.get("content-type", ""):
            messages = [json.loads(data) for _, data in sse_events(body) if data]
            answer = messages[-1] if messages else {}
        else:
            answer = json.loads(body) if body else {}
        return status == 200 and answer.get("id") == 2 and "content" in answer.get("result", {})
    except (OSError, HttpError, asyncio.IncompleteReadError, ValueError):
        return False
    finally:
        connection.close()


async def a2a_call(port, streaming, started):
    connection = Connection(port)
    try:
        started.reached()
        if streaming:
            headers = dict(A2A_HEADERS, Accept="text/event-stream")
            status, _, body = await connection.request(
                "POST", "/a2a", headers, rpc("SendStreamingMessage", a2a_message("slow drain")))
            return status == 200 and b"TASK_STATE_COMPLETED" in body
        status, _, body = await connection.request("POST", "/a2a", A2A_HEADERS, rpc("SendMessage", a2a_message("slow drain")))
        return status == 200 and b"TASK_STATE_COMPLETED" in body
    except (OSError, HttpError, asyncio.IncompleteReadError, ValueError):
        return False
    finally:
        connection.close()


class Started:
    """Counts the calls that reached their slow request."""

    def __init__(self):
        self.count = 0

    def reached(self):
        self.count += 1


async def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    port = free_port()
    server = subprocess.Popen([sys.argv[1], "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        started = Started()
        kinds = ["mcp json", "mcp sse", "a2a json", "a2a sse"]
        calls = []
        for index in range(IN_FLIGHT):
            kind = kinds[index % len(kinds)]
            if kind.startswith("mcp"):
                calls.append(mcp_call(port, kind.split()[1], started))
            else:
                calls.append(a2a_call(port, kind.endswith("sse"), started))
        results = asyncio.gather(*calls)
        while started.count < IN_FLIGHT:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.0)  # every slow call is now under way, with ~7 s still to go
        signalled = time.monotonic()
        server.send_signal(signal.SIGTERM)
        carried = await results
        code = await asyncio.get_running_loop().run_in_executor(None, server.wait, 40)
        drained = time.monotonic() - signalled
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    answered = sum(carried)
    by_kind = {kind: sum(ok for index, ok in enumerate(carried) if kinds[index % 4] == kind) for kind in kinds}
    print(f"drain: {answered} of {IN_FLIGHT} in-flight calls answered with their result "
          f"({', '.join(f'{kind} {count}' for kind, count in by_kind.items())}); "
          f"exit {code} {drained:.2f} s after SIGTERM")
    sys.exit(0 if answered == IN_FLIGHT and code == 0 else 1)


if __name__ == "__main__":
    asyncio.run(main())
