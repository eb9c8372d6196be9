"""The exceptions a run raises, as LangGraph's `langgraph.errors` names them."""


class GraphRecursionError(RecursionError):
    """The run took more super-steps than `recursion_limit` allows."""


class InvalidUpdateError(Exception):
    """A node wrote what the state cannot take (two values for a last-value key in a step)."""


class GraphBubbleUp(Exception):
    """An exception that leaves a node to tell the runtime something (not a failure)."""


class GraphDrained(GraphBubbleUp):
    """A run stopped early, at a step boundary, because a drain was requested (LangGraph's
    `RunControl.request_drain()`, e.g. on SIGTERM); its checkpoint is saved, so it resumes
    later. `reason` says why."""

    def __init__(self, reason: str = "shutdown") -> None:
        self.reason = reason
        super().__init__(f"Graph drained: {reason}")


class ParentCommand(GraphBubbleUp):
    """A subgraph's node returned `Command(graph=Command.PARENT)`: raised out of a graph
    invoked inside a node, it becomes that node's command; out of a root graph, the caller's."""

    def __init__(self, command) -> None:
        super().__init__(command)


class GraphInterrupt(Exception):
    """Raised inside a node by `interrupt()` to pause the run; the runtime catches it."""


# The attribute that marks an exception as a resume value `interrupt(response_schema=...)`
# rejected (LangGraph's name, so errors marked by either package are recognised).
_INVALID_RESUME = "_langgraph_invalid_resume"


def _mark_invalid_resume(error: BaseException) -> None:
    setattr(error, _INVALID_RESUME, True)


def is_invalid_resume(error: BaseException) -> bool:
    """Whether `error` was raised because a resume value did not match the interrupt's
    `response_schema` (the value can be answered again)."""
    return getattr(error, _INVALID_RESUME, False) is True
