"""LangGraph's `langgraph.store`: long-term memory shared across threads (`base`, `memory`)."""
