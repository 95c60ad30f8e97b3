"""What the service resolves is what a plain scan of the listed table (in its order) finds."""

from __future__ import annotations

import random

from httpx import AsyncClient

from switchboard.platform.routing import service as routing
from switchboard.platform.routing.matching import (
    InboundRule,
    OutboundRule,
    first_inbound_linear,
    first_outbound_linear,
)
from switchboard.runtime import Runtime
from tests.factories import TenantFixture, api_key


def _value(rng: random.Random) -> str:
    return rng.choice(["+", "00", ""]) + "".join(rng.choices("0123", k=rng.randint(0, 4)))


def _pattern(rng: random.Random) -> str:
    base = rng.choice([_value(rng), _value(rng) + "*", "anonymous", "global", "*98"])
    return base or "*"


async def test_service_agrees_with_a_scan_of_the_listed_tables(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    rng = random.Random(3)
    headers = {"Authorization": f"Bearer {await api_key(runtime, acme)}"}
    for i in range(40):
        from_number = rng.choice(["", "", _pattern(rng)])
        await app_client.post(
            "/api.ashx/v1/inbound-routes",
            headers=headers,
            json={"Did": _pattern(rng), "FromNumber": from_number, "User": f"u{i}"},
        )  # a repeated pair is a 409, which is fine here
        await app_client.post(
            "/api.ashx/v1/outbound-routes",
            headers=headers,
            json={"match": _pattern(rng), "trunkIds": [f"t{i}"]},
        )
    inbound_rows = (
        await app_client.get("/api.ashx/v1/inbound-routes?limit=500", headers=headers)
    ).json()["data"]
    outbound_rows = (
        await app_client.get("/api.ashx/v1/outbound-routes?limit=500", headers=headers)
    ).json()["data"]
    inbound = [InboundRule(r["did"], r["fromNumber"], r["user"]) for r in inbound_rows]
    outbound = [OutboundRule(r["match"], tuple(r["trunkIds"])) for r in outbound_rows]
    assert len(inbound) > 10
    assert len(outbound) > 10

    async with runtime.db.transaction() as session:
        for _ in range(200):
            did, caller = _value(rng) or "1", rng.choice([None, "", _value(rng)])
            expected_in = first_inbound_linear(inbound, did, caller)
            assert expected_in is not None  # the catchall
            assert (
                await routing.resolve_inbound(
                    session, tenant_id=acme.id, did=did, from_number=caller
                )
                == inbound[expected_in].user
            ), (did, caller)
            number = _value(rng) or "1"
            expected_out = first_outbound_linear(outbound, number)
            trunks = ["dflt"] if expected_out is None else list(outbound[expected_out].trunk_ids)
            assert (
                await routing.resolve_outbound(
                    session, tenant_id=acme.id, number=number, default_trunk_id="dflt"
                )
                == trunks
            ), number
