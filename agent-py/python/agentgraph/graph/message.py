"""`add_messages`: LangChain's messages when langchain-core is there, plain dicts otherwise.

A stand-in until the Rust `add_messages` of agent-llm is wired: merge by id, append new,
`RemoveMessage(id)` deletes, `RemoveMessage(REMOVE_ALL_MESSAGES)` starts over.
"""

from typing import Annotated, Any, Optional, TypedDict


def _coerce(messages: Any) -> list:
    if not isinstance(messages, list):
        messages = [messages]
    try:
        from langchain_core.messages import convert_to_messages
    except ImportError:
        return list(messages)
    return list(convert_to_messages(messages))


def _id(message: Any):
    return message.get("id") if isinstance(message, dict) else getattr(message, "id", None)


def add_messages(left: Any, right: Any) -> list:
    """Appends `right` to `left`; a message whose id is already there replaces it."""
    import uuid

    left, right = _coerce(left), _coerce(right)
    for message in left + right:
        if _id(message) is None:
            if isinstance(message, dict):
                message["id"] = str(uuid.uuid4())
            else:
                message.id = str(uuid.uuid4())
    if any(_is_remove(m) and _id(m) == REMOVE_ALL_MESSAGES for m in right):
        last = max(i for i, m in enumerate(right) if _is_remove(m) and _id(m) == REMOVE_ALL_MESSAGES)
        return right[last + 1 :]
    merged = list(left)
    index = {_id(m): i for i, m in enumerate(merged)}
    removed = set()
    for message in right:
        key = _id(message)
        if key in index:
            if _is_remove(message):
                removed.add(key)
            else:
                removed.discard(key)
                merged[index[key]] = message
        else:
            if _is_remove(message):
                raise ValueError(f"Attempting to delete a message with an ID that doesn't exist ('{key}')")
            index[key] = len(merged)
            merged.append(message)
    return [m for m in merged if _id(m) not in removed]


REMOVE_ALL_MESSAGES = "__remove_all__"


def _is_remove(message: Any) -> bool:
    return type(message).__name__ == "RemoveMessage"


class MessagesState(TypedDict):
    messages: Annotated[list, add_messages]


def push_message(message: Any, *, state_key: Optional[str] = "messages") -> Any:
    """From inside a node: sends `message` (which needs an id) to the `messages` stream mode
    now and, unless `state_key` is `None`, writes it to that state key as the node finishes
    (before what the node returns). Returns the message as a LangChain message."""
    from agentgraph import _runtime, _stream

    task = _runtime.current_task()
    if task is None:
        raise RuntimeError("push_message() can only be called from inside a graph's node")
    (message,) = _coerce([message])
    if _id(message) is None:
        raise ValueError("Message ID is required")
    stream = task.scope.stream_state
    if stream is not None and stream.handler is not None:
        stream.handler._emit(message, _stream._node_meta(task.config()["metadata"]))
    if state_key:
        task.pushed.append((state_key, message))
    return message
