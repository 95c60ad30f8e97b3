"""``switchboard sim ...`` reports each step of the simulated call on stderr as it happens;
stdout keeps only the call id, for scripts."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from httpx import AsyncClient

from switchboard.settings import Settings
from tests.calls.conftest import Org


@pytest.mark.slow
async def test_sip_call_prints_its_progress(
    app_client: AsyncClient, org: Org, settings: Settings
) -> None:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
        "SWITCHBOARD_DATA_DIR": str(settings.data_dir),
        "SWITCHBOARD_SECRET_KEY": settings.secret_key,
        "SWITCHBOARD_PUBLIC_BASE_URL": settings.public_base_url,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "switchboard", "sim", "sip", "--tenant", "acme",
        "--did", "+493012345", "--from", "+14155550123", "--speed", "5000",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    call_id = out.decode().strip()
    assert "\n" not in call_id
    steps = [line.split() for line in err.decode().splitlines() if call_id in line]
    kinds = [step[1] for step in steps]
    assert kinds[0] == "inbound-answered"
    assert kinds[-1].endswith("ended")
    assert all(step[-1] == "200" for step in steps), steps
