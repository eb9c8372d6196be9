"""The official A2A client (a2a-sdk 0.3) against every flow `agent serve` serves.

Usage: flows.py BASE_URL

Each flow: its card found at /a2a/<flow>, a question sent (message/send) and one streamed
(message/stream, its answer's text in pieces), each answered with a completed task whose
answer artifact holds text. Exits non-zero on the first failure.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TaskArtifactUpdateEvent, TaskState, TextPart

BASE = sys.argv[1].rstrip("/")
QUESTIONS = {
    "tool-router": "What time is it in Lima?",
    "form": "Hello",
    "orchestrator": "What was GDP growth in 2008?",
    "data": "What was the unemployment rate in 2009?",
    "react": "echo hello over A2A",
}


def message(text):
    return Message(role=Role.user, parts=[Part(root=TextPart(text=text))], message_id=str(uuid.uuid4()))


def answer(task):
    assert task.status.state == TaskState.completed, task
    return "".join(p.root.text for p in task.artifacts[0].parts if isinstance(p.root, TextPart))


async def main():
    passed = 0
    async with httpx.AsyncClient(timeout=60) as http:
        for flow, question in QUESTIONS.items():
            card_client = await ClientFactory.connect(
                f"{BASE}/a2a/{flow}", client_config=ClientConfig(httpx_client=http, streaming=False)
            )
            streaming = await ClientFactory.connect(
                f"{BASE}/a2a/{flow}", client_config=ClientConfig(httpx_client=http, streaming=True)
            )
            last = None
            async for last in card_client.send_message(message(question)):
                pass
            sent = answer(last[0])
            assert sent.strip(), (flow, last)
            pieces, task = [], None
            async for task, update in streaming.send_message(message(question)):
                if isinstance(update, TaskArtifactUpdateEvent) and not update.last_chunk:
                    pieces.append(update.artifact.parts[0].root.text)
            streamed = answer(task)
            assert streamed.strip(), (flow, task)
            print(f"ok - {flow}: {sent[:60]!r} ({len(pieces)} streamed pieces)", flush=True)
            passed += 1
    print(f"{passed} passed, 0 failed", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
