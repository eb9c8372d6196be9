"""The state and run-control surface where agentgraph has choices of its own: the cache's
copies, option errors, what update_state refuses, retries of async nodes and interrupts."""

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from agentgraph.cache.memory import InMemoryCache
from agentgraph.checkpoint.memory import InMemorySaver
from agentgraph.errors import InvalidUpdateError
from agentgraph.graph import END, START, StateGraph
from agentgraph.types import CachePolicy, Command, RetryPolicy, default_retry_on


class S(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def chain(**compile):
    builder = StateGraph(S)
    builder.add_node("one", lambda s: {"log": ["one"]})
    builder.add_node("two", lambda s: {"log": ["two"]})
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", END)
    return builder.compile(**compile)


def test_cache_hands_out_copies():
    cache = InMemoryCache()
    value = {"log": [[1]]}
    cache.set("node", b"k", value, None)
    value["log"][0].append(2)
    hit, got = cache.get("node", b"k")
    assert hit and got == {"log": [[1]]}
    got["log"].append("mutated")
    assert cache.get("node", b"k")[1] == {"log": [[1]]}
    cache.set("other", b"k", 1, None)
    cache.clear(["node"])
    assert cache.get("node", b"k") == (False, None)
    assert cache.get("other", b"k") == (True, 1)


def test_cache_entry_expires():
    cache = InMemoryCache()
    cache.set("node", "k", 1, 0.0)
    assert cache.get("node", "k") == (False, None)


def test_unknown_durability_is_refused():
    graph = chain(checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match="durability"):
        graph.invoke({"n": 1}, {"configurable": {"thread_id": "t"}}, durability="later")


def test_run_time_interrupt_on_an_unknown_node_is_refused():
    graph = chain(checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match="nope"):
        graph.invoke({"n": 1}, {"configurable": {"thread_id": "t"}}, interrupt_before=["nope"])


def test_update_state_refuses_a_command_that_resumes():
    graph = chain(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 1}, config)
    with pytest.raises(InvalidUpdateError, match="update and goto only"):
        graph.update_state(config, Command(resume="yes"), as_node="one")
    with pytest.raises(InvalidUpdateError, match="Expected dict"):
        graph.update_state(config, [("n", 2)], as_node="one")


def test_update_state_needs_a_checkpointer():
    with pytest.raises(Exception, match="checkpointer"):
        chain().update_state({"configurable": {"thread_id": "t"}}, {"n": 2}, as_node="one")


def test_default_retry_on():
    assert default_retry_on(ConnectionError())
    assert default_retry_on(Exception())
    assert not default_retry_on(ValueError())
    assert not default_retry_on(KeyError())
    assert not default_retry_on(OSError())


def test_async_retry_and_cache_together():
    calls = []

    async def flaky(state):
        calls.append(state["n"])
        if len(calls) == 1:
            raise ConnectionError("once")
        return {"log": [state["n"]]}

    builder = StateGraph(S)
    builder.add_node(
        "flaky",
        flaky,
        retry_policy=RetryPolicy(initial_interval=0.001, jitter=False),
        cache_policy=CachePolicy(),
    )
    builder.add_edge(START, "flaky")
    graph = builder.compile(cache=InMemoryCache())

    async def main():
        first = [p async for p in graph.astream({"n": 7})]
        second = [p async for p in graph.astream({"n": 7})]
        return first, second

    first, second = asyncio.run(main())
    assert first == [{"flaky": {"log": [7]}}]
    assert second == [{"flaky": {"log": [7]}, "__metadata__": {"cached": True}}]
    assert calls == [7, 7], "one retry, then the cache answered"


def test_get_state_history_of_a_named_checkpoint_is_that_one():
    graph = chain(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 1}, config)
    history = list(graph.get_state_history(config))
    named = list(graph.get_state_history(history[1].config))
    assert [s.config for s in named] == [history[1].config]
    assert list(graph.get_state_history(history[1].config, filter={"source": "input"})) == []
