"""`EncryptedSerializer`: another serializer's bytes encrypted, in LangGraph's format.

The type becomes `"<type>+<cipher name>"` and the bytes the ciphertext, as LangGraph's
`EncryptedSerializer` writes; a value without `+` in its type was stored unencrypted and is
read by the inner serializer. `from_pycryptodome_aes` lays AES out as LangGraph's does
(nonce, tag, ciphertext; EAX by default), so either side decrypts the other's values.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from agentgraph.checkpoint.serde.base import CipherProtocol, SerializerProtocol
from agentgraph.checkpoint.serde.jsonplus import JsonPlusSerializer


class EncryptedSerializer:
    """Serializes with `serde`, then encrypts with `cipher`."""

    def __init__(self, cipher: CipherProtocol, serde: Optional[SerializerProtocol] = None) -> None:
        self.cipher = cipher
        self.serde = serde if serde is not None else JsonPlusSerializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        type_, data = self.serde.dumps_typed(obj)
        name, ciphertext = self.cipher.encrypt(data)
        return f"{type_}+{name}", ciphertext

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        typed, payload = data
        if "+" not in typed:
            return self.serde.loads_typed(data)
        type_, name = typed.split("+", 1)
        return self.serde.loads_typed((type_, self.cipher.decrypt(name, payload)))

    @classmethod
    def from_pycryptodome_aes(
        cls, serde: Optional[SerializerProtocol] = None, **kwargs: Any
    ) -> "EncryptedSerializer":
        """AES with pycryptodome; the key from `key=` or `LANGGRAPH_AES_KEY`."""
        try:
            from Crypto.Cipher import AES
        except ImportError:
            raise ImportError("pycryptodome is not installed: pip install pycryptodome") from None
        key = kwargs.pop("key", None)
        if key is None:
            text = os.getenv("LANGGRAPH_AES_KEY")
            if text is None:
                raise ValueError("LANGGRAPH_AES_KEY environment variable is not set.")
            key = text.encode()
            if len(key) not in (16, 24, 32):
                raise ValueError("LANGGRAPH_AES_KEY must be 16, 24, or 32 bytes long.")
        if kwargs.get("mode") is None:
            kwargs["mode"] = AES.MODE_EAX

        class Aes:
            def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
                cipher = AES.new(key, **kwargs)
                ciphertext, tag = cipher.encrypt_and_digest(plaintext)
                return "aes", cipher.nonce + tag + ciphertext

            def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
                if ciphername != "aes":
                    raise ValueError(f"Unsupported cipher: {ciphername}")
                nonce, tag, body = ciphertext[:16], ciphertext[16:32], ciphertext[32:]
                return AES.new(key, **kwargs, nonce=nonce).decrypt_and_verify(body, tag)

        return cls(Aes(), serde)


__all__ = ["EncryptedSerializer"]
