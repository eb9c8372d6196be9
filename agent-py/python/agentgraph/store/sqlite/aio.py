"""`AsyncSqliteStore` (see `agentgraph.store.sqlite`): the same store for asyncio programs,
its I/O on agent-core's threads, never on the event loop."""

from __future__ import annotations

from agentgraph.store._native_store import AsyncStoreMixin
from agentgraph.store.sqlite.base import SqliteStore


class AsyncSqliteStore(AsyncStoreMixin, SqliteStore):
    """Items in a SQLite file, for `ainvoke`/`astream` (`aget`, `aput`, `asearch`, ...)."""


__all__ = ["AsyncSqliteStore"]
