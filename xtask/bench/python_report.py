#!/usr/bin/env python3
"""The table of `cargo xtask bench --python`: LangGraph's and agentgraph's JSON lines (both
from `langgraph_shapes.py`) side by side, one row per API, shape, saver and durability.

A cell agentgraph could not run is a row that says "not yet" and why; a final state that
differs from LangGraph's (the shapes' `check` digest) is flagged. With `--processes N` each
cell has N lines: the median of their medians is shown, the peak RSS is the highest.

    python python_report.py LANGGRAPH.jsonl AGENTGRAPH.jsonl [--out python.md] [--machine TEXT]
"""

import argparse
import json
import statistics
import sys


def read(path: str) -> list[dict]:
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def cells(rows: list[dict]) -> tuple[dict, dict]:
    """Timed lines by (api, shape, saver, durability); failures by (shape, saver)."""
    timed: dict = {}
    failed: dict = {}
    for row in rows:
        if row.get("kind") == "storage":
            continue
        if "error" in row:
            reason = row["error"].replace(" (agentgraph.compat is installed)", "")
            failed.setdefault((row["shape"], row["saver"]), reason)
            continue
        key = (row["api"], row["shape"], row["saver"], row["durability"])
        timed.setdefault(key, []).append(row)
    return timed, failed


def summary(lines: list[dict]) -> dict:
    return {
        "median_us": statistics.median(line["median_us"] for line in lines),
        "peak_rss_kib": max(line["peak_rss_kib"] for line in lines),
        "check": lines[0]["check"],
        "super_steps": lines[0]["super_steps"],
        "census": lines[0].get("census", "values+debug"),
    }


def us(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def report(theirs: list[dict], ours: list[dict], machine: str = "") -> str:
    their_cells, their_failed = cells(theirs)
    our_cells, our_failed = cells(ours)
    shape_order = list(dict.fromkeys(r["shape"] for r in theirs + ours if "shape" in r))
    keys = sorted(
        set(their_cells) | set(our_cells),
        key=lambda k: (k[0], shape_order.index(k[1]), ["none", "memory", "sqlite"].index(k[2]), k[3]),
    )
    # Cells agentgraph failed: one row per LangGraph cell of that shape and saver.
    lines = []
    if machine:
        lines += [f"Machine: {machine}.", ""]
    lines += [
        "| API | shape | saver (durability) | LangGraph µs | agentgraph µs | speed-up | peak RSS MiB LangGraph | peak RSS MiB agentgraph |",
        "|---|---|---|--:|--:|--:|--:|--:|",
    ]
    fast = slow = lighter = not_yet = 0
    notes = set()
    seen_failed = set()
    for key in keys:
        api, shape, saver, durability = key
        label = saver if saver == "none" else f"{saver} ({durability})"
        lg = summary(their_cells[key]) if key in their_cells else None
        ag = summary(our_cells[key]) if key in our_cells else None
        lg_us = us(lg["median_us"]) if lg else f"failed: {their_failed.get((shape, saver), '?')}"
        lg_rss = mib(lg["peak_rss_kib"]) if lg else ""
        if ag is None:
            reason = our_failed.get((shape, saver), "no result")
            seen_failed.add((shape, saver))
            not_yet += 1
            lines.append(f"| {api} | {shape} | {label} | {lg_us} | not yet: {reason} | | {lg_rss} | |")
            continue
        ratio = ""
        if lg:
            speedup = lg["median_us"] / ag["median_us"]
            ratio = f"{speedup:,.1f}x"
            fast += speedup >= 10
            slow += speedup < 10
            lighter += ag["peak_rss_kib"] < lg["peak_rss_kib"]
            if ag["check"] != lg["check"]:
                ratio += f" (different result: {ag['check']} vs {lg['check']})"
        if ag["census"] != "values+debug":
            notes.add("census")
        lines.append(
            f"| {api} | {shape} | {label} | {lg_us} | {us(ag['median_us'])} | {ratio} | {lg_rss} | {mib(ag['peak_rss_kib'])} |"
        )
    for (shape, saver), reason in our_failed.items():
        if (shape, saver) not in seen_failed:
            not_yet += 1
            lines.append(f"| | {shape} | {saver} | | not yet: {reason} | | | |")
    lines += [
        "",
        f"Cells: {fast} at 10x LangGraph or more, {slow} below 10x, {not_yet} not yet running "
        f"on agentgraph; agentgraph's peak RSS lower in {lighter} of {fast + slow}.",
        "",
        "µs: the median of one run (a fresh thread each time). Peak RSS: the whole process of one "
        "shape x saver (each runs in its own), Python and the shapes' imports included.",
    ]
    if "census" in notes:
        lines.append(
            "Some agentgraph cells counted super-steps from the `values` stream (`debug` with "
            "`subgraphs=True` not there yet); the timed runs are the same either way."
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("langgraph")
    parser.add_argument("agentgraph")
    parser.add_argument("--out")
    parser.add_argument("--machine", default="")
    args = parser.parse_args()
    text = report(read(args.langgraph), read(args.agentgraph), args.machine)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
