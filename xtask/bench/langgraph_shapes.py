#!/usr/bin/env python3
"""LangGraph's side of `cargo xtask bench --vs-langgraph`, and both sides of `--python`.

The shapes of `agent-flows/benches/shapes` built with LangGraph: the graphs, sizes and payloads
of LangGraph's own benchmark suite (`libs/langgraph/bench`: sequential, react_agent,
wide_state, fanout_to_subgraph), plus `send_fanout`, which that suite does not have (one router
returns N `Send`s, each worker appends one string).

Every shape x saver runs in a process of its own (so peak RSS is per shape and saver; with
`--api both` the sync API runs after the async one in the same process, so its peak includes
the async runs'), each run with a fresh thread id, as LangGraph's suite does. An untimed first
run streams `values` and `debug` (subgraphs included) to count super-steps and tasks and to
keep the final state, which agentgraph's must match. With a saver, both durabilities are timed:
`exit` (what LangGraph's suite uses) and the default (`async`). Savers: none, InMemorySaver,
SqliteSaver (a file; `AsyncSqliteSaver` under the async API).

The async API on uvloop is what LangGraph's suite times first; `--api sync` times
`graph.stream`, `--api both` both. Prints one JSON object per line on stdout.

With `--agentgraph` (or `AGENTGRAPH_BENCH_COMPAT=1`, which the child processes inherit) the
very same program runs on agentgraph's Python package, `agentgraph.compat.install()` first, so
`import langgraph...` gives agentgraph's modules: same shapes, same nodes, same harness. A cell
that fails (a LangGraph feature agentgraph lacks yet) prints a line with its `error` and the
run goes on. Where agentgraph cannot stream `debug` with `subgraphs=True` yet, the census
streams `values` only (super-steps counted from it, tasks unknown) and says so (`census`).

    python langgraph_shapes.py [--agentgraph] [--quick] [--api async|sync|both] [--shape NAME]... [--saver KIND]... [--no-storage]
    python langgraph_shapes.py --storage        # checkpoint bytes of a 100- and 500-turn chat
"""

import argparse
import asyncio
import atexit
import json
import operator
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from random import choice
from typing import Annotated, Any, Optional
from uuid import uuid4

warnings.filterwarnings("ignore")

# The agentgraph side: compat installed before anything imports `langgraph`.
ON_AGENTGRAPH = "--agentgraph" in sys.argv or os.environ.get("AGENTGRAPH_BENCH_COMPAT") == "1"
if ON_AGENTGRAPH:
    os.environ["AGENTGRAPH_BENCH_COMPAT"] = "1"
    import agentgraph.compat  # noqa: E402

    agentgraph.compat.install()

from typing_extensions import TypedDict  # noqa: E402

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.constants import END, START  # noqa: E402
from langgraph.graph import MessagesState, StateGraph  # noqa: E402
try:
    from langgraph.types import Send  # noqa: E402
except ImportError:  # agentgraph without `Send` yet: the shapes using it fail, the rest run

    def Send(*_args, **_kwargs):  # noqa: N802 (stands in for the class)
        raise NotImplementedError("agentgraph has no `Send` yet")

RECURSION_LIMIT = 1_000_000
# SQLite files of this process, removed when it ends.
SCRATCH = tempfile.mkdtemp(prefix="lg-bench-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
LETTERS = "abcdefghijklmnopqrstuvwxyz"

# --------------------------------------------------------------------------------------------
# Shapes. Each builder returns (StateGraph builder, input) for the async or the sync API.
# --------------------------------------------------------------------------------------------


def sequential(n: int, api: str):
    """A chain of n no-op nodes over MessagesState (LangGraph's `create_sequential`)."""
    builder = StateGraph(MessagesState)

    def noop(state: MessagesState) -> None:
        return None

    async def anoop(state: MessagesState) -> None:
        return None

    prev = START
    for i in range(n):
        name = f"node_{i}"
        builder.add_node(name, anoop if api == "async" else noop)
        builder.add_edge(prev, name)
        prev = name
    builder.add_edge(prev, END)
    return builder, {"messages": []}


def send_fanout(n: int, api: str):
    """A router on START returns n Sends; each worker appends one string to `results`."""

    class FanState(TypedDict):
        count: int
        index: int
        results: Annotated[list[str], operator.add]

    def route(state: FanState):
        return [Send("worker", {"index": i}) for i in range(state["count"])]

    def worker(state: FanState):
        return {"results": [f"result {state['index']}"]}

    async def aworker(state: FanState):
        return {"results": [f"result {state['index']}"]}

    builder = StateGraph(FanState)
    builder.add_node("worker", aworker if api == "async" else worker)
    builder.add_conditional_edges(START, route, ["worker"])
    builder.add_edge("worker", END)
    return builder, {"count": n}


def react_agent(n: int, api: str):
    """LangGraph's `react_agent(n)`: a fake model makes n tool calls, one per turn (args: a uuid
    repeated 100 times), then answers "answer" x100; the tool returns "result for query: ..."
    x10. Built with the prebuilt agent, as LangGraph's suite does."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool

    try:
        from langgraph.prebuilt.chat_agent_executor import create_agent as make_agent
    except ImportError:
        from langgraph.prebuilt import create_react_agent as make_agent

    class FakeFunctionChatModel(FakeMessagesListChatModel):
        def bind_tools(self, functions: list, **kwargs: Any):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            response = self.responses[self.i].copy()
            if self.i < len(self.responses) - 1:
                self.i += 1
            else:
                self.i = 0
            return ChatResult(generations=[ChatGeneration(message=response)])

    tool = StructuredTool.from_function(
        lambda query: f"result for query: {query}" * 10,
        name=str(uuid4()),
        description="",
    )
    model = FakeFunctionChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    {"id": str(uuid4()), "name": tool.name, "args": {"query": str(uuid4()) * 100}}
                ],
                id=str(uuid4()),
            )
            for _ in range(n)
        ]
        + [AIMessage(content="answer" * 100, id=str(uuid4()))]
    )

    class Prebuilt:
        """Quacks like a StateGraph builder: the prebuilt agent compiles itself."""

        def compile(self, checkpointer=None):
            return make_agent(model, [tool], checkpointer=checkpointer)

    return Prebuilt(), {"messages": [HumanMessage("hi?")]}


def wide_state(n: int, outer: int, inner: int, api: str):
    """LangGraph's `wide_state(n)`: a 15-field dataclass state with list-append, dict-union and
    last-non-null reducers; one -> two -> {three, four} -> five -> six, back to one until
    messages exceed n. The input message is an outer x inner nested dict of
    ["hi?"*10, True, 1, 6327816386138, None]*5."""

    @dataclass(kw_only=True)
    class State:
        messages: Annotated[list, operator.add] = field(default_factory=list)
        trigger_events: Annotated[list, operator.add] = field(default_factory=list)
        primary_issue_medium: Annotated[str, lambda x, y: y or x] = field(default="email")
        autoresponse: Annotated[Optional[dict], lambda _, y: y] = field(default=None)
        issue: Annotated[dict | None, lambda x, y: y if y else x] = field(default=None)
        relevant_rules: Optional[list[dict]] = field(default=None)
        memory_docs: Optional[list[dict]] = field(default=None)
        categorizations: Annotated[list[dict], operator.add] = field(default_factory=list)
        responses: Annotated[list[dict], operator.add] = field(default_factory=list)
        user_info: Annotated[Optional[dict], lambda x, y: y if y is not None else x] = field(
            default=None
        )
        crm_info: Annotated[Optional[dict], lambda x, y: y if y is not None else x] = field(
            default=None
        )
        email_thread_id: Annotated[Optional[str], lambda x, y: y if y is not None else x] = (
            field(default=None)
        )
        slack_participants: Annotated[dict, operator.or_] = field(default_factory=dict)
        bot_id: Optional[str] = field(default=None)
        notified_assignees: Annotated[dict, operator.or_] = field(default_factory=dict)

    list_fields = {
        "messages",
        "trigger_events",
        "categorizations",
        "responses",
        "memory_docs",
        "relevant_rules",
    }
    dict_fields = {
        "user_info",
        "crm_info",
        "slack_participants",
        "notified_assignees",
        "autoresponse",
        "issue",
    }

    def read_write(read: str, write: Sequence[str], state: State) -> dict:
        val = getattr(state, read)
        val = {val: val} if isinstance(val, str) else val
        val_single = val[-1] if isinstance(val, list) else val
        val_list = val if isinstance(val, list) else [val]
        return {
            k: val_list
            if k in list_fields
            else val_single
            if k in dict_fields
            else "".join(choice(LETTERS) for _ in range(n))
            for k in write
        }

    builder = StateGraph(State)
    builder.add_edge(START, "one")
    builder.add_node("one", partial(read_write, "messages", ["trigger_events", "primary_issue_medium"]))
    builder.add_edge("one", "two")
    builder.add_node("two", partial(read_write, "trigger_events", ["autoresponse", "issue"]))
    builder.add_edge("two", "three")
    builder.add_edge("two", "four")
    builder.add_node("three", partial(read_write, "autoresponse", ["relevant_rules"]))
    builder.add_node(
        "four",
        partial(read_write, "trigger_events", ["categorizations", "responses", "memory_docs"]),
    )
    builder.add_node(
        "five",
        partial(
            read_write,
            "categorizations",
            [
                "user_info",
                "crm_info",
                "email_thread_id",
                "slack_participants",
                "bot_id",
                "notified_assignees",
            ],
        ),
    )
    builder.add_edge(["three", "four"], "five")
    builder.add_edge("five", "six")
    builder.add_node("six", partial(read_write, "responses", ["messages"]))
    builder.add_conditional_edges("six", lambda state: END if len(state.messages) > n else "one")

    message = {
        str(i) * 10: {
            str(j) * 10: ["hi?" * 10, True, 1, 6327816386138, None] * 5 for j in range(inner)
        }
        for i in range(outer)
    }
    return builder, {"messages": [message]}


def fanout_to_subgraph(n: int, api: str):
    """LangGraph's `fanout_to_subgraph`: Send each of n subjects (1,000 random letters) to a
    compiled subgraph that edits, generates, and bumps until its joke ends with " a" x10."""

    class OverallState(TypedDict):
        subjects: list[str]
        jokes: Annotated[list[str], operator.add]

    class JokeInput(TypedDict):
        subject: str

    class JokeOutput(TypedDict):
        jokes: list[str]

    class JokeState(JokeInput, JokeOutput): ...

    def continue_to_jokes(state: OverallState):
        return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]

    def bump(state: JokeOutput):
        return {"jokes": [state["jokes"][0] + " a"]}

    def generate(state: JokeInput):
        return {"jokes": [f"Joke about {state['subject']}"]}

    def edit(state: JokeInput):
        return {"subject": f"{state['subject']} - hohoho"}

    async def abump(state: JokeOutput):
        return bump(state)

    async def agenerate(state: JokeInput):
        return generate(state)

    async def aedit(state: JokeInput):
        return edit(state)

    async def acontinue_to_jokes(state: OverallState):
        return continue_to_jokes(state)

    def bump_loop(state: JokeOutput):
        return END if state["jokes"][0].endswith(" a" * 10) else "bump"

    is_async = api == "async"
    sub = StateGraph(JokeState, input_schema=JokeInput, output_schema=JokeOutput)
    sub.add_node("edit", aedit if is_async else edit)
    sub.add_node("generate", agenerate if is_async else generate)
    sub.add_node("bump", abump if is_async else bump)
    sub.set_entry_point("edit")
    sub.add_edge("edit", "generate")
    sub.add_edge("generate", "bump")
    sub.add_conditional_edges("bump", bump_loop)
    sub.set_finish_point("generate")
    subgraph = sub.compile()

    builder = StateGraph(OverallState)
    builder.add_node("generate_joke", subgraph)
    builder.add_conditional_edges(START, acontinue_to_jokes if is_async else continue_to_jokes)
    builder.add_edge("generate_joke", END)
    rng = random.Random(7)
    subjects = [rng.choices(LETTERS, k=1000) for _ in range(n)]
    return builder, {"subjects": subjects}


SHAPES = {
    "sequential_10": partial(sequential, 10),
    "sequential_1000": partial(sequential, 1000),
    "send_fanout_100": partial(send_fanout, 100),
    "send_fanout_1000": partial(send_fanout, 1000),
    "react_agent_10x": partial(react_agent, 10),
    "react_agent_100x": partial(react_agent, 100),
    "wide_state_25x300": partial(wide_state, 300, 5, 5),
    "wide_state_15x600": partial(wide_state, 600, 3, 5),
    "wide_state_9x1200": partial(wide_state, 1200, 3, 3),
    "fanout_to_subgraph_10x": partial(fanout_to_subgraph, 10),
    "fanout_to_subgraph_100x": partial(fanout_to_subgraph, 100),
}

SAVERS = ("none", "memory", "sqlite")

# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------


def peak_rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def budget(shape: str, quick: bool) -> tuple[float, int, int]:
    """(seconds, min runs, max runs) for one shape x saver x durability."""
    big = shape.endswith(("_1000", "_100x")) or shape.startswith("wide_state")
    if quick:
        return (0.0, 1, 1) if big else (0.2, 3, 100)
    return (1.0, 2, 100) if big else (0.5, 5, 500)


def check_of(shape: str, out: dict) -> dict:
    """A digest of the final state, compared with agentgraph's (same shape, same result)."""
    if shape.startswith("sequential") or shape.startswith("react_agent"):
        return {"messages": len(out["messages"])}
    if shape.startswith("send_fanout"):
        return {"results": len(out["results"])}
    if shape.startswith("wide_state"):
        return {"messages": len(out["messages"])}
    jokes = out["jokes"]
    return {"jokes": len(jokes), "joke_chars": len(jokes[0]) if jokes else 0}


def config(thread: bool) -> dict:
    cfg: dict = {"recursion_limit": RECURSION_LIMIT}
    if thread:
        cfg["configurable"] = {"thread_id": str(uuid4())}
    return cfg


class Census:
    """Counts super-steps and tasks (subgraphs included) and keeps the final state, from one
    untimed run that streams `values` and `debug` (it also warms the graph up)."""

    def __init__(self) -> None:
        self.steps: set = set()
        self.tasks: Optional[int] = 0
        self.final: dict = {}
        self.kind = "values+debug"

    def see(self, ns, mode, chunk) -> None:
        if mode == "debug" and chunk.get("type") == "task":
            self.tasks += 1
            self.steps.add((ns, chunk["step"]))
        elif mode == "values" and not ns:
            self.final = chunk


MODES = ["values", "debug"]


def census_unsupported(error: Exception) -> bool:
    """agentgraph without the `debug` mode or `subgraphs=True` yet (then the census falls
    back to `values`); any other failure is the shape's."""
    text = str(error)
    return ON_AGENTGRAPH and (
        "stream_mode" in text or "not enough values to unpack" in text or "subgraphs" in text
    )


def values_census(census: Census, chunks: list) -> Census:
    """The census from `values` chunks only: one per super-step after the input's."""
    census.kind = "values"
    census.tasks = None
    census.steps = {((), i) for i in range(max(len(chunks) - 1, 0))}
    census.final = chunks[-1] if chunks else {}
    return census


def timed_loop(run_once, seconds: float, min_runs: int, max_runs: int) -> list[float]:
    """Sync: runs `run_once` until the time budget is spent; microseconds per run."""
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < max_runs and (
        len(times) < min_runs or time.perf_counter() - started < seconds
    ):
        t0 = time.perf_counter_ns()
        run_once()
        times.append((time.perf_counter_ns() - t0) / 1000)
    return times


async def atimed_loop(run_once, seconds: float, min_runs: int, max_runs: int) -> list[float]:
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < max_runs and (
        len(times) < min_runs or time.perf_counter() - started < seconds
    ):
        t0 = time.perf_counter_ns()
        await run_once()
        times.append((time.perf_counter_ns() - t0) / 1000)
    return times


def record(shape, saver, api, durability, times, census: Census) -> dict:
    median = statistics.median(times)
    low = min(times)
    steps = len(census.steps)
    return {
        "runner": runner(),
        "version": langgraph_version(),
        "api": api,
        "shape": shape,
        "saver": saver,
        "durability": durability,
        "super_steps": steps,
        "tasks": census.tasks,
        "runs": len(times),
        "median_us": round(median, 1),
        "min_us": round(low, 1),
        "median_us_per_step": round(median / max(steps, 1), 3),
        "min_us_per_step": round(low / max(steps, 1), 3),
        "peak_rss_kib": peak_rss_kib(),
        "check": check_of(shape, census.final),
        "census": census.kind,
    }


def runner() -> str:
    return "agentgraph-py" if ON_AGENTGRAPH else "langgraph"


def langgraph_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentgraph" if ON_AGENTGRAPH else "langgraph")
    except PackageNotFoundError:
        return "unknown"


def failure(shape: str, saver: str, api: str, error: str) -> dict:
    """A cell that could not run, for the report."""
    return {"runner": runner(), "api": api, "shape": shape, "saver": saver, "error": error}


def run_child(shape: str, saver: str, api: str, quick: bool) -> None:
    seconds, min_runs, max_runs = budget(shape, quick)
    durabilities = [None] if saver == "none" else ["exit", None]
    db_path = os.path.join(SCRATCH, f"checkpoints-{api}.sqlite")
    thread = saver != "none"

    if api == "sync":
        builder, inp = SHAPES[shape]("sync")
        if saver == "none":
            checkpointer = None
        elif saver == "memory":
            checkpointer = InMemorySaver()
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            checkpointer = SqliteSaver(sqlite3.connect(db_path, check_same_thread=False))
        graph = builder.compile(checkpointer=checkpointer)
        census = Census()
        try:
            for ns, mode, chunk in graph.stream(
                inp, config(thread), stream_mode=MODES, subgraphs=True
            ):
                census.see(ns, mode, chunk)
        except Exception as error:
            if not census_unsupported(error):
                raise
            chunks = list(graph.stream(inp, config(thread), stream_mode="values"))
            census = values_census(Census(), chunks)
        for durability in durabilities:

            def once(durability=durability):
                for _ in graph.stream(inp, config(thread), durability=durability):
                    pass

            times = timed_loop(once, seconds, min_runs, max_runs)
            line = record(shape, saver, "sync", durability or "async", times, census)
            print(json.dumps(line), flush=True)
        return

    import uvloop

    async def main() -> None:
        builder, inp = SHAPES[shape]("async")
        if saver == "none":
            checkpointer = None
        elif saver == "memory":
            checkpointer = InMemorySaver()
        else:
            import aiosqlite
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            checkpointer = AsyncSqliteSaver(await aiosqlite.connect(db_path))
        graph = builder.compile(checkpointer=checkpointer)
        census = Census()
        try:
            async for ns, mode, chunk in graph.astream(
                inp, config(thread), stream_mode=MODES, subgraphs=True
            ):
                census.see(ns, mode, chunk)
        except Exception as error:
            if not census_unsupported(error):
                raise
            chunks = [c async for c in graph.astream(inp, config(thread), stream_mode="values")]
            census = values_census(Census(), chunks)
        for durability in durabilities:

            async def once(durability=durability):
                async for _ in graph.astream(inp, config(thread), durability=durability):
                    pass

            times = await atimed_loop(once, seconds, min_runs, max_runs)
            line = record(shape, saver, "async", durability or "async", times, census)
            print(json.dumps(line), flush=True)
        if saver == "sqlite":
            await checkpointer.conn.close()

    uvloop.run(main())


# --------------------------------------------------------------------------------------------
# Storage: checkpoint bytes of a 100- and 500-turn chat (same messages as agentgraph's)
# --------------------------------------------------------------------------------------------


def human_text(turn: int) -> str:
    return f"question {turn}: " + "how do I keep a long conversation cheap to store? " * 2


def ai_text(turn: int) -> str:
    return f"answer {turn}: " + "store what changed, not the whole history again. " * 4


def run_storage() -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    def chat(state: MessagesState):
        turn = sum(1 for m in state["messages"] if m.type == "human")
        return {"messages": [AIMessage(ai_text(turn), id=f"ai-{turn}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)

    tmp = SCRATCH
    savers = {
        "memory": InMemorySaver(),
        "sqlite": SqliteSaver(
            sqlite3.connect(os.path.join(tmp, "chat.sqlite"), check_same_thread=False)
        ),
    }

    def stored_bytes(kind: str, saver) -> int:
        if kind == "memory":
            total = sum(len(v[1]) for v in saver.blobs.values() if v[1] is not None)
            for ns in saver.storage.values():
                for checkpoints in ns.values():
                    for checkpoint, metadata, _parent in checkpoints.values():
                        total += len(checkpoint[1]) + len(metadata[1])
            return total
        cur = saver.conn.execute(
            "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
        )
        total = cur.fetchone()[0]
        cur = saver.conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes")
        return total + cur.fetchone()[0]

    for kind, saver in savers.items():
        graph = builder.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "chat"}}
        for turn in range(1, 501):
            graph.invoke({"messages": [HumanMessage(human_text(turn), id=f"h-{turn}")]}, cfg)
            if turn in (100, 500):
                print(
                    json.dumps(
                        {
                            "runner": "langgraph",
                            "kind": "storage",
                            "saver": kind,
                            "turns": turn,
                            "bytes": stored_bytes(kind, saver),
                            "note": "memory: blobs + checkpoints + metadata; sqlite: checkpoints + metadata + writes",
                        }
                    ),
                    flush=True,
                )


# --------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short time budgets")
    parser.add_argument("--api", choices=["async", "sync", "both"], default="async")
    parser.add_argument("--shape", action="append", help="only these shapes (repeatable)")
    parser.add_argument("--saver", action="append", choices=SAVERS, help="only these savers")
    parser.add_argument("--storage", action="store_true", help="only the chat storage sizes")
    parser.add_argument("--no-storage", action="store_true", help="skip the chat storage sizes")
    parser.add_argument("--agentgraph", action="store_true", help="run on agentgraph (compat)")
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds a cell may take before it counts as failed"
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="child processes per cell (the report keeps the median)"
    )
    parser.add_argument("--child", nargs=3, metavar=("SHAPE", "SAVER", "APIS"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        shape, saver, apis = args.child
        for api in apis.split(","):
            try:
                run_child(shape, saver, api, args.quick)
            except Exception as error:
                reason = f"{type(error).__name__}: {error}".splitlines()[0][:240]
                print(json.dumps(failure(shape, saver, api, reason)), flush=True)
                print(f"{runner()}: {shape} / {saver} ({api}): {reason}", file=sys.stderr)
                return 1
        return 0
    if args.storage:
        run_storage()
        return 0

    shapes = args.shape or list(SHAPES)
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shape(s) {unknown}; known: {list(SHAPES)}")
    apis = "async,sync" if args.api == "both" else args.api
    if args.processes < 1:
        parser.error("--processes needs a count of 1 or more")
    failed = 0
    # Rounds over every cell, as the agentgraph side does.
    cells = [(shape, saver) for shape in shapes for saver in args.saver or SAVERS]
    for round_ in range(1, args.processes + 1):
        of = f" ({round_} of {args.processes})" if args.processes > 1 else ""
        for shape, saver in cells:
            cmd = [sys.executable, __file__, "--child", shape, saver, apis]
            if args.quick:
                cmd.append("--quick")
            print(f"{runner()}: {shape} / {saver} ({apis}){of}", file=sys.stderr, flush=True)
            try:
                done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout)
                out, code = done.stdout, done.returncode
            except subprocess.TimeoutExpired as expired:
                out = expired.stdout or ""
                out = out.decode() if isinstance(out, bytes) else out
                code, out = -1, out + json.dumps(
                    failure(shape, saver, apis, f"timed out after {args.timeout:.0f} s")
                ) + "\n"
            if code != 0 and '"error"' not in out:
                # Died without saying why (a crash): the cell still gets its line.
                out += json.dumps(failure(shape, saver, apis, f"exit status {code}")) + "\n"
            sys.stdout.write(out)
            sys.stdout.flush()
            if code != 0:
                failed += 1
                print(f"{runner()}: {shape} / {saver} failed", file=sys.stderr)
    if not args.shape and not args.saver and not args.no_storage and not ON_AGENTGRAPH:
        done = subprocess.run([sys.executable, __file__, "--storage"], stdout=subprocess.PIPE, text=True)
        sys.stdout.write(done.stdout)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
