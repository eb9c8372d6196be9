"""Functional API streams: `messages` from a chat model called in a task (LangGraph's
metadata of a pushed task), the `tasks` mode with the entrypoint's and its tasks' items,
sync and async. (Task ids and `langgraph_step` are left out: agentgraph's differ.)"""

import asyncio

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task

SHOWN = ("langgraph_node", "langgraph_triggers", "langgraph_path", "thread_id")


@task
def chat(topic):
    return GenericFakeChatModel(messages=iter([f"hello {topic}"])).invoke("hi").content


@task
def shout(text):
    return text.upper()


@entrypoint(checkpointer=InMemorySaver())
def flow(topic):
    return shout(chat(topic).result()).result()


def show(meta):
    return {k: meta[k] for k in SHOWN if k in meta}


for chunk, meta in flow.stream("cats", {"configurable": {"thread_id": "1"}}, stream_mode="messages"):
    print(repr(chunk.content), show(meta))
for mode, chunk in flow.stream("dogs", {"configurable": {"thread_id": "2"}}, stream_mode=["tasks", "updates"]):
    print(mode, {k: v for k, v in chunk.items() if k != "id"})


@task
async def achat(topic):
    model = GenericFakeChatModel(messages=iter([f"hi {topic}"]))
    return (await model.ainvoke("hi")).content


@entrypoint(checkpointer=InMemorySaver())
async def aflow(topics):
    return await asyncio.gather(*[achat(t) for t in topics])


async def main():
    config = {"configurable": {"thread_id": "3"}}
    async for chunk, meta in aflow.astream(["owls"], config, stream_mode="messages"):
        print("async", repr(chunk.content), show(meta))
    async for chunk in aflow.astream(["bats"], config, stream_mode="tasks"):
        print("async", {k: v for k, v in chunk.items() if k != "id"})


asyncio.run(main())
