"""LangGraph's managed values: state keys the run fills in rather than the nodes."""

from agentgraph.managed.is_last_step import IsLastStep, RemainingSteps

__all__ = ("IsLastStep", "RemainingSteps")
