"""Argon2id password hashing, with the cost parameters from settings.

Hashing and verifying cost tens to hundreds of milliseconds of CPU by design (about 130 ms with
the default parameters on a small server). They run on a few threads of their own (argon2
releases the GIL), never on the event loop: while one sign-in is checked the process goes on
serving every other request, and a burst of sign-ins waits for those threads rather than for
the loop or the default executor the rest of the application shares (decision 0032).

A user can also have no usable password (``Passwords.unusable``: one created at a federated
first sign-in, whom only the provider signs in). Its stored value is no hash, nothing verifies
against it, and checking a password for it costs the same verification as for an unknown user.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# Hashes running at once: with the default memory cost (64 MiB) at most 512 MiB in use.
MAX_WORKERS = 8

# A stored value that starts so is no hash (a PHC string starts with "$"): no password matches.
UNUSABLE_PREFIX = "!"


class Passwords:
    """Hashes and verifies passwords; an unknown user still costs one verification. One hash
    runs at once a core, at most ``MAX_WORKERS``: each holds its memory cost while it runs."""

    def __init__(self, *, time_cost: int, memory_kib: int, parallelism: int) -> None:
        self._hasher = PasswordHasher(
            time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism
        )
        self._dummy = self._hasher.hash("an unguessable placeholder used to even out timing")
        self._pool = ThreadPoolExecutor(
            max_workers=min(os.cpu_count() or 2, MAX_WORKERS),
            thread_name_prefix="argon2",
        )

    @staticmethod
    def unusable() -> str:
        """The stored value of a user without a password: computed at no cost, and different for
        every user (the web apps' session stamps digest it)."""
        return UNUSABLE_PREFIX + secrets.token_urlsafe(24)

    async def hash(self, password: str) -> str:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self._hasher.hash, password
        )

    async def verify(self, stored: str | None, password: str) -> bool:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self._verify, stored, password
        )

    def _verify(self, stored: str | None, password: str) -> bool:
        usable = stored is not None and not stored.startswith(UNUSABLE_PREFIX)
        against = stored if stored is not None and usable else self._dummy
        try:
            return self._hasher.verify(against, password) and usable
        except (VerificationError, InvalidHashError):
            return False
