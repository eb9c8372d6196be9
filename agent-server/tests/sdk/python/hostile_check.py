#!/usr/bin/env python3
"""Issue 56's hostile client, through the real python SDK (langgraph-sdk), against a keyless
`agent serve` on loopback started by `agent-flows/tests/serve_safe.rs` with `--set user=ivan`
and a config file's low `[limits]`.

Usage: python hostile_check.py URL

Environment (set by the test): HOSTILE_CANARY (a value of the server's environment),
HOSTILE_FIFO (a FIFO next to the server), HOSTILE_PROFILES (a path that must stay absent).
Each check is one item of the issue's first list; every error body is grepped for the
canary and for /etc/passwd's lines. Prints `ok NAME` / `FAIL NAME: why`, then
`python hostile: N passed, M failed`.
"""
import asyncio
import json
import os
import sys
import time
import traceback

from langgraph_sdk import get_client

URL = sys.argv[1]
CANARY = os.environ["HOSTILE_CANARY"]
try:
    with open("/etc/passwd") as f:
        PASSWD = [line for line in f.read().splitlines() if len(line) > 8]
except OSError:
    PASSWD = []
BODIES = []


def chat(text):
    return {"messages": [{"role": "user", "content": text}]}


async def refused(aw, status, what):
    """Awaits `aw`, which must fail with `status`; the error's body as text."""
    try:
        if hasattr(aw, "__aiter__"):
            got = [p async for p in aw]
        else:
            got = await aw
    except Exception as e:
        response = getattr(e, "response", None)
        st = getattr(response, "status_code", None)
        assert st == status, f"{what}: expected {status}, got {st}: {e!r}"
        body = response.text if response is not None else str(e)
        BODIES.append(body)
        return body
    raise AssertionError(f"{what}: expected {status}, got a success: {str(got)[:300]}")


def operator_only(body, option):
    detail = json.loads(body)["detail"]
    assert f"`{option}`" in detail and "operator" in detail, detail
    return detail


async def check_form_paths_read_nothing(c):
    for path in ["/proc/self/environ", "/etc/passwd", "/dev/zero", os.environ["HOSTILE_FIFO"]]:
        started = time.monotonic()
        body = await refused(
            c.runs.wait(None, "form", input=chat("hi"), context={"form": path}), 422, path
        )
        assert time.monotonic() - started < 5, f"{path}: took {time.monotonic() - started:.1f}s"
        assert path not in operator_only(body, "form"), body
    out = await c.runs.wait(None, "form", input=chat("hi"), context={"form": "contact"})
    assert "__error__" not in out, out


async def check_profiles_create_no_file(c):
    path = os.environ["HOSTILE_PROFILES"]
    body = await refused(
        c.runs.wait(None, "orchestrator", input=chat("hi"), context={"profiles": path}), 422, "profiles"
    )
    operator_only(body, "profiles")
    assert not os.path.exists(path), f"{path} was created"


async def check_user_is_not_the_clients(c):
    body = await refused(
        c.runs.wait(None, "orchestrator", input=chat("hi"), context={"user": "maria"}), 422, "user"
    )
    operator_only(body, "user")
    out = await c.runs.wait(
        None, "orchestrator", input={"user_id": "maria", **chat("Hello!")}
    )
    assert out["user_id"] == "ivan", out


async def check_max_input_chars_is_not_raised(c):
    body = await refused(
        c.runs.wait(None, "orchestrator", input=chat("hi"), context={"max_input_chars": 100000}),
        422,
        "max_input_chars",
    )
    assert "max_input_chars" in body and "4000" in body, body


async def check_evil_origins_are_refused(c):
    evil = get_client(url=URL, headers={"Origin": "https://evil.example"})
    await refused(evil.threads.search(), 403, "evil origin")
    await refused(evil.runs.wait(None, "react", input=chat("What is 12 * 7?")), 403, "evil origin run")
    studio = get_client(url=URL, headers={"Origin": "https://smith.langchain.com"})
    await studio.threads.search()


async def check_rebinding_hosts_are_refused(c):
    evil = get_client(url=URL, headers={"Host": "evil.example:2024"})
    await refused(evil.threads.search(), 403, "rebinding host")
    await refused(
        evil.http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        403,
        "rebinding host on /mcp",
    )


async def check_batches_recursion_and_metadata_are_bounded(c):
    run = {"assistant_id": "react", "input": chat("What is 12 * 7?")}
    body = await refused(c.runs.create_batch([run, run, run]), 422, "batch of 3")
    assert "at most 2" in body, body
    body = await refused(
        c.runs.wait(None, "react", input=chat("hi"), config={"recursion_limit": 10**9}), 422, "recursion"
    )
    assert "recursion_limit" in body, body
    big = {"k": "x" * 5000}
    await refused(c.runs.wait(None, "react", input=chat("hi"), metadata=big), 422, "run metadata")
    await refused(c.threads.create(metadata=big), 422, "thread metadata")


async def check_queued_runs_per_thread_are_bounded(c):
    thread = await c.threads.create()
    tid = thread["thread_id"]
    later = dict(input=chat("What is 12 * 7?"), after_seconds=600, multitask_strategy="enqueue")
    await c.runs.create(tid, "react", **later)
    await refused(c.runs.create(tid, "react", **later), 429, "a second queued run")


async def check_open_streams_are_bounded(c):
    thread = await c.threads.create()
    held = await c.threads.join_stream(thread["thread_id"])
    first = asyncio.ensure_future(held.__anext__())
    await asyncio.sleep(0.5)
    try:
        await refused(
            c.runs.stream(None, "react", input=chat("What is 12 * 7?")), 429, "a second stream"
        )
    finally:
        first.cancel()
        try:
            await first
        except (asyncio.CancelledError, Exception):
            pass


async def check_nothing_leaked(c):
    for body in BODIES:
        assert CANARY not in body, f"the environment leaked: {body}"
        for line in PASSWD:
            assert line not in body, f"/etc/passwd leaked: {body}"
    out = await c.runs.wait(None, "tool-router", input=chat("What time is it in Tokyo?"))
    assert "Tokyo" in json.dumps(out), out


CHECKS = [
    check_form_paths_read_nothing,
    check_profiles_create_no_file,
    check_user_is_not_the_clients,
    check_max_input_chars_is_not_raised,
    check_evil_origins_are_refused,
    check_rebinding_hosts_are_refused,
    check_batches_recursion_and_metadata_are_bounded,
    check_queued_runs_per_thread_are_bounded,
    check_open_streams_are_bounded,
    check_nothing_leaked,
]


async def main():
    c = get_client(url=URL, api_key=None)
    passed = failed = 0
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        try:
            await asyncio.wait_for(check(c), 60)
            print(f"ok {name}", flush=True)
            passed += 1
        except Exception as e:
            print(f"FAIL {name}: {e!r}", flush=True)
            traceback.print_exc()
            failed += 1
    print(f"python hostile: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    asyncio.run(main())
