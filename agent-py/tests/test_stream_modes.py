"""Stream modes agentgraph fills from Python: what conformance cannot show (timing, limits,
agentgraph's own extensions)."""

import asyncio
import threading
from typing import TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from agentgraph.config import get_config, get_stream_writer
from agentgraph.graph import START, MessagesState, StateGraph


class S(TypedDict):
    n: int


def one_node(fn, schema=S):
    builder = StateGraph(schema)
    builder.add_node("node", fn)
    builder.add_edge(START, "node")
    return builder.compile()


def test_custom_items_reach_the_caller_while_the_node_runs():
    seen = threading.Event()

    def node(state):
        get_stream_writer()("started")
        # Returns only once the caller has the item: buffered until the node ends, it
        # would not have it.
        return {"n": int(seen.wait(timeout=10))}

    parts = []
    for part in one_node(node).stream({"n": 0}, stream_mode=["custom", "values"]):
        parts.append(part)
        if part == ("custom", "started"):
            seen.set()
    assert parts[-1] == ("values", {"n": 1})


def test_async_node_items_reach_the_caller_while_it_runs():
    async def node(state):
        seen = asyncio.Event()
        get_stream_writer()(seen)
        await asyncio.wait_for(seen.wait(), timeout=10)
        return {"n": 1}

    async def main():
        parts = []
        async for mode, chunk in one_node(node).astream({"n": 0}, stream_mode=["custom", "values"]):
            parts.append(mode)
            if mode == "custom":
                chunk.set()
        return parts

    assert asyncio.run(main()) == ["values", "custom", "values"]


def test_an_async_node_writing_more_than_the_channel_holds_without_awaiting():
    # Its items queue: the caller's loop is the node's, it cannot read while the node runs.
    async def node(state):
        write = get_stream_writer()
        for i in range(1000):
            write(i)
        return {"n": 1}

    async def main():
        return [c async for c in one_node(node).astream({"n": 0}, stream_mode="custom")]

    assert asyncio.run(main()) == list(range(1000))


def test_custom_items_are_the_objects_written():
    marker = object()
    parts = list(one_node(lambda s, writer: writer(marker) or {"n": 1}).stream({"n": 0}, stream_mode="custom"))
    assert parts == [marker] and parts[0] is marker


def test_an_async_graph_streams_messages_synchronously():
    # LangGraph refuses async nodes under `stream`; agentgraph runs them.
    async def chat(state):
        model = GenericFakeChatModel(messages=iter([AIMessage(content="a b", id="m")]))
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = one_node(chat, MessagesState)
    parts = list(graph.stream({"messages": [HumanMessage(content="hi", id="h")]}, stream_mode="messages"))
    assert [m.content for m, _ in parts] == ["a", " ", "b"]
    assert {meta["langgraph_node"] for _, meta in parts} == {"node"}


def test_get_config_in_a_node_and_outside():
    def node(state):
        config = get_config()
        assert config["metadata"]["langgraph_node"] == "node"
        assert config["configurable"]["thread_id"] == "t"
        return {"n": config["metadata"]["langgraph_step"]}

    assert one_node(node).invoke({"n": 0}, {"configurable": {"thread_id": "t"}}) == {"n": 1}
    with pytest.raises(RuntimeError):
        get_config()
    with pytest.raises(RuntimeError):
        get_stream_writer()


def test_unknown_stream_mode():
    with pytest.raises(ValueError, match="unknown stream_mode `events`"):
        list(one_node(lambda s: {"n": 1}).stream({"n": 0}, stream_mode="events"))
