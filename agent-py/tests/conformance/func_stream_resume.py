"""Functional API: `values` and mixed streams across an `interrupt()` and its resume (the
resumed run shows the stored return value first), `get_state` of the paused thread."""

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

@task
def step(x):
    return x + 1

@entrypoint(checkpointer=InMemorySaver())
def flow(x):
    a = step(x).result()
    b = interrupt(a)
    return a + b

def show(c):
    if isinstance(c, dict) and "__interrupt__" in c:
        return {"__interrupt__": [i.value for i in c["__interrupt__"]]}
    if isinstance(c, tuple):
        return tuple(show(x) for x in c)
    return c

cfg = {"configurable": {"thread_id": "v"}}
for c in flow.stream(1, cfg, stream_mode="values"):
    print("v", show(c))
for c in flow.stream(Command(resume=10), cfg, stream_mode="values"):
    print("v", show(c))
cfg = {"configurable": {"thread_id": "m"}}
for c in flow.stream(1, cfg, stream_mode=["values", "updates", "custom"]):
    print("m", show(c))
for c in flow.stream(Command(resume=5), cfg, stream_mode=["values", "updates"]):
    print("m", show(c))
print(flow.invoke(2, cfg)["__interrupt__"][0].value)
print(flow.get_state(cfg).next)
s = flow.get_state(cfg)
print([t.name for t in s.tasks])
