"""The bounded transcript list over HTTP: a capped `total`, the newest-first walk and its
fallback, and the window of a one- or two-character `q` (docs/decisions/0402).

The bounds are lowered so that a few transcripts cross them; every page must still hold the
items, in the order, of a plain filter-and-sort over all transcripts.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

import pytest
from httpx import AsyncClient

from switchboard.platform.transcripts import repository
from switchboard.platform.transcripts.service import save_transcript
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.transcripts.helpers import T0, inbound, outbound

URL = "/api.ashx/v1/transcripts"
CAP = 4
WALK = 6
WINDOW = 8
NAMES = ["Dana Smith", "Ben Smith", "Eva Kim", "Hugo Novak"]


@dataclass(frozen=True)
class Saved:
    call_id: str
    order: int  # insertion order, the tie-break of equal start times (ids grow with it)
    started: dt.datetime
    outbound: bool
    text: str  # what q searches, lower-cased


@pytest.fixture
async def saved(
    monkeypatch: pytest.MonkeyPatch, acme: TenantFixture, runtime: Runtime
) -> list[Saved]:
    """The bounds lowered, and sixteen transcripts saved in the tenant ``acme``."""
    monkeypatch.setattr(repository, "TOTAL_CAP", CAP)
    monkeypatch.setattr(repository, "WALK_ROWS", WALK)
    monkeypatch.setattr(repository, "SHORT_QUERY_WINDOW", WINDOW)
    return await _save_many(runtime, acme)


async def _save_many(runtime: Runtime, tenant: TenantFixture) -> list[Saved]:
    """Sixteen transcripts saved out of start order, with ties; `campaign` only in the oldest."""
    rng = random.Random(402)
    slots = list(range(16))
    rng.shuffle(slots)
    saved = []
    async with runtime.db.transaction() as session:
        for order, slot in enumerate(slots):
            started = T0 + dt.timedelta(minutes=slot // 2)  # two transcripts per minute
            is_out = order % 3 != 0
            rule = "Old campaign" if slot < 6 else "Renewals"
            name = rng.choice(NAMES) if is_out else ""
            make = outbound if is_out else inbound
            data = make(f"c-{order:02d}", started=started, display_name=name, rule=rule)
            await save_transcript(
                session, tenant_id=tenant.id, tenant_name=tenant.name, data=data,
                data_dir=runtime.settings.data_dir, clock=runtime.clock,
            )  # fmt: skip
            fields = (data.phone, data.number, data.display_name, data.rule)
            saved.append(Saved(data.call_id, order, started, is_out, "\n".join(fields).lower()))
    return saved


def _expected(saved: list[Saved], params: dict[str, str]) -> list[str]:
    newest = sorted(saved, key=lambda s: (s.started, s.order), reverse=True)
    q = params.get("q", "")
    if 0 < len(q) < 3:
        newest = newest[:WINDOW]
    if params.get("source") == "vnum":
        newest = [s for s in newest if not s.outbound]
    return [s.call_id for s in newest if q in s.text]


async def _all_pages(
    client: AsyncClient, headers: dict[str, str], params: dict[str, str], limit: int
) -> tuple[list[str], list[dict[str, Any]]]:
    ids: list[str] = []
    bodies = []
    offset: int | None = 0
    while offset is not None:
        query = {**params, "limit": str(limit), "offset": str(offset)}
        response = await client.get(URL, params=query, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        bodies.append(body)
        ids += [item["callId"] for item in body["data"]]
        offset = body["next"]
        assert len(bodies) <= 20
    return ids, bodies


SEARCHES = [
    {},  # 16 transcripts: capped, every page from the walk
    {"q": "smith"},  # dense among the newest: capped, found by the walk
    {"q": "campaign"},  # 6 matches, all older than the walk reaches: the sorted fallback
    {"q": "kim"},
    {"q": "nobody"},
    {"q": "o"},  # short: the newest WINDOW transcripts only
    {"q": "sm"},
    {"source": "vnum"},
    {"source": "vnum", "q": "renew"},
]


async def test_every_page_matches_a_plain_sort_and_total_is_capped(
    app_client: AsyncClient, acme: TenantFixture, saved: list[Saved]
) -> None:
    headers = await acme.auth(app_client)
    for params in SEARCHES:
        expected = _expected(saved, params)
        for limit in (1, 2, 3, 5, 50):
            ids, bodies = await _all_pages(app_client, headers, params, limit)
            assert ids == expected, (params, limit)
            for body in bodies:
                if len(expected) > CAP:
                    assert (body["total"], body["totalCapped"]) == (CAP, True), params
                else:
                    assert body["total"] == len(expected), params
                    assert "totalCapped" not in body, params
                assert set(body) - {"totalCapped"} == {"data", "total", "limit", "offset", "next"}


async def test_pages_past_the_end_keep_the_total(
    app_client: AsyncClient, acme: TenantFixture, saved: list[Saved]
) -> None:
    headers = await acme.auth(app_client)
    capped = (await app_client.get(URL, params={"offset": 40}, headers=headers)).json()
    assert capped == {"data": [], "total": CAP, "totalCapped": True, "limit": 50, "offset": 40,
                      "next": None}  # fmt: skip
    exact = (await app_client.get(URL, params={"q": "kim", "offset": 40}, headers=headers)).json()
    kim = len(_expected(saved, {"q": "kim"}))
    assert exact == {"data": [], "total": kim, "limit": 50, "offset": 40, "next": None}


async def test_a_short_q_searches_only_the_newest_transcripts(
    app_client: AsyncClient, acme: TenantFixture, saved: list[Saved]
) -> None:
    headers = await acme.auth(app_client)
    oldest = min(saved, key=lambda s: (s.started, s.order))
    assert oldest.call_id in _expected(saved, {"q": "campaign"})
    short = (await app_client.get(URL, params={"q": "ca", "limit": 50}, headers=headers)).json()
    assert short["data"] == []  # "ca" is in "campaign", but only outside the window
    full = (await app_client.get(URL, params={"q": "cam", "limit": 50}, headers=headers)).json()
    assert oldest.call_id in [item["callId"] for item in full["data"]]
