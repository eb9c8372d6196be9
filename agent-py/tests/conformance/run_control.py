"""Run-time interrupt_before / interrupt_after (names and "*"; after the last node too),
durability ("sync", "async", "exit") and the legacy checkpoint_during."""

import asyncio
import warnings
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

warnings.simplefilter("ignore")


class S(TypedDict):
    n: int


builder = StateGraph(S)
builder.add_node("one", lambda s: {"n": s["n"] + 1})
builder.add_node("two", lambda s: {"n": s["n"] * 10})
builder.add_edge(START, "one")
builder.add_edge("one", "two")
builder.add_edge("two", END)
graph = builder.compile(checkpointer=InMemorySaver())


def thread(name):
    return {"configurable": {"thread_id": name}}


def where(name):
    s = graph.get_state(thread(name))
    return s.values, s.next, s.metadata["source"], s.metadata["step"]


# A pause after the graph's last node: the updates stream says so, nothing is next.
print(list(graph.stream({"n": 1}, thread("after-last"), interrupt_after=["two"], stream_mode="updates")))
print(where("after-last"))
print(list(graph.stream(None, thread("after-last"), stream_mode="updates")))
print(graph.invoke({"n": 1}, thread("after-last-invoke"), interrupt_after=["two"]))
print(list(graph.stream({"n": 1}, thread("after-last-values"), interrupt_after=["two"], stream_mode="values")))

print(graph.invoke({"n": 1}, thread("before"), interrupt_before=["two"]))
print(where("before"))
print(graph.invoke(None, thread("before")))
print(graph.invoke({"n": 1}, thread("all-before"), interrupt_before="*"))
print(where("all-before"))
print(graph.invoke({"n": 1}, thread("all-after"), interrupt_after="*"))
print(where("all-after"))
print(graph.invoke(None, thread("all-after"), interrupt_after="*"))
print(where("all-after"))
print(list(graph.stream({"n": 1}, thread("s-before"), interrupt_before=["one"], stream_mode=["updates", "values"])))

for durability in ("sync", "async", "exit"):
    name = f"durability-{durability}"
    print(durability, graph.invoke({"n": 2}, thread(name), durability=durability))
    print([(s.metadata["source"], s.metadata["step"], s.values) for s in graph.get_state_history(thread(name))])
print(list(graph.stream({"n": 3}, thread("stream-exit"), durability="exit", stream_mode="values")))
print(len(list(graph.get_state_history(thread("stream-exit")))))

for during in (True, False):
    name = f"during-{during}"
    print(during, graph.invoke({"n": 2}, thread(name), checkpoint_during=during))
    print([(s.metadata["source"], s.metadata["step"]) for s in graph.get_state_history(thread(name))])
try:
    graph.invoke({"n": 2}, thread("both"), checkpoint_during=True, durability="sync")
except ValueError as error:
    print("ValueError", error)


async def main():
    print(await graph.ainvoke({"n": 1}, thread("a-before"), interrupt_before=["two"], durability="exit"))
    print(where("a-before"))
    print([p async for p in graph.astream(None, thread("a-before"), interrupt_after=["two"])])


asyncio.run(main())
