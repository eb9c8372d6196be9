"""`interrupt()` inside a subgraph with the parent's checkpointer: the whole run pauses at the
subgraph's node, the child checkpoints under its own namespace, and `Command(resume=...)` to
the parent continues the child where it stopped. For a subgraph node and for a graph invoked
inside a node."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class Parent(TypedDict):
    topic: str
    summary: str
    log: Annotated[list, operator.add]


class Child(TypedDict):
    topic: str
    draft: str
    log: Annotated[list, operator.add]


calls = []


def edit(state):
    calls.append("edit")
    return {"draft": f"draft of {state['topic']}", "log": ["edit"]}


def ask(state):
    calls.append("ask")
    answer = interrupt({"draft": state["draft"], "question": "ship it?"})
    return {"draft": f"{state['draft']} ({answer})", "log": [f"answer: {answer}"]}


child_builder = StateGraph(Child)
child_builder.add_node("edit", edit)
child_builder.add_node("ask", ask)
child_builder.add_edge(START, "edit")
child_builder.add_edge("edit", "ask")
child = child_builder.compile()


def run(graph, thread):
    calls.clear()
    config = {"configurable": {"thread_id": thread}}
    out = graph.invoke({"topic": "owls"}, config)
    print(sorted(out), out["log"], [i.value for i in out["__interrupt__"]])
    state = graph.get_state(config)
    print(state.values, state.next, [i.value for i in state.interrupts])
    print(graph.invoke(Command(resume="yes"), config))
    state = graph.get_state(config)
    print(state.values, state.next, calls)


# The child as a node.
builder = StateGraph(Parent)
builder.add_node("prep", lambda s: {"log": ["prep"]})
builder.add_node("review", child)
builder.add_node("finish", lambda s: {"log": ["finish"]})
builder.add_edge(START, "prep")
builder.add_edge("prep", "review")
builder.add_edge("review", "finish")
run(builder.compile(checkpointer=InMemorySaver()), "node")


# The child invoked inside a node.
def review(state):
    out = child.invoke({"topic": state["topic"]})
    return {"summary": out["draft"], "log": ["reviewed"]}


builder = StateGraph(Parent)
builder.add_node("prep", lambda s: {"log": ["prep"]})
builder.add_node("review", review)
builder.add_node("finish", lambda s: {"log": ["finish"]})
builder.add_edge(START, "prep")
builder.add_edge("prep", "review")
builder.add_edge("review", "finish")
run(builder.compile(checkpointer=InMemorySaver()), "function")

# Streamed: the pause is reported under the child's namespace, then the parent's.
graph = builder.compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "stream"}}
for ns, chunk in graph.stream({"topic": "bats"}, config, stream_mode="updates", subgraphs=True):
    if "__interrupt__" in chunk:
        chunk = {"__interrupt__": [type(chunk["__interrupt__"]).__name__] + [i.value for i in chunk["__interrupt__"]]}
    print(tuple(n.split(":")[0] for n in ns), chunk)
for ns, chunk in graph.stream(Command(resume="no"), config, stream_mode="updates", subgraphs=True):
    print(tuple(n.split(":")[0] for n in ns), chunk)

config = {"configurable": {"thread_id": "values"}}
for ns, chunk in graph.stream({"topic": "moths"}, config, stream_mode="values", subgraphs=True):
    if "__interrupt__" in chunk:
        chunk = dict(chunk, __interrupt__=[type(chunk["__interrupt__"]).__name__] + [i.value for i in chunk["__interrupt__"]])
    print(tuple(n.split(":")[0] for n in ns), chunk)
