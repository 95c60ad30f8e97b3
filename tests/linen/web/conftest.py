from __future__ import annotations

import pytest
from httpx import AsyncClient

from switchboard.runtime import Runtime
from tests.console.signin import console_clients
from tests.factories import TenantFixture
from tests.linen.helpers import Portal, World


@pytest.fixture
async def portal(app_client: AsyncClient, acme: TenantFixture, runtime: Runtime) -> Portal:
    await console_clients(runtime, acme)
    return await Portal.open(app_client, acme)


@pytest.fixture
async def world(portal: Portal) -> World:
    world = await portal.world()
    # Par levels: two duvet covers and four bath towels per turnover.
    response = await portal.patch(
        f"/v1/properties/{world.property}",
        {
            "linenPar": [
                {"itemTypeId": world.duvet, "qty": 2},
                {"itemTypeId": world.towel, "qty": 4},
            ]
        },
    )
    assert response.status_code == 200, response.text
    return world
