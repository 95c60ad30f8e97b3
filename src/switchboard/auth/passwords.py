"""Argon2id password hashing, with the cost parameters from settings.

Hashing and verifying cost tens to hundreds of milliseconds of CPU by design (about 130 ms with
the default parameters on a small server). They run on a few threads of their own (argon2
releases the GIL), never on the event loop: while one sign-in is checked the process goes on
serving every other request, and a burst of sign-ins waits for those threads rather than for
the loop or the default executor the rest of the application shares (decision 0032).
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# Hashes running at once: with the default memory cost (64 MiB) at most 512 MiB in use.
MAX_WORKERS = 8


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

    async def hash(self, password: str) -> str:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self._hasher.hash, password
        )

    async def verify(self, stored: str | None, password: str) -> bool:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self._verify, stored, password
        )

    def _verify(self, stored: str | None, password: str) -> bool:
        try:
            return self._hasher.verify(stored or self._dummy, password) and stored is not None
        except (VerificationError, InvalidHashError):
            return False
