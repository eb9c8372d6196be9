#!/usr/bin/env python3
"""Conformance checks of a LangGraph server API with the real python SDK (langgraph-sdk 0.4.x).

Usage: python sdk_check.py URL [--only a,b] [--serial] [--timeout S]

The server must serve the two reference graphs of docs/langgraph-api/capture/app/graph.py
under the ids `agent` and `simple` (messages + count state; `chat` streams "echo: <text>" and
writes a custom event, "sleep N" sleeps N s, "fail" raises; subgraph `sub` whose `sub_ask`
interrupts on "subask"; `human` interrupts on the word "ask"; `simple` upper-cases `value`).

Prints `ok NAME` or `FAIL NAME: why` per check, then `python: N passed, M failed`; exits 0 only
when every check passed. Checks are about shapes and semantics, never exact ids or timestamps.
"""
import argparse
import asyncio
import re
import sys
import time
import uuid

from langgraph_sdk import get_client

from checks import CheckFailed, expect, run_one, short

TAG = uuid.uuid4().hex  # marks every thread / assistant this run makes
CHECKS = []
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def check(fn):
    CHECKS.append((fn.__name__.removeprefix("check_"), fn))
    return fn


def http_status(exc):
    st = getattr(exc, "status_code", None)
    if st is None:
        resp = getattr(exc, "response", None)
        st = getattr(resp, "status_code", None)
    return st


def detail_of(exc):
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])
    resp = getattr(exc, "response", None)
    try:
        return resp.text if resp is not None else str(exc)
    except Exception:
        return str(exc)


async def expect_status(aw, status, what, contains=()):
    """Awaits aw (a coroutine or an async iterator to drain) and expects an HTTP error `status`."""
    try:
        if hasattr(aw, "__aiter__"):
            res = [p async for p in aw]
        else:
            res = await aw
    except CheckFailed:
        raise
    except Exception as e:  # the SDK's APIStatusError subclasses
        st = http_status(e)
        expect(st == status, f"{what}: expected HTTP {status}, got {st}: {type(e).__name__}: {short(str(e))}")
        d = detail_of(e)
        for c in contains:
            expect(c in d, f"{what}: error detail should mention {c!r}: {short(d)}")
        return d
    raise CheckFailed(f"{what}: expected HTTP {status}, got a success: {short(res)}")


async def poll(fetch, pred, what, timeout=20.0, interval=0.1):
    """Calls fetch() until pred(result) holds; fails after timeout seconds with the last result."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = await fetch()
            if pred(last):
                return last
        except Exception as e:  # also CheckFailed: not there yet
            last = e
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout}s waiting for {what}; last: {short(last)}")
        await asyncio.sleep(interval)


def human(text):
    return {"messages": [{"role": "user", "content": text}]}


def contents(values, typ=None):
    msgs = (values or {}).get("messages") or []
    return [m.get("content") for m in msgs if typ is None or m.get("type") == typ]


async def new_thread(c, name, **meta):
    t = await c.threads.create(metadata={"sdk_check": TAG, "check": name, **meta})
    return t["thread_id"]


async def collect(agen):
    return [p async for p in agen]


def check_stream_frame(parts, what):
    """metadata first (with run_id and attempt), no `end` event; returns the metadata data."""
    expect(parts, f"{what}: the stream had no events")
    names = [p.event for p in parts]
    expect(names[0] == "metadata", f"{what}: the first event must be `metadata`, got {names[:5]}")
    md = parts[0].data
    expect(isinstance(md, dict) and isinstance(md.get("run_id"), str) and md["run_id"],
           f"{what}: metadata event needs a run_id: {short(md)}")
    expect(md.get("attempt") == 1, f"{what}: metadata event should carry attempt 1: {short(md)}")
    expect("end" not in names, f"{what}: LangGraph sends no `end` event, got {names}")
    return md


# ---------------------------------------------------------------- system & assistants

@check
async def check_health(c):
    ok = await c.http.get("/ok")
    expect(ok.get("ok") is True, f"/ok should answer {{'ok': true, ...}}: {short(ok)}")
    info = await c.http.get("/info")
    expect(isinstance(info, dict) and isinstance(info.get("version"), str),
           f"/info should carry a version string: {short(info)}")
    flags = info.get("flags") or {}
    expect(flags.get("assistants") is True and flags.get("crons") is True,
           f"/info's flags should say assistants and crons work: {short(flags)}")
    checked = await c.http.get("/ok", params={"check_db": 1})
    expect(checked.get("ok") is True, f"/ok?check_db=1 with the database up: {short(checked)}")
    metrics = await c.http.get("/metrics", params={"format": "json"})
    queue, workers = metrics.get("queue") or {}, metrics.get("workers") or {}
    expect(isinstance(queue.get("n_pending"), int) and isinstance(queue.get("n_running"), int),
           f"/metrics?format=json's queue: {short(metrics)}")
    expect({"max", "active", "available"} <= set(workers), f"/metrics?format=json's workers: {short(metrics)}")


async def system_assistant(c, graph_id):
    found = await c.assistants.search(graph_id=graph_id, metadata={"created_by": "system"}, limit=100)
    sys_ = [a for a in found if a.get("graph_id") == graph_id and (a.get("metadata") or {}).get("created_by") == "system"]
    expect(len(sys_) == 1, f"exactly one system assistant for {graph_id!r} expected, got {short(found)}")
    return sys_[0]


@check
async def check_assistants_search_system(c):
    for g in ("agent", "simple"):
        a = await system_assistant(c, g)
        for k in ("assistant_id", "graph_id", "config", "metadata", "name", "created_at", "updated_at", "version"):
            expect(k in a, f"assistant {g} lacks {k!r}: {short(a)}")
        expect(UUID_RE.match(a["assistant_id"]), f"assistant_id should be a UUID: {a['assistant_id']!r}")
        expect(a["name"] == g, f"system assistant name should be the graph id {g!r}: {a['name']!r}")
    every = await c.assistants.search(metadata={"created_by": "system"}, limit=100)
    graphs = {a["graph_id"] for a in every}
    expect({"agent", "simple"} <= graphs, f"search(metadata created_by=system) should list both graphs: {graphs}")
    page = await c.assistants.search(limit=1)
    expect(len(page) == 1, f"search(limit=1) should return one assistant, got {len(page)}")


@check
async def check_assistants_get(c):
    a = await system_assistant(c, "agent")
    got = await c.assistants.get(a["assistant_id"])
    expect(got["assistant_id"] == a["assistant_id"] and got["graph_id"] == "agent", f"get returned {short(got)}")
    expect(got["metadata"].get("created_by") == "system", f"get lost metadata: {short(got)}")


@check
async def check_assistants_crud(c):
    a = await c.assistants.create(graph_id="agent", name=f"sdk-check-{TAG[:8]}", metadata={"sdk_check": TAG, "check": "crud", "k": 1},
                                  context={"model": "offline"})
    aid = a["assistant_id"]
    expect(a["graph_id"] == "agent" and a["version"] == 1, f"created assistant: {short(a)}")
    expect(a["metadata"].get("sdk_check") == TAG, f"created assistant metadata: {short(a['metadata'])}")
    expect((a.get("context") or {}).get("model") == "offline", f"created assistant context: {short(a.get('context'))}")
    same = await c.assistants.create(graph_id="agent", assistant_id=aid, if_exists="do_nothing", name="other")
    expect(same["assistant_id"] == aid and same["name"] == a["name"],
           f"create(if_exists=do_nothing) should return the existing assistant unchanged: {short(same)}")
    await expect_status(c.assistants.create(graph_id="agent", assistant_id=aid), 409, "create with an existing assistant_id")
    up = await c.assistants.update(aid, metadata={"k": 2, "extra": True})
    expect(up["version"] == 2, f"update should make version 2: {up.get('version')}")
    expect(up["metadata"].get("sdk_check") == TAG and up["metadata"].get("k") == 2 and up["metadata"].get("extra") is True,
           f"update should merge metadata: {short(up['metadata'])}")
    got = await c.assistants.get(aid)
    expect(got["version"] == 2 and got["metadata"].get("extra") is True, f"get after update: {short(got)}")
    mine = await c.assistants.search(metadata={"sdk_check": TAG, "check": "crud"}, limit=100)
    expect([x["assistant_id"] for x in mine] == [aid], f"search by metadata should find exactly the new assistant: {short(mine)}")
    await c.assistants.delete(aid)
    await expect_status(c.assistants.get(aid), 404, "get of a deleted assistant")


@check
async def check_assistants_graph(c):
    a = await system_assistant(c, "agent")
    g = await c.assistants.get_graph(a["assistant_id"])
    ids = {n["id"] for n in g.get("nodes", [])}
    expect({"__start__", "chat", "sub", "human", "__end__"} <= ids, f"graph nodes: {sorted(ids)}")
    edges = {(e["source"], e["target"]) for e in g.get("edges", [])}
    want = {("__start__", "chat"), ("chat", "sub"), ("sub", "human"), ("human", "__end__")}
    expect(want <= edges, f"graph edges should include {sorted(want)}: {sorted(edges)}")
    x = await c.assistants.get_graph(a["assistant_id"], xray=True)
    xids = {n["id"] for n in x.get("nodes", [])}
    expect({"sub:inner", "sub:sub_ask"} <= xids, f"xray graph should flatten the subgraph (sub:inner, sub:sub_ask): {sorted(xids)}")


@check
async def check_assistants_schemas(c):
    a = await system_assistant(c, "agent")
    s = await c.assistants.get_schemas(a["assistant_id"])
    expect(s.get("graph_id") == "agent", f"schemas.graph_id: {short(s.get('graph_id'))}")
    for k in ("input_schema", "output_schema", "state_schema"):
        props = (s.get(k) or {}).get("properties") or {}
        expect({"messages", "count"} <= set(props), f"{k} should describe messages and count: {sorted(props)}")
    ctx = (s.get("context_schema") or {}).get("properties") or {}
    expect({"model", "user"} <= set(ctx), f"context_schema should describe model and user: {short(s.get('context_schema'))}")
    simple = await system_assistant(c, "simple")
    s2 = await c.assistants.get_schemas(simple["assistant_id"])
    expect("value" in ((s2.get("input_schema") or {}).get("properties") or {}), f"simple input_schema: {short(s2.get('input_schema'))}")
    expect(not s2.get("context_schema"), f"simple has no context: context_schema should be null: {short(s2.get('context_schema'))}")
    subs = await c.assistants.get_subgraphs(a["assistant_id"])
    expect("sub" in subs, f"get_subgraphs should list the subgraph namespace 'sub': {sorted(subs)}")


@check
async def check_assistants_subgraphs(c):
    a = await system_assistant(c, "agent")
    aid = a["assistant_id"]
    subs = await c.assistants.get_subgraphs(aid)
    expect(list(subs) == ["sub"], f"get_subgraphs lists the one subgraph: {sorted(subs)}")
    for k in ("input_schema", "output_schema", "state_schema"):
        props = (subs["sub"].get(k) or {}).get("properties") or {}
        expect("messages" in props, f"the subgraph's {k} describes its state: {short(subs['sub'].get(k))}")
    items = ((subs["sub"]["input_schema"].get("properties") or {}).get("messages") or {}).get("items")
    expect(items is not None, f"the subgraph's messages are a list of messages: {short(subs['sub']['input_schema'])}")
    there = await c.assistants.get_subgraphs(aid, namespace="sub")
    expect(list(there) == ["sub"] and there["sub"]["input_schema"] == subs["sub"]["input_schema"],
           f"get_subgraphs(namespace='sub'): {sorted(there)}")
    deep = await c.assistants.get_subgraphs(aid, recurse=True)
    expect(list(deep) == ["sub"], f"get_subgraphs(recurse=True): nothing is nested in `sub`: {sorted(deep)}")
    none = await c.assistants.get_subgraphs(aid, namespace="nope")
    expect(none == {}, f"get_subgraphs(namespace='nope') is empty: {short(none)}")
    simple = await system_assistant(c, "simple")
    expect(await c.assistants.get_subgraphs(simple["assistant_id"]) == {}, "simple has no subgraphs")


# ---------------------------------------------------------------- threads

@check
async def check_store_search_query(c):
    # A server without an index (both reference servers): the query is ignored and the
    # filtered items come back unranked.
    ns = ["sdk_check_query", TAG, "notes"]
    await c.store.put_item(ns, "train", {"text": "the train to Lyon leaves at nine"})
    await c.store.put_item(ns, "milk", {"text": "buy oat milk and bread"})
    found = await c.store.search_items(ns, query="when does my train leave?")
    keys = sorted(i["key"] for i in found["items"])
    expect(keys == ["milk", "train"], f"search_items(query=...) without an index: {short(found)}")
    expect(all(i.get("score") is None for i in found["items"]), f"unranked: {short(found)}")
    one = await c.store.search_items(ns, query="bread", filter={"text": "buy oat milk and bread"})
    expect([i["key"] for i in one["items"]] == ["milk"], f"the filter still applies: {short(one)}")


@check
async def check_store_items(c):
    ns = ["sdk_check", TAG, "users", "ada"]
    await c.store.put_item(ns, "profile", {"name": "Ada", "age": 36})
    await c.store.put_item(ns[:3] + ["bob"], "profile", {"name": "Bob", "age": 51})
    await c.store.put_item(ns + ["facts"], "tea", {"likes": "tea"}, index=False, ttl=60)
    item = await c.store.get_item(ns, "profile")
    expect(item and item["value"] == {"name": "Ada", "age": 36}, f"get_item: {short(item)}")
    expect(item["namespace"] == ns and item["key"] == "profile", f"get_item namespace/key: {short(item)}")
    for k in ("created_at", "updated_at"):
        expect(isinstance(item.get(k), str), f"get_item lacks {k!r}: {short(item)}")
    found = await c.store.search_items(["sdk_check", TAG], filter={"age": {"$gt": 40}})
    names = [i["value"].get("name") for i in found["items"]]
    expect(names == ["Bob"], f"search_items with a $gt filter: {short(found)}")
    listed = await c.store.list_namespaces(prefix=["sdk_check", TAG], max_depth=4)
    expect(listed["namespaces"] == [ns, ns[:3] + ["bob"]], f"list_namespaces(max_depth=4): {short(listed)}")
    facts = await c.store.list_namespaces(prefix=["sdk_check", TAG], suffix=["facts"])
    expect(facts["namespaces"] == [ns + ["facts"]], f"list_namespaces(suffix=facts): {short(facts)}")
    await c.store.delete_item(ns, "profile")
    gone = await c.store.get_item(ns, "profile")
    expect(gone is None, f"get_item after delete_item: {short(gone)}")
    await expect_status(c.store.put_item(["langgraph"], "k", {"v": 1}), 422, "a reserved namespace")


@check
async def check_threads_create_get(c):
    t = await c.threads.create(metadata={"sdk_check": TAG, "check": "create"})
    tid = t["thread_id"]
    expect(UUID_RE.match(tid), f"thread_id should be a UUID: {tid!r}")
    expect(t["status"] == "idle", f"a new thread is idle: {t['status']!r}")
    expect(t["metadata"].get("sdk_check") == TAG, f"thread metadata: {short(t['metadata'])}")
    expect(not t.get("values"), f"a new thread has no values yet: {short(t.get('values'))}")
    for k in ("created_at", "updated_at", "metadata", "status"):
        expect(k in t, f"thread lacks {k!r}: {short(t)}")
    got = await c.threads.get(tid)
    expect(got["thread_id"] == tid and got["metadata"].get("sdk_check") == TAG, f"get: {short(got)}")
    given = str(uuid.uuid4())
    t1 = await c.threads.create(thread_id=given, metadata={"sdk_check": TAG, "first": 1})
    expect(t1["thread_id"] == given, f"create(thread_id=...) should use the given id: {t1['thread_id']!r}")
    t2 = await c.threads.create(thread_id=given, metadata={"sdk_check": TAG, "second": 2}, if_exists="do_nothing")
    expect(t2["thread_id"] == given, f"create(if_exists=do_nothing) should return the existing thread: {short(t2)}")
    expect(t2["metadata"].get("first") == 1 and "second" not in t2["metadata"],
           f"create(if_exists=do_nothing) should leave the thread unchanged: {short(t2['metadata'])}")
    await expect_status(c.threads.create(thread_id=given), 409, "create of an existing thread_id")


@check
async def check_threads_update_search_delete(c):
    tid = await new_thread(c, "update_search")
    other = await new_thread(c, "update_search_other")
    up = await c.threads.update(tid, metadata={"extra": "yes"})
    expect(up["metadata"].get("extra") == "yes" and up["metadata"].get("sdk_check") == TAG,
           f"update should merge metadata: {short(up['metadata'])}")
    found = await c.threads.search(metadata={"sdk_check": TAG, "extra": "yes"}, limit=100)
    expect([t["thread_id"] for t in found] == [tid], f"search by metadata should find exactly the updated thread: {short([t['thread_id'] for t in found])}")
    idle = await c.threads.search(metadata={"sdk_check": TAG, "check": "update_search_other"}, status="idle", limit=100)
    expect([t["thread_id"] for t in idle] == [other], f"search(status=idle) by metadata: {short(idle)}")
    busy = await c.threads.search(metadata={"sdk_check": TAG, "check": "update_search_other"}, status="busy", limit=100)
    expect(busy == [], f"search(status=busy) should not find an idle thread: {short(busy)}")
    await c.threads.delete(other)
    await expect_status(c.threads.get(other), 404, "get of a deleted thread")


@check
async def check_threads_copy(c):
    tid = await new_thread(c, "copy")
    await c.runs.wait(tid, "agent", input=human("copy me"))
    cp = await c.threads.copy(tid)
    expect(isinstance(cp, dict) and cp.get("thread_id") and cp["thread_id"] != tid, f"copy should return a new thread: {short(cp)}")
    expect(cp["metadata"].get("sdk_check") == TAG, f"copy should keep the metadata: {short(cp['metadata'])}")
    a = await c.threads.get_state(tid)
    b = await c.threads.get_state(cp["thread_id"])
    expect(contents(b["values"]) == contents(a["values"]) and b["values"].get("count") == a["values"].get("count"),
           f"the copy should have the same state: {short(b['values'])} vs {short(a['values'])}")
    await c.threads.delete(cp["thread_id"])
    await expect_status(c.threads.get(cp["thread_id"]), 404, "get of a deleted copy")
    await c.threads.get(tid)  # the original is untouched


# ---------------------------------------------------------------- streaming

@check
async def check_stream_values(c):
    tid = await new_thread(c, "stream_values")
    created = []
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi values"), stream_mode="values",
                                        on_run_created=created.append))
    md = check_stream_frame(parts, "values stream")
    expect(created and created[0].get("run_id") == md["run_id"] and created[0].get("thread_id") == tid,
           f"on_run_created (from the Content-Location header) gives the run and thread ids: {short(created)}")
    names = [p.event for p in parts]
    expect(set(names) == {"metadata", "values"}, f"only metadata and values events expected: {names}")
    expect(len(names) >= 3, f"values after the input and after each step expected: {names}")
    first = parts[1].data
    expect(contents(first) == ["hi values"], f"the first values event holds the input only: {short(first)}")
    last = parts[-1].data
    expect("echo: hi values" in contents(last, "ai"), f"the last values should hold the echo reply: {short(last)}")
    expect(last.get("count") == 2, f"count should be 2 after chat and human: {short(last)}")
    run = await c.runs.get(tid, md["run_id"])  # the stream closed: the run is final already
    expect(run["status"] == "success", f"the run should be `success` once its stream closed: {run['status']!r}")
    expect(run["thread_id"] == tid, f"run.thread_id: {run['thread_id']!r}")


@check
async def check_stream_updates(c):
    tid = await new_thread(c, "stream_updates")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi updates"), stream_mode="updates"))
    check_stream_frame(parts, "updates stream")
    ups = [p.data for p in parts if p.event == "updates"]
    expect(len(ups) == len(parts) - 1, f"only updates events expected: {[p.event for p in parts]}")
    nodes = [next(iter(u)) for u in ups if isinstance(u, dict) and u]
    expect(nodes == ["chat", "sub", "human"], f"one update per node in order chat, sub, human: {nodes}")
    chat = ups[0]["chat"]
    expect(contents(chat) == ["echo: hi updates"] and chat.get("count") == 1, f"chat update: {short(chat)}")


@check
async def check_stream_messages_tuple(c):
    tid = await new_thread(c, "stream_messages")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi tokens"), stream_mode="messages-tuple"))
    check_stream_frame(parts, "messages-tuple stream")
    msgs = [p.data for p in parts if p.event == "messages"]
    expect(len(msgs) == len(parts) - 1, f"messages-tuple events are named `messages`: {[p.event for p in parts]}")
    for d in msgs:
        expect(isinstance(d, list) and len(d) == 2 and isinstance(d[0], dict) and isinstance(d[1], dict),
               f"each messages event is [message chunk, metadata]: {short(d)}")
    chat = [d for d in msgs if d[1].get("langgraph_node") == "chat"]
    expect(chat, f"chunks from node chat expected (metadata.langgraph_node): {short(msgs)}")
    text = "".join(d[0].get("content", "") for d in chat)
    expect(text == "echo: hi tokens", f"the chat chunks should add up to the reply: {text!r}")
    expect(len({d[0].get("id") for d in chat}) == 1, f"the chunks of one reply share a message id: {short(chat)}")
    expect(all(d[0].get("type") in ("AIMessageChunk", "ai") for d in chat), f"chunk types: {[d[0].get('type') for d in chat]}")
    inner = [d for d in msgs if d[0].get("content") == "from inner subgraph node"]
    expect(inner, "the message written by the subgraph's node comes through too")


@check
async def check_stream_custom(c):
    tid = await new_thread(c, "stream_custom")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi custom"), stream_mode="custom"))
    check_stream_frame(parts, "custom stream")
    cs = [p.data for p in parts if p.event == "custom"]
    expect(cs == [{"progress": "chat started", "text": "hi custom"}], f"one custom event with what the node wrote: {short(cs)}")


@check
async def check_stream_multi(c):
    tid = await new_thread(c, "stream_multi")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi all"),
                                        stream_mode=["values", "updates", "messages-tuple", "custom"]))
    check_stream_frame(parts, "multi-mode stream")
    names = [p.event for p in parts]
    expect(set(names) == {"metadata", "values", "updates", "messages", "custom"}, f"event names: {names}")
    # production order: custom (written when chat starts) before chat's update; chat update before sub's
    expect(names.index("custom") < names.index("updates"), f"custom is written before chat's update: {names}")
    last_values = [p.data for p in parts if p.event == "values"][-1]
    expect("echo: hi all" in contents(last_values, "ai"), f"last values: {short(last_values)}")


@check
async def check_stream_subgraphs(c):
    tid = await new_thread(c, "stream_subgraphs")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi subgraphs"), stream_mode=["values", "updates"],
                                        stream_subgraphs=True))
    check_stream_frame(parts, "subgraph stream")
    names = [p.event for p in parts]
    sub = [n for n in names if "|" in n]
    expect(sub, f"subgraph events named <mode>|sub:<task id> expected: {names}")
    bad = [n for n in sub if not re.match(r"^(values|updates)\|sub:[^|:]+$", n)]
    expect(not bad, f"subgraph event names should be <mode>|sub:<task id>: {bad}")
    expect(len({n.split("|", 1)[1] for n in sub}) == 1, f"one subgraph task, one namespace: {sub}")
    expect({"values", "updates"} <= set(names), f"root events too: {names}")
    sub_updates = [p.data for p in parts if p.event.startswith("updates|")]
    nodes = [next(iter(u)) for u in sub_updates if isinstance(u, dict) and u]
    expect(nodes[:1] == ["inner"], f"the subgraph's first update comes from its node inner: {short(sub_updates)}")
    expect(names.index(sub[0]) > names.index("updates"), f"subgraph events come after chat's root update: {names}")


@check
async def check_wait(c):
    tid = await new_thread(c, "wait")
    created = []
    out = await c.runs.wait(tid, "agent", input=human("hi wait"), on_run_created=created.append)
    expect(created and created[0].get("thread_id") == tid and created[0].get("run_id"),
           f"on_run_created (Content-Location) on wait: {short(created)}")
    expect(contents(out) == ["hi wait", "echo: hi wait", "from inner subgraph node"], f"wait returns the final values: {short(out)}")
    expect(out.get("count") == 2, f"final count: {short(out)}")
    out2 = await c.runs.wait(tid, "agent", input={"messages": [{"type": "human", "content": "again"}]})
    expect(contents(out2, "human") == ["hi wait", "again"], f"a second run continues the thread's state: {short(out2)}")
    expect(out2.get("count") == 4, f"count adds up over runs: {short(out2)}")
    t = await c.threads.get(tid)
    expect(t["status"] == "idle", f"thread idle after wait: {t['status']!r}")
    expect(t["metadata"].get("graph_id") == "agent", f"a run writes graph_id into the thread metadata: {short(t['metadata'])}")


@check
async def check_background_join_get_list(c):
    tid = await new_thread(c, "background")
    run = await c.runs.create(tid, "agent", input=human("hi background"))
    rid = run["run_id"]
    expect(run["status"] in ("pending", "running"), f"a new background run is pending: {run['status']!r}")
    expect(run["thread_id"] == tid, f"run.thread_id: {short(run)}")
    expect(UUID_RE.match(run["assistant_id"]), f"run.assistant_id is the assistant's UUID even when given a graph id: {run['assistant_id']!r}")
    for k in ("run_id", "thread_id", "assistant_id", "status", "metadata", "created_at", "updated_at", "multitask_strategy"):
        expect(k in run, f"run lacks {k!r}: {short(run)}")
    out = await c.runs.join(tid, rid)
    expect("echo: hi background" in contents(out, "ai"), f"join returns the final values: {short(out)}")
    got = await c.runs.get(tid, rid)
    expect(got["status"] == "success" and got["run_id"] == rid, f"run after join: {short(got)}")
    again = await c.runs.join(tid, rid)
    expect(contents(again) == contents(out), "join of a finished run returns its final values at once")
    runs = await c.runs.list(tid)
    expect([r["run_id"] for r in runs] == [rid], f"runs.list: {short(runs)}")


@check
async def check_join_stream_resumable(c):
    tid = await new_thread(c, "join_stream")
    run = await c.runs.create(tid, "agent", input=human("sleep 1"), stream_mode=["values", "updates"], stream_resumable=True)
    parts = await collect(c.runs.join_stream(tid, run["run_id"], last_event_id="-1"))
    check_stream_frame(parts, "join_stream(last_event_id=-1)")
    expect(parts[0].data["run_id"] == run["run_id"], f"metadata.run_id of the joined run: {short(parts[0].data)}")
    names = [p.event for p in parts]
    expect({"values", "updates"} <= set(names), f"join_stream replays the run's modes: {names}")
    last = [p.data for p in parts if p.event == "values"][-1]
    expect("echo: sleep 1" in contents(last, "ai"), f"last values of the joined stream: {short(last)}")
    expect(all(p.id for p in parts), f"a resumable stream gives every event an id: {[p.id for p in parts]}")
    rest = await collect(c.runs.join_stream(tid, run["run_id"], last_event_id=parts[2].id))
    expect([(p.event, p.id) for p in rest] == [(p.event, p.id) for p in parts[3:]],
           f"join_stream(last_event_id=<3rd id>) replays the events after it: {[p.event for p in rest]}")
    got = await c.runs.get(tid, run["run_id"])
    expect(got["status"] == "success", f"run after join_stream: {got['status']!r}")


@check
async def check_join_stream_live(c):
    tid = await new_thread(c, "join_stream_live")
    run = await c.runs.create(tid, "agent", input=human("sleep 5"), stream_mode="values")
    await poll(lambda: c.runs.get(tid, run["run_id"]), lambda r: r["status"] == "running", "the run to be running")
    parts = await collect(c.runs.join_stream(tid, run["run_id"]))
    vals = [p.data for p in parts if p.event == "values"]
    expect(vals and "echo: sleep 5" in contents(vals[-1], "ai"),
           f"joining a running run streams its events from then on until it ends: {[p.event for p in parts]}")
    expect("end" not in [p.event for p in parts], "no end event")


@check
async def check_stream_messages_legacy(c):
    tid = await new_thread(c, "stream_messages_legacy")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi legacy"), stream_mode="messages"))
    check_stream_frame(parts, "messages (legacy) stream")
    names = [p.event for p in parts]
    expect(set(names[1:]) <= {"messages/metadata", "messages/partial", "messages/complete"},
           f"legacy messages mode uses messages/metadata|partial|complete: {names}")
    partial = [p.data for p in parts if p.event == "messages/partial"]
    expect(partial and all(isinstance(d, list) and len(d) == 1 and isinstance(d[0], dict) for d in partial),
           f"messages/partial data is [message]: {short(partial)}")
    reply_id = partial[0][0].get("id")
    mine = [d[0] for d in partial if d[0].get("id") == reply_id]
    texts = [m.get("content") for m in mine]
    expect(texts[-1] == "echo: hi legacy" and all(texts[-1].startswith(t) for t in texts),
           f"partials carry the accumulated content of the reply: {texts}")
    expect(all(m.get("type") == "ai" for m in mine), f"partials are whole ai messages: {[m.get('type') for m in mine]}")
    metas = [p.data for p in parts if p.event == "messages/metadata"]
    expect(any(reply_id in d and "metadata" in d[reply_id] for d in metas),
           f"messages/metadata is keyed by message id: {short(metas)}")
    first_meta = next(i for i, p in enumerate(parts) if p.event == "messages/metadata" and reply_id in p.data)
    first_partial = next(i for i, p in enumerate(parts) if p.event == "messages/partial")
    expect(first_meta < first_partial, f"a message's metadata comes before its first partial: {names}")


@check
async def check_stream_tasks_checkpoints_debug(c):
    tid = await new_thread(c, "stream_debug")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi debug"), stream_mode=["tasks", "checkpoints", "debug"]))
    check_stream_frame(parts, "tasks/checkpoints/debug stream")
    names = [p.event for p in parts]
    expect(set(names) == {"metadata", "tasks", "checkpoints", "debug"}, f"event names: {sorted(set(names))}")
    tasks = [p.data for p in parts if p.event == "tasks"]
    starts = [t for t in tasks if "input" in t]
    results = [t for t in tasks if "result" in t]
    expect([t.get("name") for t in starts] == ["chat", "sub", "human"], f"a task start per node: {short(starts)}")
    expect([t.get("name") for t in results] == ["chat", "sub", "human"], f"a task result per node: {short(results)}")
    for t in starts:
        expect(t.get("id") and isinstance(t.get("triggers"), list), f"task start has id and triggers: {short(t)}")
    for t in results:
        expect(t.get("id") and "error" in t and isinstance(t.get("interrupts"), list), f"task result has id, error, interrupts: {short(t)}")
    expect(contents(results[0]["result"]) == ["echo: hi debug"], f"chat's task result: {short(results[0]['result'])}")
    cps = [p.data for p in parts if p.event == "checkpoints"]
    for cp in cps:
        expect(((cp.get("config") or {}).get("configurable") or {}).get("checkpoint_id") and "values" in cp
               and isinstance(cp.get("next"), list) and "source" in (cp.get("metadata") or {}),
               f"checkpoint event has config.configurable.checkpoint_id, values, next, metadata.source: {short(cp)}")
    expect(cps and cps[-1]["next"] == [] and cps[-1]["values"].get("count") == 2, f"the last checkpoint is the end state: {short(cps[-1:])}")
    dbg = [p.data for p in parts if p.event == "debug"]
    expect({d.get("type") for d in dbg} == {"checkpoint", "task", "task_result"} and all("payload" in d and "step" in d for d in dbg),
           f"debug events {{step, type, payload}} of types checkpoint/task/task_result: {short(dbg[:2])}")


@check
async def check_stream_events(c):
    tid = await new_thread(c, "stream_events")
    parts = await collect(c.runs.stream(tid, "agent", input=human("hi events"), stream_mode="events"))
    check_stream_frame(parts, "events stream")
    evs = [p.data for p in parts if p.event == "events"]
    expect(len(evs) == len(parts) - 1, f"only events events: {[p.event for p in parts][:10]}")
    kinds = [e.get("event") for e in evs]
    expect(kinds[:1] == ["on_chain_start"], f"the first event is the graph's on_chain_start: {kinds[:3]}")
    expect({"on_chain_start", "on_chain_end", "on_chat_model_stream"} <= set(kinds), f"event kinds: {sorted(set(kinds))}")
    tokens = "".join(((e.get("data") or {}).get("chunk") or {}).get("content", "") for e in evs if e.get("event") == "on_chat_model_stream")
    expect(tokens == "echo: hi events", f"on_chat_model_stream chunks add up to the reply: {tokens!r}")


# ---------------------------------------------------------------- interrupts & state

@check
async def check_interrupt_resume(c):
    tid = await new_thread(c, "interrupt")
    out = await c.runs.wait(tid, "agent", input=human("please ask me"))
    intr = out.get("__interrupt__")
    expect(isinstance(intr, list) and len(intr) == 1, f"wait returns the values plus __interrupt__: {short(out)}")
    expect(intr[0].get("value") == {"question": "approve?", "text": "please ask me"} and intr[0].get("id"),
           f"__interrupt__ item has the interrupt value and an id: {short(intr)}")
    t = await c.threads.get(tid)
    expect(t["status"] == "interrupted", f"thread status after interrupt(): {t['status']!r}")
    ti = t.get("interrupts") or {}
    flat = [i for items in ti.values() for i in items] if isinstance(ti, dict) else []
    expect(flat and flat[0].get("value", {}).get("question") == "approve?",
           f"thread.interrupts lists the pending interrupt by task id: {short(ti)}")
    st = await c.threads.get_state(tid)
    expect(st["next"] == ["human"], f"state.next while paused: {st['next']}")
    expect(st.get("interrupts") and st["interrupts"][0]["value"]["question"] == "approve?", f"state.interrupts: {short(st.get('interrupts'))}")
    expect(st["tasks"] and st["tasks"][0]["name"] == "human" and st["tasks"][0]["interrupts"],
           f"state.tasks shows the paused task with its interrupt: {short(st['tasks'])}")
    runs = await c.runs.list(tid)
    expect(runs[0]["status"] == "success", f"a run paused by interrupt() ends `success` (the thread is interrupted): {runs[0]['status']!r}")
    res = await c.runs.wait(tid, "agent", command={"resume": "yes"})
    expect(contents(res)[-1:] == ["human said: yes"], f"resume with command: last message should be 'human said: yes': {short(contents(res))}")
    expect("__interrupt__" not in res, f"no interrupt after resuming: {short(res)}")
    t2 = await c.threads.get(tid)
    expect(t2["status"] == "idle", f"thread status after resume: {t2['status']!r}")
    expect(not t2.get("interrupts"), f"no interrupts left: {short(t2.get('interrupts'))}")


@check
async def check_interrupt_subgraph(c):
    tid = await new_thread(c, "interrupt_subgraph")
    parts = await collect(c.runs.stream(tid, "agent", input=human("please subask"), stream_mode="updates"))
    check_stream_frame(parts, "subgraph interrupt stream")
    ints = [p.data["__interrupt__"] for p in parts if p.event == "updates" and "__interrupt__" in (p.data or {})]
    expect(ints and ints[-1][0]["value"] == {"question": "sub approve?"}, f"the subgraph's interrupt reaches the root updates: {short([p.data for p in parts])}")
    st = await c.threads.get_state(tid, subgraphs=True)
    expect(st["next"] == ["sub"], f"paused inside node sub: {st['next']}")
    expect(st["tasks"] and isinstance(st["tasks"][0].get("state"), dict),
           f"get_state(subgraphs=True) nests the subgraph's state in the task: {short(st['tasks'])}")
    res = await c.runs.wait(tid, "agent", command={"resume": "ok"})
    expect("sub answer: ok" in contents(res, "ai"), f"resuming the subgraph: {short(contents(res))}")


@check
async def check_state_update_history(c):
    tid = await new_thread(c, "state")
    await c.runs.wait(tid, "agent", input=human("hi state"))
    st = await c.threads.get_state(tid)
    for k in ("values", "next", "tasks", "metadata", "created_at", "checkpoint", "parent_checkpoint"):
        expect(k in st, f"ThreadState lacks {k!r}: {short(st)}")
    expect(st["values"].get("count") == 2 and st["next"] == [], f"state after a run: {short(st)}")
    cp = st["checkpoint"]
    expect(cp.get("checkpoint_id") and cp.get("thread_id") == tid, f"state.checkpoint: {short(cp)}")
    res = await c.threads.update_state(tid, {"count": 5, "messages": [{"role": "ai", "content": "edited"}]}, as_node="human")
    expect(((res or {}).get("checkpoint") or {}).get("checkpoint_id"), f"update_state returns the new checkpoint: {short(res)}")
    st2 = await c.threads.get_state(tid)
    expect(st2["values"].get("count") == 7, f"update_state goes through the reducer (2 + 5): {short(st2['values'])}")
    expect(contents(st2["values"])[-1:] == ["edited"], f"the message is appended: {short(contents(st2['values']))}")
    expect(st2["next"] == [], f"as_node=human: nothing is next: {st2['next']}")
    expect((st2.get("metadata") or {}).get("source") == "update", f"an update_state checkpoint has source 'update': {short(st2.get('metadata'))}")
    expect(st2["checkpoint"]["checkpoint_id"] == res["checkpoint"]["checkpoint_id"], "get_state shows the checkpoint update_state returned")
    hist = await c.threads.get_history(tid, limit=3)
    expect(len(hist) == 3, f"get_history(limit=3) returns 3 states: {len(hist)}")
    expect(hist[0]["checkpoint"]["checkpoint_id"] == st2["checkpoint"]["checkpoint_id"], "history is newest first")
    expect(hist[1]["checkpoint"]["checkpoint_id"] == cp["checkpoint_id"] and hist[1]["values"].get("count") == 2,
           f"history[1] is the state before the update: {short(hist[1])}")
    full = await c.threads.get_history(tid, limit=100)
    expect(len(full) > 3, f"the whole history has every step: {len(full)}")
    expect((full[-1].get("metadata") or {}).get("source") == "input", f"the oldest checkpoint is the input: {short(full[-1].get('metadata'))}")
    old = await c.threads.get_state(tid, checkpoint_id=cp["checkpoint_id"])
    expect(old["values"].get("count") == 2 and old["checkpoint"]["checkpoint_id"] == cp["checkpoint_id"],
           f"state at a checkpoint id: {short(old)}")
    old2 = await c.threads.get_state(tid, checkpoint=hist[1]["checkpoint"])
    expect(old2["values"].get("count") == 2, f"state at a checkpoint object: {short(old2['values'])}")
    await expect_status(c.threads.update_state(tid, {"count": 1}, as_node="nope"), 400, "update_state as an unknown node")


@check
async def check_interrupt_before_after(c):
    tid = await new_thread(c, "interrupt_before")
    out = await c.runs.wait(tid, "agent", input=human("hi before"), interrupt_before=["human"])
    expect("echo: hi before" in contents(out, "ai") and out.get("count") == 1, f"paused before human: {short(out)}")
    t = await c.threads.get(tid)
    expect(t["status"] == "interrupted", f"a thread paused by interrupt_before is interrupted: {t['status']!r}")
    st = await c.threads.get_state(tid)
    expect(st["next"] == ["human"], f"next is the node we paused before: {st['next']}")
    out = await c.runs.wait(tid, "agent", input=None)
    expect(out.get("count") == 2, f"a run without input resumes from the pause: {short(out)}")
    t = await c.threads.get(tid)
    expect(t["status"] == "idle", f"idle after resuming: {t['status']!r}")
    await c.runs.wait(tid, "agent", input=human("hi after"), interrupt_after=["chat"])
    st = await c.threads.get_state(tid)
    expect(st["next"] == ["sub"] and "echo: hi after" in contents(st["values"], "ai"), f"paused after chat: next {st['next']}")


@check
async def check_fork_from_checkpoint(c):
    tid = await new_thread(c, "fork")
    await c.runs.wait(tid, "agent", input=human("one"))
    st1 = await c.threads.get_state(tid)
    await c.runs.wait(tid, "agent", input=human("two"))
    out = await c.runs.wait(tid, "agent", input=human("three"), checkpoint_id=st1["checkpoint"]["checkpoint_id"])
    expect(contents(out, "human") == ["one", "three"], f"a run from an earlier checkpoint forks the thread there: {short(contents(out))}")
    expect(out.get("count") == 4, f"count on the fork: {short(out)}")
    st = await c.threads.get_state(tid)
    expect(contents(st["values"], "human") == ["one", "three"], f"the thread's state follows the fork: {short(contents(st['values']))}")
    res = await c.threads.update_state(tid, {"count": 100}, checkpoint_id=st1["checkpoint"]["checkpoint_id"])
    st = await c.threads.get_state(tid)
    expect(st["checkpoint"]["checkpoint_id"] == res["checkpoint"]["checkpoint_id"] and st["values"].get("count") == 102
           and contents(st["values"], "human") == ["one"], f"update_state(checkpoint_id=...) forks from that checkpoint: {short(st['values'])}")


# ---------------------------------------------------------------- double texting & cancel

async def start_sleeper(c, tid, secs, wait_running=True):
    run = await c.runs.create(tid, "agent", input=human(f"sleep {secs}"))
    if wait_running:  # running, and its input is in the thread's state (so its node is sleeping now)
        await poll(lambda: c.runs.get(tid, run["run_id"]), lambda r: r["status"] == "running", "the first run to be running")
        await poll(lambda: c.threads.get_state(tid), lambda st: f"sleep {secs}" in contents(st["values"], "human"),
                   "the first run's input to be checkpointed")
    return run


@check
async def check_multitask_reject(c):
    tid = await new_thread(c, "reject")
    r1 = await start_sleeper(c, tid, 5, wait_running=False)
    t = await c.threads.get(tid)
    expect(t["status"] == "busy", f"a thread is busy as soon as a run is created: {t['status']!r}")
    await expect_status(c.runs.create(tid, "agent", input=human("second"), multitask_strategy="reject"), 409,
                        "runs.create(multitask_strategy=reject) while a run is active")
    await expect_status(c.runs.wait(tid, "agent", input=human("second"), multitask_strategy="reject"), 409,
                        "runs.wait(multitask_strategy=reject) while a run is active")
    await expect_status(c.runs.stream(tid, "agent", input=human("second"), multitask_strategy="reject"), 409,
                        "runs.stream(multitask_strategy=reject) while a run is active")
    out = await c.runs.join(tid, r1["run_id"])
    expect(contents(out, "human") == ["sleep 5"], f"the first run goes on alone: {short(contents(out))}")
    runs = await c.runs.list(tid)
    expect([r["run_id"] for r in runs] == [r1["run_id"]], f"the rejected runs are not stored: {short(runs)}")


@check
async def check_multitask_enqueue(c):
    tid = await new_thread(c, "enqueue")
    r1 = await start_sleeper(c, tid, 2, wait_running=False)
    r2 = await c.runs.create(tid, "agent", input=human("second"), multitask_strategy="enqueue")
    expect(r2["status"] == "pending", f"an enqueued run waits: {r2['status']!r}")
    out = await c.runs.join(tid, r2["run_id"])
    expect(contents(out, "human") == ["sleep 2", "second"] and contents(out, "ai")[:1] == ["echo: sleep 2"]
           and "echo: second" in contents(out, "ai"), f"the enqueued run runs after the first and sees its output: {short(contents(out))}")
    s1 = await c.runs.get(tid, r1["run_id"])
    s2 = await c.runs.get(tid, r2["run_id"])
    expect((s1["status"], s2["status"]) == ("success", "success"), f"both runs succeed: {s1['status']}, {s2['status']}")


@check
async def check_multitask_interrupt(c):
    tid = await new_thread(c, "mt_interrupt")
    r1 = await start_sleeper(c, tid, 3)
    r2 = await c.runs.create(tid, "agent", input=human("second"), multitask_strategy="interrupt")
    out = await c.runs.join(tid, r2["run_id"])
    expect("echo: second" in contents(out, "ai"), f"the interrupting run completes: {short(contents(out))}")
    expect("echo: sleep 3" not in contents(out, "ai"), f"the first run was stopped before its reply: {short(contents(out))}")
    expect("sleep 3" in contents(out, "human"), f"the interrupted run's progress (its input) is kept: {short(contents(out))}")
    s1 = await poll(lambda: c.runs.get(tid, r1["run_id"]), lambda r: r["status"] not in ("pending", "running"), "run 1 to stop")
    expect(s1["status"] == "interrupted", f"the first run ends `interrupted`: {s1['status']!r}")


@check
async def check_multitask_rollback(c):
    tid = await new_thread(c, "rollback")
    r1 = await start_sleeper(c, tid, 3)
    r2 = await c.runs.create(tid, "agent", input=human("second"), multitask_strategy="rollback")
    out = await c.runs.join(tid, r2["run_id"])
    expect(contents(out) == ["second", "echo: second", "from inner subgraph node"],
           f"rollback erases the first run's progress: {short(contents(out))}")
    await poll(lambda: expect_status(c.runs.get(tid, r1["run_id"]), 404, "get of the rolled-back run"),
               lambda _: True, "the rolled-back run to be deleted")
    runs = await c.runs.list(tid)
    expect([r["run_id"] for r in runs] == [r2["run_id"]], f"only the second run remains: {short(runs)}")


@check
async def check_cancel(c):
    tid = await new_thread(c, "cancel")
    r = await start_sleeper(c, tid, 5)
    t0 = time.monotonic()
    await c.runs.cancel(tid, r["run_id"], wait=True)
    took = time.monotonic() - t0
    got = await c.runs.get(tid, r["run_id"])
    expect(got["status"] == "interrupted", f"a cancelled run ends `interrupted`: {got['status']!r} (cancel took {took:.1f}s)")
    t = await poll(lambda: c.threads.get(tid), lambda t: t["status"] != "busy", "the thread to leave busy")
    expect(t["status"] == "interrupted", f"the thread of a cancelled run is `interrupted`: {t['status']!r}")
    st = await c.threads.get_state(tid)
    expect("echo: sleep 5" not in contents(st["values"], "ai"), f"the cancelled node's write did not land: {short(contents(st['values']))}")
    await expect_status(c.runs.cancel(tid, r["run_id"]), 404, "cancel of a finished run")
    # cancelling a pending (enqueued) run
    r1 = await start_sleeper(c, tid, 2, wait_running=False)
    r2 = await c.runs.create(tid, "agent", input=human("never"))
    await c.runs.cancel(tid, r2["run_id"])
    s2 = await poll(lambda: c.runs.get(tid, r2["run_id"]), lambda x: x["status"] != "pending", "the pending run to be cancelled")
    expect(s2["status"] == "interrupted", f"a cancelled pending run is `interrupted`: {s2['status']!r}")
    out = await c.runs.join(tid, r1["run_id"])
    expect("never" not in contents(out), f"the cancelled pending run never ran: {short(contents(out))}")


# ---------------------------------------------------------------- stateless, errors, failures

@check
async def check_stateless(c):
    out = await c.runs.wait(None, "simple", input={"value": "abc"})
    expect(out == {"value": "ABC"}, f"stateless wait on simple: {short(out)}")
    parts = await collect(c.runs.stream(None, "simple", input={"value": "abc"}, stream_mode="values"))
    check_stream_frame(parts, "stateless stream")
    vals = [p.data for p in parts if p.event == "values"]
    expect(vals and vals[-1] == {"value": "ABC"}, f"stateless stream values: {short(vals)}")
    parts = await collect(c.runs.stream(None, "simple", input={"value": "xyz"}, stream_mode="updates"))
    ups = [p.data for p in parts if p.event == "updates"]
    expect(ups == [{"upper": {"value": "XYZ"}}], f"stateless stream updates: {short(ups)}")


@check
async def check_errors(c):
    tid = await new_thread(c, "errors")
    await expect_status(c.runs.wait(tid, "nope", input=human("x")), 422, "a run on an unknown graph id",
                        contains=("agent", "simple"))
    await expect_status(c.runs.wait(None, "nope", input={"value": "x"}), 422, "a stateless run on an unknown graph id",
                        contains=("agent", "simple"))
    await expect_status(c.runs.wait(tid, str(uuid.uuid4()), input=human("x")), 404, "a run on an unknown assistant UUID")
    await expect_status(c.runs.create(str(uuid.uuid4()), "agent", input=human("x")), 404, "a run on an unknown thread")
    await expect_status(c.threads.get("not-a-uuid"), 422, "threads.get of a malformed id")
    await expect_status(c.threads.get(str(uuid.uuid4())), 404, "threads.get of an unknown id")
    await expect_status(c.assistants.get(str(uuid.uuid4())), 404, "assistants.get of an unknown id")
    await expect_status(c.assistants.create(graph_id="nope"), 404, "assistants.create on an unknown graph", contains=("nope",))
    await expect_status(c.runs.get(tid, str(uuid.uuid4())), 404, "runs.get of an unknown run")
    t = await c.threads.get(tid)
    expect(t["status"] == "idle", f"failed requests leave the thread idle: {t['status']!r}")


@check
async def check_failing_run(c):
    tid = await new_thread(c, "fail")
    parts = await collect(c.runs.stream(tid, "agent", input=human("please fail"), stream_mode=["values", "updates"]))
    md = check_stream_frame(parts, "failing stream")
    names = [p.event for p in parts]
    expect(names[-1] == "error", f"a failing run ends its stream with an `error` event: {names}")
    err = parts[-1].data
    expect(isinstance(err, dict) and isinstance(err.get("error"), str) and err.get("error") and "failed on purpose" in str(err.get("message")),
           f"error event data {{error, message}}: {short(err)}")
    run = await c.runs.get(tid, md["run_id"])
    expect(run["status"] == "error", f"the failed run's status: {run['status']!r}")
    t = await c.threads.get(tid)
    expect(t["status"] == "error", f"the thread of a failed run is `error`: {t['status']!r}")
    out = await c.runs.wait(tid, "agent", input=human("fail again"), raise_error=False)
    e = out.get("__error__") if isinstance(out, dict) else None
    expect(isinstance(e, dict) and isinstance(e.get("error"), str) and e.get("error") and "failed on purpose" in str(e.get("message")),
           f"wait returns {{'__error__': {{error, message}}}}: {short(out)}")
    try:
        await c.runs.wait(tid, "agent", input=human("fail thrice"))
    except CheckFailed:
        raise
    except Exception as ex:
        expect("failed on purpose" in str(ex), f"runs.wait raises with the error: {ex}")
    else:
        raise CheckFailed("runs.wait (raise_error default) should raise on a failed run")
    ok = await c.runs.wait(tid, "agent", input=human("recover"))
    expect("echo: recover" in contents(ok, "ai"), f"a thread in error takes new runs: {short(contents(ok))}")


@check
async def check_runs_misc(c):
    batch = await c.runs.create_batch([{"assistant_id": "simple", "input": {"value": "a"}},
                                       {"assistant_id": "simple", "input": {"value": "b"}}])
    expect(isinstance(batch, list) and len(batch) == 2 and all(r.get("run_id") for r in batch),
           f"create_batch returns one run per payload: {short(batch)}")
    given = str(uuid.uuid4())
    out = await c.runs.wait(given, "agent", input=human("brand new"), if_not_exists="create",
                            metadata={"sdk_check": TAG})
    expect("echo: brand new" in contents(out, "ai"), f"if_not_exists=create runs on a new thread: {short(out)}")
    t = await c.threads.get(given)
    expect(t["thread_id"] == given, "if_not_exists=create made the thread with the given id")
    tid = await new_thread(c, "runs_misc")
    r = await start_sleeper(c, tid, 5)
    await c.runs.cancel_many(thread_id=tid, run_ids=[r["run_id"]])
    got = await poll(lambda: c.runs.get(tid, r["run_id"]), lambda x: x["status"] not in ("pending", "running"), "cancel_many to take effect")
    expect(got["status"] == "interrupted", f"cancel_many interrupts the run: {got['status']!r}")
    await c.runs.delete(tid, r["run_id"])
    await expect_status(c.runs.get(tid, r["run_id"]), 404, "get of a deleted run")
    done = await c.runs.wait(tid, "agent", input=human("after delete"))
    expect("echo: after delete" in contents(done, "ai"), f"the thread takes runs after cancel + delete: {short(contents(done))}")


@check
async def check_assistants_versions_count(c):
    a = await c.assistants.create(graph_id="simple", metadata={"sdk_check": TAG, "check": "versions", "v": 1})
    aid = a["assistant_id"]
    await c.assistants.update(aid, metadata={"v": 2})
    vs = await c.assistants.get_versions(aid)
    expect([v.get("version") for v in vs] == [2, 1], f"get_versions lists versions newest first: {short(vs)}")
    expect(vs[1]["metadata"].get("v") == 1 and vs[0]["metadata"].get("v") == 2, f"each version keeps its metadata: {short(vs)}")
    back = await c.assistants.set_latest(aid, 1)
    expect(back["version"] == 1 and back["metadata"].get("v") == 1, f"set_latest(1) makes version 1 current: {short(back)}")
    got = await c.assistants.get(aid)
    expect(got["version"] == 1, f"get after set_latest: {got['version']}")
    n = await c.assistants.count(graph_id="simple")
    expect(isinstance(n, int) and n >= 2, f"assistants.count(graph_id=simple) counts the system one and ours: {n!r}")
    await c.assistants.delete(aid)
    tid = await new_thread(c, "count")
    n = await c.threads.count(metadata={"sdk_check": TAG, "check": "count"})
    expect(n == 1, f"threads.count by metadata: {n!r}")
    await c.threads.delete(tid)


@check
async def check_crons_crud(c):
    tid = await new_thread(c, "crons")
    await expect_status(c.crons.create("simple", schedule="61 * * * *"), 422, "a cron with a bad schedule",
                        contains=("61 * * * *",))
    await expect_status(c.crons.create_for_thread(str(uuid.uuid4()), "simple", schedule="* * * * *"), 404,
                        "a cron on an unknown thread")
    on_thread = await c.crons.create_for_thread(tid, "simple", schedule="0 9 * * *", input={"value": "t"},
                                                metadata={"sdk_check": TAG})
    expect(UUID_RE.match(str(on_thread.get("cron_id", ""))), f"cron_id: {short(on_thread)}")
    expect(str(on_thread["thread_id"]) == tid, f"thread cron's thread_id: {short(on_thread)}")
    expect(on_thread["schedule"] == "0 9 * * *", f"schedule: {short(on_thread)}")
    expect(str(on_thread["next_run_date"])[11:19] == "09:00:00", f"next_run_date at 09:00 UTC: {short(on_thread)}")
    stateless = await c.crons.create("simple", schedule="*/5 * * * *", input={"value": "s"},
                                     on_run_completed="keep", metadata={"sdk_check": TAG})
    expect(stateless["thread_id"] is None, f"stateless cron has no thread: {short(stateless)}")
    found = await c.crons.search(thread_id=tid)
    expect([str(x["cron_id"]) for x in found] == [str(on_thread["cron_id"])], f"search by thread: {short(found)}")
    found = await c.crons.search(metadata={"sdk_check": TAG}, sort_by="created_at", sort_order="asc")
    expect([str(x["cron_id"]) for x in found] == [str(on_thread["cron_id"]), str(stateless["cron_id"])],
           f"search by metadata, oldest first: {short(found)}")
    n = await c.crons.count(metadata={"sdk_check": TAG})
    expect(n == 2, f"count by metadata: {n!r}")
    updated = await c.crons.update(stateless["cron_id"], schedule="30 * * * *", enabled=False)
    expect(updated["schedule"] == "30 * * * *" and updated["enabled"] is False, f"updated: {short(updated)}")
    found = await c.crons.search(metadata={"sdk_check": TAG}, enabled=False)
    expect([str(x["cron_id"]) for x in found] == [str(stateless["cron_id"])], f"search disabled: {short(found)}")
    await c.crons.delete(stateless["cron_id"])
    await c.crons.delete(on_thread["cron_id"])
    await expect_status(c.crons.delete(on_thread["cron_id"]), 404, "deleting a deleted cron")
    n = await c.crons.count(metadata={"sdk_check": TAG})
    expect(n == 0, f"count after delete: {n!r}")


@check
async def check_thread_stream_modes(c):
    """join_stream: `-` replays the thread's runs, `lifecycle` sends only their starts and ends,
    `state_update` sends the state written by update_state, last_event_id resumes after it."""
    tid = await new_thread(c, "thread_stream")
    run = await c.runs.create(tid, "simple", input={"value": "one"})
    await c.runs.join(tid, run["run_id"])

    async def until_done(stream_mode, last_event_id):
        parts = []
        async for p in await c.threads.join_stream(tid, stream_mode=stream_mode, last_event_id=last_event_id):
            parts.append(p)
            if p.event == "metadata" and (p.data or {}).get("status") == "run_done":
                return parts
        return parts

    replay = await asyncio.wait_for(until_done("run_modes", "-"), 20)
    names = [p.event for p in replay]
    expect(names[0] == "metadata" and "values" in names, f"`-` replays the run: {names}")
    expect(any((p.data or {}).get("value") == "ONE" for p in replay if p.event == "values"),
           f"the replayed run's values: {short([p.data for p in replay])}")
    life = await asyncio.wait_for(until_done("lifecycle", "-"), 20)
    expect([p.event for p in life] == ["metadata", "metadata"], f"lifecycle: a start and an end: {[(p.event, p.data) for p in life]}")

    async def first_state_update():
        async for p in await c.threads.join_stream(tid, stream_mode="state_update"):
            if p.event == "state_update":
                return p
    waiting = asyncio.create_task(first_state_update())
    await asyncio.sleep(0.5)
    await c.threads.update_state(tid, {"value": "edited"})
    part = await asyncio.wait_for(waiting, 20)
    expect(part.data["thread_id"] == tid and part.data["state"]["values"] == {"value": "edited"},
           f"state_update carries the new state: {short(part.data)}")


@check
async def check_threads_search_extract(c):
    tid = await new_thread(c, "extract", who="ext")
    await c.runs.wait(tid, "agent", input=human("hello extract"))
    found = await c.threads.search(metadata={"sdk_check": TAG, "check": "extract"},
                                   extract={"last": "values.messages[-1].content", "who": "metadata.who", "none": "values.nope"})
    expect(len(found) == 1, f"one thread: {short(found)}")
    ex = found[0].get("extracted")
    expect(ex == {"last": ex and ex.get("last"), "who": "ext", "none": None} and isinstance(ex.get("last"), str) and ex["last"],
           f"extracted values: {short(ex)}")
    await expect_status(c.threads.search(extract={"x": "secret.path"}), 422, "an extract path outside the thread")


@check
async def check_history_of_a_subgraph(c):
    tid = await new_thread(c, "history_subgraph")
    await c.runs.wait(tid, "agent", input=human("please subask"))
    st = await c.threads.get_state(tid, subgraphs=True)
    sub = st["tasks"][0]["state"]
    ns = sub["checkpoint"]["checkpoint_ns"]
    expect(ns.startswith("sub:"), f"the subgraph's namespace: {ns!r}")
    hist = await c.threads.get_history(tid, limit=10, checkpoint={"checkpoint_ns": ns})
    expect(hist and all(h["checkpoint"]["checkpoint_ns"] == ns for h in hist), f"the subgraph's own checkpoints: {short(hist)}")
    expect(hist[0]["checkpoint"]["checkpoint_id"] == sub["checkpoint"]["checkpoint_id"], "newest first: the paused one")
    root = await c.threads.get_history(tid, limit=10)
    expect(all(h["checkpoint"]["checkpoint_ns"] == "" for h in root), "without a namespace: the root graph's")


@check
async def check_checkpoint_during_false(c):
    """checkpoint_during=False (older clients) is durability `exit`: one checkpoint, at the end."""
    during = await new_thread(c, "checkpoint_during_true")
    await c.runs.wait(during, "simple", input={"value": "a"})
    at_end = await new_thread(c, "checkpoint_during_false")
    await c.runs.wait(at_end, "simple", input={"value": "a"}, checkpoint_during=False)
    n_during = len(await c.threads.get_history(during, limit=50))
    n_end = len(await c.threads.get_history(at_end, limit=50))
    expect(n_end == 1 and n_during > 1, f"checkpoints: {n_during} during, {n_end} with checkpoint_during=False")
    st = await c.threads.get_state(at_end)
    expect(st["values"] == {"value": "A"}, f"the run's result is kept: {short(st['values'])}")


async def check_crons_fire(c):
    """A cron on a thread fires at the next minute: a run with the cron's input, on time."""
    tid = await new_thread(c, "crons-fire")
    cron = await c.crons.create_for_thread(tid, "simple", schedule="* * * * *", input={"value": "tick"})
    due = str(cron["next_run_date"])
    try:
        runs = await poll(lambda: c.runs.list(tid), lambda rs: any(r["status"] == "success" for r in rs),
                          "the cron's first run", timeout=80.0, interval=0.5)
    finally:
        await c.crons.delete(cron["cron_id"])
    run = next(r for r in runs if r["status"] == "success")
    expect(str(run["created_at"]) >= due[:19], f"fired at or after {due}: {short(run)}")
    expect(str(run["created_at"])[:16] == due[:16], f"fired within its minute {due}: {short(run)}")
    state = await c.threads.get_state(tid)
    expect(state["values"] == {"value": "TICK"}, f"the cron's input ran: {short(state['values'])}")


check_crons_fire.timeout = 90.0  # waits for the next minute
check(check_crons_fire)


# ---------------------------------------------------------------- driver


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--only", help="comma-separated check names")
    ap.add_argument("--serial", action="store_true", help="run the checks one after the other")
    ap.add_argument("--timeout", type=float, default=40.0, help="per-check timeout in seconds")
    ap.add_argument("--api-key", default=None)
    args = ap.parse_args()
    checks = CHECKS
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {n for n, _ in CHECKS}
        if unknown:
            print(f"unknown checks: {sorted(unknown)}; known: {[n for n, _ in CHECKS]}")
            return 2
        checks = [(n, f) for n, f in CHECKS if n in want]
    # without --api-key the SDK reads LANGGRAPH_API_KEY / LANGSMITH_API_KEY / LANGCHAIN_API_KEY as usual
    kw = {"api_key": args.api_key} if args.api_key else {}
    client = get_client(url=args.url.rstrip("/"), **kw)
    t0 = time.monotonic()
    results = []
    if args.serial:
        for n, f in checks:
            await run_one(n, f, client, args.timeout, results)
    else:
        await asyncio.gather(*(run_one(n, f, client, args.timeout, results) for n, f in checks))
    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"python: {passed} passed, {failed} failed")
    print(f"(langgraph-sdk python, {time.monotonic() - t0:.1f}s against {args.url})", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
