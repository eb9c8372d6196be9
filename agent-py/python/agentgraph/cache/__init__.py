"""Node caches, as in `langgraph.cache`: `agentgraph.cache.memory.InMemoryCache`."""

from agentgraph.cache.base import BaseCache

__all__ = ["BaseCache"]
