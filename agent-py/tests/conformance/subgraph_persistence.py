"""Subgraph persistence (`compile(checkpointer=True | False | None)` on a child graph): a
`checkpointer=True` child keeps its own state across calls within a thread, in one namespace
named after its node; the default child starts fresh on each call; a `checkpointer=False`
one shows no state of its own. `get_state(config)` marks each pending subgraph task with the
child's namespace, `get_state(config, subgraphs=True)` holds the child's snapshot there, and
`get_state` / `get_state_history` / `update_state` take a child's `checkpoint_ns` config (a
root run given one goes on from the thread's latest checkpoint). A `checkpointer=True` graph
cannot run as a root graph."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class Sub(TypedDict):
    value: Annotated[list[str], operator.add]


class Parent(TypedDict):
    results: Annotated[list[str], operator.add]


seen = []


def ask(state):
    return {"value": [interrupt("next?")]}


def note(state):
    seen.append(list(state["value"]))
    return {"value": ["s"]}


def child(checkpointer):
    return (
        StateGraph(Sub)
        .add_node("ask", ask)
        .add_node("note", note)
        .add_edge(START, "ask")
        .add_edge("ask", "note")
        .compile(checkpointer=checkpointer)
    )


def parent(sub):
    return (
        StateGraph(Parent)
        .add_node("p", lambda s: {"results": ["p"]})
        .add_node("sub", sub)
        .add_edge(START, "p")
        .add_edge("p", "sub")
        .compile(checkpointer=InMemorySaver())
    )


def ns(config):
    """A namespace without its task id (ids differ between implementations)."""
    return config["configurable"]["checkpoint_ns"].split(":")[0]


def show(snapshot):
    return (snapshot.values, snapshot.next, snapshot.metadata and snapshot.metadata["step"])


for mode in (None, True, False):
    print("== checkpointer", mode)
    seen.clear()
    graph = parent(child(mode))
    config = {"configurable": {"thread_id": "1"}}
    for answer in ("a", "b"):
        out = graph.invoke({"results": []}, config)
        print(out["results"], [i.value for i in out["__interrupt__"]])
        state = graph.get_state(config)
        print(state.next, [(t.name, t.state and ns(t.state)) for t in state.tasks])
        state = graph.get_state(config, subgraphs=True)
        for task in state.tasks:
            if task.state is not None:
                print(" child:", show(task.state), ns(task.state.config), [i.value for i in task.state.interrupts])
                child_config = task.state.config
                print(" by its config:", show(graph.get_state(child_config)))
        print(graph.invoke(Command(resume=answer), config))
    print("seen", seen)
    if mode is True:
        sub_config = {"configurable": {"thread_id": "1", "checkpoint_ns": "sub"}}
        print("history", [show(s) for s in graph.get_state_history(sub_config)][:4])
        print("latest", show(graph.get_state(sub_config)))
        graph.update_state(sub_config, {"value": ["edited"]})
        print("updated", show(graph.get_state(sub_config)))
        print("async", show(asyncio.run(graph.aget_state(sub_config))))

# A root run given a child's config (as a child's snapshot gives it) goes on from the
# thread's latest checkpoint; the child, rerun by its task, resumes its own.
seen.clear()
graph = parent(child(True))
config = {"configurable": {"thread_id": "2"}}
graph.invoke({"results": []}, config)
sub_config = graph.get_state(config, subgraphs=True).tasks[0].state.config
forked = graph.update_state(sub_config, {"value": ["forked"]})
print("forked ns", ns(forked), show(graph.get_state(forked)))
out = graph.invoke(None, forked)
print(out["results"], [i.value for i in out.get("__interrupt__", ())])
print(graph.invoke(Command(resume="c"), config), seen)

try:
    child(True).invoke({"value": []}, {"configurable": {"thread_id": "x"}})
except RuntimeError as error:
    print("root:", error)
