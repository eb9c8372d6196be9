"""agentgraph's SQLite and PostgreSQL savers: threads outlive the process, values keep their types."""

import os
import subprocess
import sys
import textwrap

import pytest

# A graph that pauses for a human, its state holding values JSON has no type for.
PROGRAM = textwrap.dedent(
    """
    import dataclasses, operator, sys
    from datetime import datetime, timezone
    from typing import Annotated, TypedDict
    from langchain_core.messages import HumanMessage
    from agentgraph.graph import START, END, StateGraph
    from agentgraph.types import interrupt, Command
    from agentgraph.checkpoint.sqlite import SqliteSaver

    @dataclasses.dataclass
    class Note:
        text: str

    class State(TypedDict):
        when: datetime
        tags: set
        notes: Annotated[list, operator.add]

    def ask(state):
        answer = interrupt("approve?")
        return {"notes": [Note(answer), HumanMessage(content=answer, id="h")]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(sys.argv[2]) as saver:
        graph = builder.compile(checkpointer=saver)
        if sys.argv[1] == "start":
            out = graph.invoke({"when": datetime(2024, 1, 2, tzinfo=timezone.utc), "tags": {"a"}}, config)
            print(sorted(out))
        elif sys.argv[1] == "resume":
            print(graph.get_state(config).next)
            out = graph.invoke(Command(resume="yes"), config)
            print([type(v).__name__ for v in (out["when"], out["tags"], *out["notes"])])
            print(out["when"], out["tags"], out["notes"][0])
        else:
            state = graph.get_state(config)
            print(state.next, state.values["notes"][1].content, type(state.values["notes"][1]).__name__)
    """
)


def run(tmp_path, *args):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(program), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_thread_goes_on_in_another_process(tmp_path):
    pytest.importorskip("langchain_core")
    db = str(tmp_path / "threads.sqlite")
    assert run(tmp_path, "start", db) == ["['__interrupt__', 'notes', 'tags', 'when']"]
    assert run(tmp_path, "resume", db) == [
        "('ask',)",
        "['datetime', 'set', 'Note', 'HumanMessage']",
        "2024-01-02 00:00:00+00:00 {'a'} Note(text='yes')",
    ]
    assert run(tmp_path, "read", db) == ["() yes HumanMessage"]


def test_values_are_stored_in_langgraphs_format(tmp_path):
    """The stored value is JsonPlus msgpack: LangGraph's serializer reads it."""
    jsonplus = pytest.importorskip("langgraph.checkpoint.serde.jsonplus")
    import sqlite3

    db = str(tmp_path / "threads.sqlite")
    run(tmp_path, "start", db)
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
    found = []
    for table in tables:
        columns = [r[1] for r in conn.execute(f"pragma table_info({table})")]
        for column in columns:
            for (cell,) in conn.execute(f"select {column} from {table}"):
                if isinstance(cell, bytes) and b"msgpack" in cell:
                    found.append(cell)
    assert found, f"no msgpack value in {tables}"
    import ormsgpack

    values = []
    for cell in found:
        try:
            pair = ormsgpack.unpackb(cell)
        except Exception:
            continue
        if isinstance(pair, list) and len(pair) == 2 and pair[0] == "msgpack":
            values.append(jsonplus.JsonPlusSerializer().loads_typed(tuple(pair)))
    assert {"a"} in values


CUSTOM = textwrap.dedent(
    """
    import operator, sys
    from typing import Annotated, TypedDict
    from agentgraph.graph import START, StateGraph
    from agentgraph.checkpoint.memory import InMemorySaver
    from agentgraph.checkpoint.sqlite import SqliteSaver
    from agentgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    class Counting(JsonPlusSerializer):
        dumps = loads = 0
        def dumps_typed(self, obj):
            Counting.dumps += 1
            type_, data = super().dumps_typed(obj)
            return "counted+" + type_, data
        def loads_typed(self, data):
            Counting.loads += 1
            return super().loads_typed((data[0].removeprefix("counted+"), data[1]))

    class State(TypedDict):
        log: Annotated[list, operator.add]

    serde = Counting()
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"log": ["a"]})
    builder.add_edge(START, "a")
    graph = builder.compile(checkpointer=SqliteSaver(sys.argv[1], serde=serde))
    config = {"configurable": {"thread_id": "t"}}
    print(graph.invoke({"log": ["in"]}, config), graph.get_state(config).values)
    print(Counting.dumps > 0, Counting.loads > 0)
    try:
        InMemorySaver(serde=JsonPlusSerializer())
    except ValueError as e:
        print("refused:", "one serializer per process" in str(e))
    """
)


def test_a_serializer_of_ones_own(tmp_path):
    program = tmp_path / "custom.py"
    program.write_text(CUSTOM)
    done = subprocess.run(
        [sys.executable, str(program), str(tmp_path / "c.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "{'log': ['in', 'a']} {'log': ['in', 'a']}",
        "True True",
        "refused: True",
    ]


def test_sqlite_saver_takes_a_connection_and_memory():
    import sqlite3

    from agentgraph.checkpoint.sqlite import SqliteSaver, _path

    assert _path(":memory:") is None
    assert _path(sqlite3.connect(":memory:")) is None
    SqliteSaver(sqlite3.connect(":memory:"))


def test_async_sqlite_saver(tmp_path):
    import asyncio
    import operator
    from typing import Annotated, TypedDict

    from agentgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from agentgraph.graph import START, StateGraph

    class State(TypedDict):
        log: Annotated[list, operator.add]

    async def node(state):
        return {"log": ["n"]}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")

    async def main():
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            graph = builder.compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "t"}}
            await graph.ainvoke({"log": []}, config)
            await graph.ainvoke({"log": []}, config)
            return (await graph.aget_state(config)).values

    assert asyncio.run(main()) == {"log": ["n", "n"]}


@pytest.mark.skipif(
    not os.environ.get("AGENTGRAPH_POSTGRES_URL"), reason="AGENTGRAPH_POSTGRES_URL is not set"
)
def test_postgres_saver():
    import operator
    import uuid
    from typing import Annotated, TypedDict

    from agentgraph.checkpoint.postgres import PostgresSaver
    from agentgraph.graph import START, StateGraph

    class State(TypedDict):
        log: Annotated[list, operator.add]

    builder = StateGraph(State)
    builder.add_node("n", lambda s: {"log": [{"n": uuid.UUID(int=1)}]})
    builder.add_edge(START, "n")
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    with PostgresSaver.from_conn_string(os.environ["AGENTGRAPH_POSTGRES_URL"]) as saver:
        saver.setup()
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"log": []}, config)
        values = graph.get_state(config).values
        saver.delete_thread(config["configurable"]["thread_id"])
        assert graph.get_state(config).metadata is None  # nothing stored any more
    assert values == {"log": [{"n": uuid.UUID(int=1)}]}


PARALLEL = textwrap.dedent(
    """
    import operator, sys
    from typing import Annotated, TypedDict
    from agentgraph.graph import START, StateGraph
    from agentgraph.types import interrupt, Command
    from agentgraph.checkpoint.sqlite import SqliteSaver

    class Other(TypedDict):
        x: int

    class State(TypedDict):
        log: Annotated[list, operator.add]

    if sys.argv[1] == "resume":
        # Another graph first: this process numbers its schemas differently.
        other = StateGraph(Other)
        other.add_node("n", lambda s: {})
        other.add_edge(START, "n")
        kept = other.compile()  # alive: its schema keeps its number

    def fast(state):
        print("fast ran", flush=True)
        return {"log": ["fast"]}

    def slow(state):
        return {"log": [f"slow:{interrupt('go?')}"]}

    builder = StateGraph(State)
    builder.add_node("fast", fast)
    builder.add_node("slow", slow)
    builder.add_edge(START, "fast")
    builder.add_edge(START, "slow")
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(sys.argv[2]) as saver:
        graph = builder.compile(checkpointer=saver)
        if sys.argv[1] == "start":
            print(sorted(graph.invoke({"log": ["in"]}, config)))
        else:
            print(graph.invoke(Command(resume="yes"), config))
    """
)


def test_a_sibling_tasks_output_is_read_by_another_process(tmp_path):
    """A finished task's output, stored next to its interrupted sibling, is applied when
    another process (whose schema numbers differ) resumes: `fast` does not run again."""
    program = tmp_path / "parallel.py"
    program.write_text(PARALLEL)
    db = str(tmp_path / "p.sqlite")

    def run(*args):
        done = subprocess.run([sys.executable, str(program), *args, db], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert run("start") == ["fast ran", "['__interrupt__', 'log']"]
    assert run("resume") == ["{'log': ['in', 'fast', 'slow:yes']}"]


@pytest.mark.skipif(
    not os.environ.get("AGENTGRAPH_POSTGRES_URL"), reason="AGENTGRAPH_POSTGRES_URL is not set"
)
def test_async_postgres_saver_and_another_process(tmp_path):
    import uuid

    thread = str(uuid.uuid4())
    program = tmp_path / "pg.py"
    program.write_text(
        textwrap.dedent(
            """
            import asyncio, operator, sys
            from datetime import date
            from typing import Annotated, TypedDict
            from agentgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from agentgraph.graph import START, StateGraph

            class State(TypedDict):
                log: Annotated[list, operator.add]

            async def node(state):
                return {"log": [date(2024, 1, len(state["log"]) + 1)]}

            builder = StateGraph(State)
            builder.add_node("n", node)
            builder.add_edge(START, "n")

            async def main():
                async with AsyncPostgresSaver.from_conn_string(sys.argv[1]) as saver:
                    graph = builder.compile(checkpointer=saver)
                    out = await graph.ainvoke({"log": []}, {"configurable": {"thread_id": sys.argv[2]}})
                    print(out["log"])

            asyncio.run(main())
            """
        )
    )
    url = os.environ["AGENTGRAPH_POSTGRES_URL"]
    outs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(program), url, thread], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout.strip())
    assert outs == [
        "[datetime.date(2024, 1, 1)]",
        "[datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]",
    ]
