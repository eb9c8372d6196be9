"""`cargo xtask bench --python`: its harness (`xtask/bench/langgraph_shapes.py`) runs a tiny
shape on agentgraph through `compat.install()`, and its report (`python_report.py`) puts the
two sides in one table, cells agentgraph cannot run yet included."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "xtask" / "bench"

sys.path.insert(0, str(BENCH))
import python_report  # noqa: E402


def test_a_tiny_shape_runs_on_agentgraph():
    pytest.importorskip("langgraph.graph")
    done = subprocess.run(
        [sys.executable, str(BENCH / "langgraph_shapes.py"), "--agentgraph", "--quick"]
        + ["--api", "sync", "--shape", "sequential_10", "--saver", "none", "--saver", "memory"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "AGENTGRAPH_BENCH_COMPAT": ""},
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    cells = {(line["saver"], line["durability"]) for line in lines}
    assert cells == {("none", "async"), ("memory", "exit"), ("memory", "async")}, lines
    for line in lines:
        assert line["runner"] == "agentgraph-py"
        assert line["check"] == {"messages": 0}
        assert line["super_steps"] == 10
        assert line["runs"] >= 1 and line["median_us"] > 0


def line(runner, shape, saver, durability, median_us, rss_kib, check):
    return {
        "runner": runner, "api": "async", "shape": shape, "saver": saver,
        "durability": durability, "super_steps": 10, "tasks": 10, "runs": 3,
        "median_us": median_us, "min_us": median_us, "peak_rss_kib": rss_kib, "check": check,
    }


def test_the_report_shows_speed_ups_and_cells_not_running_yet():
    theirs = [
        line("langgraph", "sequential_10", "none", "async", 4000.0, 80_000, {"messages": 0}),
        line("langgraph", "send_fanout_100", "none", "async", 9000.0, 90_000, {"results": 100}),
        line("langgraph", "sequential_10", "memory", "exit", 6000.0, 81_000, {"messages": 0}),
    ]
    ours = [
        line("agentgraph-py", "sequential_10", "none", "async", 100.0, 40_000, {"messages": 0}),
        line("agentgraph-py", "sequential_10", "memory", "exit", 1000.0, 90_000, {"messages": 1}),
        {"runner": "agentgraph-py", "api": "async", "shape": "send_fanout_100", "saver": "none",
         "error": "ValueError: Send is not supported yet"},
    ]
    table = python_report.report(theirs, ours)
    rows = {r.split(" | ")[1] + "/" + r.split(" | ")[2]: r for r in table.splitlines() if r.startswith("| async")}
    assert "| 4,000 | 100 | 40.0x | 78 | 39 |" in rows["sequential_10/none"]
    assert "not yet: ValueError: Send is not supported yet" in rows["send_fanout_100/none"]
    assert "6.0x (different result" in rows["sequential_10/memory (exit)"]
    assert "1 at 10x LangGraph or more, 1 below 10x, 1 not yet" in table
    assert "peak RSS lower in 1 of 2" in table
