"""Secrets at rest: AES-256-GCM under a key derived from ``SWITCHBOARD_SECRET_KEY``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_VERSION = b"v1"


def derive_key(master_secret: str, purpose: str) -> bytes:
    """A 256-bit key of its own for ``purpose``, derived from ``SWITCHBOARD_SECRET_KEY`` (HKDF)."""
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"switchboard", info=purpose.encode()
    ).derive(master_secret.encode())


class SecretBox:
    """Encrypts short secrets (AI keys, vault entries, signing keys) for storage."""

    def __init__(self, master_secret: str, *, purpose: str = "at-rest") -> None:
        self._aead = AESGCM(derive_key(master_secret, purpose))

    def seal(self, plaintext: str) -> str:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, plaintext.encode(), _VERSION)
        return (_VERSION + b":" + base64.urlsafe_b64encode(nonce + sealed)).decode()

    def open(self, token: str) -> str:
        version, _, payload = token.encode().partition(b":")
        if version != _VERSION:
            raise ValueError("unknown secret format")
        raw = base64.urlsafe_b64decode(payload)
        return self._aead.decrypt(raw[:12], raw[12:], _VERSION).decode()


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def random_token(prefix: str = "", nbytes: int = 32) -> str:
    """A URL-safe random token of ``nbytes`` of entropy, with an optional prefix."""
    return prefix + secrets.token_urlsafe(nbytes)


def constant_time_equals(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def hmac_sha256_hex(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()
