"""agentgraph's `AsyncSqliteSaver` given an `aiosqlite.Connection`, as LangGraph's is used:
the connection's own database (a file, or `:memory:`), never a file named after the object,
and a failed run leaves nothing that keeps the process from exiting."""

import os
import subprocess
import sys
import textwrap

import pytest

aiosqlite = pytest.importorskip("aiosqlite")

# Runs a one-node graph with a thread on `AsyncSqliteSaver(await aiosqlite.connect(DB))`, then
# reads the thread back through a second saver on a second connection to the same database.
PROGRAM = textwrap.dedent(
    """
    import asyncio, operator, sys
    from typing import Annotated, TypedDict
    import aiosqlite
    from agentgraph.graph import START, END, StateGraph
    from agentgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class State(TypedDict):
        log: Annotated[list, operator.add]

    async def step(state):
        return {"log": ["ran"]}

    def build(saver):
        builder = StateGraph(State)
        builder.add_node("step", step)
        builder.add_edge(START, "step")
        builder.add_edge("step", END)
        return builder.compile(checkpointer=saver)

    async def main(db, awaited):
        config = {"configurable": {"thread_id": "t"}}
        conn = aiosqlite.connect(db)
        if awaited:
            conn = await conn
        graph = build(AsyncSqliteSaver(conn))
        print(await graph.ainvoke({"log": []}, config))
        if awaited:
            await conn.close()
        async with aiosqlite.connect(db) as again:
            state = await build(AsyncSqliteSaver(again)).aget_state(config)
            print("read back:", state.values)

    asyncio.run(main(sys.argv[1], sys.argv[2] == "awaited"))
    """
)


def run(tmp_path, *args, timeout=60):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("awaited", ["awaited", "not-awaited"])
def test_uses_the_connections_database_file(tmp_path, awaited):
    db = tmp_path / "sub" / "checkpoints.sqlite"
    db.parent.mkdir()
    done = run(tmp_path, PROGRAM, str(db), awaited)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'log': ['ran']}", "read back: {'log': ['ran']}"]
    assert db.exists() and db.stat().st_size > 0
    # Nothing else appeared beside the program (no file named after the connection object).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_in_memory_connection(tmp_path):
    done = run(tmp_path, PROGRAM, ":memory:", "awaited")
    assert done.returncode == 0, done.stderr
    # The run checkpointed in memory; a second connection to `:memory:` is another database.
    assert done.stdout.splitlines() == ["{'log': ['ran']}", "read back: {}"]
    assert list(tmp_path.iterdir()) == []


def test_an_object_that_is_no_connection_is_refused(tmp_path):
    from agentgraph.checkpoint.sqlite import SqliteSaver
    from agentgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    with pytest.raises(TypeError):
        AsyncSqliteSaver(object())
    with pytest.raises(TypeError):
        SqliteSaver(object())


FAILING = textwrap.dedent(
    """
    import asyncio, sys
    from typing import TypedDict
    import aiosqlite
    from agentgraph.graph import START, END, StateGraph
    from agentgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class State(TypedDict):
        n: int

    async def boom(state):
        raise RuntimeError("node failed")

    async def main(db):
        saver = AsyncSqliteSaver(await aiosqlite.connect(db))
        builder = StateGraph(State)
        builder.add_node("boom", boom)
        builder.add_edge(START, "boom")
        builder.add_edge("boom", END)
        graph = builder.compile(checkpointer=saver)
        async for _ in graph.astream({"n": 1}, {"configurable": {"thread_id": "t"}}):
            pass

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_failed_run_does_not_keep_the_process_from_exiting(tmp_path):
    # The connection is never closed, as in a program that dies on the run's exception (the
    # traceback's frames keep it in a cycle, collected only after the non-daemon threads are
    # joined: LangGraph's own saver hangs here). agentgraph's saver never uses the connection,
    # and stops its worker at exit.
    try:
        done = run(tmp_path, FAILING, str(tmp_path / "db.sqlite"), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the process hung after the failed run")
    assert done.returncode == 1
    assert "RuntimeError: node failed" in done.stderr
