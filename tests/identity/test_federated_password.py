"""A user made at a federated first sign-in has no usable password: the sign-in computes no
Argon2 hash (on SQLite a hash inside the write transaction would hold the process's one write
turn), no password signs that user in, and checking one costs the same verification as for an
unknown user. An administrator's new password makes it usable (decision 0032)."""

from __future__ import annotations

import pytest
from httpx import AsyncClient

from switchboard.auth.passwords import Passwords
from switchboard.identity import service as identity
from switchboard.identity.federation.secrets import SecretValue
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.identity.federation_helpers import (
    FakeProvider,
    add_provider,
    app,
    browser,
    provider,
    sign_in,
    signed_in,
)

__all__ = ["app", "browser", "provider"]

NEW_PASSWORD = "a password of her own"


class CountingPasswords(Passwords):
    """Cheap Argon2 that counts what it is asked to do."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_kib=64, parallelism=1)
        self.hashed = 0
        self.verified = 0

    async def hash(self, password: str) -> str:
        self.hashed += 1
        return await super().hash(password)

    def _verify(self, stored: str | None, password: str) -> bool:
        self.verified += 1
        return super()._verify(stored, password)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"federation_allow_private": ("127.0.0.1/32",)})


async def _password_grant(browser: AsyncClient, password: str) -> tuple[int, dict[str, str]]:
    form = {"grant_type": "password", "client_id": "cli", "username": "fed-user"}
    answer = await browser.post("/oidc.ashx/token", data={**form, "password": password})
    return answer.status_code, answer.json()


async def test_a_user_created_at_first_sign_in_has_no_password(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider
) -> None:
    counting = runtime.passwords = CountingPasswords()
    await add_provider(runtime, provider.issuer, SecretValue("cs"))
    signed_in(await sign_in(browser))
    assert counting.hashed == 0  # the user was made without computing a hash

    async with runtime.db.transaction(read_only=True) as session:
        tenant = await tenants.require_by_name(session, "acme")
        user = await identity.get_user(session, tenant_id=tenant.id, username="fed-user")
        stored = user.password_hash
    # Anything at all, the stored value itself included, is refused like a wrong password, and
    # each attempt costs one verification, as an unknown user's does.
    for attempt in ("x", stored, stored[1:], "fed-user"):
        status, body = await _password_grant(browser, attempt)
        assert (status, body["error"]) == (400, "invalid_grant"), body
    assert counting.verified == 4

    # An administrator gives the user a password: from then on it signs in.
    async with runtime.db.transaction() as session:
        await identity.set_password(
            session, tenant_id=tenant.id, username="fed-user", password=NEW_PASSWORD,
            clock=runtime.clock, passwords=counting,
        )  # fmt: skip
    status, body = await _password_grant(browser, NEW_PASSWORD)
    assert status == 200, body
    assert body["token_type"] == "Bearer"


async def test_users_without_a_password_do_not_share_a_stored_value() -> None:
    """The web apps' session stamps digest the stored value: two such users differ."""
    assert Passwords.unusable() != Passwords.unusable()
