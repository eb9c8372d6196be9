"""Time travel to a `checkpointer=True` child's own checkpoint: the child's snapshot config
from `get_state(config, subgraphs=True)` carries LangGraph's `checkpoint_map` (the parent's
checkpoint and the child's); `invoke(None, that_config)` forks the parent there and
continues the child from that checkpoint (its interrupt asks again; the nodes before it do
not run again), and new answers make a new branch beside the old one."""

import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict):
    value: Annotated[list[str], operator.add]


called = []


def step_a(state):
    called.append("step_a")
    return {"value": ["step_a_done"]}


def ask(n):
    def ask_n(state):
        called.append(f"ask_{n}")
        return {"value": [f"ask_{n}:{interrupt(f'Question {n}?')}"]}

    return ask_n


executor = (
    StateGraph(State)
    .add_node("step_a", step_a)
    .add_node("ask_1", ask(1))
    .add_node("ask_2", ask(2))
    .add_edge(START, "step_a")
    .add_edge("step_a", "ask_1")
    .add_edge("ask_1", "ask_2")
    .compile(checkpointer=True)
)
graph = StateGraph(State).add_node("executor", executor).add_edge(START, "executor").compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "1"}}


def history():
    return [(s.metadata["source"], s.next, s.values) for s in graph.get_state_history(config)]


graph.invoke({"value": []}, config)
child = graph.get_state(config, subgraphs=True).tasks[0].state
at_first = child.config
print(sorted(at_first["configurable"]), sorted(at_first["configurable"]["checkpoint_map"]))
print(child.metadata["parents"].keys(), child.next, [i.value for i in child.interrupts])
graph.invoke(Command(resume="answer_1"), config)
print(graph.invoke(Command(resume="answer_2"), config))
print(history())

called.clear()
out = graph.invoke(None, at_first)
print([i.value for i in out["__interrupt__"]], called)
print([(source, next_) for source, next_, _ in history()])
called.clear()
print([i.value for i in graph.invoke(Command(resume="new_1"), config)["__interrupt__"]], called)
print(graph.invoke(Command(resume="new_2"), config))
print(history())
