"""The signing keyring: RS256 keys persisted (private half sealed), rotatable.

Rotation makes a new key the signer while the older ones stay in the JWKS, so tokens still
within their lifetime keep verifying; ``retire`` removes a key once nothing signed by it lives.
Every process reloads the keyring when it meets an unknown ``kid`` and at least once a minute.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

import orjson
from joserfc.jwk import RSAKey
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import SigningKey
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import SecretBox
from switchboard.kit.errors import NotFound

RELOAD_EVERY = dt.timedelta(seconds=60)
UNKNOWN_KID_RELOAD_GAP = dt.timedelta(seconds=5)


class Keyring:
    def __init__(self, box: SecretBox, clock: Clock) -> None:
        self._box = box
        self._clock = clock
        self._public: dict[str, RSAKey] = {}
        self._signer: tuple[str, RSAKey] | None = None
        self._loaded_at: dt.datetime | None = None

    async def load(self, session: AsyncSession) -> None:
        rows = (
            await session.execute(select(SigningKey).where(SigningKey.retired_at.is_(None)))
        ).scalars()
        public: dict[str, RSAKey] = {}
        signer: tuple[str, RSAKey] | None = None
        for row in rows:
            public[row.kid] = RSAKey.import_key(row.public_jwk)
            if row.active:
                private = orjson.loads(self._box.open(row.private_jwk_sealed))
                signer = (row.kid, RSAKey.import_key(private))
        self._public, self._signer = public, signer
        self._loaded_at = self._clock.now()

    def stale(self) -> bool:
        return self._loaded_at is None or self._clock.now() - self._loaded_at > RELOAD_EVERY

    def may_reload_for_unknown_kid(self) -> bool:
        return (
            self._loaded_at is None or self._clock.now() - self._loaded_at > UNKNOWN_KID_RELOAD_GAP
        )

    async def ensure_signer(self, session: AsyncSession) -> tuple[str, RSAKey]:
        if self._signer is None or self.stale():
            await self.load(session)
        if self._signer is None:
            await self.rotate(session)
        assert self._signer is not None
        return self._signer

    async def rotate(self, session: AsyncSession) -> str:
        """Create a new signing key; the previous ones stay published."""
        kid = secrets.token_hex(8)
        key = RSAKey.generate_key(
            2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"}, private=True
        )
        await session.execute(update(SigningKey).values(active=False))
        session.add(
            SigningKey(
                kid=kid,
                public_jwk=key.as_dict(private=False),
                private_jwk_sealed=self._box.seal(orjson.dumps(key.as_dict(private=True)).decode()),
                created_at=self._clock.now(),
                active=True,
            )
        )
        await session.flush()
        await self.load(session)
        return kid

    async def retire(self, session: AsyncSession, kid: str) -> None:
        row = await session.get(SigningKey, kid)
        if row is None or row.retired_at is not None:
            raise NotFound(f"no published key {kid!r}")
        if row.active:
            raise NotFound(f"key {kid!r} is the active signer; rotate first")
        row.retired_at = self._clock.now()
        await session.flush()
        await self.load(session)

    def public_key(self, kid: str) -> RSAKey | None:
        return self._public.get(kid)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.as_dict(private=False) for key in self._public.values()]}

    async def list_keys(self, session: AsyncSession) -> list[SigningKey]:
        stmt = select(SigningKey).order_by(SigningKey.created_at)
        return list((await session.execute(stmt)).scalars())
