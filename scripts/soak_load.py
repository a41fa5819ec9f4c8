#!/usr/bin/env python3
"""The soak's load and abuse against a running all-protocols server (scripts/soak.sh starts
it): for DURATION seconds, mixed healthy traffic (MCP sessions opened, initialized, tools called
with JSON and SSE answers, GET stream resumes, sessions deleted; A2A SendMessage, GetTask and
SendStreamingMessage over JSON-RPC and REST) beside the abuse of issue 13 (silent sockets,
header dribblers, 1 MiB A2A messages, fuzzed bodies), while it samples the server's RSS and open
file descriptors from /proc every few seconds. It ends by comparing the last third of the run
with the middle third and exits 1 when either grew.

Only loopback is ever addressed, every loop ends at the deadline, and nothing outside the
standard library is used."""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time

HOST = "127.0.0.1"


class Stats:
    def __init__(self):
        self.counts = {}
        self.latencies = []  # (time since start, seconds) of healthy MCP echo calls
        self.unanswered = []  # the first few (path, body) that got no answer at all

    def count(self, what, by=1):
        self.counts[what] = self.counts.get(what, 0) + by


class HttpError(Exception):
    pass


class Connection:
    """One keep-alive HTTP/1.1 connection with just enough of the protocol for this load:
    Content-Length and chunked bodies, and SSE bodies read event by event."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection(HOST, self.port)

    def close(self):
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def send(self, method, path, headers, body=b""):
        if self.writer is None:
            await self.open()
        lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await self.writer.drain()

    async def head(self):
        status_line = await self.reader.readline()
        if not status_line:
            raise HttpError("connection closed before an answer")
        parts = status_line.decode("latin-1").split(" ", 2)
        if len(parts) < 2:
            raise HttpError(f"bad status line {status_line!r}")
        headers = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(parts[1]), headers

    async def chunks(self, headers):
        """The body's pieces as they arrive."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size_line = await self.reader.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    await self.reader.readline()
                    return
                data = await self.reader.readexactly(size + 2)
                yield data[:-2]
        else:
            length = int(headers.get("content-length", "0"))
            if length:
                yield await self.reader.readexactly(length)

    async def request(self, method, path, headers, body=b""):
        await self.send(method, path, headers, body)
        status, answer_headers = await self.head()
        data = b"".join([piece async for piece in self.chunks(answer_headers)])
        if answer_headers.get("connection", "").lower() == "close":
            self.close()
        return status, answer_headers, data


def sse_events(data):
    """The events of an SSE body: (id, data) pairs."""
    events = []
    for block in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        event_id, lines = None, []
        for line in block.split(b"\n"):
            field, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if field == b"id":
                event_id = value.decode()
            elif field == b"data":
                lines.append(value.decode("utf-8", "replace"))
        if lines or event_id:
            events.append((event_id, "\n".join(lines)))
    return events


def rpc(method, params, request_id=1):
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
MCP_VERSION = "2025-11-25"
A2A_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def a2a_message(text):
    return {"message": {"messageId": f"m-{random.getrandbits(48):x}", "role": "ROLE_USER", "parts": [{"text": text}]}}


async def open_mcp_session(connection, client_name):
    """Initializes an MCP session on `connection` and sends `notifications/initialized`: the
    initialize status and the headers every later request of the session carries (None when
    no session was opened)."""
    status, headers, _ = await connection.request("POST", "/mcp", MCP_HEADERS, rpc("initialize", {
        "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": client_name, "version": "1"}}))
    session = headers.get("mcp-session-id")
    if status != 200 or not session:
        return status, None
    in_session = dict(MCP_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": MCP_VERSION})
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    await connection.request("POST", "/mcp", in_session, note)
    return status, in_session


async def mcp_session(port, stats, started, deadline):
    """A client's whole life: open a session, call tools (JSON and SSE answers), resume a
    stream, delete the session."""
    connection = Connection(port)
    try:
        status, in_session = await open_mcp_session(connection, "soak")
        if in_session is None:
            stats.count(f"mcp initialize {status}")
            return
        stats.count("mcp sessions opened")
        for call in range(5):
            if time.monotonic() > deadline:
                break
            begun = time.monotonic()
            status, _, body = await connection.request("POST", "/mcp", in_session, rpc(
                "tools/call", {"name": "echo", "arguments": {"message": f"hello {call}"}}, call + 2))
            if status == 200 and b"hello" in body:
                stats.latencies.append((begun - started, time.monotonic() - begun))
                stats.count("mcp tools/call json")
            else:
                stats.count(f"mcp tools/call json {status}")
        status, headers, body = await connection.request("POST", "/mcp", in_session, rpc(
            "tools/call", {"name": "test_tool_with_logging", "arguments": {}}, 10))
        events = sse_events(body) if "event-stream" in headers.get("content-type", "") else []
        ids = [event_id for event_id, _ in events if event_id]
        stats.count("mcp tools/call sse" if events else f"mcp tools/call sse {status}")
        if ids:
            await resume(port, in_session, ids[0], stats)
        status, _, _ = await connection.request("DELETE", "/mcp", in_session)
        stats.count("mcp sessions deleted" if status in (200, 202, 204) else f"mcp delete {status}")
    except (OSError, HttpError, asyncio.IncompleteReadError, ValueError) as error:
        stats.count(f"mcp error {type(error).__name__}")
    finally:
        connection.close()


async def resume(port, in_session, last_event_id, stats):
    """A GET resuming the call's stream after its first event: what followed it is replayed."""
    connection = Connection(port)
    try:
        headers = dict(in_session, **{"Accept": "text/event-stream", "Last-Event-ID": last_event_id})
        headers.pop("Content-Type")
        await connection.send("GET", "/mcp", headers)
        status, answer_headers = await asyncio.wait_for(connection.head(), 5)
        received = b""
        try:
            async with asyncio.timeout(1):
                async for piece in connection.chunks(answer_headers):
                    received += piece
                    if b"Logging tool completed" in received:
                        break
        except TimeoutError:
            pass
        stats.count("mcp resumes replayed" if b"Logging tool completed" in received else f"mcp resume {status} incomplete")
    except (OSError, HttpError, asyncio.IncompleteReadError, TimeoutError) as error:
        stats.count(f"mcp resume error {type(error).__name__}")
    finally:
        connection.close()


async def a2a_conversation(port, stats):
    connection = Connection(port)
    try:
        status, _, body = await connection.request("POST", "/a2a", A2A_HEADERS, rpc("SendMessage", a2a_message("hi")))
        task = json.loads(body).get("result", {}).get("task", {}) if status == 200 else {}
        stats.count("a2a SendMessage" if task.get("id") else f"a2a SendMessage {status}")
        if task.get("id"):
            status, _, body = await connection.request("POST", "/a2a", A2A_HEADERS, rpc("GetTask", {"id": task["id"]}, 2))
            stats.count("a2a GetTask" if b'"result"' in body else f"a2a GetTask {status}")
            status, _, _ = await connection.request("GET", f"/a2a/v1/tasks/{task['id']}", {"A2A-Version": "1.0"})
            stats.count(f"a2a REST GetTask {status}")
        status, headers, body = await connection.request(
            "POST", "/a2a", dict(A2A_HEADERS, Accept="text/event-stream"), rpc("SendStreamingMessage", a2a_message("stream me"), 3))
        events = sse_events(body)
        stats.count("a2a SendStreamingMessage" if events else f"a2a SendStreamingMessage {status}")
    except (OSError, HttpError, asyncio.IncompleteReadError, ValueError) as error:
        stats.count(f"a2a error {type(error).__name__}")
    finally:
        connection.close()


async def big_a2a_message(port, stats):
    """One 1 MiB A2A message from an anonymous caller."""
    connection = Connection(port)
    try:
        body = rpc("SendMessage", a2a_message("x" * (1 << 20)))
        status, _, _ = await connection.request("POST", "/a2a", A2A_HEADERS, body)
        stats.count(f"a2a 1 MiB message {status}")
    except (OSError, HttpError, asyncio.IncompleteReadError) as error:
        stats.count(f"a2a 1 MiB error {type(error).__name__}")
    finally:
        connection.close()


VALID_BODIES = [
    ("/mcp", MCP_HEADERS, rpc("initialize", {"protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}})),
    ("/mcp", MCP_HEADERS, rpc("tools/call", {"name": "echo", "arguments": {"message": "m"}})),
    ("/a2a", A2A_HEADERS, rpc("SendMessage", a2a_message("fuzz"))),
    ("/a2a", {"Content-Type": "application/json"}, rpc("message/send", {"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}]}})),
    ("/a2a/v1/message:send", A2A_HEADERS, json.dumps(a2a_message("rest")).encode()),
    ("/acp", {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, rpc("initialize", {"protocolVersion": 1, "clientCapabilities": {}})),
]
ALPHABET = b'{}[]":,\\0123456789-+.eE truefalsnul\x00\x1f\xff\xc3\xa9'


def mutate(body, rng):
    data = bytearray(body)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data) + 1)
        choice = rng.random()
        if choice < 0.3:
            data.insert(at, rng.choice(ALPHABET))
        elif choice < 0.6 and at < len(data):
            del data[at]
        elif choice < 0.8 and at < len(data):
            data[at] = rng.choice(ALPHABET)
        else:
            start = rng.randrange(len(data))
            data[at:at] = data[start:start + rng.randint(1, 16)]
    return bytes(data)


async def fuzzed_body(port, stats, rng):
    """A mutated valid body: any answer is fine, no answer is a finding."""
    path, headers, body = rng.choice(VALID_BODIES)
    connection = Connection(port)
    try:
        mutated = mutate(body, rng)
        status, _, _ = await asyncio.wait_for(connection.request("POST", path, headers, mutated), 10)
        stats.count(f"fuzzed {status}")
    except (OSError, HttpError, asyncio.IncompleteReadError, TimeoutError) as error:
        stats.count(f"fuzzed NO ANSWER {type(error).__name__}")
        if len(stats.unanswered) < 5:
            stats.unanswered.append((path, mutated))
    finally:
        connection.close()


async def repeat(deadline, pause, make):
    while time.monotonic() < deadline:
        await make()
        await asyncio.sleep(pause)


async def silent_sockets(port, stats, deadline, count):
    """`count` sockets that never send a byte, each replaced when the server closes it."""
    async def one():
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection(HOST, port)
            except OSError:
                stats.count("silent socket refused")
                await asyncio.sleep(1)
                continue
            stats.count("silent sockets opened")
            try:
                remaining = deadline - time.monotonic()
                data = await asyncio.wait_for(reader.read(1), max(remaining, 0.1))
                stats.count("silent sockets closed by the server" if not data else "silent sockets answered")
            except (TimeoutError, OSError):
                pass
            finally:
                writer.close()
    await asyncio.gather(*(one() for _ in range(count)))


async def header_dribblers(port, stats, deadline, count):
    """`count` connections sending a request head one byte a second."""
    head = f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\nX-Slow: {'d' * 200}\r\n\r\n".encode()

    async def one():
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection(HOST, port)
            except OSError:
                stats.count("dribbler refused")
                await asyncio.sleep(1)
                continue
            stats.count("dribblers opened")
            closed, sent = False, 0
            try:
                for byte in head:
                    if time.monotonic() > deadline:
                        break
                    writer.write(bytes([byte]))
                    await writer.drain()
                    sent += 1
                    try:
                        # Anything read (an error answer or the end of the stream) means the
                        # server stopped waiting for this head.
                        await asyncio.wait_for(reader.read(1024), 1)
                        closed = True
                        break
                    except TimeoutError:
                        pass
            except OSError:
                closed = True
            finally:
                writer.close()
            if closed and sent < len(head):
                stats.count("dribblers cut off by the server before their head was complete")
            elif closed:
                stats.count("dribblers answered once their whole head was sent")
            else:
                stats.count("dribblers still open at the end of the run")
    await asyncio.gather(*(one() for _ in range(count)))


def sample(pid):
    rss_kib = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    return rss_kib, len(os.listdir(f"/proc/{pid}/fd"))


async def sampler(pid, started, deadline, every, samples):
    while time.monotonic() < deadline:
        rss, fds = sample(pid)
        samples.append((time.monotonic() - started, rss, fds))
        await asyncio.sleep(every)


def thirds(rows):
    third = len(rows) // 3
    return rows[third: 2 * third], rows[2 * third:]


def judge(samples, stats, output):
    middle, last = thirds(samples)
    if not middle or not last:
        print("too few samples to judge", file=output)
        return False
    flat = True
    lines = []
    for column, name, unit, scale in ((1, "RSS", "MiB", 1024), (2, "open fds", "", 1)):
        mid_values = [row[column] / scale for row in middle]
        last_values = [row[column] / scale for row in last]
        mid_mean, last_mean = statistics.mean(mid_values), statistics.mean(last_values)
        # Growth past 10% (and past a small absolute slack) after warm-up is not flat.
        slack = 2 if column == 1 else 8
        grew = last_mean > mid_mean * 1.10 + slack
        flat &= not grew
        lines.append(
            f"{name}: middle third mean {mid_mean:.1f}{unit} (max {max(mid_values):.1f}), "
            f"last third mean {last_mean:.1f}{unit} (max {max(last_values):.1f}), "
            f"ratio {last_mean / mid_mean if mid_mean else float('inf'):.3f} -> {'GROWING' if grew else 'flat'}"
        )
    latency_lines = []
    for label, rows in (("middle", middle), ("last", last)):
        window = (rows[0][0], rows[-1][0])
        values = sorted(seconds for at, seconds in stats.latencies if window[0] <= at <= window[1])
        if values:
            p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
            latency_lines.append(f"{label} third: {len(values)} echo calls, p50 {values[len(values) // 2] * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
    print("\n".join(lines + latency_lines), file=output)
    return flat


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=1800)
    parser.add_argument("--sample-every", type=float, default=5)
    parser.add_argument("--samples-csv", default=None)
    parser.add_argument("--mcp-clients", type=int, default=6)
    parser.add_argument("--a2a-clients", type=int, default=3)
    parser.add_argument("--silent", type=int, default=200)
    parser.add_argument("--dribblers", type=int, default=50)
    arguments = parser.parse_args()
    port, stats, samples = arguments.port, Stats(), []
    started = time.monotonic()
    deadline = started + arguments.seconds
    rng = random.Random(13)
    jobs = [sampler(arguments.pid, started, deadline, arguments.sample_every, samples)]
    jobs += [repeat(deadline, 0.05, lambda: mcp_session(port, stats, started, deadline)) for _ in range(arguments.mcp_clients)]
    jobs += [repeat(deadline, 0.05, lambda: a2a_conversation(port, stats)) for _ in range(arguments.a2a_clients)]
    jobs.append(repeat(deadline, 2, lambda: big_a2a_message(port, stats)))
    jobs += [repeat(deadline, 0.02, lambda: fuzzed_body(port, stats, rng)) for _ in range(2)]
    jobs.append(silent_sockets(port, stats, deadline, arguments.silent))
    jobs.append(header_dribblers(port, stats, deadline, arguments.dribblers))
    await asyncio.gather(*jobs)
    if arguments.samples_csv:
        with open(arguments.samples_csv, "w") as csv:
            csv.write("seconds,rss_kib,open_fds\n")
            csv.writelines(f"{at:.1f},{rss},{fds}\n" for at, rss, fds in samples)
    print(f"\nsoak: {arguments.seconds:.0f} s, {len(samples)} samples of the server every {arguments.sample_every:g} s")
    for what in sorted(stats.counts):
        print(f"  {what}: {stats.counts[what]}")
    for path, body in stats.unanswered:
        print(f"  no answer to POST {path}: {body[:300]!r}")
    flat = judge(samples, stats, sys.stdout)
    print("RSS and open fds are flat after warm-up" if flat else "RSS or open fds GREW after warm-up")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
