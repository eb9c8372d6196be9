"""update_state's as_node rules: a fresh thread (as __start__), the last writer, an ambiguous
parallel step, unknown nodes, values that are not a dict, a Command (update and goto); next tasks in LangGraph's order; a
retried node that paused gets its resume value again."""

import operator
import re
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, interrupt


class S(TypedDict):
    a: str
    log: Annotated[list, operator.add]


builder = StateGraph(S)
builder.add_node("one", lambda s: {"log": ["one"]})
builder.add_node("two", lambda s: {"log": ["two"]})
builder.add_node("three", lambda s: {"log": ["three"]})
builder.add_edge(START, "one")
builder.add_edge("one", "two")
builder.add_edge("one", "three")
builder.add_edge(["two", "three"], END)
graph = builder.compile(checkpointer=InMemorySaver())


def thread(name):
    return {"configurable": {"thread_id": name}}


def where(name):
    s = graph.get_state(thread(name))
    return s.values, s.next, [t.name for t in s.tasks], s.metadata and (s.metadata["source"], s.metadata["step"])


def attempt(f):
    try:
        return f()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


print(attempt(lambda: graph.update_state(thread("fresh"), {"a": "x"}) and where("fresh")))
print(attempt(lambda: graph.invoke(None, thread("fresh"))))
print(attempt(lambda: graph.update_state(thread("fresh-one"), {"a": "x"}, as_node="one") and where("fresh-one")))
print(attempt(lambda: graph.invoke(None, thread("fresh-one"))))
print(attempt(lambda: graph.update_state(thread("fresh-start"), {"a": "x"}, as_node=START) and where("fresh-start")))
print(attempt(lambda: graph.invoke(None, thread("fresh-start"))))

graph.invoke({"a": "z", "log": []}, thread("done"))
print(where("done"))
print(attempt(lambda: graph.update_state(thread("done"), {"a": "y"})))
print(attempt(lambda: graph.update_state(thread("done"), {"a": "y"}, as_node="nope")))
print(attempt(lambda: graph.update_state(thread("done"), {"a": "y"}, as_node=END)))
print(attempt(lambda: graph.update_state(thread("done"), [("a", "tuple")], as_node="one")))
print(attempt(lambda: graph.update_state(thread("done"), {"a": "w"}, as_node="two") and where("done")))
print(attempt(lambda: graph.invoke(None, thread("done"))))
print(attempt(lambda: graph.update_state(thread("done"), {"a": "v"}) and where("done")))
print(attempt(lambda: graph.update_state(thread("done"), {"zzz": 1}, as_node="two") and where("done")))
print(attempt(lambda: graph.update_state(thread("done"), {"a": "again"}, as_node="one") and where("done")))
print(attempt(lambda: graph.invoke(None, thread("done"))))
# A Command: its update, and its goto besides as_node's edges.
print(attempt(lambda: graph.update_state(thread("done"), Command(update={"a": "cmd"}, goto="three"), as_node="two") and where("done")))
print(attempt(lambda: graph.invoke(None, thread("done"))))
print(attempt(lambda: graph.update_state(thread("cmd"), Command(goto=["two", "three"]), as_node=START) and where("cmd")))
print(attempt(lambda: graph.invoke(None, thread("cmd"))))

calls = []


def ask(state):
    calls.append(1)
    answer = interrupt("q?")
    if len(calls) < 3:
        raise ConnectionError("flaky")
    return {"a": answer}


builder = StateGraph(S)
builder.add_node("ask", ask, retry_policy=RetryPolicy(initial_interval=0.001, jitter=False))
builder.add_edge(START, "ask")
asker = builder.compile(checkpointer=InMemorySaver())
show = lambda value: re.sub(r"id='[^']*'", "id=...", repr(value))  # noqa: E731
print(show(asker.invoke({"a": "", "log": []}, thread("retry"))), len(calls))
print(show(asker.invoke(Command(resume="yes"), thread("retry"))), len(calls))
