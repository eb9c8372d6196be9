"""Checkpointers: agent-core's savers."""
