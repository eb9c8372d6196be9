"""`JsonPlusSerializer`: LangGraph's checkpoint format, written and read by our own code.

msgpack (through `ormsgpack`, which LangGraph's serializer uses too) with LangGraph's
extension types: an object msgpack has no type for is stored as its class's module and name
plus what rebuilds it (one argument, positional arguments, keyword arguments, a named
class method, or a Pydantic model's fields). The codes and tuples are LangGraph's, so either
side reads what the other writes. Pickle is used only where LangGraph's would: with
`pickle_fallback=True`, for an object msgpack cannot encode.

Loading imports the class a stored value names and calls it, as LangGraph's does by default
(class methods only from LangGraph's short list): a checkpoint store must be trusted as much
as the code.
"""

from __future__ import annotations

import dataclasses
import decimal
import importlib
import json
import pathlib
import pickle
import re
import sys
from collections import deque
from datetime import date, datetime, time, timedelta, timezone
from enum import Enum
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv4Network,
    IPv6Address,
    IPv6Interface,
    IPv6Network,
)
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import ormsgpack

# LangGraph's extension codes.
EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6

_PACK = (
    ormsgpack.OPT_NON_STR_KEYS
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_UUID
    | ormsgpack.OPT_REPLACE_SURROGATES
)
# The class methods a stored value may name (LangGraph's `SAFE_MSGPACK_METHODS`).
_METHODS = {("datetime", "datetime", "fromisoformat")}
_IP = (IPv4Address, IPv4Interface, IPv4Network, IPv6Address, IPv6Interface, IPv6Network)


def _pack(obj: Any) -> bytes:
    return ormsgpack.packb(obj, default=_default, option=_PACK)


def _ext(code: int, obj: Any, payload: Any, *extra: Any) -> ormsgpack.Ext:
    cls = type(obj)
    return ormsgpack.Ext(code, _pack((cls.__module__, cls.__name__, payload, *extra)))


def _method(obj: Any, name: str) -> bool:
    return callable(getattr(obj, name, None))


def _default(obj: Any) -> Any:
    """An object msgpack has no type for, as LangGraph's extension of it (same order of tests)."""
    if _method(obj, "model_dump"):  # Pydantic v2, LangChain messages included
        return _ext(EXT_PYDANTIC_V2, obj, obj.model_dump(), "model_validate_json")
    if _method(obj, "get_secret_value"):
        return _ext(EXT_CONSTRUCTOR_SINGLE_ARG, obj, obj.get_secret_value())
    if _method(obj, "dict"):  # Pydantic v1
        return _ext(EXT_PYDANTIC_V1, obj, obj.dict())
    if _method(obj, "_asdict"):  # named tuples
        return _ext(EXT_CONSTRUCTOR_KW_ARGS, obj, obj._asdict())
    if isinstance(obj, pathlib.Path):
        return _ext(EXT_CONSTRUCTOR_POS_ARGS, obj, obj.parts)
    if isinstance(obj, re.Pattern):
        return ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, _pack(("re", "compile", (obj.pattern, obj.flags))))
    if isinstance(obj, UUID):
        return _ext(EXT_CONSTRUCTOR_SINGLE_ARG, obj, obj.hex)
    if isinstance(obj, (decimal.Decimal, *_IP)):
        return _ext(EXT_CONSTRUCTOR_SINGLE_ARG, obj, str(obj))
    if isinstance(obj, (set, frozenset, deque)):
        return _ext(EXT_CONSTRUCTOR_SINGLE_ARG, obj, tuple(obj))
    if isinstance(obj, datetime):
        return _ext(EXT_METHOD_SINGLE_ARG, obj, obj.isoformat(), "fromisoformat")
    if isinstance(obj, timedelta):
        return _ext(EXT_CONSTRUCTOR_POS_ARGS, obj, (obj.days, obj.seconds, obj.microseconds))
    if isinstance(obj, date):
        return _ext(EXT_CONSTRUCTOR_POS_ARGS, obj, (obj.year, obj.month, obj.day))
    if isinstance(obj, time):
        fields = ("hour", "minute", "second", "microsecond", "tzinfo", "fold")
        return _ext(EXT_CONSTRUCTOR_KW_ARGS, obj, {f: getattr(obj, f) for f in fields})
    if isinstance(obj, timezone):
        return _ext(EXT_CONSTRUCTOR_POS_ARGS, obj, obj.__getinitargs__())  # type: ignore[attr-defined]
    if isinstance(obj, ZoneInfo):
        return _ext(EXT_CONSTRUCTOR_SINGLE_ARG, obj, obj.key)
    if isinstance(obj, Enum):
        return _ext(EXT_CONSTRUCTOR_SINGLE_ARG, obj, obj.value)
    if _is_send(obj):
        args = (obj.node, obj.arg)
        if getattr(obj, "timeout", None) is not None:
            args = (*args, obj.timeout)
        return _ext(EXT_CONSTRUCTOR_POS_ARGS, obj, args)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # Field by field, not `asdict` (which deep-copies and recurses into nested ones).
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return _ext(EXT_CONSTRUCTOR_KW_ARGS, obj, fields)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.ndarray):
        order = "F" if obj.flags.f_contiguous and not obj.flags.c_contiguous else "C"
        return ormsgpack.Ext(
            EXT_NUMPY_ARRAY, _pack((obj.dtype.str, obj.shape, order, obj.tobytes(order="A")))
        )
    if isinstance(obj, BaseException):
        return repr(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not serializable")


def _is_send(obj: Any) -> bool:
    # LangGraph's `SendProtocol`: any class named Send with a node and an argument.
    return type(obj).__name__ == "Send" and hasattr(obj, "node") and hasattr(obj, "arg")


def _unpack(data: bytes) -> Any:
    return ormsgpack.unpackb(data, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _resolve(module: str, name: str) -> Any:
    if module == "langgraph.types" and name == "Send":
        # LangGraph's `Send` by name, which may be ours (`agentgraph.compat`) or LangGraph's.
        try:
            return getattr(importlib.import_module(module), name)
        except ImportError:
            from agentgraph.types import Send

            return Send
    return getattr(importlib.import_module(module), name)


def _ext_hook(code: int, data: bytes) -> Any:
    """Rebuilds an extension value; one that does not rebuild is its stored payload."""
    parts = _unpack(data)
    if code == EXT_NUMPY_ARRAY:
        import numpy

        dtype, shape, order, buf = parts
        return numpy.frombuffer(buf, dtype=numpy.dtype(dtype)).reshape(shape, order=order)
    module, name, payload = parts[0], parts[1], parts[2]
    try:
        target = _resolve(module, name)
        if code == EXT_CONSTRUCTOR_SINGLE_ARG:
            return target(payload)
        if code == EXT_CONSTRUCTOR_POS_ARGS:
            return target(*payload)
        if code == EXT_CONSTRUCTOR_KW_ARGS:
            return target(**payload)
        if code == EXT_METHOD_SINGLE_ARG:
            # Only the methods LangGraph's serializer calls (it refuses any other too).
            if (module, name, parts[3]) not in _METHODS:
                return payload
            return getattr(target, parts[3])(payload)
        if code in (EXT_PYDANTIC_V1, EXT_PYDANTIC_V2):
            try:
                return target(**payload)
            except Exception:
                construct = target.model_construct if code == EXT_PYDANTIC_V2 else target.construct
                return construct(**payload)
    except Exception:
        return payload
    return None


class JsonPlusSerializer:
    """LangGraph's `JsonPlusSerializer` format: `("msgpack", bytes)` for most values."""

    def __init__(self, *, pickle_fallback: bool = False, **_: Any) -> None:
        self.pickle_fallback = pickle_fallback

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if obj is None:
            return "null", b""
        if isinstance(obj, bytes):
            return "bytes", obj
        if isinstance(obj, bytearray):
            return "bytearray", bytes(obj)
        try:
            return "msgpack", _pack(obj)
        except ormsgpack.MsgpackEncodeError:
            if self.pickle_fallback:
                return "pickle", pickle.dumps(obj)
            raise

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, payload = data
        if type_ == "null":
            return None
        if type_ == "bytes":
            return payload
        if type_ == "bytearray":
            return bytearray(payload)
        if type_ == "msgpack":
            return _unpack(payload)
        if type_ == "json":
            return json.loads(payload)
        if type_ == "pickle" and self.pickle_fallback:
            return pickle.loads(payload)
        raise NotImplementedError(f"Unknown serialization type: {type_}")


__all__ = ["JsonPlusSerializer"]
