"""`InMemorySaver` stays agent-core's native saver unless a subclass overrides LangGraph's
saver methods; then it stores LangGraph's checkpoint dicts through those methods."""

from functools import partial
from typing import TypedDict

from agentgraph.checkpoint.memory import InMemorySaver, PersistentDict
from agentgraph.graph import END, START, StateGraph


class S(TypedDict):
    n: int


def graph(saver):
    b = StateGraph(S)
    b.add_node("inc", lambda s: {"n": s["n"] + 1})
    b.add_edge(START, "inc")
    b.add_edge("inc", END)
    return b.compile(checkpointer=saver)


class Plain(InMemorySaver):
    """A subclass that adds nothing to the saver API."""

    label = "plain"


class Wrapping(InMemorySaver):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def put(self, config, checkpoint, metadata, new_versions):
        self.seen.append(metadata["source"])
        return super().put(config, checkpoint, metadata, new_versions)


def test_plain_saver_and_plain_subclass_stay_native():
    for saver in (InMemorySaver(), Plain()):
        assert saver._native is not None
        config = {"configurable": {"thread_id": "t"}}
        assert graph(saver).invoke({"n": 1}, config) == {"n": 2}
        assert saver.get_tuple(config).checkpoint["channel_values"]["n"] == 2


def test_overriding_subclass_stores_through_its_methods(tmp_path):
    for saver in (Wrapping(), Wrapping(factory=partial(PersistentDict, filename=str(tmp_path / "f")))):
        assert saver._native is None
        config = {"configurable": {"thread_id": "t"}}
        g = graph(saver)
        assert g.invoke({"n": 1}, config) == {"n": 2}
        assert saver.seen == ["input", "loop", "loop"]
        assert g.get_state(config).values == {"n": 2}
        assert [c.metadata["step"] for c in saver.list(config)] == [1, 0, -1]
        assert [c.metadata["step"] for c in saver.list(config, limit=1)] == [1]
        saver.delete_thread("t")
        assert saver.get_tuple(config) is None


def test_persistent_dict_writes_and_reads_its_file(tmp_path):
    path = str(tmp_path / "d")
    d = PersistentDict(list, filename=path)
    d["a"].append(1)
    d.close()
    again = PersistentDict(list, filename=path)
    assert again == {"a": [1]}
    assert again["b"] == []
