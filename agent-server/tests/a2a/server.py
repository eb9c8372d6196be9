"""A remote agent served by the official A2A SDK's server (a2a-sdk 0.3, Starlette + uvicorn),
for `agent run react --a2a URL` to call as a tool.

Usage: server.py   (prints `listening on http://127.0.0.1:PORT` once it accepts connections)

The agent (`Capital Agent`) answers questions about capitals: "...France..." gets "The
capital of France is Paris." (streamed as two artifact chunks when asked with
message/stream); a question with no country it knows asks back "Which country?"
(input-required), and the answer to that task is looked up the same way.
"""

import asyncio
import socket
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from a2a.utils import new_task

CAPITALS = {"france": "Paris", "peru": "Lima", "japan": "Tokyo", "norway": "Oslo"}


class Capitals(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input().lower()
        country = next((c for c in CAPITALS if c in text), None)
        if country is None:
            await updater.requires_input(
                updater.new_agent_message([Part(root=TextPart(text="Which country?"))]),
                final=True,
            )
            return
        await updater.start_work()
        answer = f"The capital of {country.title()} is {CAPITALS[country]}."
        half = len(answer) // 2
        artifact = "answer"
        await updater.add_artifact(
            [Part(root=TextPart(text=answer[:half]))], artifact_id=artifact, append=False
        )
        await updater.add_artifact(
            [Part(root=TextPart(text=answer[half:]))],
            artifact_id=artifact,
            append=True,
            last_chunk=True,
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="Capital Agent",
        description="Knows the capital of a country.",
        url=f"{url}/",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="capitals",
                name="Capitals",
                description="The capital city of a country.",
                tags=["geography"],
            )
        ],
    )
    handler = DefaultRequestHandler(agent_executor=Capitals(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.05)
    print(f"listening on {url}", flush=True)
    await serving


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
