"""`langgraph.store.postgres`: `PostgresStore` / `AsyncPostgresStore` from `from_conn_string`,
`setup()`, get/put/delete/search (filters, limit/offset), list_namespaces, batch, TTLs
(`supports_ttl`, `ttl=` per put, a store's `default_ttl`, `sweep_ttl()` of an expired item), and
a graph reading and writing the store from nodes. Needs a server (AGENTGRAPH_POSTGRES_URL, as
the saver tests; `.ci/services/postgres.sh` starts one): without one it says so on both sides.
Each run writes under a fresh root namespace (LangGraph's tables and agentgraph's are apart,
but a server outlives runs), left out of what is printed. Values are written with sorted keys
and timestamps are not printed, as in `store_sqlite.py`."""

import asyncio
import os
import sys
import time
import uuid

URL = os.environ.get("AGENTGRAPH_POSTGRES_URL")
if not URL:
    print("no server")
    sys.exit(0)

from langgraph.graph import START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp  # noqa: E402
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

ROOT = f"run{uuid.uuid4().hex[:10]}"


def ns(*labels):
    return (ROOT, *labels)


def strip(namespace):
    namespace = tuple(namespace)
    return namespace[1:] if namespace[:1] == (ROOT,) else namespace


def show(items):
    return sorted(((strip(i.namespace), i.key, i.value) for i in items), key=lambda t: (t[0], t[1]))


def basics(store):
    print("supports_ttl", store.supports_ttl)
    store.put(ns("users", "ada"), "profile", {"age": 36, "name": "Ada"})
    store.put(ns("users", "ada"), "prefs", {"lang": "en", "theme": "dark"})
    store.put(ns("users", "bob"), "profile", {"age": 25, "name": "Bob"})
    store.put(ns("docs"), "d1", {"kind": "note", "n": 1})
    item = store.get(ns("users", "ada"), "profile")
    print("get", strip(item.namespace), item.key, item.value, type(item.created_at).__name__)
    print("missing", store.get(ns("users", "ada"), "nope"))
    print("search users", show(store.search(ns("users"))))
    print("filter", show(store.search(ns("users"), filter={"age": {"$gte": 30}})))
    print("filter eq", show(store.search(ns("users"), filter={"name": "Bob"})))
    print("count page", len(store.search(ns("users"), limit=2)), len(store.search(ns("users"), offset=2)))
    print("namespaces", [strip(n) for n in store.list_namespaces(prefix=(ROOT,))])
    print("depth", [strip(n) for n in store.list_namespaces(prefix=(ROOT,), max_depth=2)])
    print("suffix", [strip(n) for n in store.list_namespaces(prefix=(ROOT,), suffix=("bob",))])
    store.put(ns("users", "ada"), "profile", {"age": 37, "name": "Ada"})
    print("updated", store.get(ns("users", "ada"), "profile").value)
    store.delete(ns("users", "bob"), "profile")
    print("deleted", store.get(ns("users", "bob"), "profile"))
    print("namespaces after delete", [strip(n) for n in store.list_namespaces(prefix=(ROOT,))])
    results = store.batch(
        [
            PutOp(ns("b"), "k", {"v": 1}),
            GetOp(ns("b"), "k"),
            SearchOp(ns("users"), None, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
        ]
    )
    print("batch", results[0], results[1], len(results[2]))
    print("after batch", store.get(ns("b"), "k").value)


def ttl(store):
    store.put(ns("t"), "short", {"v": 1}, ttl=1 / 60)
    store.put(ns("t"), "default", {"v": 2})
    store.put(ns("t"), "forever", {"v": 3}, ttl=None)
    print("ttl get", store.get(ns("t"), "default").value, store.get(ns("t"), "short", refresh_ttl=False).value)
    time.sleep(2.5)
    # Between expiry and the sweep LangGraph's stores still show the item, agentgraph's
    # (agent-core's) no longer: not compared (`test_stores.py` tests agentgraph's).
    print("swept", store.sweep_ttl() >= 1, store.get(ns("t"), "short"), store.get(ns("t"), "default").value)
    print("ttl search", show(store.search(ns("t"))))


def graph(store):
    class State(TypedDict):
        user: str
        seen: int

    def remember(state: State, *, store: BaseStore):
        key = ns("visits", state["user"])
        old = store.get(key, "count")
        count = (old.value["n"] if old else 0) + 1
        store.put(key, "count", {"n": count})
        return {"seen": count}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    app = builder.compile(store=store)
    print("graph", app.invoke({"user": "ada", "seen": 0}), app.invoke({"user": "ada", "seen": 0}))


async def main_async():
    async with AsyncPostgresStore.from_conn_string(URL) as store:
        await store.setup()
        await store.aput(ns("a", "x"), "k", {"v": 1})
        print("aget", (await store.aget(ns("a", "x"), "k")).value)
        print("asearch", show(await store.asearch(ns("a"))))
        print("alist", [strip(n) for n in await store.alist_namespaces(prefix=ns("a"))])
        await store.adelete(ns("a", "x"), "k")
        print("adeleted", await store.aget(ns("a", "x"), "k"))


with PostgresStore.from_conn_string(URL) as store:
    store.setup()
    basics(store)
with PostgresStore.from_conn_string(URL) as store:
    print("reopened", store.get(ns("users", "ada"), "profile").value)
    graph(store)
with PostgresStore.from_conn_string(URL, ttl={"default_ttl": 10, "refresh_on_read": True}) as store:
    ttl(store)
asyncio.run(main_async())
