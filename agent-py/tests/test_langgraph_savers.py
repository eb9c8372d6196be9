"""LangGraph's own checkpointers under agentgraph: `compile(checkpointer=<BaseCheckpointSaver>)`.

What agentgraph stores through them is LangGraph's checkpoint dict, so a LangGraph graph of
the same schema reads the thread."""

import operator
import subprocess
import sys
import textwrap
from typing import Annotated, TypedDict

import pytest

import agentgraph.graph as ag
from agentgraph.types import Command as AgCommand
from agentgraph.types import interrupt as ag_interrupt

lg_graph = pytest.importorskip("langgraph.graph")
lg_memory = pytest.importorskip("langgraph.checkpoint.memory")


class State(TypedDict):
    topic: str
    notes: Annotated[list, operator.add]


def build(module, interrupt=None):
    def plan(state):
        return {"notes": [f"plan {state['topic']}"]}

    def ask(state):
        answer = interrupt("ok?") if interrupt else "auto"
        return {"notes": [f"asked {answer}"]}

    builder = module.StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("ask", ask)
    builder.add_edge(module.START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", module.END)
    return builder


def test_agentgraph_runs_on_langgraphs_memory_saver_and_langgraph_reads_it():
    saver = lg_memory.InMemorySaver()
    graph = build(ag, ag_interrupt).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"topic": "rust"}, config)
    assert [i.value for i in out["__interrupt__"]] == ["ok?"]
    assert graph.get_state(config).next == ("ask",)
    assert graph.invoke(AgCommand(resume="yes"), config) == {
        "topic": "rust",
        "notes": ["plan rust", "asked yes"],
    }
    # The thread through LangGraph's own saver API, then a LangGraph graph of the schema.
    stored = saver.get_tuple(config)
    assert stored.checkpoint["channel_values"] == {"topic": "rust", "notes": ["plan rust", "asked yes"]}
    assert stored.metadata["step"] == graph.get_state(config).metadata["step"]
    theirs = build(lg_graph).compile(checkpointer=saver)
    state = theirs.get_state(config)
    assert state.values == {"topic": "rust", "notes": ["plan rust", "asked yes"]}
    assert state.next == ()
    history = list(saver.list(config))
    assert len(history) >= 4
    assert history[0].checkpoint["id"] == stored.checkpoint["id"]


def test_a_second_run_on_the_thread_builds_on_stored_values():
    saver = lg_memory.InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    build(ag).compile(checkpointer=saver).invoke({"topic": "a"}, config)
    # A new compiled graph (a new adapter): the values come back from the saver.
    out = build(ag).compile(checkpointer=saver).invoke({"topic": "b"}, config)
    assert out["notes"] == ["plan a", "asked auto", "plan b", "asked auto"]
    assert saver.get_tuple(config).checkpoint["channel_values"]["notes"] == out["notes"]


READ_BY_LANGGRAPH = textwrap.dedent(
    """
    import operator, sys
    from typing import Annotated, TypedDict
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        topic: str
        notes: Annotated[list, operator.add]

    builder = StateGraph(State)
    builder.add_node("plan", lambda s: {"notes": ["plan"]})
    builder.add_node("ask", lambda s: {"notes": ["ask"]})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", END)
    with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
        state = builder.compile(checkpointer=saver).get_state({"configurable": {"thread_id": "t"}})
        print(state.values, state.next, state.metadata["step"])
    """
)


def test_a_thread_written_through_langgraphs_sqlite_saver_is_read_by_langgraph(tmp_path):
    lg_sqlite = pytest.importorskip("langgraph.checkpoint.sqlite")
    db = str(tmp_path / "lg.sqlite")
    config = {"configurable": {"thread_id": "t"}}
    with lg_sqlite.SqliteSaver.from_conn_string(db) as saver:
        graph = build(ag, ag_interrupt).compile(checkpointer=saver)
        graph.invoke({"topic": "x"}, config)
        graph.invoke(AgCommand(resume="no"), config)
        step = graph.get_state(config).metadata["step"]
    program = tmp_path / "read.py"
    program.write_text(READ_BY_LANGGRAPH)
    done = subprocess.run([sys.executable, str(program), db], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{{'topic': 'x', 'notes': ['plan x', 'asked no']}} () {step}"


def test_not_a_checkpointer():
    with pytest.raises(TypeError, match="not a checkpointer"):
        build(ag).compile(checkpointer=object())


def test_agentgraph_reads_and_continues_a_thread_langgraph_wrote():
    from langgraph.types import interrupt as lg_interrupt

    saver = lg_memory.InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    build(lg_graph).compile(checkpointer=saver).invoke({"topic": "a"}, config)
    ours = build(ag).compile(checkpointer=saver)
    state = ours.get_state(config)
    assert state.values == {"topic": "a", "notes": ["plan a", "asked auto"]}
    assert state.next == ()
    assert ours.invoke({"topic": "b"}, config)["notes"] == ["plan a", "asked auto", "plan b", "asked auto"]
    # And LangGraph goes on from what agentgraph wrote (its versions are LangGraph's numbers).
    out = build(lg_graph).compile(checkpointer=saver).invoke({"topic": "c"}, config)
    assert out["notes"] == ["plan a", "asked auto", "plan b", "asked auto", "plan c", "asked auto"]

    # A thread LangGraph paused: agentgraph sees the paused node and its interrupt, and
    # resumes it.
    paused = {"configurable": {"thread_id": "p"}}
    build(lg_graph, lg_interrupt).compile(checkpointer=saver).invoke({"topic": "x"}, paused)
    ours = build(ag, ag_interrupt).compile(checkpointer=saver)
    state = ours.get_state(paused)
    assert state.next == ("ask",)
    assert [i.value for i in state.interrupts] == ["ok?"]
    assert ours.invoke(AgCommand(resume="yes"), paused)["notes"] == ["plan x", "asked yes"]
    assert build(lg_graph).compile(checkpointer=saver).get_state(paused).values["notes"] == [
        "plan x",
        "asked yes",
    ]


def test_langgraphs_async_sqlite_saver_under_ainvoke(tmp_path):
    import asyncio

    aio = pytest.importorskip("langgraph.checkpoint.sqlite.aio")
    config = {"configurable": {"thread_id": "t"}}

    async def main():
        async with aio.AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            graph = build(ag, ag_interrupt).compile(checkpointer=saver)
            first = await graph.ainvoke({"topic": "z"}, config)
            out = await graph.ainvoke(AgCommand(resume="ok"), config)
            theirs = await build(lg_graph).compile(checkpointer=saver).aget_state(config)
            return [i.value for i in first["__interrupt__"]], out, theirs.values

    asked, out, read = asyncio.run(main())
    assert asked == ["ok?"]
    assert out == read == {"topic": "z", "notes": ["plan z", "asked ok"]}


def test_a_saver_of_ones_own():
    """A subclass of agentgraph's `BaseCheckpointSaver` (LangGraph's API) stores the runs."""
    from agentgraph.checkpoint.base import BaseCheckpointSaver
    from agentgraph.checkpoint.memory import InMemorySaver

    class Logged(BaseCheckpointSaver):
        def __init__(self):
            super().__init__()
            self.inner = lg_memory.InMemorySaver()
            self.calls = []

        def get_tuple(self, config):
            self.calls.append("get_tuple")
            return self.inner.get_tuple(config)

        def list(self, config, *, filter=None, before=None, limit=None):
            return self.inner.list(config, filter=filter, before=before, limit=limit)

        def put(self, config, checkpoint, metadata, new_versions):
            self.calls.append("put")
            return self.inner.put(config, checkpoint, metadata, new_versions)

        def put_writes(self, config, writes, task_id, task_path=""):
            self.calls.append("put_writes")
            self.inner.put_writes(config, writes, task_id, task_path)

    saver = Logged()
    config = {"configurable": {"thread_id": "t"}}
    graph = build(ag, ag_interrupt).compile(checkpointer=saver)
    graph.invoke({"topic": "q"}, config)
    assert graph.invoke(AgCommand(resume="fine"), config)["notes"] == ["plan q", "asked fine"]
    assert {"get_tuple", "put", "put_writes"} <= set(saver.calls)
    assert saver.get(config)["channel_values"]["notes"] == ["plan q", "asked fine"]
    assert isinstance(InMemorySaver(), BaseCheckpointSaver)
