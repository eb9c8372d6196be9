"""`tasks`, `checkpoints` and `debug`, normalised: ids and timestamps are each runtime's own
(shown as the order they first appear in), the rest compared exactly."""

import asyncio
import operator
import re
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def normalise(parts):
    ids = {}

    def same(match):
        return "<id%d>" % ids.setdefault(match.group(0), len(ids))

    text = repr(parts)
    text = re.sub(r"'timestamp': '[^']*'", "'timestamp': <ts>", text)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", same, text)


def slow_c(state):
    # b and c run in parallel: c finishing last keeps the order of their results fixed.
    time.sleep(0.05)
    return {"log": ["c"]}


def build(checkpointer=None):
    builder = StateGraph(S)
    builder.add_node("a", lambda s: {"x": s["x"] + 1, "log": ["a"]})
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_node("c", slow_c)
    builder.add_node("d", lambda s: {"x": 10})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge(["b", "c"], "d")
    builder.add_edge("d", END)
    return builder.compile(checkpointer=checkpointer)


graph = build()
for mode in ["tasks", "checkpoints", "debug", ["tasks", "updates", "values"], ["debug", "tasks"]]:
    print(mode, normalise(list(graph.stream({"x": 1}, stream_mode=mode))))

saved = build(InMemorySaver())
for i, mode in enumerate(["checkpoints", "debug", ["checkpoints", "tasks", "values", "updates", "debug"]]):
    config = {"configurable": {"thread_id": f"t{i}"}}
    print(mode, normalise(list(saved.stream({"x": 1}, config, stream_mode=mode))))

# Every mode at once.
modes = ["values", "updates", "custom", "messages", "tasks", "checkpoints", "debug"]
print(normalise(list(saved.stream({"x": 2}, {"configurable": {"thread_id": "all"}}, stream_mode=modes))))



async def main():
    config = {"configurable": {"thread_id": "async"}}
    modes = ["tasks", "checkpoints", "updates"]
    print("async", normalise([part async for part in saved.astream({"x": 3}, config, stream_mode=modes)]))


asyncio.run(main())

# A task that pauses shows its interrupts after the run's; a failing one its exception.
from langgraph.types import interrupt  # noqa: E402


def opaque(parts):
    text = re.sub(r"'timestamp': '[^']*'", "'timestamp': <ts>", repr(parts))
    text = re.sub(r"(id=|'id': )'[^']*'", r"\1<id>", text)
    return re.sub(r"'checkpoint_id': '[^']*'", "'checkpoint_id': <id>", text)


def ask(state):
    return {"x": interrupt("how many?")}


def boom(state):
    raise ValueError("bad input")


builder = StateGraph(S)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
paused = builder.compile(checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "pause"}}
print(opaque(list(paused.stream({"x": 0}, config, stream_mode=["tasks", "updates", "debug"]))))

builder = StateGraph(S)
builder.add_node("boom", boom)
builder.add_edge(START, "boom")
parts = []
try:
    for part in builder.compile().stream({"x": 0}, stream_mode=["tasks", "debug"]):
        parts.append(part)
except ValueError as error:
    print("raised", repr(error))
print(opaque(parts))

# Resumed, the run first shows the checkpoint it resumes from.
from langgraph.types import Command  # noqa: E402

resume_modes = ["checkpoints", "tasks", "updates", "debug"]
resumed = normalise(list(paused.stream(Command(resume=7), config, stream_mode=resume_modes)))
# Interrupt ids are each runtime's own.
print(re.sub(r"('value': 'how many\?', 'id': )'[^']*'", r"\1<interrupt id>", resumed))
print(normalise(list(paused.stream({"x": 1}, {"configurable": {"thread_id": "again"}}, stream_mode="checkpoints")))[:80])

# A breakpoint, and the run continued from it.
builder = StateGraph(S)
builder.add_node("a", lambda s: {"log": ["a"]})
builder.add_node("b", lambda s: {"log": ["b"]})
builder.add_edge(START, "a")
builder.add_edge("a", "b")
stopped = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["b"])
config = {"configurable": {"thread_id": "breakpoint"}}
modes = ["tasks", "checkpoints", "updates"]
print(normalise(list(stopped.stream({"x": 0}, config, stream_mode=modes))))
print(normalise(list(stopped.stream(None, config, stream_mode=modes))))
