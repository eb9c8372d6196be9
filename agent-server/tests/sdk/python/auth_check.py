#!/usr/bin/env python3
"""Two users against `agent serve` with JWT auth, through the real python SDK (langgraph-sdk).

Usage: python auth_check.py URL

Tokens come from the environment (the test mints them with the server's secret):
AUTH_TOKEN_ADA, AUTH_TOKEN_BOB (valid), AUTH_TOKEN_FORGED (another secret), AUTH_TOKEN_EXPIRED,
and AUTH_OPERATOR_KEY (the server's --api-key). Each user uses the five flows; neither sees or
touches the other's threads, runs, crons or store items; bad tokens are 401; the operator sees
both. Prints `ok NAME` / `FAIL NAME: why`, then `python auth: N passed, M failed`.
"""
import asyncio
import os
import sys
import traceback
import uuid

from langgraph_sdk import get_client

URL = sys.argv[1]
TAG = uuid.uuid4().hex
FLOWS = {
    "tool-router": "What time is it in Tokyo?",
    "form": "My name is John",
    "orchestrator": "Hello! What can you do?",
    "data": "What was the average unemployment rate in 2008?",
    "react": "What is 12 * 7?",
}


def bearer(name):
    return get_client(url=URL, headers={"Authorization": f"Bearer {os.environ[name]}"})


def status_of(exc):
    st = getattr(exc, "status_code", None)
    if st is None:
        st = getattr(getattr(exc, "response", None), "status_code", None)
    return st


async def refused(aw, status, what):
    try:
        if hasattr(aw, "__aiter__"):
            got = [p async for p in aw]
        else:
            got = await aw
    except Exception as e:
        st = status_of(e)
        assert st == status, f"{what}: expected {status}, got {st}: {e!r}"
        return
    raise AssertionError(f"{what}: expected {status}, got a success: {got!r}")


def chat(text):
    return {"messages": [{"role": "user", "content": text}]}


async def check_both_users_use_the_five_flows(ada, bob, op):
    for client, who in ((ada, "ada"), (bob, "bob")):
        for flow, text in FLOWS.items():
            thread = await client.threads.create(metadata={"tag": TAG})
            assert thread["metadata"]["owner"] == who, thread
            out = await client.runs.wait(thread["thread_id"], flow, input=chat(text))
            assert isinstance(out, dict) and "__error__" not in out, f"{who} {flow}: {out!r}"
            if flow == "orchestrator":
                # The orchestrator runs for the token's user, whatever a request says.
                assert out["user_id"] == who, f"{who} orchestrator ran for {out['user_id']!r}"


async def check_threads_and_runs_are_their_owners(ada, bob, op):
    t = await ada.threads.create(metadata={"tag": TAG, "owner": "bob"})
    tid = t["thread_id"]
    assert t["metadata"]["owner"] == "ada", t
    run = await ada.runs.wait(tid, "tool-router", input=chat("What time is it in London?"))
    assert "__error__" not in run, run
    runs = await ada.runs.list(tid)
    rid = runs[0]["run_id"]
    await refused(bob.threads.get(tid), 404, "bob reads ada's thread")
    await refused(bob.threads.update(tid, metadata={"owner": "bob"}), 404, "bob patches it")
    await refused(bob.threads.get_state(tid), 404, "bob reads its state")
    await refused(bob.threads.get_history(tid), 404, "bob reads its history")
    await refused(bob.runs.list(tid), 404, "bob lists its runs")
    await refused(bob.runs.get(tid, rid), 404, "bob reads its run")
    await refused(bob.runs.join(tid, rid), 404, "bob joins its run")
    await refused(bob.runs.cancel(tid, rid), 404, "bob cancels its run")
    await refused(bob.runs.wait(tid, "tool-router", input=chat("hi")), 404, "bob runs on it")
    await refused(bob.runs.stream(tid, "tool-router", input=chat("hi")), 404, "bob streams on it")
    await refused(bob.threads.delete(tid), 404, "bob deletes it")
    mine = await bob.threads.search(metadata={"tag": TAG}, limit=100)
    assert all(x["metadata"]["owner"] == "bob" for x in mine), mine
    assert tid not in [x["thread_id"] for x in mine]
    assert tid in [x["thread_id"] for x in await ada.threads.search(metadata={"tag": TAG}, limit=100)]
    n_bob = await bob.threads.count(metadata={"tag": TAG})
    assert n_bob == len(mine), (n_bob, len(mine))


async def check_crons_are_their_owners(ada, bob, op):
    cron = await ada.crons.create("tool-router", schedule="0 0 1 1 *", input=chat("What time is it?"))
    cid = cron["cron_id"]
    assert cron["user_id"] == "ada", cron
    assert cid not in [c["cron_id"] for c in await bob.crons.search(limit=100)]
    assert cid in [c["cron_id"] for c in await ada.crons.search(limit=100)]
    await refused(bob.crons.delete(cid), 404, "bob deletes ada's cron")
    await ada.crons.delete(cid)


async def check_store_namespaces_start_with_the_identity(ada, bob, op):
    await ada.store.put_item(["ada", "notes", TAG], "k", {"text": "ada's"})
    await refused(ada.store.put_item(["bob", "notes"], "k", {"text": "x"}), 403, "ada writes bob's namespace")
    await refused(bob.store.get_item(["ada", "notes", TAG], "k"), 403, "bob reads ada's item")
    await refused(bob.store.search_items(["ada"]), 403, "bob searches ada's namespace")
    await refused(bob.store.delete_item(["ada", "notes", TAG], "k"), 403, "bob deletes ada's item")
    got = await ada.store.search_items([], limit=100)
    assert [i["namespace"][0] for i in got["items"]] and all(i["namespace"][0] == "ada" for i in got["items"]), got
    assert (await bob.store.search_items([], limit=100))["items"] == [] or all(
        i["namespace"][0] == "bob" for i in (await bob.store.search_items([], limit=100))["items"]
    )
    spaces = await bob.store.list_namespaces()
    assert all(ns[0] == "bob" for ns in spaces["namespaces"]), spaces


async def check_bad_tokens_are_401(ada, bob, op):
    for name in ("AUTH_TOKEN_FORGED", "AUTH_TOKEN_EXPIRED"):
        await refused(bearer(name).threads.search(), 401, name)
    await refused(get_client(url=URL, api_key=None).threads.search(), 401, "no credential")
    await refused(
        get_client(url=URL, headers={"Authorization": "Bearer not.a.token"}).threads.search(), 401, "garbage"
    )


async def check_the_operator_sees_both(ada, bob, op):
    a = await ada.threads.create(metadata={"tag": TAG, "who": "a"})
    b = await bob.threads.create(metadata={"tag": TAG, "who": "b"})
    seen = [t["thread_id"] for t in await op.threads.search(metadata={"tag": TAG}, limit=1000)]
    assert a["thread_id"] in seen and b["thread_id"] in seen, seen
    owners = {t["metadata"]["owner"] for t in await op.threads.search(metadata={"tag": TAG}, limit=1000)}
    assert owners == {"ada", "bob"}, owners
    await op.threads.delete(a["thread_id"])


CHECKS = [
    check_both_users_use_the_five_flows,
    check_threads_and_runs_are_their_owners,
    check_crons_are_their_owners,
    check_store_namespaces_start_with_the_identity,
    check_bad_tokens_are_401,
    check_the_operator_sees_both,
]


async def main():
    ada, bob = bearer("AUTH_TOKEN_ADA"), bearer("AUTH_TOKEN_BOB")
    op = get_client(url=URL, api_key=os.environ["AUTH_OPERATOR_KEY"])
    passed = failed = 0
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        try:
            await asyncio.wait_for(check(ada, bob, op), 120)
            print(f"ok {name}", flush=True)
            passed += 1
        except Exception as e:
            print(f"FAIL {name}: {e!r}", flush=True)
            traceback.print_exc()
            failed += 1
    print(f"python auth: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
