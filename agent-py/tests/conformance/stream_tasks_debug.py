"""`tasks`, `checkpoints` and `debug`, normalised: ids and timestamps are each runtime's own
(shown as the order they first appear in), the rest compared exactly."""

import operator
import re
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


def build(checkpointer=None):
    builder = StateGraph(S)
    builder.add_node("a", lambda s: {"x": s["x"] + 1, "log": ["a"]})
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_node("c", lambda s: {"log": ["c"]})
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
