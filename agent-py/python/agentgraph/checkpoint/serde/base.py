"""`SerializerProtocol`: what a checkpointer's `serde=` must offer (LangGraph's protocol).

`dumps_typed(obj) -> (type, bytes)` and `loads_typed((type, bytes)) -> obj`; any object with
those two methods serves, LangGraph's own serializers included.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class SerializerProtocol(Protocol):
    """Serializes objects as a `(type, bytes)` pair, and back."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


class CipherProtocol(Protocol):
    """Encrypts bytes as `(cipher name, ciphertext)`, and back."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]: ...

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes: ...


__all__ = ["CipherProtocol", "SerializerProtocol"]
