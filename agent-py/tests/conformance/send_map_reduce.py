"""Map-reduce with `Send`: a router's Sends give their node the argument verbatim, run in
parallel in the next step, and their writes are reduced with the step's others."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class Overall(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


def continue_to_jokes(state):
    return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]


def generate_joke(state):
    # The Send's argument, not the graph's state.
    return {"jokes": [f"Joke about {state['subject']} ({sorted(state)})"]}


def best_joke(state):
    return {"best": max(state["jokes"])}


builder = StateGraph(Overall)
builder.add_node("generate_joke", generate_joke)
builder.add_node("best_joke", best_joke)
builder.add_conditional_edges(START, continue_to_jokes, ["generate_joke"])
builder.add_edge("generate_joke", "best_joke")
builder.add_edge("best_joke", END)
graph = builder.compile()

print(graph.invoke({"subjects": ["cats", "dogs", "owls"]}))
print(graph.invoke({"subjects": []}))
for chunk in graph.stream({"subjects": ["bats", "moths"]}, stream_mode="values"):
    print(chunk)


# Sends mixed with node names, through a path map, with arguments of any type.
class Counts(TypedDict):
    items: list
    seen: Annotated[list, operator.add]


def fan(state):
    return ["tally"] + [Send("square", n) for n in state["items"]] + [Send("square", 10)]


builder = StateGraph(Counts)
builder.add_node("start", lambda s: {"seen": ["start"]})
builder.add_node("square", lambda n: {"seen": [n * n]})
builder.add_node("tally", lambda s: {"seen": [f"tally {len(s['seen'])}"]})
builder.add_edge(START, "start")
builder.add_conditional_edges("start", fan, {"tally": "tally", "square": "square"})
builder.add_edge("square", END)
builder.add_edge("tally", END)
graph = builder.compile()
print(graph.invoke({"items": [1, 2, 3]}))

# A node sent to runs once per Send, and once more when an edge names it in the same step.
builder = StateGraph(Counts)
builder.add_node("start", lambda s: {"seen": ["start"]})
builder.add_node("echo", lambda s: {"seen": [s if isinstance(s, str) else "state"]})
builder.add_edge(START, "start")
builder.add_edge("start", "echo")
builder.add_conditional_edges("start", lambda s: [Send("echo", "a"), Send("echo", "b")])
graph = builder.compile()
print(graph.invoke({"items": []}))
print([p for p in graph.stream({"items": []}, stream_mode="values")])
