"""update_state (reducers, as_node, None), get_state_history (filter, before, limit), time
travel (invoke from an old checkpoint forks), StateSnapshot's fields; ids and times normalised."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import StateSnapshot

IDS: dict = {}


def cid(config):
    if config is None:
        return None
    c = config["configurable"]
    key = c["checkpoint_id"]
    IDS.setdefault(key, f"c{len(IDS)}")
    return (c["thread_id"], c["checkpoint_ns"], IDS[key])


def show(s: StateSnapshot) -> str:
    tasks = [(t.name, t.path, t.error, t.interrupts) for t in s.tasks]
    return (
        f"values={s.values} next={s.next} config={cid(s.config)} metadata={s.metadata} "
        f"created={type(s.created_at).__name__} parent={cid(s.parent_config)} tasks={tasks} "
        f"interrupts={s.interrupts}"
    )


class S(TypedDict):
    a: str
    log: Annotated[list, operator.add]


builder = StateGraph(S)
builder.add_node("one", lambda s: {"a": "one", "log": ["one"]})
builder.add_node("two", lambda s: {"a": "two", "log": ["two"]})
builder.add_node("three", lambda s: {"log": ["three"]})
builder.add_edge(START, "one")
builder.add_edge("one", "two")
builder.add_edge("two", "three")
builder.add_edge("three", END)
graph = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["three"])
config = {"configurable": {"thread_id": "t"}}

print(StateSnapshot._fields)
print(graph.invoke({"a": "x", "log": []}, config))
history = list(graph.get_state_history(config))
for snapshot in history:
    print(show(snapshot))

# A reducer key appends; the update counts as the last writer (`two`): `three` stays next.
print(cid(graph.update_state(config, {"log": ["upd"]})))
print(show(graph.get_state(config)))
# As `one`: the next step follows one's edge, so `two` runs again.
print(cid(graph.update_state(config, {"a": "as-one"}, as_node="one")))
print(show(graph.get_state(config)))
print(graph.invoke(None, config))
print(graph.invoke(None, config))
print(show(graph.get_state(config)))

history = list(graph.get_state_history(config))
print([(s.metadata["source"], s.metadata["step"], s.next) for s in history])
print([show(s) for s in graph.get_state_history(config, limit=2)])
print([show(s) for s in graph.get_state_history(config, before=history[3].config, limit=2)])
print([show(s) for s in graph.get_state_history(config, filter={"source": "update"})])
print([show(s) for s in graph.get_state_history(history[4].config)])

# Time travel: from the checkpoint before `one` ran, the run forks (a `fork` copy of it
# first) and pauses before `three`.
old = history[-2].config
print(show(graph.get_state(old)))
print(graph.invoke(None, old))
print(show(graph.get_state(config)))
print([(s.metadata["source"], s.metadata["step"], s.next) for s in graph.get_state_history(config, limit=4)])
# An update on an old checkpoint forks too; the original history stays.
print(cid(graph.update_state(old, {"a": "forked"})))
print(show(graph.get_state(config)))
print(graph.invoke(None, config))
print(show(history[0]) == show(graph.get_state(history[0].config)))
# Continuing from an addressed checkpoint that is the latest forks it as well.
latest = graph.get_state(config)
print(graph.invoke(None, latest.config))
print([(s.metadata["source"], s.metadata["step"], s.next) for s in graph.get_state_history(config, limit=3)])
# None writes nothing; the next step follows `two`'s edge.
print(cid(graph.update_state(config, None, as_node="two")))
print(show(graph.get_state(config)))
print(len(list(graph.get_state_history(config))))


async def main():
    c = {"configurable": {"thread_id": "async"}}
    print(await graph.ainvoke({"a": "y", "log": []}, c))
    print(cid(await graph.aupdate_state(c, {"log": ["a-upd"]}, as_node="two")))
    print([show(s) async for s in graph.aget_state_history(c, limit=2)])


asyncio.run(main())
