"""`messages`: a chat model's tokens streamed from inside nodes (called with and without the
node's config, sync and async), the messages nodes return without streaming, metadata."""

import asyncio
from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages

KEYS = ("langgraph_step", "langgraph_node", "langgraph_triggers", "langgraph_path", "thread_id", "ls_integration")


def model(text, id):
    return GenericFakeChatModel(messages=iter([AIMessage(content=text, id=id)]))


def show(parts):
    out = []
    for part in parts:
        mode, chunk = part if isinstance(part, tuple) and part[0] in ("messages", "updates") else ("messages", part)
        if mode == "messages":
            message, meta = chunk
            ns = meta.get("langgraph_checkpoint_ns", "")
            out.append((
                type(message).__name__,
                message.content,
                message.id,
                {k: meta[k] for k in KEYS if k in meta},
                ns.split(":")[0],
                meta.get("checkpoint_ns", "").split(":")[0],
            ))
        else:
            out.append((mode, list(chunk)))
    return out


def build(is_async):
    def chat(state, config):
        # With the node's config.
        return {"messages": [model("hello there world", "m1").invoke(state["messages"], config)]}

    def chat_no_config(state):
        # Without: the model finds the node's config anyway.
        return {"messages": [model("second answer", "m2").invoke(state["messages"])]}

    async def achat(state, config):
        return {"messages": [await model("hello there world", "m1").ainvoke(state["messages"], config)]}

    async def achat_no_config(state):
        return {"messages": [await model("second answer", "m2").ainvoke(state["messages"])]}

    def plain(state):
        # Not streamed: shown when the node returns; the input's messages are not.
        return {"messages": [AIMessage(content="plain", id="m3"), ToolMessage(content="tool out", tool_call_id="t1", id="m4")]}

    def nothing(state):
        return {"messages": []}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", achat if is_async else chat)
    builder.add_node("again", achat_no_config if is_async else chat_no_config)
    builder.add_node("plain", plain)
    builder.add_node("nothing", nothing)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "again")
    builder.add_edge("again", "plain")
    builder.add_edge("plain", "nothing")
    builder.add_edge("nothing", END)
    return builder.compile()


inputs = {"messages": [HumanMessage(content="hi", id="h1")]}
config = {"configurable": {"thread_id": "t-1"}}
graph = build(False)
print(show(graph.stream(inputs, config, stream_mode="messages")))
print(show(graph.stream(inputs, stream_mode=["messages", "updates"])))


async def main():
    graph = build(True)
    print(show([c async for c in graph.astream(inputs, config, stream_mode="messages")]))
    print(show([c async for c in graph.astream(inputs, stream_mode=["updates", "messages"])]))


asyncio.run(main())

# The `nostream` tag keeps a model's tokens out (its final message still shows, as the
# node's output).
def quiet(state):
    return {"messages": [model("hidden tokens", "q1").invoke(state["messages"], {"tags": ["nostream"]})]}


builder = StateGraph(MessagesState)
builder.add_node("quiet", quiet)
builder.add_edge(START, "quiet")
print(show(builder.compile().stream(inputs, stream_mode="messages")))

# The run's tags and metadata reach the chunks' metadata, with a call's own tags.
def tagged(state):
    return {"messages": [model("x y", "t1").invoke(state["messages"], {"tags": ["mine"]})]}


def with_config(state, config):
    return {"messages": [model("z", "t2").invoke(state["messages"], config)]}


builder = StateGraph(MessagesState)
builder.add_node("tagged", tagged)
builder.add_node("with_config", with_config)
builder.add_edge(START, "tagged")
builder.add_edge("tagged", "with_config")
run = {"tags": ["run"], "metadata": {"who": "me"}, "configurable": {"thread_id": "t-2", "user": "u"}}
for message, meta in builder.compile().stream(inputs, run, stream_mode="messages"):
    print(message.content, meta.get("tags"), meta.get("who"), meta.get("user"), meta.get("thread_id"))
