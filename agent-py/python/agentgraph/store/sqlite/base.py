"""`SqliteStore` (see `agentgraph.store.sqlite`)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from agentgraph import _native
from agentgraph.store._native_store import NativeBackedStore, native_args
from agentgraph.store.base import IndexConfig, TTLConfig


def database_path(conn: Any) -> Optional[str]:
    """The file of a path, `sqlite3.Connection` or `aiosqlite.Connection`; `None` for an
    in-memory database."""
    from agentgraph.checkpoint.sqlite import _path
    from agentgraph.checkpoint.sqlite.aio import _aiosqlite_database

    if not isinstance(conn, (str, os.PathLike, sqlite3.Connection)):
        conn = _aiosqlite_database(conn)
    return _path(os.fspath(conn) if isinstance(conn, os.PathLike) else conn)


class SqliteStore(NativeBackedStore):
    """Items in a SQLite file (`":memory:"`: a private in-memory database)."""

    def __init__(
        self,
        conn: Any,
        *,
        deserializer: Any = None,
        index: Optional[IndexConfig] = None,
        ttl: Optional[TTLConfig] = None,
    ) -> None:
        if deserializer is not None:
            raise NotImplementedError("agentgraph's SqliteStore reads values as JSON: `deserializer` is not taken")
        native = _native.NativeStore.sqlite(database_path(conn), **native_args(index, ttl))
        super().__init__(native, index=index, ttl=ttl)
        self.conn = conn

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Optional[IndexConfig] = None, ttl: Optional[TTLConfig] = None
    ) -> Iterator["SqliteStore"]:
        """A store on a file path (or `":memory:"`), as LangGraph's context manager."""
        store = cls(conn_string, index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.stop_ttl_sweeper(0.1)

    def setup(self) -> None:
        """Nothing left to do: agent-core creates and migrates its tables on opening."""


__all__ = ["SqliteStore"]
