"""GET /api.ashx/v1/transcripts and /transcripts/{callId} over HTTP."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from httpx import AsyncClient

from switchboard.kit.clock import ManualClock
from switchboard.platform.transcripts.service import Turn, save_transcript
from switchboard.platform.transcripts.tasks import sweep_orphans
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.transcripts.helpers import T0, inbound, outbound, save

URL = "/api.ashx/v1/transcripts"

OUTBOUND_KEYS = {
    "callId", "callerSource", "startedUtc", "endedUtc", "mtimeUtc", "durationSec", "rule",
    "phone", "displayName", "outcome", "voice", "language", "model", "tokensTotal",
    "tokensPrompt", "turnCount", "size", "source", "file",
}  # fmt: skip
INBOUND_KEYS = {
    "callId", "callerSource", "startedUtc", "endedUtc", "durationSec", "rule", "number",
    "outcome", "tokensTotal", "turnCount", "size", "file",
}  # fmt: skip
DETAIL_KEYS = {
    "callId", "callerSource", "tenant", "requestedBy", "phone", "displayName", "email", "voice",
    "language", "model", "trunkId", "startedUtc", "answeredUtc", "endedUtc", "durationSec",
    "answered", "outcome", "errorDetail", "inputTurns", "outputTurns", "tokensTotal", "turns",
}  # fmt: skip


def minutes(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


async def test_list_items_per_direction_newest_first(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    clock.set(minutes(30))
    out_file = await save(runtime, acme, outbound("oac-00000000000a", started=minutes(1)))
    await save(runtime, acme, inbound("vnum-b", started=minutes(2)))
    response = await app_client.get(URL, headers=await acme.auth(app_client))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "total", "limit", "offset", "next"}
    assert (body["total"], body["limit"], body["offset"], body["next"]) == (2, 50, 0, None)
    first, second = body["data"]
    assert set(first) == INBOUND_KEYS
    assert set(second) == OUTBOUND_KEYS
    assert first["callId"] == "vnum-b"
    assert first["number"] == "200"
    assert first["callerSource"] == "vnum"
    assert second == {
        "callId": "oac-00000000000a",
        "callerSource": "outbound-ai",
        "startedUtc": "2026-01-01T09:01:00Z",
        "endedUtc": "2026-01-01T09:02:04Z",
        "mtimeUtc": "2026-01-01T09:30:00Z",
        "durationSec": 64,
        "rule": "Renewals",
        "phone": "+4930123456",
        "displayName": "Dana Example",
        "outcome": "finished",
        "voice": "Aoede",
        "language": "en-US",
        "model": "gemini-live-2.5-flash",
        "tokensTotal": 900,
        "tokensPrompt": 120,
        "turnCount": 4,
        "size": second["size"],
        "source": "outbound-ai",
        "file": out_file,
    }
    path = runtime.settings.data_dir / "transcripts" / "acme" / out_file
    assert second["size"] == path.stat().st_size > 0


async def test_detail_has_turns_from_the_file(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    await save(runtime, acme, outbound())
    await save(runtime, acme, inbound())
    headers = await acme.auth(app_client)
    response = await app_client.get(f"{URL}/oac-0123456789ab", headers=headers)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == DETAIL_KEYS
    assert body["tenant"] == "acme"
    assert body["answered"] is True
    assert body["answeredUtc"] == "2026-01-01T09:00:04Z"
    assert body["trunkId"] == "trunk-a"
    assert (body["inputTurns"], body["outputTurns"], body["tokensTotal"]) == (2, 2, 900)
    assert body["turns"][0] == {
        "speaker": "AI",
        "text": "Hello, this is Acme calling about your renewal.",
        "ts": "2026-01-01T09:00:00Z",
    }
    assert [t["speaker"] for t in body["turns"]] == ["AI", "Caller", "AI", "Caller"]
    unanswered = (await app_client.get(f"{URL}/vnum-1a2b3c", headers=headers)).json()
    assert (unanswered["answered"], unanswered["answeredUtc"]) == (False, "")
    missing = await app_client.get(f"{URL}/oac-ffffffffffff", headers=headers)
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


async def test_source_filter(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    await save(runtime, acme, outbound("oac-000000000001", started=minutes(1)))
    await save(runtime, acme, inbound("vnum-a", "vnum", started=minutes(2)))
    await save(runtime, acme, inbound("vnum-b", "office-tab", started=minutes(3)))
    await save(runtime, acme, inbound("vnum-c", "sip", started=minutes(4)))
    headers = await acme.auth(app_client)

    async def ids(query: str) -> list[str]:
        response = await app_client.get(f"{URL}{query}", headers=headers)
        assert response.status_code == 200, response.text
        return [item["callId"] for item in response.json()["data"]]

    assert await ids("") == ["vnum-c", "vnum-b", "vnum-a", "oac-000000000001"]
    assert await ids("?source=vnum") == ["vnum-c", "vnum-b", "vnum-a"]
    assert await ids("?source=outbound-ai") == ["oac-000000000001"]
    assert await ids("?source=") == ["vnum-c", "vnum-b", "vnum-a", "oac-000000000001"]
    bad = await app_client.get(f"{URL}?source=sip", headers=headers)
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid_request"
    assert "source" in bad.json()["error_description"]
    document = (await app_client.get("/openapi.json")).json()
    [source] = [p for p in document["paths"][URL]["get"]["parameters"] if p["name"] == "source"]
    assert source["schema"]["anyOf"][0]["pattern"] == "^(vnum|outbound-ai)?$"


Q_CASES = [
    ("dana", ["oac-000000000001"]),  # displayName, case-insensitive
    ("30123", ["oac-000000000001"]),  # caller
    ("4940999", ["vnum-a"]),  # inbound caller
    ("200", ["vnum-a"]),  # number
    ("FRONT D", ["vnum-a"]),  # rule, with a space
    ("o", ["vnum-a", "oac-000000000002"]),  # below three characters: still a substring
    ("50%", ["oac-000000000002"]),  # LIKE wildcards are literal
    ("o_5", []),
    ('"quoted"', ["oac-000000000002"]),
    ("nobody", []),
    ("desk\nrenewals", []),  # a match never spans two fields
    ("  ", ["vnum-a", "oac-000000000001", "oac-000000000002"]),  # blank: no filter
]


async def test_q_is_a_substring_of_caller_number_name_or_rule(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    await save(runtime, acme, outbound("oac-000000000001", started=minutes(1)))
    await save(
        runtime,
        acme,
        outbound(
            "oac-000000000002",
            started=minutes(0),
            display_name='Promo 50% "quoted"',
            rule="Promo",
            phone="+15550000",
        ),
    )
    await save(runtime, acme, inbound("vnum-a", started=minutes(2)))
    headers = await acme.auth(app_client)
    for query, expected in Q_CASES:
        response = await app_client.get(URL, params={"q": query}, headers=headers)
        assert response.status_code == 200
        body = response.json()
        assert [item["callId"] for item in body["data"]] == expected, query
        assert body["total"] == len(expected), query


async def test_since_keeps_transcripts_started_at_or_after(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    for n in range(3):
        await save(runtime, acme, outbound(f"oac-00000000000{n}", started=minutes(n)))
    headers = await acme.auth(app_client)
    response = await app_client.get(URL, params={"since": "2026-01-01T09:01:00Z"}, headers=headers)
    assert [i["callId"] for i in response.json()["data"]] == [
        "oac-000000000002",
        "oac-000000000001",
    ]
    offset = await app_client.get(
        URL, params={"since": "2026-01-01T10:01:00+01:00"}, headers=headers
    )
    assert offset.json()["total"] == 2


async def test_paging_next_is_an_integer_offset(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    for n in range(5):
        await save(runtime, acme, outbound(f"oac-00000000000{n}", started=minutes(n)))
    headers = await acme.auth(app_client)
    first = (await app_client.get(URL, params={"limit": 2}, headers=headers)).json()
    assert (first["total"], first["limit"], first["offset"], first["next"]) == (5, 2, 0, 2)
    assert [i["callId"] for i in first["data"]] == ["oac-000000000004", "oac-000000000003"]
    last = (await app_client.get(URL, params={"limit": 2, "offset": 4}, headers=headers)).json()
    assert (last["next"], [i["callId"] for i in last["data"]]) == (None, ["oac-000000000000"])
    past = (await app_client.get(URL, params={"offset": 10}, headers=headers)).json()
    assert (past["data"], past["total"], past["next"]) == ([], 5, None)
    q = await app_client.get(URL, params={"limit": 1, "offset": 1, "q": "dana"}, headers=headers)
    assert (q.json()["total"], q.json()["next"]) == (5, 2)


INVALID_QUERIES = [
    {"since": "yesterday"},
    {"since": "2026-13-01T00:00:00Z"},
    {"source": "inbound"},
    {"source": "office-tab"},
    {"limit": "0"},
    {"limit": "501"},
    {"limit": "ten"},
    {"offset": "-1"},
]


async def test_invalid_query_values_are_400(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    await save(runtime, acme, outbound())
    headers = await acme.auth(app_client)
    for params in INVALID_QUERIES:
        response = await app_client.get(URL, params=params, headers=headers)
        assert response.status_code == 400, params
        body = response.json()
        assert body["error"] == "invalid_request"
        assert next(iter(params)) in body["error_description"]


async def test_tenants_are_isolated(
    app_client: AsyncClient, acme: TenantFixture, globex: TenantFixture, runtime: Runtime
) -> None:
    await save(runtime, acme, outbound("oac-0000000000aa", display_name="Acme only"))
    await save(runtime, globex, outbound("oac-0000000000bb", display_name="Globex only"))
    # The same callId in two tenants is two transcripts.
    await save(runtime, globex, outbound("oac-0000000000aa", display_name="Globex twin"))
    acme_h, globex_h = await acme.auth(app_client), await globex.auth(app_client)
    listed = (await app_client.get(URL, headers=acme_h)).json()
    assert [i["displayName"] for i in listed["data"]] == ["Acme only"]
    assert (await app_client.get(URL, params={"q": "globex"}, headers=acme_h)).json()["total"] == 0
    foreign = await app_client.get(f"{URL}/oac-0000000000bb", headers=acme_h)
    assert (foreign.status_code, foreign.json()["error"]) == (404, "not_found")
    twin = (await app_client.get(f"{URL}/oac-0000000000aa", headers=globex_h)).json()
    assert (twin["tenant"], twin["displayName"]) == ("globex", "Globex twin")
    mine = (await app_client.get(f"{URL}/oac-0000000000aa", headers=acme_h)).json()
    assert mine["displayName"] == "Acme only"
    assert (runtime.settings.data_dir / "transcripts" / "globex").is_dir()


async def test_requires_an_admin_bearer(app_client: AsyncClient, acme: TenantFixture) -> None:
    assert (await app_client.get(URL)).status_code == 401
    user = await app_client.get(URL, headers=await acme.auth(app_client, "user"))
    assert user.status_code == 403
    detail = await app_client.get(f"{URL}/oac-0123456789ab")
    assert detail.status_code == 401


async def test_rollback_leaves_neither_row_nor_file(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    folder = runtime.settings.data_dir / "transcripts" / "acme"
    written: list[bool] = []

    async def call_that_fails_after_saving() -> None:
        async with runtime.db.transaction() as session:
            file = await save_transcript(
                session,
                tenant_id=acme.id,
                tenant_name=acme.name,
                data=outbound(),
                data_dir=runtime.settings.data_dir,
                clock=runtime.clock,
            )
            written.append((folder / file).is_file())
            raise RuntimeError("the call's transaction fails after the save")

    with pytest.raises(RuntimeError):
        await call_that_fails_after_saving()
    assert written == [True]
    assert list(folder.iterdir()) == []
    response = await app_client.get(f"{URL}/oac-0123456789ab", headers=await acme.auth(app_client))
    assert response.status_code == 404


async def test_saving_again_replaces_the_transcript_and_its_file(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    folder = runtime.settings.data_dir / "transcripts" / "acme"
    first = await save(runtime, acme, outbound())
    second = await save(
        runtime,
        acme,
        outbound(outcome="max-duration", turns=[Turn("AI", "Second attempt.", minutes(9))]),
    )
    assert first != second
    assert [p.name for p in folder.iterdir()] == [second]
    headers = await acme.auth(app_client)
    body = (await app_client.get(f"{URL}/oac-0123456789ab", headers=headers)).json()
    assert (body["outcome"], [t["text"] for t in body["turns"]]) == (
        "max-duration",
        ["Second attempt."],
    )
    assert (await app_client.get(URL, headers=headers)).json()["total"] == 1


async def test_save_rejects_malformed_input(acme: TenantFixture, runtime: Runtime) -> None:
    for bad in (
        outbound(call_id="../escape"),
        outbound(caller_source="fax"),
        outbound(turns=[Turn("Robot", "beep", T0)]),
        outbound(started=dt.datetime(2026, 1, 1, 9, 0)),  # naive
    ):
        with pytest.raises(ValueError, match=r"call_id|caller_source|speaker|timezone"):
            await save(runtime, acme, bad)
    assert not (runtime.settings.data_dir / "transcripts").exists()


async def test_sweep_removes_only_old_unindexed_files(
    acme: TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    folder = runtime.settings.data_dir / "transcripts" / "acme"
    kept = await save(runtime, acme, outbound())
    orphan = folder / "oac-00000000dead-20260101T090000Z-abcdef.json"
    stale_tmp = folder / f".{kept}.tmp"
    fresh_orphan = folder / "oac-00000000beef-20260101T090000Z-abcdef.json"
    gone_tenant = runtime.settings.data_dir / "transcripts" / "deleted-tenant" / kept
    gone_tenant.parent.mkdir()
    for path in (orphan, stale_tmp, fresh_orphan, gone_tenant):
        path.write_bytes(b"{}")
    old = (clock.now() - dt.timedelta(hours=2)).timestamp()
    for path in (folder / kept, orphan, stale_tmp, gone_tenant):
        os.utime(path, (old, old))
    os.utime(fresh_orphan, (clock.now().timestamp(),) * 2)
    async with runtime.db.transaction() as session:
        removed = await sweep_orphans(session, data_dir=runtime.settings.data_dir, clock=clock)
    assert sorted(removed) == sorted([orphan, stale_tmp, gone_tenant])
    assert sorted(p.name for p in folder.iterdir()) == sorted([kept, fresh_orphan.name])


async def test_a_missing_file_still_answers_from_the_index(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    file = await save(runtime, acme, outbound())
    (runtime.settings.data_dir / "transcripts" / "acme" / file).unlink()
    response = await app_client.get(f"{URL}/oac-0123456789ab", headers=await acme.auth(app_client))
    assert response.status_code == 200
    assert (response.json()["outcome"], response.json()["turns"]) == ("finished", [])
    assert f"transcript file missing: tenant=acme file={file}" in caplog.text
