"""agentgraph's SQLite and PostgreSQL stores (and the in-memory one) beyond what conformance
shows: semantic search (LangGraph's SQLite store needs an extension this venv cannot load),
TTL expiry, sweeping, async `embed`, sharing a file, and the PostgreSQL store (run when
`AGENTGRAPH_POSTGRES_URL` names a server, as the saver tests)."""

import asyncio
import os
import time
import uuid

import pytest

from agentgraph.store.memory import InMemoryStore
from agentgraph.store.postgres import AsyncPostgresStore, PostgresStore
from agentgraph.store.sqlite import AsyncSqliteStore, SqliteStore

PG_URL = os.environ.get("AGENTGRAPH_POSTGRES_URL")
BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.skipif(not PG_URL, reason="AGENTGRAPH_POSTGRES_URL is not set"))]


def embed(texts):
    return [[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts]


async def aembed(texts):
    await asyncio.sleep(0)
    return embed(texts)


def make(backend, **kwargs):
    if backend == "memory":
        return InMemoryStore(**kwargs)
    if backend == "sqlite":
        return SqliteStore(":memory:", **kwargs)
    return PostgresStore(PG_URL, **kwargs)


def fresh_ns(*labels):
    # PostgreSQL is shared across runs: each test has its own namespace root.
    return (f"t{uuid.uuid4().hex[:8]}", *labels)


@pytest.mark.parametrize("backend", BACKENDS)
def test_semantic_search(backend):
    store = make(backend, index={"dims": 2, "embed": embed, "fields": ["text"]})
    ns = fresh_ns("d")
    store.put(ns, "cat", {"text": "a cat"})
    store.put(ns, "dog", {"text": "a dog"})
    store.put(ns, "hidden", {"text": "another cat"}, index=False)
    hits = store.search(ns, query="cat")
    assert [(h.key, h.score) for h in hits[:2]] == [("cat", pytest.approx(1.0)), ("dog", pytest.approx(0.0))]
    if backend == "memory":
        # LangGraph's in-memory store lists unembedded items after the ranked ones ...
        assert (hits[2].key, hits[2].score) == ("hidden", None)
    else:
        # ... its SQL stores join on vectors: found by filters only.
        assert len(hits) == 2
    assert [h.key for h in store.search(ns, query="cat", limit=1, offset=1)] == ["dog"]
    assert [h.key for h in store.search(ns, query="cat", filter={"text": "a dog"})] == ["dog"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ttl_hides_expired_items_and_sweep_deletes_them(backend):
    store = make(backend, ttl={"default_ttl": 10 / 60_000, "refresh_on_read": False})
    assert store.supports_ttl
    ns = fresh_ns()
    store.put(ns, "default", {"v": 1})  # 10 ms
    store.put(ns, "kept", {"v": 2}, ttl=None)
    store.put(ns, "long", {"v": 3}, ttl=10)
    time.sleep(0.05)
    assert store.get(ns, "default") is None
    assert sorted(h.key for h in store.search(ns)) == ["kept", "long"]
    assert store.sweep_ttl() >= 1
    assert store.get(ns, "long").value == {"v": 3}


@pytest.mark.parametrize("backend", BACKENDS)
def test_reads_refresh_ttls(backend):
    store = make(backend, ttl={"default_ttl": 200 / 60_000, "refresh_on_read": True})
    ns = fresh_ns()
    store.put(ns, "k", {"v": 1})  # 200 ms
    for _ in range(4):
        time.sleep(0.1)
        assert store.get(ns, "k") is not None  # each read restarts the 200 ms
    time.sleep(0.1)
    assert store.get(ns, "k", refresh_ttl=False) is not None
    time.sleep(0.15)
    assert store.get(ns, "k") is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_embed_function(backend):
    # Under `abatch` awaited on the caller's loop; under `batch` in a loop of its own.
    store = make(backend, index={"dims": 2, "embed": aembed})
    ns = fresh_ns()

    async def main():
        await store.aput(ns, "cat", {"text": "cat"})
        await store.aput(ns, "dog", {"text": "dog"})
        return [h.key for h in await store.asearch(ns, query="cat")]

    assert asyncio.run(main()) == ["cat", "dog"]
    assert [h.key for h in store.search(ns, query="dog")] == ["dog", "cat"]


def test_in_memory_store_lists_a_namespace_whose_items_were_deleted():
    store = InMemoryStore()
    store.put(("a", "b"), "k", {"v": 1})
    store.put(("c",), "k", {"v": 1})
    store.delete(("a", "b"), "k")
    assert store.list_namespaces() == [("a", "b"), ("c",)]
    assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]
    assert store.list_namespaces(suffix=("c",)) == [("c",)]
    assert store.search(("a",)) == []


def test_sqlite_store_shares_a_file_across_stores_and_with_the_saver(tmp_path):
    from agentgraph.checkpoint.sqlite import SqliteSaver

    path = str(tmp_path / "app.db")
    with SqliteSaver.from_conn_string(path):
        with SqliteStore.from_conn_string(path) as one:
            one.setup()
            one.put(("u",), "k", {"b": 2, "a": 1})
    with SqliteStore.from_conn_string(path) as two:
        item = two.get(("u",), "k")
        assert item.value == {"a": 1, "b": 2}
        assert item.created_at <= item.updated_at
    # A put keeps the item's first `created_at` (LangGraph's SQL stores' ON CONFLICT update).
    with SqliteStore.from_conn_string(path) as three:
        time.sleep(0.01)
        three.put(("u",), "k", {"a": 3})
        again = three.get(("u",), "k")
        assert again.created_at == item.created_at and again.updated_at > item.updated_at


def test_sqlite_store_takes_a_connection_for_its_file(tmp_path):
    import sqlite3

    path = str(tmp_path / "conn.db")
    store = SqliteStore(sqlite3.connect(path))
    store.put(("n",), "k", {"v": 1})
    assert SqliteStore(path).get(("n",), "k").value == {"v": 1}
    with pytest.raises(TypeError):
        SqliteStore(":memory:").put(("n",), "k", {"v": object()})


def test_async_sqlite_store(tmp_path):
    async def main():
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "a.db"), ttl={"default_ttl": 1}) as store:
            await store.setup()
            await store.aput(("a",), "k", {"v": 1})
            results = await store.abatch([])
            return (await store.aget(("a",), "k")).value, results, await store.sweep_ttl()

    assert asyncio.run(main()) == ({"v": 1}, [], 0)


def test_ttl_sweeper_thread_starts_and_stops():
    store = SqliteStore(":memory:", ttl={"default_ttl": 1 / 60_000, "sweep_interval_minutes": 0.001})
    store.put(("s",), "k", {"v": 1})
    done = store.start_ttl_sweeper()
    time.sleep(0.3)
    assert store.stop_ttl_sweeper(timeout=2)
    assert done.done()
    assert store.sweep_ttl() == 0  # the sweeper deleted it already


@pytest.mark.skipif(not PG_URL, reason="AGENTGRAPH_POSTGRES_URL is not set")
def test_postgres_store_across_instances_and_async():
    ns = fresh_ns("u")
    with PostgresStore.from_conn_string(PG_URL) as store:
        store.setup()
        store.put(ns, "k", {"v": 1})
        assert ns in store.list_namespaces(prefix=ns[:1])

    async def main():
        async with AsyncPostgresStore.from_conn_string(PG_URL) as store:
            await store.setup()
            item = await store.aget(ns, "k")
            await store.adelete(ns, "k")
            return item.value, await store.aget(ns, "k")

    assert asyncio.run(main()) == ({"v": 1}, None)


def test_async_sqlite_store_takes_an_aiosqlite_connection_for_its_file(tmp_path):
    aiosqlite = pytest.importorskip("aiosqlite")
    path = str(tmp_path / "aio.db")

    async def main():
        async with aiosqlite.connect(path) as conn:
            store = AsyncSqliteStore(conn)
            await store.aput(("n",), "k", {"v": 1})
        return SqliteStore(path).get(("n",), "k").value

    assert asyncio.run(main()) == {"v": 1}
    assert not list(tmp_path.glob("<*"))  # no file named after the connection object


def test_async_sqlite_saver_takes_an_aiosqlite_connection_for_its_file(tmp_path):
    aiosqlite = pytest.importorskip("aiosqlite")
    from agentgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = tmp_path / "saver.db"

    async def main():
        async with aiosqlite.connect(str(path)) as conn:
            AsyncSqliteSaver(conn)

    asyncio.run(main())
    assert path.exists() and not list(tmp_path.glob("<*"))
