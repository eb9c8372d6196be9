#!/usr/bin/env python3
"""The five reference flows through the thread-streaming protocol (v2) with the real python
SDK (langgraph-sdk 0.4.14's `client.threads.stream`), against `agent serve`.

Usage: python flows_check.py URL [--only a,b] [--serial] [--timeout S] [--api-key K]

For each flow, two turns on one thread: the answer arrives on `thread.messages` (token by
token where a model writes it), its streamed text is the AI message the thread keeps, tool
use arrives as streamed AI messages with `tool_calls`, each answered by a tool message the
thread keeps, where the flow uses tools, and no
streamed message is an internal model's output (a router's or classifier's JSON). Shapes,
not wording.

Prints `ok NAME` or `FAIL NAME: why` per check, then `python flows: N passed, M failed`;
exits 0 only when every check passed.
"""
import argparse
import asyncio
import sys
import time

from langgraph_sdk import get_client

from checks import expect, run_one, short

# flow -> the two turns: (question, uses tools, the answer written by a model token by token)
FLOWS = {
    "tool-router": [("What time is it in Tokyo?", True, True), ("And how much is 6*7?", True, True)],
    "form": [("Me llamo Juan", False, False), ("juan@ejemplo.com", False, True)],
    "orchestrator": [("What was the unemployment rate in 2008?", True, True),
                     ("And in 2009?", True, True)],
    "data": [("What was the average unemployment rate in 2008?", False, False),
             ("Hello! What can you do?", False, True)],
    # Its static mode answers by rules, whole.
    "react": [("¿Cuánto es 12*(3+4) y qué hora es en Tokio?", True, False),
              ("Repite: hola", True, False)],
}


def internal(text):
    """A router's or classifier's structured output, which a chat must never show."""
    t = (text or "").strip()
    return t.startswith("{") and ('"calls"' in t or '"tool"' in t or '"intent"' in t)


async def turn(thread, question, tools, tokens):
    async def pieces(m):
        return [t async for t in m.text]

    await thread.run.start(input={"messages": [{"role": "user", "content": question}]})
    # Each message's text is read by a task of its own while `thread.messages` is iterated
    # (the async SDK feeds a message's projections as the loop goes on).
    items = []
    async for m in thread.messages:
        items.append((m, asyncio.create_task(pieces(m))))
    streamed, chunks = [], {}
    for m, text in items:
        parts = await text
        streamed.append(("".join(parts), await asyncio.wait_for(m, 30)))
        chunks["".join(parts)] = len(parts)
    final = await thread.output.with_timeout(60)
    ai = [m for m in (final or {}).get("messages") or [] if m.get("type") == "ai"]
    expect(ai, f"no AI message in the thread after {question!r}: {short(final)}")
    answer = ai[-1].get("content")
    answer = answer if isinstance(answer, str) else "".join(
        b.get("text", "") for b in answer or [] if isinstance(b, dict))
    expect(answer.strip(), f"the answer to {question!r} is empty")
    texts = [text for text, _ in streamed]
    expect(answer in texts,
           f"the kept answer {short(answer)} was not streamed as one message: {short(texts)}")
    if tokens:
        expect(chunks[answer] > 1, f"the answer to {question!r} came whole, not token by token")
    expect(not any(internal(t) for t in texts),
           f"an internal model's output was streamed: {short(texts)}")
    if tools:
        calls = [c for _, msg in streamed for c in getattr(msg, "tool_calls", None) or []]
        expect(calls, f"{question!r} should use a tool; no streamed message asked for one: "
                      f"{short(streamed)}")
        expect(all(c.get("name") and c.get("id") for c in calls),
               f"a tool call without a name or id: {short(calls)}")
        answered = {m.get("tool_call_id") for m in final.get("messages") or []
                    if m.get("type") == "tool"}
        expect(all(c["id"] in answered for c in calls),
               f"a streamed tool call has no tool message in the thread: {short(calls)}")
    return final


def flow_check(flow, turns):
    async def run(c):
        async with c.threads.stream(assistant_id=flow) as thread:
            before = 0
            for question, tools, tokens in turns:
                final = await turn(thread, question, tools, tokens)
                humans = [m for m in final.get("messages") or [] if m.get("type") == "human"]
                expect(len(humans) > before,
                       f"the question {question!r} is not among the thread's messages")
                before = len(humans)
    run.__name__ = flow
    return run


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--only", help="comma-separated flow names")
    ap.add_argument("--serial", action="store_true", help="one flow after the other")
    ap.add_argument("--timeout", type=float, default=90.0, help="per-flow timeout in seconds")
    ap.add_argument("--api-key", default=None)
    args = ap.parse_args()
    flows = FLOWS
    if args.only:
        flows = {k: v for k, v in FLOWS.items() if k in set(args.only.split(","))}
    kw = {"api_key": args.api_key} if args.api_key else {}
    client = get_client(url=args.url.rstrip("/"), **kw)
    t0 = time.monotonic()
    results = []
    checks = [(flow, flow_check(flow, turns)) for flow, turns in flows.items()]
    if args.serial:
        for n, f in checks:
            await run_one(n, f, client, args.timeout, results)
    else:
        await asyncio.gather(*(run_one(n, f, client, args.timeout, results) for n, f in checks))
    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"python flows: {passed} passed, {failed} failed")
    print(f"(langgraph-sdk python, {time.monotonic() - t0:.1f}s against {args.url})", flush=True)
    return 0 if failed == 0 and results else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
