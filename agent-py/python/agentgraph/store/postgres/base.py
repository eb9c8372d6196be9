"""`PostgresStore` (see `agentgraph.store.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from agentgraph import _native
from agentgraph.checkpoint.postgres import _url
from agentgraph.store._native_store import NativeBackedStore, native_args
from agentgraph.store.base import IndexConfig, TTLConfig


class PostgresStore(NativeBackedStore):
    """Items in PostgreSQL, shared by many processes and machines."""

    def __init__(
        self,
        conn: Any,
        *,
        deserializer: Any = None,
        index: Optional[IndexConfig] = None,
        ttl: Optional[TTLConfig] = None,
        **_: Any,
    ) -> None:
        if deserializer is not None:
            raise NotImplementedError("agentgraph's PostgresStore reads values as JSON: `deserializer` is not taken")
        native = _native.NativeStore.postgres(_url(conn), **native_args(index, ttl))
        super().__init__(native, index=index, ttl=ttl)
        self.conn = conn

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: Optional[IndexConfig] = None,
        ttl: Optional[TTLConfig] = None,
        **_: Any,
    ) -> Iterator["PostgresStore"]:
        """A store for a connection URL, as LangGraph's context manager (`pipeline` and
        `pool_config` are not taken: agent-core keeps its own pool)."""
        store = cls(conn_string, index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.stop_ttl_sweeper(0.1)

    def setup(self) -> None:
        """Nothing left to do: agent-core migrates its tables on connecting."""


__all__ = ["PostgresStore"]
