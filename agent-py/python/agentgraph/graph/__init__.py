"""`StateGraph`, `START`, `END`, as in `langgraph.graph`."""

from agentgraph.constants import END, START
from agentgraph.graph.message import MessagesState, add_messages
from agentgraph.graph.state import CompiledStateGraph, StateGraph

__all__ = ["END", "START", "CompiledStateGraph", "MessagesState", "StateGraph", "add_messages"]
