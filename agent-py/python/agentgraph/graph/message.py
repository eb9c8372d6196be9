"""`add_messages`: LangChain's messages when langchain-core is there, plain dicts otherwise.

A stand-in until the Rust `add_messages` of agent-llm is wired: merge by id, append new.
"""

from typing import Annotated, Any, TypedDict


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
    merged = list(left)
    index = {_id(m): i for i, m in enumerate(merged)}
    for message in right:
        if _id(message) in index:
            merged[index[_id(message)]] = message
        else:
            index[_id(message)] = len(merged)
            merged.append(message)
    return merged


class MessagesState(TypedDict):
    messages: Annotated[list, add_messages]
