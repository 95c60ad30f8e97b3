"""Federated sign-ins past their expiry are forgotten by the hourly purge."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select

from switchboard.identity.federation import service as federation
from switchboard.identity.federation import tasks
from switchboard.identity.federation.models import ExternalLogin
from switchboard.identity.federation.secrets import ClientSecrets
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture


async def test_expired_sign_ins_are_purged(
    runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> None:
    spec = federation.ProviderSpec(
        name="partners", issuer="https://login.partners.example", client_id="acme-idp",
    )  # fmt: skip
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        provider = await federation.add_provider(
            session,
            tenant=tenant,
            spec=spec,
            client_secrets=ClientSecrets.of(runtime),
            now=clock.now(),
        )
        for index, minutes in enumerate((-1, 5)):
            session.add(
                ExternalLogin(
                    state_hash=f"{index:064d}",
                    tenant_id=tenant.id,
                    provider_id=provider.id,
                    browser_hash="b" * 64,
                    nonce="n",
                    verifier_sealed="v",
                    authorize_query="",
                    expires_at=clock.now() + dt.timedelta(minutes=minutes),
                )
            )
    async with runtime.db.transaction() as session:
        assert await tasks.purge(session, now=clock.now()) == 1
    async with runtime.db.transaction() as session:
        left = await session.scalar(select(func.count()).select_from(ExternalLogin))
    assert left == 1
