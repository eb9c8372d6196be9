"""agentgraph: LangGraph's API, run by agentgraph's Rust runtime (agent-core)."""
