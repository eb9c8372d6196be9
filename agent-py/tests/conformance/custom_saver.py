"""A checkpointer of one's own (a `BaseCheckpointSaver` subclass keeping LangGraph's
checkpoint dicts in a dict): a thread pauses, is read with `get_state`, and resumes."""

import copy
import operator
from typing import Annotated, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class DictSaver(BaseCheckpointSaver):
    def __init__(self):
        super().__init__()
        self.checkpoints = {}  # (thread, ns, id) -> (checkpoint, metadata, parent id)
        self.writes = {}  # (thread, ns, id) -> [(task, channel, value)]
        self.puts = 0

    def _config(self, thread, ns, checkpoint_id):
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}

    def get_tuple(self, config):
        c = config["configurable"]
        thread, ns = c["thread_id"], c.get("checkpoint_ns", "")
        ids = sorted(k[2] for k in self.checkpoints if k[:2] == (thread, ns))
        checkpoint_id = c.get("checkpoint_id") or (ids[-1] if ids else None)
        if (thread, ns, checkpoint_id) not in self.checkpoints:
            return None
        checkpoint, metadata, parent = self.checkpoints[(thread, ns, checkpoint_id)]
        return CheckpointTuple(
            self._config(thread, ns, checkpoint_id),
            copy.deepcopy(checkpoint),
            copy.deepcopy(metadata),
            self._config(thread, ns, parent) if parent else None,
            list(self.writes.get((thread, ns, checkpoint_id), [])),
        )

    def list(self, config, *, filter=None, before=None, limit=None):
        c = config["configurable"]
        thread, ns = c["thread_id"], c.get("checkpoint_ns", "")
        for key in sorted((k for k in self.checkpoints if k[:2] == (thread, ns)), reverse=True):
            yield self.get_tuple(self._config(*key))

    def put(self, config, checkpoint, metadata, new_versions):
        c = config["configurable"]
        thread, ns = c["thread_id"], c.get("checkpoint_ns", "")
        self.checkpoints[(thread, ns, checkpoint["id"])] = (
            copy.deepcopy(checkpoint),
            copy.deepcopy(metadata),
            c.get("checkpoint_id"),
        )
        self.puts += 1
        return self._config(thread, ns, checkpoint["id"])

    def put_writes(self, config, writes, task_id, task_path=""):
        c = config["configurable"]
        key = (c["thread_id"], c.get("checkpoint_ns", ""), c["checkpoint_id"])
        self.writes.setdefault(key, []).extend((task_id, channel, value) for channel, value in writes)


class State(TypedDict):
    topic: str
    notes: Annotated[list, operator.add]


def draft(state):
    return {"notes": [f"draft {state['topic']}"]}


def review(state):
    return {"notes": [f"review {interrupt({'draft': state['notes'][-1]})}"]}


builder = StateGraph(State)
builder.add_node("draft", draft)
builder.add_node("review", review)
builder.add_edge(START, "draft")
builder.add_edge("draft", "review")
builder.add_edge("review", END)
saver = DictSaver()
graph = builder.compile(checkpointer=saver)
config = {"configurable": {"thread_id": "t"}}
out = graph.invoke({"topic": "saver"}, config)
print(out["notes"], [i.value for i in out["__interrupt__"]])
state = graph.get_state(config)
print(state.values, state.next, [i.value for i in state.interrupts])
print(graph.invoke(Command(resume="ok"), config))
state = graph.get_state(config)
print(state.values, state.next, state.metadata["step"], state.metadata["source"])
print(saver.puts > 0, {tuple(sorted(c["channel_values"])) for c, _, _ in saver.checkpoints.values()} >= {("notes", "topic")})
print(graph.invoke({"topic": "again"}, config)["notes"])
