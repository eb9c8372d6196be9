#!/usr/bin/env python3
"""The thread-streaming protocol (v2) with the real python SDK (langgraph-sdk 0.4.14):
`client.threads.stream(...)`, async and sync, over SSE and WebSocket.

Usage: python stream_check.py URL [--only a,b] [--serial] [--timeout S] [--api-key K]

The server must serve the reference graphs (agentgraph's `agent-server/examples/reference`,
with `--with-tools`): `agent` (`chat` streams "echo: <text>" token by token, subgraph `sub`
whose `sub_ask` interrupts on "subask", `human` interrupts on the word "ask") and `tools` (a
model asks for `add` with the question's two numbers, the tool answers, the model streams
"the sum is N").

Prints `ok NAME` or `FAIL NAME: why` per check, then `python stream: N passed, M failed`;
exits 0 only when every check passed.
"""
import argparse
import asyncio
import json
import sys
import time
import uuid

import httpx
from langgraph_sdk import get_client, get_sync_client

from checks import expect, run_one, short

CHECKS = []


def check(fn):
    CHECKS.append((fn.__name__.removeprefix("check_"), fn))
    return fn


def human(text):
    return {"messages": [{"role": "user", "content": text}]}


def texts(values, typ=None):
    return [m.get("content") for m in (values or {}).get("messages") or []
            if typ is None or m.get("type") == typ]


async def tokens_of(thread):
    """Each root message streamed on `thread.messages`, as its text pieces. The async SDK
    feeds a message's projections while `thread.messages` is iterated, so each message's
    text is read by a task of its own while the loop goes on."""
    async def pieces(m):
        return [t async for t in m.text]

    tasks = []
    async for m in thread.messages:
        tasks.append(asyncio.create_task(pieces(m)))
    return list(await asyncio.gather(*tasks))


async def tokens_and_output(c, transport):
    async with c.threads.stream(assistant_id="agent", transport=transport) as thread:
        await thread.run.start(input=human("hello there"))
        streamed = await tokens_of(thread)
        final = await thread.output.with_timeout(30)
    expect(streamed, "thread.messages yielded no message")
    first = streamed[0]
    expect(len(first) > 1, f"the answer should come token by token, got {short(first)}")
    expect("".join(first) == "echo: hello there", f"the streamed text: {short(first)}")
    ai = texts(final, "ai")
    expect(ai and ai[0] == "echo: hello there", f"thread.output's AI messages: {short(final)}")


@check
async def check_tokens(c):
    await tokens_and_output(c, "sse")


@check
async def check_tokens_websocket(c):
    await tokens_and_output(c, "websocket")


@check
async def check_tool_calls(c):
    async with c.threads.stream(assistant_id="tools") as thread:
        await thread.run.start(input=human("add 2 and 40"))
        calls = [call async for call in thread.tool_calls]
        seen = [(call.name, call.input, await asyncio.wait_for(call.output, 10)) for call in calls]
        final = await thread.output.with_timeout(30)
    expect(len(seen) == 1, f"one tool call expected, got {short(seen)}")
    name, args, output = seen[0]
    expect(name == "add" and args == {"a": 2, "b": 40}, f"the call: {short(seen[0])}")
    content = output.get("content") if isinstance(output, dict) else getattr(output, "content", output)
    expect(str(content) == "42", f"the tool's output: {short(output)}")
    expect(texts(final, "ai")[-1] == "the sum is 42", f"the final answer: {short(final)}")


@check
async def check_tool_call_blocks(c):
    """The model's tool call streams as content blocks of its message."""
    async with c.threads.stream(assistant_id="tools") as thread:
        await thread.run.start(input=human("add 1 and 2"))
        streams = [m async for m in thread.messages]
        finals = [await asyncio.wait_for(m, 10) for m in streams]
    expect(len(finals) == 2, f"two model messages expected (the call, the answer): {short(finals)}")
    calls = getattr(finals[0], "tool_calls", None) or []
    expect(calls and calls[0]["name"] == "add" and calls[0]["args"] == {"a": 1, "b": 2},
           f"the first message's tool calls: {short(finals[0])}")
    expect(getattr(finals[1], "text", None) == "the sum is 3", f"the answer: {short(finals[1])}")


@check
async def check_interrupt_respond(c):
    async with c.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=human("please ask me"))
        async for _ in thread.values:  # ends when the interrupt arrives
            pass
        deadline = time.monotonic() + 10
        while not thread.interrupted and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        expect(thread.interrupted and len(thread.interrupts) == 1,
               f"one interrupt expected: {short(thread.interrupts)}")
        intr = thread.interrupts[0]
        expect((intr.get("value") or {}).get("question") == "approve?",
               f"the interrupt's value (python SDK reads `value`): {short(intr)}")
        await thread.run.respond("yes")
        final = await thread.output.with_timeout(30)
    expect(texts(final, "ai")[-1] == "human said: yes", f"after respond: {short(final)}")


@check
async def check_subgraph_namespace(c):
    async with c.threads.stream(assistant_id="agent") as thread:
        sub_events = thread.subscribe(["lifecycle", "values"], namespaces=[["sub"]])
        await thread.run.start(input=human("go"))
        events = []
        async for e in sub_events:
            events.append(e)
        await thread.output.with_timeout(30)
    expect(events, "no event in the `sub` namespace")
    expect(all(e["params"]["namespace"] and e["params"]["namespace"][0].split(":")[0] == "sub"
               for e in events), f"events outside `sub`: {short(events)}")
    kinds = [(e["method"], e["params"]["data"].get("event")) for e in events]
    expect(("lifecycle", "started") in kinds and ("lifecycle", "completed") in kinds,
           f"the subgraph's lifecycle: {kinds}")
    values = [e for e in events if e["method"] == "values"]
    expect(any("from inner subgraph node" in texts(e["params"]["data"]) for e in values),
           f"the subgraph's values: {short(values)}")


@check
async def check_subgraph_handles(c):
    async with c.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=human("go"))
        names = []
        async for sg in thread.subgraphs:
            names.append((sg.graph_name, list(sg.namespace)))
        await thread.output.with_timeout(30)
    expect(any(n == "sub" and ns and ns[0].startswith("sub:") for n, ns in names),
           f"thread.subgraphs: {short(names)}")


@check
async def check_subgraph_interrupt(c):
    async with c.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=human("subask now"))
        async for _ in thread.values:
            pass
        deadline = time.monotonic() + 10
        while not thread.interrupted and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        expect(len(thread.interrupts) == 1, f"the subgraph's interrupt: {short(thread.interrupts)}")
        intr = thread.interrupts[0]
        expect(intr["namespace"] and intr["namespace"][0].startswith("sub:"),
               f"the interrupt's namespace: {short(intr)}")
        await thread.run.respond("fine")
        final = await thread.output.with_timeout(30)
    expect("sub answer: fine" in texts(final, "ai"), f"after respond: {short(final)}")


def sse_events(resp, limit):
    out, cur = [], {}
    for line in resp.iter_lines():
        if line == "":
            if "data" in cur:
                out.append((cur.get("id"), json.loads(cur["data"])))
                if len(out) >= limit:
                    break
            cur = {}
        elif not line.startswith(":"):
            k, _, v = line.partition(": ")
            cur[k] = v
    return out


@check
async def check_reconnect_since(c):
    """A finished run replays the same events with the same seqs; `since` skips the start."""
    async with c.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=human("hi"))
        await thread.output.with_timeout(30)
        tid = thread.thread_id
    body = {"channels": ["values", "messages", "lifecycle"]}

    def raw():
        with httpx.Client(base_url=URL, timeout=10, headers=HEADERS) as h:
            with h.stream("POST", f"/threads/{tid}/stream/events", json=body) as r:
                expect(r.status_code == 200, f"stream/events: {r.status_code}")
                expect(r.headers["content-type"].startswith("text/event-stream"),
                       f"content type {r.headers['content-type']}")
                first = sse_events(r, 8)
            expect(all(str(ev["seq"]) == sid for sid, ev in first), f"SSE id is the seq: {short(first)}")
            expect(first[0][1]["method"] == "lifecycle"
                   and first[0][1]["params"]["data"]["event"] == "running", f"first: {short(first[0])}")
            cut = first[2][1]["seq"]
            with h.stream("POST", f"/threads/{tid}/stream/events", json={**body, "since": cut}) as r:
                again = sse_events(r, 5)
            expect([e["event_id"] for _, e in again] == [e["event_id"] for _, e in first[3:8]],
                   f"after since={cut}: {short(again)} vs {short(first[3:8])}")
            resp = h.post(f"/threads/{tid}/commands", json={"id": 1, "method": "nope", "params": {}})
            expect(resp.status_code == 200 and resp.json()["error"] == "unknown_command",
                   f"an unknown command: {resp.status_code} {short(resp.text)}")
            bad = h.post(f"/threads/{tid}/stream/events", json={"channels": []})
            expect(bad.status_code == 400, f"empty channels: {bad.status_code}")

    await asyncio.to_thread(raw)


@check
async def check_sync_client(c):
    def run():
        sc = get_sync_client(url=URL, headers=HEADERS or None)
        with sc.threads.stream(assistant_id="agent") as thread:
            thread.run.start(input=human("sync hello"))
            pieces = []
            for m in thread.messages:
                pieces.append(list(m.text))
            final = thread.output
        expect(pieces and "".join(pieces[0]) == "echo: sync hello", f"sync tokens: {short(pieces)}")
        expect(texts(final, "ai")[0] == "echo: sync hello", f"sync output: {short(final)}")

    await asyncio.to_thread(run)


# ---------------------------------------------------------------- driver

URL = ""
HEADERS = {}


async def main():
    global URL, HEADERS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--only", help="comma-separated check names")
    ap.add_argument("--serial", action="store_true", help="run the checks one after the other")
    ap.add_argument("--timeout", type=float, default=40.0, help="per-check timeout in seconds")
    ap.add_argument("--api-key", default=None)
    args = ap.parse_args()
    URL = args.url.rstrip("/")
    HEADERS = {"x-api-key": args.api_key} if args.api_key else {}
    checks = CHECKS
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {n for n, _ in CHECKS}
        if unknown:
            print(f"unknown checks: {sorted(unknown)}; known: {[n for n, _ in CHECKS]}")
            return 2
        checks = [(n, f) for n, f in CHECKS if n in want]
    kw = {"api_key": args.api_key} if args.api_key else {}
    client = get_client(url=URL, **kw)
    t0 = time.monotonic()
    results = []
    if args.serial:
        for n, f in checks:
            await run_one(n, f, client, args.timeout, results)
    else:
        await asyncio.gather(*(run_one(n, f, client, args.timeout, results) for n, f in checks))
    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"python stream: {passed} passed, {failed} failed")
    print(f"(langgraph-sdk python, {time.monotonic() - t0:.1f}s against {URL})", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
