"""What the native module calls around a node: the node's scope set for `interrupt()`."""

import contextvars

_scope: contextvars.ContextVar = contextvars.ContextVar("agentgraph_node_scope")


def call_sync(scope, fn, args):
    """Calls a sync node with its scope current (this thread's context, reset after)."""
    token = _scope.set(scope)
    try:
        return fn(*args)
    finally:
        _scope.reset(token)


async def call_async(scope, fn, args):
    """Awaits an async node with its scope current (the task's own context)."""
    _scope.set(scope)
    return await fn(*args)


def current_scope():
    """The running node's scope, or `None` outside a node (a graph invoked there is a
    subgraph of the node's task)."""
    return _scope.get(None)


def current():
    """The running node's scope."""
    try:
        return _scope.get()
    except LookupError:
        raise RuntimeError("interrupt() can only be called from inside a graph's node") from None
