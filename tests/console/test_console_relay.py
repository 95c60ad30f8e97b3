"""The relay ACL page: the operator's admins block and unblock; nobody else sees it."""

from __future__ import annotations

from httpx import AsyncClient

from switchboard.relay import service
from switchboard.runtime import Runtime
from tests.console.signin import csrf_of, sign_in


async def _rules(runtime: Runtime) -> list[tuple[str, str, str, str]]:
    async with runtime.db.transaction(read_only=True) as session:
        rows = await service.list_rules(session)
        return [(r.subject, r.value, r.scope, r.note) for r in rows]


async def test_an_operator_admin_blocks_and_unblocks_a_network(
    browsers: dict[str, AsyncClient], runtime: Runtime
) -> None:
    client = browsers["acme"]  # the primary tenant's admin
    assert (await sign_in(client)).status_code == 303
    page = await client.get("/admin/relay")
    assert page.status_code == 200
    assert "Nothing is blocked." in page.text
    assert 'href="/admin/relay"' in page.text
    token = csrf_of(page.text)
    added = await client.post(
        "/admin/relay",
        data={"csrf": token, "subject": "cidr", "value": "203.0.113.0/24", "scope": "sip-inbound",
              "note": "abuse ticket 1234"},
    )  # fmt: skip
    assert added.status_code == 303
    assert await _rules(runtime) == [("cidr", "203.0.113.0/24", "sip-inbound", "abuse ticket 1234")]
    listed = await client.get("/admin/relay")
    assert "<code>203.0.113.0/24</code>" in listed.text
    rule_id = (await _list_ids(runtime))[0]
    removed = await client.post("/admin/relay/remove", data={"csrf": token, "id": str(rule_id)})
    assert removed.status_code == 303
    assert await _rules(runtime) == []


async def _list_ids(runtime: Runtime) -> list[int]:
    async with runtime.db.transaction(read_only=True) as session:
        return [r.id for r in await service.list_rules(session)]


async def test_bad_rules_are_refused_and_change_nothing(
    browsers: dict[str, AsyncClient], runtime: Runtime
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/relay")).text)
    for data in (
        {"subject": "cidr", "value": "not-a-network", "scope": "any"},
        {"subject": "host", "value": "203.0.113.7", "scope": "any"},
        {"subject": "ip", "value": "203.0.113.7", "scope": "everywhere"},
    ):
        refused = await client.post("/admin/relay", data={"csrf": token, **data})
        assert refused.status_code == 400, data
    missing = await client.post("/admin/relay/remove", data={"csrf": token, "id": "999"})
    assert missing.status_code == 400
    assert "no ACL rule with id 999" in missing.text
    garbled = await client.post("/admin/relay/remove", data={"csrf": token, "id": "x"})
    assert garbled.status_code == 400
    no_csrf = await client.post("/admin/relay", data={"subject": "ip", "value": "203.0.113.7"})
    assert no_csrf.status_code == 403
    assert await _rules(runtime) == []


async def test_admins_of_other_tenants_neither_see_nor_change_the_acl(
    browsers: dict[str, AsyncClient], runtime: Runtime
) -> None:
    client = browsers["globex"]
    assert (await sign_in(client)).status_code == 303
    calls = await client.get("/admin/calls")
    assert 'href="/admin/relay"' not in calls.text
    assert (await client.get("/admin/relay")).status_code == 403
    token = csrf_of(calls.text)
    refused = await client.post(
        "/admin/relay", data={"csrf": token, "subject": "ip", "value": "203.0.113.7"}
    )
    assert refused.status_code == 403
    assert await _rules(runtime) == []
