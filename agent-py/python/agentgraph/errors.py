"""The exceptions a run raises, as LangGraph's `langgraph.errors` names them."""


class GraphRecursionError(RecursionError):
    """The run took more super-steps than `recursion_limit` allows."""


class InvalidUpdateError(Exception):
    """A node wrote what the state cannot take (two values for a last-value key in a step)."""


class GraphBubbleUp(Exception):
    """An exception that leaves a node to tell the runtime something (not a failure)."""


class ParentCommand(GraphBubbleUp):
    """A subgraph's node returned `Command(graph=Command.PARENT)`: raised out of a graph
    invoked inside a node, it becomes that node's command; out of a root graph, the caller's."""

    def __init__(self, command) -> None:
        super().__init__(command)


class GraphInterrupt(Exception):
    """Raised inside a node by `interrupt()` to pause the run; the runtime catches it."""
