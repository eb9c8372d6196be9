"""`SqliteStore` (see `agentgraph.store.sqlite`)."""

from __future__ import annotations

import os
import sqlite3
from typing import Any, Optional

from agentgraph import _native
from agentgraph.store._native_store import SqlBackedStore


def database_path(conn: Any) -> Optional[str]:
    """The file of a path, `sqlite3.Connection` or `aiosqlite.Connection`; `None` for an
    in-memory database."""
    from agentgraph.checkpoint.sqlite import _path
    from agentgraph.checkpoint.sqlite.aio import _aiosqlite_database

    if not isinstance(conn, (str, os.PathLike, sqlite3.Connection)):
        conn = _aiosqlite_database(conn)
    return _path(os.fspath(conn) if isinstance(conn, os.PathLike) else conn)


class SqliteStore(SqlBackedStore):
    """Items in a SQLite file (`":memory:"`: a private in-memory database); a path, a
    `sqlite3` or an `aiosqlite` connection names it."""

    @classmethod
    def _open(cls, conn: Any, args: dict, options: dict) -> Any:
        if options:
            raise TypeError(f"{cls.__name__}() got unexpected keyword arguments: {sorted(options)}")
        return _native.NativeStore.sqlite(database_path(conn), **args)


__all__ = ["SqliteStore"]
