"""`add_messages`: LangChain's messages when langchain-core is there, plain dicts otherwise.

A stand-in until the Rust `add_messages` of agent-llm is wired: merge by id, append new,
`RemoveMessage(id)` deletes, `RemoveMessage(REMOVE_ALL_MESSAGES)` starts over.
"""

import functools
from typing import Annotated, Any, Optional, TypedDict


def _coerce(messages: Any) -> list:
    """LangChain messages (a chunk as its whole message), or the items as given without
    langchain-core."""
    if not isinstance(messages, list):
        messages = [messages]
    try:
        from langchain_core.messages import convert_to_messages, message_chunk_to_message
    except ImportError:
        return list(messages)
    return [message_chunk_to_message(m) for m in convert_to_messages(messages)]


def _id(message: Any):
    return message.get("id") if isinstance(message, dict) else getattr(message, "id", None)


def add_messages(left: Any = None, right: Any = None, *, format: Optional[str] = None) -> Any:
    """Appends `right` to `left`; a message whose id is already there replaces it.

    `format="langchain-openai"` returns the messages in OpenAI's content format (LangChain's
    `convert_to_openai_messages`, back as messages). Called with neither list (only
    `format=`), it returns the reducer with that format (`Annotated[list, add_messages(...)]`).
    """
    if left is None and right is None:
        return functools.partial(add_messages, format=format)
    if left is None or right is None:
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. Only "
            f"received: '{'left' if left else 'right'}'."
        )
    if format not in (None, "langchain-openai"):
        raise ValueError(f"Unrecognized {format=}. Expected one of 'langchain-openai', None.")
    merged = _merge(left, right)
    if format == "langchain-openai":
        from langchain_core.messages import convert_to_messages, convert_to_openai_messages

        merged = convert_to_messages(convert_to_openai_messages(merged))
    return merged


def _merge(left: Any, right: Any) -> list:
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
