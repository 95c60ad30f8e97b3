from __future__ import annotations

import hashlib
import hmac

import pytest

from switchboard.runtime import Runtime
from switchboard.tenants import repository as tenants
from tests.factories import TenantFixture


async def signaling_secret(runtime: Runtime, tenant: TenantFixture) -> str:
    async with runtime.db.transaction() as session:
        row = await tenants.get_by_name(session, tenant.name)
        assert row is not None
        return runtime.box.open(row.signaling_secret)


def sign(secret: str, canonical: str) -> str:
    return hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()


@pytest.fixture
async def acme_secret(runtime: Runtime, acme: TenantFixture) -> str:
    return await signaling_secret(runtime, acme)
