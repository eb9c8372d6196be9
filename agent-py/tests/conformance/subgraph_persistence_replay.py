"""Time travel with a `checkpointer=True` child: replaying the parent from an older checkpoint
(`invoke(None, old_config)`) makes the child's first call load the state it had at that
point of the parent's history (LangGraph's `ReplayState`), not its latest; the next call
goes on from what the replay stored. Also when the child runs in a later step of the
replay, in a loop (later calls load their latest), and two levels deep."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class Sub(TypedDict):
    value: Annotated[list[str], operator.add]


class Parent(TypedDict):
    results: Annotated[list[str], operator.add]
    rounds: int


seen = []


def step(state):
    seen.append(list(state["value"]))
    return {"value": ["s"]}


def sub_graph():
    return StateGraph(Sub).add_node("step", step).add_edge(START, "step").compile(checkpointer=True)


def show(history):
    return [(s.metadata["source"], s.next) for s in history]


# Parent: a -> b -> sub. Replay from before `a` of the second invocation.
graph = (
    StateGraph(Parent)
    .add_node("a", lambda s: {"results": ["a"]})
    .add_node("b", lambda s: {"results": ["b"]})
    .add_node("sub", sub_graph())
    .add_edge(START, "a")
    .add_edge("a", "b")
    .add_edge("b", "sub")
    .compile(checkpointer=InMemorySaver())
)
config = {"configurable": {"thread_id": "1"}}
graph.invoke({"results": []}, config)
graph.invoke({"results": []}, config)
print("calls", seen)
before_a = [s for s in graph.get_state_history(config) if s.next == ("a",)][0]
seen.clear()
print(graph.invoke(None, before_a.config)["results"], "replay saw", seen)
seen.clear()
graph.invoke({"results": []}, config)
print("after replay", seen)
print(show(graph.get_state_history(config))[:4])

# The child in a loop: the replay's first call loads the bound state, the next its latest.
seen.clear()


def again(state):
    return "sub" if state["rounds"] < 2 else END


loop = (
    StateGraph(Parent)
    .add_node("count", lambda s: {"rounds": s.get("rounds", 0) + 1})
    .add_node("sub", sub_graph())
    .add_edge(START, "count")
    .add_edge("count", "sub")
    .add_conditional_edges("sub", lambda s: "count" if s["rounds"] < 2 else END)
    .compile(checkpointer=InMemorySaver())
)
config = {"configurable": {"thread_id": "2"}}
loop.invoke({"results": [], "rounds": 0}, config)
loop.invoke({"results": [], "rounds": 0}, config)
print("loop calls", seen)
first_count = [s for s in loop.get_state_history(config) if s.next == ("count",)][-2]
seen.clear()
loop.invoke(None, first_count.config)
print("loop replay saw", seen)

# Two levels: outer (checkpointer=True) holds inner (checkpointer=True).
seen.clear()
outer = StateGraph(Sub).add_node("inner", sub_graph()).add_edge(START, "inner").compile(checkpointer=True)
nested = (
    StateGraph(Parent)
    .add_node("p", lambda s: {"results": ["p"]})
    .add_node("outer", outer)
    .add_edge(START, "p")
    .add_edge("p", "outer")
    .compile(checkpointer=InMemorySaver())
)
config = {"configurable": {"thread_id": "3"}}
nested.invoke({"results": []}, config)
nested.invoke({"results": []}, config)
before_p = [s for s in nested.get_state_history(config) if s.next == ("p",)][0]
seen.clear()
nested.invoke(None, before_p.config)
print("nested replay saw", seen)
