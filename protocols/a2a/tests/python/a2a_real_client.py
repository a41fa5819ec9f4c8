"""Drives a running A2A server with the official a2a-sdk client (1.3.x): card discovery,
blocking send, streaming send, get, cancel and subscribe. Usage: a2a_real_client.py BASE_URL.
Exits non-zero on the first failed check."""

import asyncio
import sys
import uuid

from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        )
    )


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}")


def artifact_text(task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


async def main(base_url: str) -> None:
    blocking = await ClientFactory(ClientConfig(streaming=False)).create_from_url(base_url)
    check(blocking is not None, "card discovered and client created")

    events = [event async for event in blocking.send_message(request("hello"))]
    task = events[-1].task
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, "blocking send completes the task")
    check(artifact_text(task) == "echo: hello", "artifact echoes the text")

    fetched = await blocking.get_task(GetTaskRequest(id=task.id))
    check(fetched.id == task.id, "get returns the task")

    streaming = await ClientFactory(ClientConfig(streaming=True)).create_from_url(base_url)
    kinds = []
    async for event in streaming.send_message(request("hi there")):
        kinds.append(event.WhichOneof("payload"))
    check(kinds[0] == "task" and "artifact_update" in kinds and kinds[-1] == "status_update",
          f"streaming send yields task, updates, artifact and final status ({kinds})")

    slow = streaming.send_message(request("slow please"))
    first = await slow.__anext__()
    slow_id = first.task.id
    check(bool(slow_id), "slow task started")

    subscriber = await ClientFactory(ClientConfig(streaming=True)).create_from_url(base_url)
    subscription = subscriber.subscribe(SubscribeToTaskRequest(id=slow_id))
    snapshot = await subscription.__anext__()
    check(snapshot.task.id == slow_id, "subscribe re-attaches to the running task")

    canceled = await blocking.cancel_task(CancelTaskRequest(id=slow_id))
    check(canceled.status.state == TaskState.TASK_STATE_CANCELED, "cancel stops the slow task")

    last = None
    async for event in subscription:
        last = event
    check(last is not None and last.status_update.status.state == TaskState.TASK_STATE_CANCELED,
          "the subscription ends with the canceled status")
    await slow.aclose()
    await blocking.close()
    await streaming.close()
    print("a2a real client: all checks passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
