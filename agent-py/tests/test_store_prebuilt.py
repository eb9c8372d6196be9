"""The store and the prebuilt agent: what conformance cannot show (agentgraph's own
choices, parallel tool calls, errors from Rust)."""

import asyncio
import threading
import time
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from agentgraph.config import get_store
from agentgraph.graph import START, MessagesState, StateGraph
from agentgraph.prebuilt import InjectedState, ToolNode
from agentgraph.store.base import InvalidNamespaceError
from agentgraph.store.memory import InMemoryStore


class S(TypedDict):
    out: object


def one_node(fn, **compile_args):
    builder = StateGraph(S)
    builder.add_node("node", fn)
    builder.add_edge(START, "node")
    return builder.compile(**compile_args)


def test_nodes_without_a_store_get_none():
    def node(state, runtime, store):
        return {"out": (runtime.store, store, get_store())}

    assert one_node(node).invoke({"out": None})["out"] == (None, None, None)


def test_async_nodes_get_the_store_under_ainvoke():
    store = InMemoryStore()

    async def node(state, *, store):
        await store.aput(("a",), "k", {"v": 1})
        return {"out": (await store.aget(("a",), "k")).value}

    graph = one_node(node, store=store)
    assert asyncio.run(graph.ainvoke({"out": None}))["out"] == {"v": 1}


def test_values_beyond_json_come_back_as_themselves():
    # LangGraph's in-memory store keeps the objects; agent-core gets their repr for filters.
    store = InMemoryStore()
    marker = object()
    store.put(("a",), "k", {"v": marker, "n": 1})
    assert store.get(("a",), "k").value["v"] is marker
    assert [h.key for h in store.search(("a",), filter={"n": 1})] == ["k"]


def test_rust_checks_search_filters():
    store = InMemoryStore()
    store.put(("a",), "k", {"v": 1})
    with pytest.raises(ValueError, match="filter"):
        store.search(("a",), filter={"v": {"$nope": 1}})
    assert [h.key for h in store.search(("a",), filter={"v": {"$lte": 1}})] == ["k"]


def test_semantic_search_ranks_by_cosine_and_index_choices():
    def embed(texts):
        return [[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts]

    store = InMemoryStore(index={"dims": 2, "embed": embed, "fields": ["text"]})
    store.put(("d",), "cat", {"text": "a cat"})
    store.put(("d",), "dog", {"text": "a dog"})
    store.put(("d",), "hidden", {"text": "another cat"}, index=False)
    hits = store.search(("d",), query="cat")
    assert [(h.key, h.score) for h in hits[:2]] == [("cat", pytest.approx(1.0)), ("dog", pytest.approx(0.0))]
    # An item put with `index=False` has no vector: found after the ranked ones, unscored.
    assert (hits[2].key, hits[2].score) == ("hidden", None)


def test_an_embed_functions_exception_is_raised_as_itself():
    class Broken(Exception):
        pass

    def embed(texts):
        raise Broken("no model")

    store = InMemoryStore(index={"dims": 2, "embed": embed})
    with pytest.raises(Broken):
        store.put(("d",), "k", {"text": "x"})


def test_namespaces_are_checked_before_rust():
    store = InMemoryStore()
    with pytest.raises(InvalidNamespaceError):
        store.get(("a.b",), "k")


def test_tool_calls_run_in_parallel():
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def wait(i: int) -> int:
        """Waits for the other calls."""
        barrier.wait()
        return i

    def model(state: MessagesState):
        calls = [{"name": "wait", "args": {"i": i}, "id": f"c{i}", "type": "tool_call"} for i in range(3)]
        return {"messages": [AIMessage("", tool_calls=calls)]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([wait]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    started = time.monotonic()
    out = builder.compile().invoke({"messages": []})
    assert [m.content for m in out["messages"][1:]] == ["0", "1", "2"]
    assert time.monotonic() - started < 5


def test_a_tool_call_with_context_runs_alone_with_its_state():
    @tool
    def echo(x: int, note: Annotated[str, InjectedState("note")]) -> str:
        """Echoes."""
        return f"{x} {note}"

    node = ToolNode([echo])
    call = {"name": "echo", "args": {"x": 1}, "id": "c", "type": "tool_call"}
    out = node.invoke({"__type": "tool_call_with_context", "tool_call": call, "state": {"note": "hi", "messages": []}}, {})
    assert [(m.content, m.tool_call_id) for m in out["messages"]] == [("1 hi", "c")]


def test_async_only_tools_run_under_invoke_and_ainvoke():
    @tool
    async def slow(x: int) -> int:
        """Doubles, later."""
        await asyncio.sleep(0.01)
        return 2 * x

    def model(state: MessagesState):
        calls = [{"name": "slow", "args": {"x": i}, "id": f"c{i}", "type": "tool_call"} for i in range(2)]
        return {"messages": [AIMessage("", tool_calls=calls)]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([slow]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    graph = builder.compile()
    assert [m.content for m in graph.invoke({"messages": []})["messages"][1:]] == ["0", "2"]
    out = asyncio.run(graph.ainvoke({"messages": []}))
    assert [m.content for m in out["messages"][1:]] == ["0", "2"]


def test_async_only_tools_run_on_the_callers_loop_under_ainvoke():
    loops = []

    @tool
    async def where(x: int) -> int:
        """Notes its loop."""
        loops.append(asyncio.get_running_loop())
        return x

    @tool
    def plain(x: int) -> int:
        """A sync tool beside it."""
        return -x

    def model(state: MessagesState):
        calls = [
            {"name": "where", "args": {"x": 1}, "id": "a", "type": "tool_call"},
            {"name": "plain", "args": {"x": 2}, "id": "b", "type": "tool_call"},
        ]
        return {"messages": [AIMessage("", tool_calls=calls)]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([where, plain]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    graph = builder.compile()

    async def main():
        out = await graph.ainvoke({"messages": []})
        return asyncio.get_running_loop(), [m.content for m in out["messages"][1:]]

    loop, contents = asyncio.run(main())
    assert contents == ["1", "-2"]
    assert loops == [loop]


def test_parallel_nodes_share_an_indexed_store():
    def embed(texts):
        time.sleep(0.001)  # lets the other node's thread run meanwhile
        return [[float(len(t)), 1.0] for t in texts]

    store = InMemoryStore(index={"dims": 2, "embed": embed})

    class P(TypedDict):
        found: Annotated[list, lambda a, b: a + b]

    def writer(prefix):
        def node(state, *, store):
            for i in range(50):
                store.put((prefix,), str(i), {"text": "x" * i})
            return {"found": [len(store.search((prefix,), query="xx", limit=100))]}

        return node

    builder = StateGraph(P)
    for prefix in ("a", "b", "c"):
        builder.add_node(prefix, writer(prefix))
        builder.add_edge(START, prefix)
    out = builder.compile(store=store).invoke({"found": []})
    assert out["found"] == [50, 50, 50]
    assert store.list_namespaces() == [("a",), ("b",), ("c",)]
