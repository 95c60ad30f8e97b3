"""On PostgreSQL the dispatcher's claim takes the calls that fell due first, no more than its
limit, reading them by index whatever the statistics knew of them (decision 0224)."""

from __future__ import annotations

import datetime as dt

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from switchboard.platform.calls import repository
from switchboard.runtime import Runtime
from tests.calls.conftest import Org
from tests.pgstats import rows_read

HISTORY = 4000  # ended calls, none waiting, when the statistics are taken
DUE = 3000  # then as many scheduled calls fall due, unknown to the statistics

_CALLS = """
INSERT INTO calls (call_id, tenant_id, requested_by, phone, display_name, email, voice, language,
    model, system_prompt_sealed, api_key_sealed, max_seconds, retry_delay_minutes, attempt,
    retries_left, trunk_ids, trunk_id, status, created_at, due_at, ended_reason, outcome,
    duration_sec, transcript_path, error_detail, sip_status, cancelled_by, attempt_open,
    dial_failures, bridge_reply)
SELECT 'oac-' || g, $1, 'test', '+14155550100', 'n', '', 'v', 'en', 'm', '', '', 60, 5, 1, 0,
    '[]', '', $2, now(), now() - interval '1 hour' + g * interval '1 ms', '', '', 0, '', '', 0,
    '', false, 0, ''
FROM generate_series($3::int, $4::int) AS g
"""


async def test_calls_due_unknown_to_the_statistics_are_claimed_by_index(
    runtime: Runtime, org: Org
) -> None:
    if runtime.db.dialect != "postgresql":
        pytest.skip("SQLite's claim has no statistics to be misled by")
    url = make_url(runtime.settings.database_url).set(drivername="postgresql")
    conn = await asyncpg.connect(url.render_as_string(hide_password=False))
    try:
        await conn.execute(_CALLS, org.id, "ended", 1, HISTORY)
        await conn.execute("ANALYZE calls")
        await conn.execute(_CALLS, org.id, "scheduled", HISTORY + 1, HISTORY + DUE)
    finally:
        await conn.close()
    now = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    async with runtime.db.transaction() as session:  # a new connection: its first claim
        claimed = await repository.system_claim_due(
            session, now=now, owner="test", lease_until=now, limit=100
        )
        read = await session.scalar(rows_read("calls"))
    # The hundred that fell due first (ids follow due times here), not every due call (planned
    # from these statistics, the limited subquery inside ``IN`` ran again for each due call) ...
    assert len(claimed) == 100
    assert claimed == sorted(claimed)
    assert claimed[0] == HISTORY + 1
    # ... found by reading them, then each by its key: 200 rows. Before, this claim took all
    # 3,000 due calls and read 4,504,506 rows.
    assert read is not None
    assert read < DUE // 4, read
