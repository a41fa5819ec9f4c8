"""The official Python ACP client (agent-client-protocol 0.12.x) against our demo agent.

Spawns the agent command given on the command line (``all-protocols --stdio acp``), then runs:
a plain prompt (echoed back), ``read <file>`` with the permission allowed (the file's content
streams back, read through ``fs/read_text_file``) and rejected (nothing read), a ``slow`` prompt
cancelled mid-turn (stop reason ``cancelled``), ``session/load`` (the conversation so far replayed
as ``session/update`` notifications, all read before the load's answer), a prompt to an unknown
session (-32002, Resource not found), and end of input (the agent exits promptly). Exits non-zero
on the first failure.
"""

import asyncio
import os
import sys
import tempfile

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

FILE_TEXT = "hello from a file the agent may read\n"
STEP_TIMEOUT = 20


class RecordingClient:
    """An editor that answers permission questions as told and records what the agent sent."""

    def __init__(self) -> None:
        self.allow = True
        self.updates: list = []
        self.reads: list[str] = []
        self.permission_questions = 0

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        self.permission_questions += 1
        wanted = "allow_once" if self.allow else "reject_once"
        chosen = next(option for option in options if option.kind == wanted)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=chosen.option_id, outcome="selected")
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update)

    async def read_text_file(self, path, session_id, limit=None, line=None, **kwargs):
        self.reads.append(path)
        with open(path, encoding="utf-8") as file:
            return ReadTextFileResponse(content=file.read())

    async def write_text_file(self, *args, **kwargs):
        raise RequestError.method_not_found("fs/write_text_file")

    async def ext_method(self, method, params):
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method, params):
        return None

    def on_connect(self, conn) -> None:
        pass

    def texts(self) -> str:
        """Every text the agent streamed as message chunks, joined."""
        parts = []
        for update in self.updates:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                parts.append(getattr(update.content, "text", ""))
        return "".join(parts)

    def kinds(self) -> list[str]:
        return [getattr(update, "session_update", "?") for update in self.updates]


class Wire:
    """Every message the connection read or wrote, in order (a stream observer)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def __call__(self, event) -> None:
        self.events.append((event.direction.value, event.message))

    def replayed_before_answer(self, method: str) -> list[dict]:
        """The session updates read just before the answer to the last ``method`` request."""
        sent = [m for d, m in self.events if d == "outgoing" and m.get("method") == method]
        request_id = sent[-1]["id"]
        read = [m for d, m in self.events if d == "incoming"]
        answer = next(
            i for i, m in enumerate(read) if m.get("id") == request_id and "method" not in m
        )
        replayed = []
        for message in reversed(read[:answer]):
            if message.get("method") != "session/update":
                break
            replayed.append(message["params"]["update"])
        return list(reversed(replayed))


PASSED = []


def check(condition: bool, claim: str) -> None:
    if not condition:
        raise AssertionError(claim)
    print(f"ok - {claim}")
    PASSED.append(claim)


async def run(agent: list[str]) -> None:
    client = RecordingClient()
    wire = Wire()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as file:
        file.write(FILE_TEXT)
        readable = file.name
    try:
        spawned = spawn_agent_process(client, agent[0], *agent[1:], observers=[wire])
        async with spawned as (conn, process):
            await asyncio.wait_for(scenario(conn, client, wire, readable), STEP_TIMEOUT * 6)
            process.stdin.close()
            code = await asyncio.wait_for(process.wait(), 5)
            check(code == 0, "the agent exits cleanly and promptly at end of input")
    finally:
        os.unlink(readable)


async def scenario(conn, client: RecordingClient, wire: Wire, readable: str) -> None:
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
        client_info=Implementation(name="python-real-client", version="0"),
    )
    check(init.protocol_version == 1, "initialize negotiates protocol version 1")

    session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
    sid = session.session_id

    answer = await conn.prompt(session_id=sid, prompt=[text_block("hello real client")])
    check(answer.stop_reason == "end_turn", "a prompt ends its turn")
    check("hello real client" in client.texts(), "the prompt text streams back")

    client.updates.clear()
    client.allow = True
    answer = await conn.prompt(session_id=sid, prompt=[text_block(f"read {readable}")])
    check(client.permission_questions == 1, "reading asks permission")
    check(client.reads == [readable], "allowed, the agent reads through fs/read_text_file")
    check("tool_call" in client.kinds() and "tool_call_update" in client.kinds(),
          "the read is reported as a tool call and its completion")
    check(FILE_TEXT.strip() in client.texts(), "the file's content streams back")
    check(answer.stop_reason == "end_turn", "the read turn ends")

    client.updates.clear()
    client.allow = False
    await conn.prompt(session_id=sid, prompt=[text_block(f"read {readable}")])
    check(client.permission_questions == 2, "a second read asks again")
    check(client.reads == [readable], "rejected, nothing is read")

    client.updates.clear()
    turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("slow please")]))
    while len(client.updates) < 2:
        await asyncio.sleep(0.05)
    await conn.cancel(session_id=sid)
    answer = await asyncio.wait_for(turn, STEP_TIMEOUT)
    check(answer.stop_reason == "cancelled", "a cancelled slow turn stops with 'cancelled'")

    check(init.agent_capabilities.load_session is True, "the agent advertises loadSession")
    client.updates.clear()
    await conn.load_session(cwd=os.getcwd(), session_id=sid, mcp_servers=[])
    replayed = wire.replayed_before_answer("session/load")
    kinds = [update["sessionUpdate"] for update in replayed]
    check(
        replayed[0] == {"sessionUpdate": "user_message_chunk",
                        "content": {"type": "text", "text": "hello real client"}},
        "session/load replays the first prompt first, as a user_message_chunk",
    )
    check(replayed[1]["content"]["text"] == "echo: hello real client",
          "then the agent's answer to it")
    check(kinds.count("user_message_chunk") == 4 and kinds.count("tool_call") == 2,
          "every prompt and both reads are replayed")
    for _ in range(200):  # the client runs each notification's handler as a task of its own
        if len(client.updates) >= len(replayed):
            break
        await asyncio.sleep(0.01)
    check(len(client.updates) == len(replayed), "the client's handler saw every replayed update")
    fresh = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
    await conn.load_session(cwd=os.getcwd(), session_id=fresh.session_id, mcp_servers=[])
    check(wire.replayed_before_answer("session/load") == [], "a new session replays nothing")

    try:
        await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        check(False, "an unknown session is refused")
    except RequestError as error:
        check(error.code == -32002, "an unknown session is -32002, Resource not found")


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: real_client.py AGENT_COMMAND [ARGS...]", file=sys.stderr)
        return 2
    failed = 0
    try:
        asyncio.run(run(sys.argv[1:]))
    except Exception as error:  # every failure, assertion or protocol, fails the run
        print(f"not ok - {type(error).__name__}: {error}")
        failed = 1
    print(f"acp-python-client: {len(PASSED)} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    sys.exit(main())
