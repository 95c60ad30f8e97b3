"""Plain factory functions for transcript tests."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from switchboard.platform.transcripts.service import TranscriptInput, Turn, save_transcript
from switchboard.runtime import Runtime
from tests.factories import TenantFixture

T0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


def outbound(call_id: str = "oac-0123456789ab", **changes: Any) -> TranscriptInput:
    started = changes.pop("started", T0)
    base = TranscriptInput(
        call_id=call_id,
        caller_source="outbound-ai",
        requested_by="admin",
        phone="+4930123456",
        display_name="Dana Example",
        email="ops@acme.test",
        number="",
        rule="Renewals",
        voice="Aoede",
        language="en-US",
        model="gemini-live-2.5-flash",
        trunk_id="trunk-a",
        started=started,
        answered=started + dt.timedelta(seconds=4),
        ended=started + dt.timedelta(seconds=64),
        outcome="finished",
        error_detail="",
        tokens_prompt=120,
        tokens_total=900,
        input_turns=2,
        output_turns=2,
        turns=[
            Turn("AI", "Hello, this is Acme calling about your renewal.", started),
            Turn("Caller", "Yes, go ahead.", started + dt.timedelta(seconds=10)),
            Turn("AI", "Your plan renews next week.", started + dt.timedelta(seconds=20)),
            Turn("Caller", "Thanks, bye.", started + dt.timedelta(seconds=30)),
        ],
    )
    return dataclasses.replace(base, **changes)


def inbound(call_id: str = "vnum-1a2b3c", source: str = "vnum", **changes: Any) -> TranscriptInput:
    started = changes.pop("started", T0)
    base = TranscriptInput(
        call_id=call_id,
        caller_source=source,
        requested_by="",
        phone="+4940999888",
        display_name="",
        email="",
        number="200",
        rule="Front desk",
        voice="Kore",
        language="de-DE",
        model="gemini-live-2.5-flash",
        trunk_id="",
        started=started,
        answered=None,
        ended=started + dt.timedelta(seconds=30),
        outcome="far-hangup",
        error_detail="",
        tokens_prompt=0,
        tokens_total=300,
        input_turns=1,
        output_turns=1,
        turns=[
            Turn("AI", "Front desk, how can I help?", started),
            Turn("Caller", "Wrong number.", started + dt.timedelta(seconds=5)),
        ],
    )
    return dataclasses.replace(base, **changes)


async def save(runtime: Runtime, tenant: TenantFixture, data: TranscriptInput) -> str:
    async with runtime.db.transaction() as session:
        return await save_transcript(
            session,
            tenant_id=tenant.id,
            tenant_name=tenant.name,
            data=data,
            data_dir=runtime.settings.data_dir,
            clock=runtime.clock,
        )
