from typing import Annotated, TypedDict

from langgraph.errors import GraphRecursionError, InvalidUpdateError
from langgraph.graph import END, START, StateGraph


class Counter(TypedDict):
    n: int
    log: Annotated[list, lambda a, b: a + b]


def inc(state):
    return {"n": state["n"] + 1, "log": [state["n"]]}


def route(state):
    return "again" if state["n"] < 4 else "stop"


builder = StateGraph(Counter)
builder.add_node("inc", inc)
builder.add_edge(START, "inc")
builder.add_conditional_edges("inc", route, {"again": "inc", "stop": END})
graph = builder.compile()
print(graph.invoke({"n": 0}))
print(list(graph.stream({"n": 2}, stream_mode="values")))

try:
    graph.invoke({"n": 0}, {"recursion_limit": 3})
except GraphRecursionError as error:
    print("recursion", type(error).__name__, isinstance(error, RecursionError))

parallel = StateGraph(Counter)
parallel.add_node("a", lambda s: {"n": 1})
parallel.add_node("b", lambda s: {"n": 2})
parallel.add_edge(START, "a")
parallel.add_edge(START, "b")
try:
    parallel.compile().invoke({"n": 0})
except InvalidUpdateError as error:
    print("invalid update", type(error).__name__, "'n'" in str(error))


class Boom(ValueError):
    pass


def fail(state):
    raise Boom("node failed")


failing = StateGraph(Counter)
failing.add_node("fail", fail)
failing.add_edge(START, "fail")
try:
    failing.compile().invoke({"n": 0})
except Boom as error:
    print("node error", type(error).__name__, error)
