"""`q` through the trigram indexes returns exactly what a plain substring test would."""

from __future__ import annotations

import datetime as dt
import random

from httpx import AsyncClient

from switchboard.platform.transcripts.service import TranscriptInput, save_transcript
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.transcripts.helpers import T0, inbound, outbound

ALPHABET = "abcXYZ019 +%_\\\"'*-äÖß€"


def _text(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(low, high)))


def _fields(data: TranscriptInput) -> list[str]:
    return [data.phone, data.number, data.display_name, data.rule]


async def test_q_matches_a_reference_substring_filter(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime
) -> None:
    rng = random.Random(20260101)
    saved: list[TranscriptInput] = []
    async with runtime.db.transaction() as session:
        for i in range(40):
            make = outbound if i % 2 else inbound
            data = make(
                f"c-{i:03d}",
                started=T0 + dt.timedelta(minutes=i),
                phone=_text(rng, 0, 8),
                display_name=_text(rng, 0, 10) if i % 2 else "",
                number=_text(rng, 1, 6) if not i % 2 else "",
                rule=_text(rng, 0, 8),
            )
            saved.append(data)
            await save_transcript(
                session, tenant_id=acme.id, tenant_name=acme.name, data=data,
                data_dir=runtime.settings.data_dir, clock=runtime.clock,
            )  # fmt: skip
    queries = {"%", "_", "\\", '"', "%_", "ß", "Ä"}
    for data in rng.sample(saved, 20):
        field = rng.choice([f for f in _fields(data) if f] or ["x"])
        start = rng.randrange(len(field))
        queries.add(field[start : start + rng.randint(1, 5)])
    queries |= {_text(rng, 1, 4) for _ in range(15)}
    headers = await acme.auth(app_client)
    checked = 0
    for q in sorted(queries):
        needle = q.strip().lower()
        if not needle:
            continue
        expected = [
            d.call_id
            for d in reversed(saved)
            if any(needle in field.lower() for field in _fields(d))
        ]
        response = await app_client.get(
            "/api.ashx/v1/transcripts", params={"q": q, "limit": 500}, headers=headers
        )
        assert response.status_code == 200
        assert [i["callId"] for i in response.json()["data"]] == expected, repr(q)
        checked += 1
    assert checked >= 30
