"""`AsyncPostgresStore` (see `agentgraph.store.postgres`): the same store for asyncio
programs, its I/O on agent-core's threads, never on the event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Optional

from agentgraph.store._native_store import AsyncStoreMixin, NativeBackedStore
from agentgraph.store.base import IndexConfig, TTLConfig
from agentgraph.store.postgres.base import PostgresStore


class AsyncPostgresStore(AsyncStoreMixin, PostgresStore):
    """Items in PostgreSQL, for `ainvoke`/`astream` (`aget`, `aput`, `asearch`, ...)."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls,
        conn_string: str,
        *,
        index: Optional[IndexConfig] = None,
        ttl: Optional[TTLConfig] = None,
        **_: Any,
    ) -> AsyncIterator["AsyncPostgresStore"]:
        """A store for a connection URL, as LangGraph's async context manager."""
        store = cls(conn_string, index=index, ttl=ttl)
        try:
            yield store
        finally:
            NativeBackedStore.stop_ttl_sweeper(store, 0.1)


__all__ = ["AsyncPostgresStore"]
