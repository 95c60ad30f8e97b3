"""Concurrent writers of one tenant's table each get a clean answer (no 500 under the
revision lock) and leave a consistent table: one row per key, every distinct row kept."""

from __future__ import annotations

import asyncio

from httpx import AsyncClient

from switchboard.runtime import Runtime
from tests.factories import TenantFixture, api_key

INBOUND = "/api.ashx/v1/inbound-routes"
OUTBOUND = "/api.ashx/v1/outbound-routes"


async def test_concurrent_posts_of_one_key_create_one_row(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    headers = {"Authorization": f"Bearer {await api_key(runtime, acme)}"}
    # The key's first use records its last-use time, a write that would serialise the requests.
    assert (await app_client.get(INBOUND, headers=headers)).status_code == 200
    same_pair = await asyncio.gather(
        *(
            app_client.post(INBOUND, headers=headers, json={"Did": "100", "User": f"u{i}"})
            for i in range(4)
        )
    )
    assert sorted(r.status_code for r in same_pair) == [201, 409, 409, 409]
    distinct = await asyncio.gather(
        *(
            app_client.post(OUTBOUND, headers=headers, json={"match": f"+{i}*", "trunkIds": ["t"]})
            for i in range(4)
        )
    )
    assert [r.status_code for r in distinct] == [201] * 4
    inbound = (await app_client.get(INBOUND, headers=headers)).json()["data"]
    assert [r["did"] for r in inbound] == ["100", "*"]
    outbound = (await app_client.get(OUTBOUND, headers=headers)).json()["data"]
    assert sorted(r["match"] for r in outbound) == ["+0*", "+1*", "+2*", "+3*"]
