"""RetryPolicy on add_node (retry_on as a class, a tuple, a callable, the default rule;
attempts exhausted; several policies) and CachePolicy with InMemoryCache (hits skip the
node; the updates stream marks them `cached`; key_func; ttl)."""

import asyncio
import operator
import time
from typing import Annotated, TypedDict

from langgraph.cache.memory import InMemoryCache
from langgraph.graph import END, START, StateGraph
from langgraph.types import CachePolicy, RetryPolicy

FAST = dict(initial_interval=0.001, jitter=False)


class S(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def flaky(fails: int, error: type, calls: list):
    def node(state):
        calls.append(state["n"])
        if len(calls) <= fails:
            raise error(f"attempt {len(calls)}")
        return {"log": [f"ok after {len(calls)}"]}

    return node


def run(policy, fails, error):
    calls: list = []
    builder = StateGraph(S)
    builder.add_node("work", flaky(fails, error, calls), retry_policy=policy)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    try:
        out = builder.compile().invoke({"n": 1})
    except Exception as exc:
        out = f"{type(exc).__name__}: {exc}"
    print(out, len(calls))


print(RetryPolicy()._replace(retry_on=None), RetryPolicy().retry_on.__name__, RetryPolicy._fields)
run(RetryPolicy(**FAST), 2, KeyError)  # the default rule does not retry LookupError
run(RetryPolicy(**FAST), 2, ConnectionError)
run(RetryPolicy(**FAST), 5, ConnectionError)  # three attempts, then the error
run(RetryPolicy(max_attempts=5, **FAST), 4, Exception)
run(RetryPolicy(retry_on=KeyError, **FAST), 2, KeyError)
run(RetryPolicy(retry_on=(KeyError, ValueError), **FAST), 1, ValueError)
run(RetryPolicy(retry_on=lambda e: "attempt 1" in str(e), **FAST), 2, ValueError)
run([RetryPolicy(retry_on=KeyError, max_attempts=2, **FAST), RetryPolicy(retry_on=ValueError, max_attempts=4, **FAST)], 3, ValueError)
run(None, 1, ConnectionError)

# The deprecated `retry=` spelling, and an async node.
calls: list = []


async def async_flaky(state):
    calls.append(1)
    if len(calls) < 3:
        raise ConnectionError("down")
    return {"log": ["async ok"]}


builder = StateGraph(S)
builder.add_node("work", async_flaky, retry=RetryPolicy(**FAST))
builder.add_edge(START, "work")
builder.add_edge("work", END)
print(asyncio.run(builder.compile().ainvoke({"n": 1})), len(calls))

# Caching: the second run with the same input reads the cache.
runs: list = []


def slow(state):
    runs.append(("slow", state["n"]))
    return {"log": [state["n"] * 2]}


def keyed(state):
    runs.append(("keyed", state["n"]))
    return {"log": ["k"]}


builder = StateGraph(S)
builder.add_node("slow", slow, cache_policy=CachePolicy())
builder.add_node("keyed", keyed, cache_policy=CachePolicy(key_func=lambda s: str(s["n"] % 2)))
builder.add_node("plain", lambda s: {"log": ["plain"]})
builder.add_edge(START, "slow")
builder.add_edge("slow", "keyed")
builder.add_edge("keyed", "plain")
builder.add_edge("plain", END)
cache = InMemoryCache()
graph = builder.compile(cache=cache)
for n in [1, 1, 3, 2]:
    print(list(graph.stream({"n": n, "log": []}, stream_mode="updates")))
print(list(graph.stream({"n": 1, "log": []}, stream_mode=["updates", "values"])))
print(graph.invoke({"n": 1, "log": []}))
print(runs)
# Without a cache given to compile, the policy does nothing.
print(list(builder.compile().stream({"n": 1, "log": []}, stream_mode="updates")))
cache.clear()
print(list(graph.stream({"n": 1, "log": []}, stream_mode="updates")))

# An entry expires after its ttl.
builder = StateGraph(S)
builder.add_node("short", lambda s: runs.append("short") or {"log": ["s"]}, cache_policy=CachePolicy(ttl=1))
builder.add_edge(START, "short")
graph = builder.compile(cache=InMemoryCache())
runs.clear()
graph.invoke({"n": 1, "log": []})
graph.invoke({"n": 1, "log": []})
time.sleep(1.2)
graph.invoke({"n": 1, "log": []})
print(runs)


# Defaults for every node; a node's own policy wins.
runs.clear()
attempts: list = []


def fails_once(name):
    def node(state):
        attempts.append(name)
        if attempts.count(name) == 1:
            raise ConnectionError(name)
        return {"log": [name]}

    return node


builder = StateGraph(S)
builder.set_node_defaults(retry_policy=RetryPolicy(**FAST), cache_policy=CachePolicy())
builder.add_node("x", fails_once("x"))
builder.add_node("y", fails_once("y"), retry_policy=RetryPolicy(max_attempts=1))
builder.add_edge(START, "x")
builder.add_edge("x", "y")
graph = builder.compile(cache=InMemoryCache())
for _ in range(3):
    try:
        print(list(graph.stream({"n": 1, "log": []})))
    except ConnectionError as error:
        print("ConnectionError", error)
print(attempts)


# A cache hit in the `tasks` mode: the task starts, and shows no result (it did not run).
builder = StateGraph(S)
builder.add_node("slow", lambda s: {"log": [s["n"]]}, cache_policy=CachePolicy())
builder.add_edge(START, "slow")
graph = builder.compile(cache=InMemoryCache())
for _ in range(2):
    parts = list(graph.stream({"n": 1, "log": []}, stream_mode=["tasks", "updates"]))
    print([(mode, {k: v for k, v in chunk.items() if k != "id"}) for mode, chunk in parts])


async def main():
    calls.clear()

    async def cached(state):
        calls.append(state["n"])
        return {"log": ["async"]}

    builder = StateGraph(S)
    builder.add_node("cached", cached, cache_policy=CachePolicy())
    builder.add_edge(START, "cached")
    graph = builder.compile(cache=InMemoryCache())
    print([p async for p in graph.astream({"n": 5, "log": []})])
    print([p async for p in graph.astream({"n": 5, "log": []})])
    print(calls)


asyncio.run(main())
