"""Concurrent adds to one tenant's whitelist are serialised: none is lost."""

from __future__ import annotations

import asyncio

from httpx import AsyncClient

from switchboard.runtime import Runtime
from tests.factories import TenantFixture, api_key


async def test_concurrent_adds_are_all_kept(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    headers = {"Authorization": f"Bearer {await api_key(runtime, acme)}"}
    # Creates the row and records the key's first use, so the adds below race for real.
    first = await app_client.post(
        "/signal.ashx", params={"whitelist": "add"}, headers=headers, json={"number": "+9"}
    )
    assert first.status_code == 200
    responses = await asyncio.gather(
        *(
            app_client.post(
                "/signal.ashx",
                params={"whitelist": "add"},
                headers=headers,
                json={"number": f"+{i}"},
            )
            for i in range(5)
        )
    )
    assert [r.status_code for r in responses] == [200] * 5
    listed = await app_client.get("/signal.ashx", params={"whitelist": "list"}, headers=headers)
    assert sorted(n["number"] for n in listed.json()["numbers"]) == [f"+{i}" for i in range(5)] + [
        "+9"
    ]
