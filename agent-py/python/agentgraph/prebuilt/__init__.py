"""LangGraph's `langgraph.prebuilt`: `ToolNode`, `tools_condition`, `create_react_agent`,
`InjectedState`/`InjectedStore`/`ToolRuntime`, `ValidationNode`: plain Python over
`StateGraph` and LangChain's tools and chat models (as LangGraph's own)."""

from agentgraph.prebuilt.chat_agent_executor import AgentState, create_react_agent
from agentgraph.prebuilt.tool_node import InjectedState, InjectedStore, ToolNode, ToolRuntime, tools_condition
from agentgraph.prebuilt.tool_validator import ValidationNode

__all__ = [
    "AgentState",
    "InjectedState",
    "InjectedStore",
    "ToolNode",
    "ToolRuntime",
    "ValidationNode",
    "create_react_agent",
    "tools_condition",
]
