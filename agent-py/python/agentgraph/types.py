"""LangGraph's `langgraph.types` names (more arrive with Command, Send and interrupts)."""

from typing import Literal

StreamMode = Literal["values", "updates", "checkpoints", "tasks", "debug", "messages", "custom"]
