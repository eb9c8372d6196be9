"""`Command(goto=Send(...))` from a node, alone or in a list, with an update; Sends kept in a
checkpoint across a breakpoint and an interrupt, and resumed."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt


class State(TypedDict):
    topics: list[str]
    paragraphs: Annotated[list[str], operator.add]
    reviews: Annotated[list[str], operator.add]


def plan(state):
    return Command(
        update={"paragraphs": ["plan"]},
        goto=[Send("write", {"topic": t, "index": i}) for i, t in enumerate(state["topics"])],
    )


def write(task):
    paragraph = f"{task['index']}: {task['topic']}"
    return Command(update={"paragraphs": [paragraph]}, goto=Send("review", paragraph))


def review(paragraph):
    return {"reviews": [f"{paragraph} ok"]}


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("write", write)
builder.add_node("review", review)
builder.add_edge(START, "plan")
graph = builder.compile()
print(graph.invoke({"topics": ["owls", "bats"]}))
for chunk in graph.stream({"topics": ["moths"]}, stream_mode="updates"):
    print(chunk)


def careful_write(task):
    paragraph = f"{task['index']}: {task['topic']}"
    if task["topic"] == "bats":
        answer = interrupt(f"write about {task['topic']}?")
        paragraph += f" ({answer})"
    return Command(update={"paragraphs": [paragraph]}, goto=Send("review", paragraph))


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("write", careful_write)
builder.add_node("review", review)
builder.add_edge(START, "plan")
graph = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["write"])
config = {"configurable": {"thread_id": "t"}}
out = graph.invoke({"topics": ["owls", "bats", "moths"]}, config)
print(out)
print(graph.get_state(config).next)
out = graph.invoke(None, config)
# (LangGraph's output here also applies the finished siblings' writes; agentgraph's does not
# yet: see the README.)
print(sorted(out), [i.value for i in out["__interrupt__"]])
print(graph.get_state(config).next)
out = graph.invoke(Command(resume="yes"), config)
print(out)
print(graph.get_state(config).next)
