"""Verified API keys, kept in-process for a short bounded time (decision 0920).

A key is verified against the database at most once per ``ttl`` seconds per process. Anything
in this process that narrows what keys may do (revoking one; disabling, deleting or changing the
role of its user) bumps ``REVOCATIONS`` once its transaction commits, which empties every cache
of the process at once; another process's change is honoured when the entry expires, within
``ttl``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.db import after_commit

CACHE_MAX = 10_000


class Revocations:
    """A process-wide counter of committed key revocations."""

    def __init__(self) -> None:
        self.generation = 0

    def bump(self) -> None:
        self.generation += 1

    def after_commit_of(self, session: AsyncSession) -> None:
        """Bump now and once ``session`` commits: a request that read the key before the
        revocation committed cannot keep its verdict past the commit."""
        self.bump()
        after_commit(session, self.bump)


REVOCATIONS = Revocations()


@dataclass(slots=True)
class CachedKey:
    key_id: str
    tenant_id: int
    tenant_name: str
    user_id: int
    username: str
    role: str  # the user's role when verified: a key acts with its user's authority
    expires: float
    generation: int
    last_used: float | None


class ApiKeyCache:
    """Verified keys by SHA-256 of the key, bounded in size and age."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._entries: dict[str, CachedKey] = {}
        self._generation = REVOCATIONS.generation

    def generation(self) -> int:
        return REVOCATIONS.generation

    def get(self, key_hash: str, now: float) -> CachedKey | None:
        if self._generation != REVOCATIONS.generation:
            self._entries.clear()
            self._generation = REVOCATIONS.generation
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        if entry.expires <= now or entry.generation != self._generation:
            del self._entries[key_hash]
            return None
        return entry

    def put(self, key_hash: str, entry: CachedKey) -> None:
        """Keep ``entry`` unless a revocation committed since it was read from the database."""
        if self.ttl <= 0 or entry.generation != REVOCATIONS.generation:
            return
        if len(self._entries) >= CACHE_MAX:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key_hash] = entry
