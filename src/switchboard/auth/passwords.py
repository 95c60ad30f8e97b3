"""Argon2id password hashing, with the cost parameters from settings."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError


class Passwords:
    """Hashes and verifies passwords; an unknown user still costs one verification."""

    def __init__(self, *, time_cost: int, memory_kib: int, parallelism: int) -> None:
        self._hasher = PasswordHasher(
            time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism
        )
        self._dummy = self._hasher.hash("an unguessable placeholder used to even out timing")

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, stored: str | None, password: str) -> bool:
        try:
            return self._hasher.verify(stored or self._dummy, password) and stored is not None
        except (VerificationError, InvalidHashError):
            return False
