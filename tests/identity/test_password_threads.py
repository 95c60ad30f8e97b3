"""A password being checked holds up nothing else: Argon2 runs on threads of its own, before the
sign-in's write transaction, and other requests, writes included, are answered meanwhile
(decision 0032). Both ways a password is checked: the token endpoint's password grant and the
login form."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

import pytest
from httpx import AsyncClient, Response
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.auth.passwords import Passwords
from switchboard.identity import clients, lockout
from switchboard.identity import service as identity
from switchboard.identity.errors import OAuthError
from switchboard.identity.service import PasswordCheck
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import PASSWORD, TenantFixture
from tests.identity.signin_helpers import redirect_params, sign_in
from tests.identity.test_signin_errors import BASE, authorize_url


class HeldPasswords(Passwords):
    """Cheap Argon2 whose every verification waits, on the thread it runs on, until released."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_kib=64, parallelism=1)
        self.checking = threading.Event()
        self.release = threading.Event()
        self.released_in_time: list[bool] = []

    def _verify(self, stored: str | None, password: str) -> bool:
        self.checking.set()
        # Bounded: were the check run on the event loop, nothing could release it.
        self.released_in_time.append(self.release.wait(timeout=30))
        return super()._verify(stored, password)


def _password_grant(client: AsyncClient, password: str) -> Awaitable[Response]:
    form = {"grant_type": "password", "client_id": "cli", "username": "admin"}
    return client.post("/oidc.ashx/token", data={**form, "password": password})


def _login_form(client: AsyncClient, password: str) -> Awaitable[Response]:
    return sign_in(client, authorize_url(), password=password)


@pytest.mark.parametrize("signing_in", [_password_grant, _login_form])
async def test_other_requests_are_answered_while_a_password_is_checked(
    app_client: AsyncClient,
    runtime: Runtime,
    acme: TenantFixture,
    signing_in: Callable[[AsyncClient, str], Awaitable[Response]],
) -> None:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, acme.name)
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
    bearer = await acme.auth(app_client)
    held = runtime.passwords = HeldPasswords()
    attempt = asyncio.ensure_future(signing_in(app_client, PASSWORD))
    assert await asyncio.to_thread(held.checking.wait, 30)
    # The password is being checked: the process still answers, from memory, from the
    # database, and a write (on SQLite the process's one write turn is free).
    catalogue = await asyncio.wait_for(app_client.get("/api.ashx/v1"), timeout=30)
    assert catalogue.status_code == 200
    discovery = await asyncio.wait_for(
        app_client.get("/oidc.ashx/.well-known/openid-configuration"), timeout=30
    )
    assert discovery.status_code == 200
    minted = await asyncio.wait_for(
        app_client.post("/api.ashx/v1/api-keys", json={"name": "meanwhile"}, headers=bearer),
        timeout=30,
    )
    assert minted.status_code == 201, minted.text
    held.release.set()
    answer = await attempt
    assert held.released_in_time == [True]
    if signing_in is _password_grant:
        assert answer.status_code == 200, answer.text
        assert "access_token" in answer.json()
    else:
        assert "code" in redirect_params(answer)
    # A wrong password is refused as before, after its own check.
    app_client.cookies.clear()
    refused = await signing_in(app_client, "wrong-password")
    assert refused.status_code == 400, refused.text
    assert held.released_in_time == [True, True]


async def test_a_verdict_taken_before_a_password_change_is_not_trusted(
    runtime: Runtime, acme: TenantFixture
) -> None:
    """The transaction takes the verdict checked before it only while the user's stored hash is
    the one checked against: a password changed in between is verified afresh."""
    before = await identity.precheck_password(
        runtime.db, runtime.passwords, host=acme.host, username="admin", password=PASSWORD
    )
    assert before is not None
    assert before.ok
    async with runtime.db.transaction() as session:
        await identity.set_password(
            session, tenant_id=acme.id, username="admin", password="a-new-password",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
    settings = runtime.settings

    async def check(session: AsyncSession, password: str, checked: PasswordCheck | None) -> User:
        tenant = await tenants.require_by_name(session, acme.name)
        return await identity.check_password(
            session, tenant=tenant, clock=runtime.clock, username="admin", password=password,
            max_failures=settings.login_max_failures,
            lockout_seconds=settings.login_lockout_seconds, passwords=runtime.passwords,
            unknown=lockout.unknown_names(settings.secret_key), checked=checked,
        )  # fmt: skip

    async with runtime.db.transaction() as session:
        with pytest.raises(OAuthError) as refused:
            await check(session, PASSWORD, before)
        assert refused.value.code == "invalid_grant"
    # ... and a verdict against the hash as it is now is taken.
    now = await identity.precheck_password(
        runtime.db, runtime.passwords, host=acme.host, username="admin", password="a-new-password"
    )
    async with runtime.db.transaction() as session:
        assert (await check(session, "a-new-password", now)).username == "admin"
