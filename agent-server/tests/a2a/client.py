"""The official A2A client (a2a-sdk 0.3) against an agentgraph server's /a2a.

Usage: client.py BASE_URL [ASSISTANT]   (the reference server: assistant `agent`)

Checks, each printed as it passes:
- card discovery: at the agent's URL (/a2a/<assistant>/.well-known/agent-card.json) and at
  the server's /.well-known/agent-card.json?assistant_id=..., validated by the SDK's models;
- a send (message/send), answered with a completed task and its answer artifact;
- a streamed send (message/stream) whose answer arrives in pieces before the whole;
- a conversation of several turns on one context, and a question back (input-required)
  answered through its task;
- a send that outlasts the default HTTP client's 5 s read timeout (the server's heartbeats);
- a cancel of a running task (sent without blocking), and tasks/get after it.
Exits non-zero on the first failure.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)

BASE = sys.argv[1].rstrip("/")
ASSISTANT = sys.argv[2] if len(sys.argv) > 2 else "agent"
passed = 0


def ok(name):
    global passed
    passed += 1
    print(f"ok - {name}", flush=True)


def message(text, context_id=None, task_id=None):
    return Message(
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        message_id=str(uuid.uuid4()),
        context_id=context_id,
        task_id=task_id,
    )


def text_of(parts):
    return "".join(p.root.text for p in parts if isinstance(p.root, TextPart))


def answer(task: Task):
    assert task.artifacts, task
    return text_of(task.artifacts[0].parts)


async def send(client, msg):
    """message/send: the task it answers with."""
    last = None
    async for event in client.send_message(msg):
        last = event
    task, update = last
    assert update is None, last
    return task


async def main():
    async with httpx.AsyncClient(timeout=60) as http:
        # Card discovery, two ways.
        agent_url = f"{BASE}/a2a/{ASSISTANT}"
        card = await A2ACardResolver(http, agent_url).get_agent_card()
        assert card.name == ASSISTANT, card
        assert card.capabilities.streaming is True, card
        assert card.url.startswith(f"{BASE}/a2a/"), card.url
        assert card.skills and card.skills[0].id.endswith("-main"), card
        by_query = await A2ACardResolver(http, BASE).get_agent_card(
            relative_card_path=f"/.well-known/agent-card.json?assistant_id={ASSISTANT}"
        )
        assert by_query.url == card.url, (by_query.url, card.url)
        ok("card discovery")

        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        polling = ClientFactory(
            ClientConfig(httpx_client=http, streaming=False, polling=True)
        ).create(card)

        # A send.
        task = await send(blocking, message("hello from a2a-sdk"))
        assert task.status.state == TaskState.completed, task
        assert answer(task) == "from inner subgraph node", task
        assert [text_of(m.parts) for m in task.history][:2] == [
            "hello from a2a-sdk",
            "echo: hello from a2a-sdk",
        ], task.history
        ok("message/send")

        # A streamed send: pieces of the answer first, then the whole.
        pieces, states, final = [], [], None
        async for task_now, update in streaming.send_message(message("stream this please")):
            final = task_now
            if isinstance(update, TaskArtifactUpdateEvent) and not update.last_chunk:
                pieces.append(text_of(update.artifact.parts))
            if isinstance(update, TaskStatusUpdateEvent):
                states.append(update.status.state)
        assert len(pieces) > 2, pieces
        assert "".join(pieces).startswith("echo: stream this please"), pieces
        assert states[0] == TaskState.working and states[-1] == TaskState.completed, states
        assert final.status.state == TaskState.completed, final
        assert answer(final) == "from inner subgraph node", final.artifacts
        ok(f"message/stream ({len(pieces)} pieces of text before the answer)")

        # A conversation on one context.
        first = await send(blocking, message("my name is Ada"))
        second = await send(blocking, message("and yours?", context_id=first.context_id))
        third = await send(blocking, message("third", context_id=first.context_id))
        assert first.context_id == second.context_id == third.context_id
        assert len({first.id, second.id, third.id}) == 3
        state = (await http.get(f"{BASE}/threads/{first.context_id}/state")).json()
        humans = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
        assert humans == ["my name is Ada", "and yours?", "third"], humans
        got = await blocking.get_task(TaskQueryParams(id=first.id))
        assert got.status.state == TaskState.completed and text_of(got.history[0].parts) == "my name is Ada", got
        # ...with a question back, answered through its task.
        asked = await send(blocking, message("please ask", context_id=first.context_id))
        assert asked.status.state == TaskState.input_required, asked
        assert "approve?" in text_of(asked.status.message.parts), asked.status
        done = await send(
            blocking, message("yes", context_id=asked.context_id, task_id=asked.id)
        )
        assert done.id == asked.id and done.status.state == TaskState.completed, done
        assert answer(done) == "human said: yes", done
        ok("a conversation of several turns on one context, an interrupt answered")

        # A send that takes longer than the SDK's default client waits for a read (5 s):
        # the server's heartbeats keep it waiting.
        default = await ClientFactory.connect(agent_url, client_config=ClientConfig(streaming=False))
        slow = await send(default, message("sleep 6"))
        assert slow.status.state == TaskState.completed, slow
        ok("a send of 6 s with the SDK's default HTTP client (5 s read timeout)")

        # A cancel: sent without waiting, cancelled while it runs.
        running = await send(polling, message("sleep 20"))
        assert running.status.state in (TaskState.submitted, TaskState.working), running
        await asyncio.sleep(0.3)
        cancelled = await polling.cancel_task(TaskIdParams(id=running.id))
        assert cancelled.status.state == TaskState.canceled, cancelled
        got = await polling.get_task(TaskQueryParams(id=running.id))
        assert got.status.state == TaskState.canceled, got
        ok("tasks/cancel, then tasks/get")

    print(f"{passed} passed, 0 failed", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
