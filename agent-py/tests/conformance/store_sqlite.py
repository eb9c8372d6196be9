"""`langgraph.store.sqlite`: `SqliteStore` / `AsyncSqliteStore` from `from_conn_string` (a file
and `":memory:"`), `setup()`, get/put/delete/search (filters, limit/offset), list_namespaces, batch, TTLs
(`supports_ttl`, `ttl=` per put, a store's `default_ttl`, `sweep_ttl()` of nothing expired:
LangGraph's SQLite store neither hides nor sweeps an expired item before its next second-
resolution comparison, so expiry itself is tested in `test_stores.py`), and a graph reading
and writing the store from nodes. Values are written with sorted keys (agentgraph's SQL stores
read them back sorted) and timestamps are not printed. (Semantic search is not here: LangGraph's SQLite store needs
the `sqlite-vec` extension, which this venv's Python cannot load; `test_stores.py` covers ours.)"""

import asyncio
import os
import tempfile

from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.sqlite import AsyncSqliteStore, SqliteStore
from typing_extensions import TypedDict

def show(items):
    return [(tuple(i.namespace), i.key, i.value) for i in items]


def by_key(items):
    return sorted(show(items), key=lambda t: (t[0], t[1]))


def basics(store):
    print("supports_ttl", store.supports_ttl)
    store.put(("users", "ada"), "profile", {"age": 36, "name": "Ada"})
    store.put(("users", "ada"), "prefs", {"lang": "en", "theme": "dark"})
    store.put(("users", "bob"), "profile", {"age": 25, "name": "Bob"})
    store.put(("docs",), "d1", {"kind": "note", "n": 1})
    item = store.get(("users", "ada"), "profile")
    print("get", item.namespace, item.key, item.value, type(item.created_at).__name__)
    print("missing", store.get(("users", "ada"), "nope"))
    print("search users", by_key(store.search(("users",))))
    print("filter", by_key(store.search(("users",), filter={"age": {"$gte": 30}})))
    print("filter eq", by_key(store.search(("users",), filter={"name": "Bob"})))
    print("count page", len(store.search(("users",), limit=2)), len(store.search(("users",), offset=2)))
    print("namespaces", store.list_namespaces())
    print("prefix", store.list_namespaces(prefix=("users",)))
    print("depth", store.list_namespaces(max_depth=1))
    print("suffix", store.list_namespaces(suffix=("bob",)))
    store.put(("users", "ada"), "profile", {"age": 37, "name": "Ada"})
    print("updated", store.get(("users", "ada"), "profile").value)
    store.delete(("users", "bob"), "profile")
    print("deleted", store.get(("users", "bob"), "profile"))
    print("namespaces after delete", store.list_namespaces())
    results = store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            GetOp(("b",), "k"),
            SearchOp(("users",), None, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
        ]
    )
    print("batch", results[0], results[1], len(results[2]), results[3])
    print("after batch", store.get(("b",), "k").value)


def ttl(store):
    store.put(("t",), "long", {"v": 2}, ttl=10)
    store.put(("t",), "default", {"v": 1})
    store.put(("t",), "forever", {"v": 3}, ttl=None)
    print("ttl get", store.get(("t",), "long").value, store.get(("t",), "default", refresh_ttl=False).value)
    print("ttl search", by_key(store.search(("t",))))
    print("swept", store.sweep_ttl())


def graph(store):
    class State(TypedDict):
        user: str
        seen: int

    def remember(state: State, *, store: BaseStore):
        ns = ("visits", state["user"])
        old = store.get(ns, "count")
        count = (old.value["n"] if old else 0) + 1
        store.put(ns, "count", {"n": count})
        return {"seen": count}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    app = builder.compile(store=store)
    print("graph", app.invoke({"user": "ada", "seen": 0}), app.invoke({"user": "ada", "seen": 0}))


async def main_async(path):
    async with AsyncSqliteStore.from_conn_string(path) as store:
        await store.setup()
        await store.aput(("a", "x"), "k", {"v": 1})
        print("aget", (await store.aget(("a", "x"), "k")).value)
        print("asearch", show(await store.asearch(("a",))))
        print("alist", await store.alist_namespaces())
        await store.adelete(("a", "x"), "k")
        print("adeleted", await store.aget(("a", "x"), "k"))


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "store.db")
    with SqliteStore.from_conn_string(path) as store:
        store.setup()
        basics(store)
    with SqliteStore.from_conn_string(path) as store:
        store.setup()
        print("reopened", store.get(("users", "ada"), "profile").value)
        graph(store)
    with SqliteStore.from_conn_string(":memory:", ttl={"default_ttl": 10, "refresh_on_read": True}) as store:
        store.setup()
        ttl(store)
    asyncio.run(main_async(os.path.join(tmp, "async.db")))
