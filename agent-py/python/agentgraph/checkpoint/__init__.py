"""Checkpointers: agent-core's savers (memory, SQLite, PostgreSQL), values in LangGraph's serializer format."""
