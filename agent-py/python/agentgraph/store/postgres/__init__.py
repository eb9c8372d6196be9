"""`PostgresStore` and `AsyncPostgresStore`: agent-core's PostgreSQL store under the names of
`langgraph-checkpoint-postgres`'s (`langgraph.store.postgres`).

agent-core keeps its own connection pool, so the store takes a connection URL (not a psycopg
connection) and migrates its tables on connecting: `setup()` has nothing left to do. Values
are JSON (`jsonb`), read back with their keys sorted; a search by meaning finds only items
with vectors, ranked by cosine similarity in agent-core (no pgvector needed). See
`agentgraph.store._native_store` for batches, TTLs and `embed`.
"""

from __future__ import annotations

from agentgraph.store.postgres.aio import AsyncPostgresStore
from agentgraph.store.postgres.base import PostgresStore

__all__ = ["AsyncPostgresStore", "PostgresStore"]
