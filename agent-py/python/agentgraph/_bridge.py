"""Where a Rust task hands its result to an asyncio future (on the future's own loop)."""


def resolve(future, ok, value):
    """Sets the future's result or exception, unless it was cancelled meanwhile."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
