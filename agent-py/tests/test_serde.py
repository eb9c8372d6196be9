"""agentgraph's JsonPlusSerializer against LangGraph's: the same bytes, each reads the other's."""

import dataclasses
import enum
import pathlib
import re
from collections import deque, namedtuple
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from ipaddress import IPv4Address, IPv6Network
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest

from agentgraph.checkpoint.serde.jsonplus import JsonPlusSerializer as Ours

jsonplus = pytest.importorskip("langgraph.checkpoint.serde.jsonplus")
messages = pytest.importorskip("langchain_core.messages")
pydantic = pytest.importorskip("pydantic")


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: list


Pair = namedtuple("Pair", "a b")


class Model(pydantic.BaseModel):
    name: str
    tags: list[str] = []


VALUES = [
    {"a": [1, 2.5, "x", None, True], "b": {"nested": b"bytes"}},
    (1, 2),
    {1, 2, 3},
    frozenset({"a"}),
    deque([1, 2]),
    datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=timezone.utc),
    datetime(2024, 5, 6, 7, 8, 9),
    date(2024, 5, 6),
    time(7, 8, 9, 10),
    timedelta(days=1, seconds=2, microseconds=3),
    timezone(timedelta(hours=2)),
    ZoneInfo("Europe/Paris"),
    UUID("12345678-1234-5678-1234-567812345678"),
    Decimal("1.25"),
    Color.RED,
    Point(1, [Point(2, [])]),
    Pair(1, "b"),
    Model(name="m", tags=["t"]),
    pathlib.Path("/tmp/x"),
    re.compile("a+", re.I),
    IPv4Address("10.0.0.1"),
    IPv6Network("::/64"),
    messages.HumanMessage(content="hi", id="1"),
    messages.AIMessage(content="", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c"}]),
    messages.ToolMessage(content="done", tool_call_id="c"),
    [messages.SystemMessage(content="s"), {"k": messages.AIMessage(content="x")}],
    None,
    b"raw",
    bytearray(b"raw"),
    "text",
    42,
]


def same(a, b):
    if isinstance(a, re.Pattern):
        return (a.pattern, a.flags) == (b.pattern, b.flags)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_the_same_bytes_as_langgraph_and_both_read_them(value):
    theirs = jsonplus.JsonPlusSerializer()
    ours = Ours()
    written = ours.dumps_typed(value)
    assert written == theirs.dumps_typed(value)
    # What LangGraph reads back (a tuple comes back a list, on LangGraph too).
    expected = [1, 2] if isinstance(value, tuple) and not hasattr(value, "_asdict") else value
    assert same(theirs.loads_typed(written), expected)
    assert same(ours.loads_typed(written), expected)


class Plain:
    """No msgpack form: pickled with `pickle_fallback`, refused without."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Plain) and other.n == self.n


def test_pickle_only_with_pickle_fallback():
    with pytest.raises(TypeError):
        Ours().dumps_typed(Plain(1))
    written = Ours(pickle_fallback=True).dumps_typed(Plain(1))
    assert written == jsonplus.JsonPlusSerializer(pickle_fallback=True).dumps_typed(Plain(1))
    assert written[0] == "pickle"
    assert jsonplus.JsonPlusSerializer(pickle_fallback=True).loads_typed(written) == Plain(1)
    assert Ours(pickle_fallback=True).loads_typed(written) == Plain(1)
    with pytest.raises(NotImplementedError):
        Ours().loads_typed(written)


def test_only_langgraphs_class_methods_are_called():
    import ormsgpack

    from agentgraph.checkpoint.serde import jsonplus as ours

    def method_ext(module, name, arg, method):
        return ormsgpack.packb(ormsgpack.Ext(ours.EXT_METHOD_SINGLE_ARG, ormsgpack.packb((module, name, arg, method))))

    assert Ours().loads_typed(("msgpack", method_ext("datetime", "datetime", "2024-01-02T00:00:00", "fromisoformat"))) == datetime(2024, 1, 2)
    # Any other method is not called: the stored argument comes back.
    assert Ours().loads_typed(("msgpack", method_ext("os", "path", "/", "exists"))) == "/"


class Xor:
    """A toy cipher (CipherProtocol)."""

    def encrypt(self, plaintext):
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername, ciphertext):
        assert ciphername == "xor"
        return bytes(b ^ 0x5A for b in ciphertext)


def test_encrypted_serializer_reads_and_writes_langgraphs_format():
    from agentgraph.checkpoint.serde.encrypted import EncryptedSerializer as OursEncrypted

    theirs = pytest.importorskip("langgraph.checkpoint.serde.encrypted").EncryptedSerializer(Xor())
    ours = OursEncrypted(Xor())
    value = {"when": datetime(2024, 1, 1), "tags": {"a"}}
    written = ours.dumps_typed(value)
    assert written[0] == "msgpack+xor"
    assert written == theirs.dumps_typed(value)
    assert theirs.loads_typed(written) == value == ours.loads_typed(written)
    # Stored before encryption: read as it is.
    assert ours.loads_typed(Ours().dumps_typed(value)) == value
