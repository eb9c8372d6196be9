"""The exceptions a run raises, as LangGraph's `langgraph.errors` names them."""


class GraphRecursionError(RecursionError):
    """The run took more super-steps than `recursion_limit` allows."""


class InvalidUpdateError(Exception):
    """A node wrote what the state cannot take (two values for a last-value key in a step)."""


class GraphInterrupt(Exception):
    """Raised inside a node by `interrupt()` to pause the run; the runtime catches it."""
