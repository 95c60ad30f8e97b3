"""``switchboard linen ...`` against the same tables the API uses."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.cli import main
from switchboard.kit.clock import ManualClock
from switchboard.linen.laundries import service as laundries
from switchboard.linen.laundries.schemas import LaundryCreate
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import repository as tenants
from tests.conftest import TEST_SECRET


@pytest.fixture
def settings_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    env = {
        "SWITCHBOARD_DATABASE_URL": db_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_SECRET_KEY": TEST_SECRET,
        "SWITCHBOARD_PUBLIC_BASE_URL": "http://ops.test",
        "SWITCHBOARD_RUN_WORKERS": "false",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def _ok(cli: CliRunner, *args: str) -> str:
    result = cli.invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def _add_laundry(settings: Settings) -> int:
    runtime = Runtime(settings, clock=ManualClock())
    async with runtime.db.transaction() as session:
        tenant = await tenants.get_by_name(session, "ops")
        assert tenant is not None
        laundry = await laundries.create(
            session, tenant_id=tenant.id, body=LaundryCreate(name="Wash Co"), clock=runtime.clock
        )
    await runtime.db.dispose()
    return laundry.id


async def _laundry_me(settings: Settings, key: str) -> int:
    app = create_app(settings)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://ops.test") as client:
        response = await client.get("/api/laundry/me", headers={"Authorization": f"Bearer {key}"})
    await app.state.runtime.db.dispose()
    return response.status_code


def test_issue_list_revoke_keys_and_stats(settings_env: Settings) -> None:
    cli = CliRunner()
    _ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    laundry_id = asyncio.run(_add_laundry(settings_env))
    key_id, key = _ok(cli, "linen", "key", "issue", "ops", str(laundry_id), "--name", "van").split()
    assert key.startswith("lk_")
    assert asyncio.run(_laundry_me(settings_env, key)) == 200
    assert _ok(cli, "linen", "laundries", "ops").split("\t") == [
        str(laundry_id), "Wash Co", "active", "1 keys\n",
    ]  # fmt: skip
    assert "revoked" in _ok(cli, "linen", "key", "revoke", "ops", str(laundry_id), key_id)
    assert asyncio.run(_laundry_me(settings_env, key)) == 401
    again = cli.invoke(main, ["linen", "key", "revoke", "ops", str(laundry_id), key_id])
    assert again.exit_code == 2
    unknown = cli.invoke(main, ["linen", "key", "issue", "ops", "999"])
    assert unknown.exit_code == 2
    stats = _ok(cli, "linen", "stats", "ops", "--group-by", "laundry", "--from", "2026-01-01")
    assert [orjson.loads(line) for line in stats.splitlines()] == []
    bad = cli.invoke(main, ["linen", "stats", "ops", "--group-by", "week"])
    assert bad.exit_code == 2
