from __future__ import annotations

import pytest
from httpx import AsyncClient

from tests.factories import TenantFixture
from tests.linen.helpers import Portal, World


@pytest.fixture
async def portal(app_client: AsyncClient, acme: TenantFixture) -> Portal:
    return await Portal.open(app_client, acme)


@pytest.fixture
async def world(portal: Portal) -> World:
    return await portal.world()
