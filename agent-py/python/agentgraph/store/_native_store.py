"""What agentgraph's stores share: a `BaseStore` over agent-core's store (`_native.NativeStore`,
memory, SQLite or PostgreSQL), ops and results crossing as JSON.

A batch runs as LangGraph's stores run one: its reads (gets, searches, namespace lists) see the
store before its puts, and of several puts to one key the last wins. `abatch` runs the batch on
a worker thread (agent-core blocks only that thread, never the event loop); an index's `embed`
may be an async function: under `abatch` it is awaited on the caller's loop, under `batch` in a
loop of its own. TTLs (`ttl={"default_ttl": minutes, "refresh_on_read": bool}`) are agent-core's:
an expired item is hidden from reads at once, `sweep_ttl()` (or a sweeper started with
`start_ttl_sweeper()`) frees its space.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from agentgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

# The event loop of the `abatch` call that runs the batch on a worker thread (its context is
# copied there): an async `embed` is awaited on it.
_CALLER_LOOP: contextvars.ContextVar[Optional[asyncio.AbstractEventLoop]] = contextvars.ContextVar(
    "agentgraph_store_caller_loop", default=None
)

# A search asks agent-core for every match when the Python side orders and pages them.
ALL = 2**53


def native_args(index: Optional[IndexConfig], ttl: Optional[TTLConfig]) -> dict:
    """The keyword arguments of `_native.NativeStore`'s constructors for these settings."""
    args: dict = {}
    if index:
        args.update(dims=index.get("dims"), embed=embed_function(index.get("embed")), fields=index.get("fields"))
    if ttl:
        args["ttl"] = (ttl.get("default_ttl"), bool(ttl.get("refresh_on_read", True)))
    return args


def embed_function(embed: Any) -> Any:
    """A function from texts to vectors for agent-core: `embed` (a function, sync or async, or
    a LangChain `Embeddings`), whose coroutines are run to their end."""
    if embed is None:
        raise ValueError("an index needs `embed`: a function from texts to vectors, or an Embeddings")
    if isinstance(embed, str):
        raise NotImplementedError("agentgraph's stores take an embedding function, not a provider name")
    call = embed.embed_documents if hasattr(embed, "embed_documents") else embed

    def run(texts: list) -> Any:
        out = call(list(texts))
        if inspect.isawaitable(out):
            loop = _CALLER_LOOP.get()
            if loop is not None and loop.is_running():
                return asyncio.run_coroutine_threadsafe(_awaited(out), loop).result()
            return asyncio.run(_awaited(out))
        return out

    return run


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _refuse_non_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class NativeBackedStore(BaseStore):
    """A `BaseStore` whose items agent-core keeps (see the module's docs)."""

    supports_ttl = True

    def __init__(self, native: Any, *, index: Optional[IndexConfig] = None, ttl: Optional[TTLConfig] = None) -> None:
        self._native = native
        self.index_config = dict(index) if index else None
        self.ttl_config = dict(ttl) if ttl else None
        self._sweeper: Optional[threading.Thread] = None
        self._sweeper_stop = threading.Event()

    # --- what a subclass may change -------------------------------------------------------

    # What JSON cannot hold in a value: refused (`TypeError`), as LangGraph's SQL stores.
    _json_default = staticmethod(_refuse_non_json)

    def _on_puts(self, puts: dict) -> None:
        """Called with a batch's puts (by namespace and key) once they are stored."""

    def _value(self, out: dict) -> Any:
        return out["value"]

    def _times(self, out: dict) -> tuple[datetime, datetime]:
        return _time(out["created_at_ms"]), _time(out["updated_at_ms"])

    def _search_page(self, op: SearchOp, hits: list[SearchItem]) -> list[SearchItem]:
        # A query search finds only items with vectors, as LangGraph's SQL stores (a join).
        if op.query and self.index_config:
            return [hit for hit in hits if hit.score is not None]
        return hits

    def _search_json(self, op: SearchOp, indexed: bool) -> dict:
        return {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": op.filter,
            "query": op.query if indexed else None,
            "limit": op.limit,
            "offset": op.offset,
            "refresh_ttl": op.refresh_ttl,
        }

    def _list_result(self, op: ListNamespacesOp, out: list) -> list:
        return [tuple(ns) for ns in out]

    def _list_json(self, op: ListNamespacesOp) -> dict:
        return {
            "op": "list",
            "match_conditions": [{"match_type": c.match_type, "path": list(c.path)} for c in (op.match_conditions or ())],
            "max_depth": op.max_depth,
            "limit": op.limit,
            "offset": op.offset,
        }

    # --- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        reads = [i for i, op in enumerate(ops) if not isinstance(op, PutOp)]
        puts = {(tuple(op.namespace), op.key): op for op in ops if isinstance(op, PutOp)}
        indexed = self.index_config is not None
        sent = [self._op_json(ops[i], indexed) for i in reads] + [self._op_json(op, indexed) for op in puts.values()]
        raw = json.loads(self._native.batch("[" + ",".join(sent) + "]"))
        results: list[Result] = [None] * len(ops)
        for i, out in zip(reads, raw):
            results[i] = self._result(ops[i], out)
        self._on_puts(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        token = _CALLER_LOOP.set(asyncio.get_running_loop())
        try:
            return await asyncio.to_thread(self.batch, ops)
        finally:
            _CALLER_LOOP.reset(token)

    def _op_json(self, op: Op, indexed: bool) -> str:
        """The op for agent-core; without an index, a query and an index choice are dropped
        (LangGraph ignores them; agent-core would refuse them)."""
        if isinstance(op, GetOp):
            return json.dumps({"op": "get", "namespace": list(op.namespace), "key": op.key, "refresh_ttl": op.refresh_ttl})
        if isinstance(op, PutOp):
            put = {
                "op": "put",
                "namespace": list(op.namespace),
                "key": op.key,
                "value": None if op.value is None else dict(op.value),
                "index": op.index if indexed else None,
                "ttl": op.ttl,
            }
            return json.dumps(put, default=self._json_default)
        if isinstance(op, SearchOp):
            return json.dumps(self._search_json(op, indexed))
        if isinstance(op, ListNamespacesOp):
            return json.dumps(self._list_json(op))
        raise ValueError(f"Unknown operation type: {type(op)}")

    def _result(self, op: Op, out: Any) -> Result:
        if isinstance(op, GetOp):
            if out is None:
                return None
            created, updated = self._times(out)
            return Item(
                value=self._value(out),
                key=out["key"],
                namespace=tuple(out["namespace"]),
                created_at=created,
                updated_at=updated,
            )
        if isinstance(op, SearchOp):
            hits = []
            for hit in out:
                created, updated = self._times(hit)
                hits.append(
                    SearchItem(
                        namespace=tuple(hit["namespace"]),
                        key=hit["key"],
                        value=self._value(hit),
                        created_at=created,
                        updated_at=updated,
                        score=hit.get("score"),
                    )
                )
            return self._search_page(op, hits)
        if isinstance(op, ListNamespacesOp):
            return self._list_result(op, out)
        return None

    # --- TTL ------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Deletes the expired items; how many."""
        return self._native.sweep()

    def start_ttl_sweeper(self, sweep_interval_minutes: Optional[float] = None) -> concurrent.futures.Future:
        """Sweeps every `sweep_interval_minutes` (the TTL config's, else 5) on a daemon thread
        until `stop_ttl_sweeper()`; the future is done when it stops."""
        done: concurrent.futures.Future = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            return done
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        self._sweeper_stop.clear()

        def loop() -> None:
            try:
                while not self._sweeper_stop.wait(interval * 60):
                    try:
                        self._native.sweep()
                    except Exception:  # noqa: BLE001 (the next tick tries again, as LangGraph's)
                        pass
            finally:
                done.set_result(None)

        self._sweeper = threading.Thread(target=loop, daemon=True, name="agentgraph-ttl-sweeper")
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: Optional[float] = None) -> bool:
        """Stops the sweeper; whether it has stopped within `timeout` seconds."""
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._sweeper_stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped


class SqlBackedStore(NativeBackedStore):
    """A store in a database agent-core opens itself (`SqliteStore`, `PostgresStore`): the
    constructor, `from_conn_string` and `setup` they share; each says how to open its
    database (`_open`)."""

    @classmethod
    def _open(cls, conn: Any, args: dict, options: dict) -> Any:
        """The native store on `conn`, with `native_args` and the caller's other options."""
        raise NotImplementedError

    def __init__(
        self,
        conn: Any,
        *,
        deserializer: Any = None,
        index: Optional[IndexConfig] = None,
        ttl: Optional[TTLConfig] = None,
        **options: Any,
    ) -> None:
        if deserializer is not None:
            raise NotImplementedError(
                f"agentgraph's {type(self).__name__} reads values as JSON: `deserializer` is not taken"
            )
        super().__init__(self._open(conn, native_args(index, ttl), options), index=index, ttl=ttl)
        self.conn = conn

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Optional[IndexConfig] = None, ttl: Optional[TTLConfig] = None, **options: Any
    ) -> Iterator[Any]:
        """A store on `conn_string`, as LangGraph's context manager."""
        store = cls(conn_string, index=index, ttl=ttl, **options)
        try:
            yield store
        finally:
            store.stop_ttl_sweeper(0.1)

    def setup(self) -> None:
        """Nothing left to do: agent-core creates and migrates its tables on opening."""


class AsyncStoreMixin:
    """The async classes' `setup` and TTL calls are coroutines, as LangGraph's."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, *, index: Optional[IndexConfig] = None, ttl: Optional[TTLConfig] = None, **options: Any
    ) -> AsyncIterator[Any]:
        """A store on `conn_string`, as LangGraph's async context manager."""
        store = cls(conn_string, index=index, ttl=ttl, **options)
        try:
            yield store
        finally:
            NativeBackedStore.stop_ttl_sweeper(store, 0.1)  # type: ignore[arg-type]

    async def setup(self) -> None:  # type: ignore[override]
        """Nothing left to do: agent-core creates and migrates its tables on opening."""

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await asyncio.to_thread(NativeBackedStore.sweep_ttl, self)  # type: ignore[arg-type]

    async def start_ttl_sweeper(self, sweep_interval_minutes: Optional[float] = None) -> Any:  # type: ignore[override]
        start = NativeBackedStore.start_ttl_sweeper
        return asyncio.wrap_future(start(self, sweep_interval_minutes))  # type: ignore[arg-type]

    async def stop_ttl_sweeper(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await asyncio.to_thread(NativeBackedStore.stop_ttl_sweeper, self, timeout)  # type: ignore[arg-type]

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *_: Any) -> None:
        NativeBackedStore.stop_ttl_sweeper(self, 0.1)  # type: ignore[arg-type]


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
