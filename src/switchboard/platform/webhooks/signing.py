"""Both signature schemes of a delivery, as pure functions receivers can mirror.

* ``X-Platform-Signature: sha256=<hex>``: HMAC-SHA256 of the raw body, keyed with the
  subscription secret exactly as shown at creation (its UTF-8 bytes).
* Standard Webhooks (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``):
  ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, keyed with the bytes the secret
  encodes after its ``whsec_`` prefix (base64), as the standard libraries expect.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 (a format prefix, not a secret)
SECRET_BYTES = 32


def new_secret() -> str:
    """``whsec_`` followed by the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def platform_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def standard_signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


class Signer:
    """Both signatures under one secret, as the functions above make them, with each key's
    HMAC state set up once and copied for every body (setting up the key costs as much as
    hashing a kilobyte)."""

    __slots__ = ("_platform", "_standard")

    def __init__(self, secret: str) -> None:
        self._platform = hmac.new(secret.encode(), digestmod=hashlib.sha256)
        self._standard = hmac.new(standard_key(secret), digestmod=hashlib.sha256)

    def platform(self, body: bytes) -> str:
        mac = self._platform.copy()
        mac.update(body)
        return "sha256=" + mac.hexdigest()

    def standard(self, message_id: str, timestamp: int, body: bytes) -> str:
        mac = self._standard.copy()
        mac.update(f"{message_id}.{timestamp}.".encode())
        mac.update(body)
        return "v1," + base64.b64encode(mac.digest()).decode()
