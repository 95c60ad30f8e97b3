"""Repeated reads of the calls list are answered without the database until something commits
(decision 0960): a write of this process, of another connection, a revoked key and an expired
token are all seen by the next read; callers never see each other's answers."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

from httpx import AsyncClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

import switchboard
from switchboard.kit.clock import ManualClock
from switchboard.kit.destinations import parse_networks
from switchboard.kit.models import watched
from switchboard.models import Base
from switchboard.platform.webhooks import service as webhooks
from switchboard.runtime import Runtime
from tests import factories
from tests.calls.conftest import Org
from tests.calls.helpers import place, settle

CALLS = "/api.ashx/v1/calls"


async def _list(client: AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    response = await client.get(CALLS, params={"limit": 50}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_repeated_read_is_answered_without_the_database(
    app_client: AsyncClient, runtime: Runtime, org: Org, statements: list[str]
) -> None:
    call = await place(app_client, org.headers)
    await settle(runtime)  # the simulated call has ended: nothing writes meanwhile
    await runtime.db.changes.caught_up()  # and every notification of its writes has arrived
    first = await app_client.get(CALLS, params={"limit": 50}, headers=org.headers)
    statements.clear()
    second = await app_client.get(CALLS, params={"limit": 50}, headers=org.headers)
    assert second.status_code == 200
    assert second.content == first.content
    assert second.json()["data"][0]["callId"] == call["callId"]
    assert statements == []
    assert second.headers["cache-control"] == "no-store"
    assert second.headers["x-request-id"] != first.headers["x-request-id"]
    assert len(second.headers.get_list("x-request-id")) == 1
    other_query = await app_client.get(CALLS, params={"limit": 49}, headers=org.headers)
    assert other_query.status_code == 200
    assert statements  # another request is answered afresh
    scrape = (await app_client.get("/metrics")).text
    assert 'switchboard_read_cache_answers_total{outcome="hit"} 1.0' in scrape
    assert 'switchboard_read_cache_answers_total{outcome="kept"} 2.0' in scrape


async def test_requests_that_miss_together_share_one_answer(
    app_client: AsyncClient, runtime: Runtime, org: Org, statements: list[str]
) -> None:
    """Once a kept answer has ended (here a write committed), the requests that ask for it
    while it is being answered again wait for that answer instead of each going to the
    database."""

    async def a_write_then_lists(count: int) -> list[dict[str, Any]]:
        await place(app_client, org.headers)
        await settle(runtime)
        await runtime.db.changes.caught_up()
        statements.clear()
        return await asyncio.gather(*(_list(app_client, org.headers) for _ in range(count)))

    await a_write_then_lists(1)  # kept
    [alone] = await a_write_then_lists(1)  # the entry ended: answered again, alone
    one_answer = len(statements)
    assert one_answer > 0
    together = await a_write_then_lists(8)
    assert len(statements) == one_answer
    assert all(answer == together[0] for answer in together)
    assert together[0]["total"] == alone["total"] + 1
    scrape = (await app_client.get("/metrics")).text
    assert 'switchboard_read_cache_answers_total{outcome="hit"} 7.0' in scrape


async def test_a_write_of_this_process_is_seen_by_the_next_read(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    assert (await _list(app_client, org.headers))["total"] == 0
    call = await place(app_client, org.headers)
    listed = await _list(app_client, org.headers)
    assert [record["callId"] for record in listed["data"]] == [call["callId"]]
    hangup = await app_client.post(f"{CALLS}/{call['callId']}/hangup", headers=org.headers)
    assert hangup.status_code == 200
    await settle(runtime)
    record = await app_client.get(f"{CALLS}/{call['callId']}", headers=org.headers)
    assert (await _list(app_client, org.headers))["data"][0] == record.json()


async def test_a_call_stored_by_the_one_statement_insert_is_seen_by_the_next_read(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    """A number already on the whitelist leaves one INSERT, sent on the driver (decision 0999),
    outside the session whose events move the change version otherwise."""
    first = await place(app_client, org.headers, phone="+14155550177")
    await settle(runtime)
    await runtime.db.changes.caught_up()
    assert [r["callId"] for r in (await _list(app_client, org.headers))["data"]] == [
        first["callId"]
    ]
    assert (await _list(app_client, org.headers))["total"] == 1  # now answered from the cache
    second = await place(app_client, org.headers, phone="+14155550177")
    assert second["whitelistAdded"] is False
    listed = await _list(app_client, org.headers)
    assert [r["callId"] for r in listed["data"]] == [second["callId"], first["callId"]]


async def test_a_write_of_another_connection_is_seen(
    app_client: AsyncClient, runtime: Runtime, org: Org
) -> None:
    """Another process's commit, made here by an engine this process does not watch: SQLite's
    data version shows it to the very next read, PostgreSQL's once its notification arrived."""
    call = await place(app_client, org.headers)
    await settle(runtime)
    assert (await _list(app_client, org.headers))["data"][0]["displayName"] != "Changed"
    stranger = create_async_engine(runtime.settings.resolved_database_url)
    try:
        async with stranger.begin() as conn:
            changed = await conn.execute(
                text("UPDATE calls SET display_name = 'Changed' WHERE call_id = :id"),
                {"id": call["callId"]},
            )
            assert changed.rowcount == 1
    finally:
        await stranger.dispose()
    await runtime.db.changes.caught_up()  # PostgreSQL: its notification has arrived
    assert (await _list(app_client, org.headers))["data"][0]["displayName"] == "Changed"


async def test_a_revoked_key_is_refused_at_once(app_client: AsyncClient, org: Org) -> None:
    await _list(app_client, org.headers)
    keys = await app_client.get("/api.ashx/v1/api-keys", headers=org.headers)
    assert keys.status_code == 200, keys.text
    for key in keys.json()["data"]:
        revoked = await app_client.delete(f"/api.ashx/v1/api-keys/{key['id']}", headers=org.headers)
        assert revoked.status_code in (200, 204), revoked.text
    refused = await app_client.get(CALLS, params={"limit": 50}, headers=org.headers)
    assert refused.status_code == 401


async def test_an_expired_token_is_not_answered_from_the_cache(
    app_client: AsyncClient, runtime: Runtime, clock: ManualClock
) -> None:
    tenant = await factories.tenant(runtime, "initech", ["initech.test"])
    headers = await tenant.auth(app_client)
    await _list(app_client, headers)
    await _list(app_client, headers)
    clock.advance(runtime.settings.access_token_ttl + 1)
    expired = await app_client.get(CALLS, params={"limit": 50}, headers=headers)
    assert expired.status_code == 401


async def test_callers_never_share_answers(
    app_client: AsyncClient, org: Org, other_org: Org
) -> None:
    mine = await place(app_client, org.headers)
    theirs = await place(app_client, other_org.headers)
    for _ in range(2):
        assert [c["callId"] for c in (await _list(app_client, org.headers))["data"]] == [
            mine["callId"]
        ]
        assert [c["callId"] for c in (await _list(app_client, other_org.headers))["data"]] == [
            theirs["callId"]
        ]
    missing = {"Authorization": "Bearer ak_not-a-key"}
    assert (await app_client.get(CALLS, headers=missing)).status_code == 401


def _keeping_endpoints() -> set[str]:
    """The functions of ``src`` that let the read cache keep their answer (``cacheable``)."""
    root = Path(switchboard.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef):
                calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
                if any(getattr(c.func, "id", None) == "cacheable" for c in calls):
                    found.add(f"{path.relative_to(root).as_posix()}:{node.name}")
    return found


async def test_no_kept_answer_reads_an_unwatched_table(
    app_client: AsyncClient, runtime: Runtime, org: Org, statements: list[str]
) -> None:
    """Commits to the unwatched tables (the webhook sender's, decision 0217) do not void the
    cache: no endpoint whose answer it keeps may read them. A new such endpoint is added here."""
    assert _keeping_endpoints() == {
        "platform/calls/endpoints.py:list_calls",
        "platform/calls/endpoints.py:get_call",
    }
    unwatched = {table.name for table in Base.metadata.sorted_tables if not watched(table)}
    assert unwatched == {"webhook_deliveries", "webhook_attempts"}
    async with runtime.db.transaction() as session:  # the call queues webhook deliveries
        await webhooks.create_subscription(
            session, tenant_id=org.id, url="http://127.0.0.1:9/hook", events=["*"],
            created_by="test", clock=runtime.clock, box=runtime.box,
            allow=parse_networks(("127.0.0.0/8",)),
        )  # fmt: skip
    call = await place(app_client, org.headers)
    await settle(runtime)
    statements.clear()
    listed = await app_client.get(CALLS, headers=org.headers)
    record = await app_client.get(f"{CALLS}/{call['callId']}", headers=org.headers)
    assert (listed.status_code, record.status_code) == (200, 200)
    assert statements  # both were answered afresh
    read = {name for name in unwatched for sql in statements if name in sql}
    assert read == set()
