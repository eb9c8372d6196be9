"""`compiled.with_config(...)`: a graph whose runs start from the bound config (keyword
options such as `recursion_limit` too); a run's own config merges over it."""

from typing import TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, StateGraph


class State(TypedDict):
    n: int


def step(state: State, config: RunnableConfig):
    return {"n": state["n"] + 1}


def loop(state):
    return "step" if state["n"] < 20 else "__end__"


builder = StateGraph(State)
builder.add_node("step", step)
builder.add_edge(START, "step")
builder.add_conditional_edges("step", loop)
graph = builder.compile()

print(graph.invoke({"n": 0})["n"])
limited = graph.with_config(recursion_limit=5)
try:
    limited.invoke({"n": 0})
except GraphRecursionError:
    print("recursion limit from with_config")
print(limited.invoke({"n": 0}, {"recursion_limit": 100})["n"])
print(graph.invoke({"n": 15})["n"])


def seen(state: State, config: RunnableConfig):
    print("configurable:", sorted(k for k in config["configurable"] if k in ("a", "b")), "tags:", [t for t in config.get("tags", []) if t in ("x", "y")], "meta:", {k: v for k, v in config["metadata"].items() if k in ("m", "k")})
    return {"n": 1}


b2 = StateGraph(State)
b2.add_node("seen", seen)
b2.add_edge(START, "seen")
g2 = b2.compile().with_config({"configurable": {"a": 1}, "tags": ["x"], "metadata": {"m": 1}})
g2.invoke({"n": 0})
g2.invoke({"n": 0}, {"configurable": {"b": 2}, "tags": ["y"], "metadata": {"k": 2}})
