"""The graph surface: nodes, edges, reducers, runs and their errors."""

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from agentgraph.checkpoint.memory import InMemorySaver
from agentgraph.errors import GraphRecursionError, InvalidUpdateError
from agentgraph.graph import END, START, StateGraph


class State(TypedDict):
    topic: str
    notes: Annotated[list, operator.add]


def plan(state: State) -> dict:
    return {"notes": [f"plan: {state['topic']}"]}


def web(state: State) -> dict:
    return {"notes": ["web"]}


def docs(state: State) -> dict:
    return {"notes": ["docs"]}


def fan_out() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node(plan)
    builder.add_node("web", web)
    builder.add_node("docs", docs)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "web")
    builder.add_edge("plan", "docs")
    builder.add_edge(["web", "docs"], END)
    return builder


def test_invoke_fan_out_and_join():
    out = fan_out().compile().invoke({"topic": "rust"})
    assert out == {"topic": "rust", "notes": ["plan: rust", "docs", "web"]}


def test_stream_modes():
    graph = fan_out().compile()
    updates = list(graph.stream({"topic": "t"}))
    assert updates[0] == {"plan": {"notes": ["plan: t"]}}
    assert {next(iter(u)) for u in updates[1:]} == {"web", "docs"}
    values = list(graph.stream({"topic": "t"}, stream_mode="values"))
    assert values[0] == {"topic": "t", "notes": []}
    assert values[-1]["notes"] == ["plan: t", "docs", "web"]
    tagged = list(graph.stream({"topic": "t"}, stream_mode=["values", "updates"]))
    assert tagged[0] == ("values", {"topic": "t", "notes": []})
    assert tagged[1] == ("updates", {"plan": {"notes": ["plan: t"]}})


def test_conditional_edges_with_path_map_and_loop():
    class Counter(TypedDict):
        n: int

    builder = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.set_entry_point("inc")
    builder.add_conditional_edges("inc", lambda s: s["n"] < 5, {True: "inc", False: END})
    assert builder.compile().invoke({"n": 0}) == {"n": 5}


def test_recursion_limit():
    class Counter(TypedDict):
        n: int

    builder = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.set_entry_point("inc")
    builder.add_edge("inc", "inc")
    with pytest.raises(GraphRecursionError):
        builder.compile().invoke({"n": 0}, {"recursion_limit": 10})


def test_node_exception_is_reraised_as_itself():
    class Boom(Exception):
        pass

    def fail(state):
        raise Boom("no")

    builder = StateGraph(State)
    builder.add_node("fail", fail)
    builder.set_entry_point("fail")
    with pytest.raises(Boom, match="no"):
        builder.compile().invoke({"topic": "x"})


def test_router_exception_is_reraised():
    def route(state):
        raise KeyError("route")

    builder = StateGraph(State)
    builder.add_node(plan)
    builder.set_entry_point("plan")
    builder.add_conditional_edges("plan", route)
    with pytest.raises(KeyError):
        builder.compile().invoke({"topic": "x"})


def test_two_writes_to_a_last_value_key():
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"topic": "a"})
    builder.add_node("b", lambda s: {"topic": "b"})
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError, match="topic"):
        builder.compile().invoke({"topic": "x"})


def test_custom_reducer_and_config_injection():
    def keep_max(left, right):
        return max(left, right)

    class S(TypedDict):
        best: Annotated[int, keep_max]
        who: str

    def node(state, config):
        return {"best": 7, "who": config["configurable"]["user"]}

    builder = StateGraph(S)
    builder.add_node("node", node)
    builder.set_entry_point("node")
    out = builder.compile().invoke({"best": 3}, {"configurable": {"user": "ana"}})
    assert out == {"best": 7, "who": "ana"}


def test_async_nodes_on_the_callers_loop():
    async def slow(state):
        await asyncio.sleep(0.01)
        return {"notes": ["slow"]}

    builder = StateGraph(State)
    builder.add_node("slow", slow)
    builder.add_node(plan)
    builder.add_sequence([("first", slow)])
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "slow")
    builder.add_edge("slow", "first")
    graph = builder.compile()

    async def main():
        out = await graph.ainvoke({"topic": "a"})
        parts = [p async for p in graph.astream({"topic": "a"})]
        return out, parts

    out, parts = asyncio.run(main())
    assert out["notes"] == ["plan: a", "slow", "slow"]
    assert [next(iter(p)) for p in parts] == ["plan", "slow", "first"]
    # Sync invoke runs an async node to completion too.
    assert graph.invoke({"topic": "a"})["notes"] == ["plan: a", "slow", "slow"]


def test_memory_saver_keeps_a_thread():
    graph = fan_out().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"topic": "a"}, config)
    out = graph.invoke({"topic": "b"}, config)
    assert out["notes"] == ["plan: a", "docs", "web", "plan: b", "docs", "web"]


def test_interrupt_outside_a_node():
    from agentgraph.types import interrupt

    with pytest.raises(RuntimeError, match="inside a graph's node"):
        interrupt("x")


def test_interrupt_and_resume_in_an_async_run():
    from agentgraph.types import Command, interrupt

    class S(TypedDict):
        answer: str

    async def ask(state):
        return {"answer": interrupt("name?")}

    builder = StateGraph(S)
    builder.add_node("ask", ask)
    builder.set_entry_point("ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "x"}}

    async def main():
        first = await graph.ainvoke({"answer": ""}, config)
        return first, await graph.ainvoke(Command(resume="ana"), config)

    first, second = asyncio.run(main())
    assert [i.value for i in first["__interrupt__"]] == ["name?"]
    assert second == {"answer": "ana"}
    assert graph.get_state(config).next == ()


def test_parallel_sync_nodes_overlap_outside_the_gil():
    import time

    def sleeper(state):
        time.sleep(0.2)
        return {"notes": ["z"]}

    builder = StateGraph(State)
    for i in range(6):
        builder.add_node(f"s{i}", sleeper)
        builder.add_edge(START, f"s{i}")
    graph = builder.compile()
    started = time.perf_counter()
    assert graph.invoke({"topic": "t"})["notes"] == ["z"] * 6
    # One after the other would take 1.2 s.
    assert time.perf_counter() - started < 0.9
