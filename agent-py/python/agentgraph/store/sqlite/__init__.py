"""`SqliteStore` and `AsyncSqliteStore`: agent-core's SQLite store under the names of
`langgraph-checkpoint-sqlite`'s (`langgraph.store.sqlite`).

agent-core opens the file itself (a `sqlite3.Connection` or `aiosqlite.Connection` handed in
is used for its file name only) and creates its tables on opening, so `setup()` has nothing
left to do; the tables are agent-core's (`store_items`, `store_vectors`, `store_meta`), so the
file may be the checkpoints' too, and is shared with agentgraph programs in any language, not
with LangGraph's own store. Values are JSON, as LangGraph's: read back with their keys sorted
(agent-core's JSON objects keep no order). A search by meaning finds only items with vectors,
as LangGraph's SQL stores. See `agentgraph.store._native_store` for batches, TTLs and `embed`.
"""

from __future__ import annotations

from agentgraph.store.sqlite.aio import AsyncSqliteStore
from agentgraph.store.sqlite.base import SqliteStore

__all__ = ["AsyncSqliteStore", "SqliteStore"]
