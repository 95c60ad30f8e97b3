"""Virtual numbers: managed with `switchboard number ...`, read over GET /api.ashx/v1/numbers."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from httpx import AsyncClient
from sqlalchemy import select

from switchboard.cli import main
from switchboard.kit.errors import ApiError
from switchboard.platform.numbers.models import VirtualNumber
from switchboard.platform.numbers.service import create_number, find_number, reveal_secrets
from switchboard.runtime import Runtime
from tests.conftest import TEST_SECRET
from tests.factories import TenantFixture

URL = "/api.ashx/v1/numbers"
API_KEY = "AIzaSy-test-engine-key-0123456789"
PROMPT = "You are the front desk of Acme.\nNever reveal the door code 4711."
ITEM_KEYS = {
    "name", "number", "mode", "voice", "language", "saveTranscripts", "maxDurationSec",
    "visibility",
}  # fmt: skip


async def cli(runtime: Runtime, *args: str, stdin: str = "") -> Result:
    """Run the CLI against the test database, in a thread (it runs its own event loop)."""
    env = {
        "SWITCHBOARD_DATABASE_URL": runtime.settings.resolved_database_url,
        "SWITCHBOARD_SECRET_KEY": TEST_SECRET,
        "SWITCHBOARD_DATA_DIR": str(runtime.settings.data_dir),
        "SWITCHBOARD_PUBLIC_BASE_URL": runtime.settings.public_base_url,
    }
    runner = CliRunner()
    return await asyncio.to_thread(
        runner.invoke, main, list(args), input=stdin, env=env, catch_exceptions=False
    )


async def create(
    runtime: Runtime, tenant: TenantFixture, number: str, tmp_path: Path, *extra: str
) -> Result:
    prompt_file = tmp_path / f"prompt-{number}.txt"
    prompt_file.write_text(PROMPT + "\n")
    return await cli(
        runtime,
        "number", "create", number, "--tenant", tenant.name, "--name", f"Desk {number}",
        "--api-key-file", "-", "--system-prompt-file", str(prompt_file), *extra,
        stdin=API_KEY + "\n",
    )  # fmt: skip


async def make_number(runtime: Runtime, tenant: TenantFixture, number: str, **fields: Any) -> None:
    """Create a number through the service (the CLI's own tests cover the command)."""
    async with runtime.db.transaction() as session:
        await create_number(
            session, tenant_id=tenant.id, name=fields.pop("name", f"Desk {number}"),
            number=number, voice=fields.pop("voice", "Aoede"),
            language=fields.pop("language", "en-US"), api_key=API_KEY, system_prompt=PROMPT,
            box=runtime.box, clock=runtime.clock, **fields,
        )  # fmt: skip


async def test_create_with_cli_then_list_over_http(
    app_client: AsyncClient,
    acme: TenantFixture,
    runtime: Runtime,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    made = await create(runtime, acme, "200", tmp_path)
    assert made.exit_code == 0, made.output
    assert (
        made.output
        == "200\tDesk 200\tlive-voice-ai\tAoede\ten-US\tsave-transcripts\t3500\tpublic\n"
    )
    other = await create(
        runtime, acme, "+4930555", tmp_path,
        "--voice", "Kore", "--language", "de-DE", "--no-save-transcripts",
        "--max-duration-sec", "600", "--visibility", "signed-in",
    )  # fmt: skip
    assert other.exit_code == 0, other.output

    response = await app_client.get(URL, headers=await acme.auth(app_client))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "total", "limit", "offset", "next", "tenant"}
    assert (body["tenant"], body["total"], body["next"]) == ("acme", 2, None)
    assert [set(item) for item in body["data"]] == [ITEM_KEYS, ITEM_KEYS]
    assert body["data"] == [
        {
            "name": "Desk +4930555",
            "number": "+4930555",
            "mode": "live-voice-ai",
            "voice": "Kore",
            "language": "de-DE",
            "saveTranscripts": False,
            "maxDurationSec": 600,
            "visibility": "signed-in",
        },
        {
            "name": "Desk 200",
            "number": "200",
            "mode": "live-voice-ai",
            "voice": "Aoede",
            "language": "en-US",
            "saveTranscripts": True,
            "maxDurationSec": 3500,
            "visibility": "public",
        },
    ]
    # The secrets reach the media bridge through the service, and nowhere else.
    async with runtime.db.transaction() as session:
        row = await find_number(session, tenant_id=acme.id, number="200")
        assert row is not None
        assert reveal_secrets(row, runtime.box) == (API_KEY, PROMPT)
        columns = select(VirtualNumber.api_key_sealed, VirtualNumber.system_prompt_sealed)
        sealed = (await session.execute(columns)).all()
    # words of the prompt, head and tail (digits alone would match a logged memory address)
    for secret in (API_KEY, "front desk of Acme", "door code 4711"):
        assert secret not in response.text
        assert secret not in made.output + other.output
        assert secret not in caplog.text
        assert all(secret not in value for pair in sealed for value in pair)
    assert secret not in repr(row)


async def test_update_and_delete(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, tmp_path: Path
) -> None:
    assert (await create(runtime, acme, "200", tmp_path)).exit_code == 0
    updated = await cli(
        runtime, "number", "update", "200", "--tenant", "acme", "--name", "Reception",
        "--visibility", "signed-in", "--system-prompt-file", "-", stdin="New prompt.\n",
    )  # fmt: skip
    assert updated.exit_code == 0, updated.output
    assert updated.output.startswith("200\tReception\tlive-voice-ai\tAoede\ten-US\t")
    async with runtime.db.transaction() as session:
        row = await find_number(session, tenant_id=acme.id, number="200")
        assert row is not None
        assert reveal_secrets(row, runtime.box) == (API_KEY, "New prompt.")
    headers = await acme.auth(app_client)
    item = (await app_client.get(URL, headers=headers)).json()["data"][0]
    assert (item["name"], item["visibility"], item["voice"]) == ("Reception", "signed-in", "Aoede")

    listed = await cli(runtime, "number", "list", "--tenant", "acme")
    assert listed.output.splitlines()[0].split("\t")[:2] == ["200", "Reception"]
    deleted = await cli(runtime, "number", "delete", "200", "--tenant", "acme")
    assert (deleted.exit_code, deleted.output) == (0, "deleted\t200\n")
    assert (await app_client.get(URL, headers=headers)).json()["total"] == 0
    again = await cli(runtime, "number", "delete", "200", "--tenant", "acme")
    assert again.exit_code == 2
    assert "no virtual number" in again.stderr


async def test_bad_input_is_refused_and_changes_nothing(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, tmp_path: Path
) -> None:
    assert (await create(runtime, acme, "200", tmp_path)).exit_code == 0
    create_202 = ("number", "create", "202", "--tenant", "acme", "--name", "x")
    both_stdin = ("--api-key-file", "-", "--system-prompt-file", "-")
    refusals = [
        (await create(runtime, acme, "200", tmp_path), "already exists"),
        (await create(runtime, acme, "201", tmp_path, "--voice", "Robot"), "voice"),
        (await cli(runtime, *create_202, *both_stdin, stdin="k\np\n"), "standard input"),
        (await cli(runtime, *create_202, "--api-key-file", "-", stdin="k\n"),
         "--system-prompt-file"),
        (await cli(runtime, "number", "update", "200", "--tenant", "acme", "--api-key-file", "-",
                   stdin="\n"), "apiKey"),
        (await cli(runtime, "number", "list", "--tenant", "nobody"), "no tenant"),
    ]  # fmt: skip
    for result, message in refusals:
        assert result.exit_code == 2, result.output
        assert message in result.stderr
    rules: list[tuple[dict[str, Any], str]] = [
        ({"language": "english!"}, "language"),
        ({"max_duration_sec": 5}, "maxDurationSec"),
        ({"max_duration_sec": 3601}, "maxDurationSec"),
        ({"visibility": "hidden"}, "visibility"),
        ({"mode": "voicemail"}, "mode"),
        ({"name": " "}, "name"),
    ]
    for fields, field in rules:
        with pytest.raises(ApiError, match=field) as refused:
            await make_number(runtime, acme, "201", **fields)
        assert refused.value.status == 400
    for bad_number in ("bad number", "9" * 33, "++1", ""):
        with pytest.raises(ApiError, match="number"):
            await make_number(runtime, acme, bad_number)
    listed = (await app_client.get(URL, headers=await acme.auth(app_client))).json()
    assert [i["number"] for i in listed["data"]] == ["200"]
    async with runtime.db.transaction() as session:
        row = await find_number(session, tenant_id=acme.id, number="200")
        assert row is not None
        assert reveal_secrets(row, runtime.box)[0] == API_KEY


async def test_tenants_are_isolated_and_paged(
    app_client: AsyncClient,
    acme: TenantFixture,
    globex: TenantFixture,
    runtime: Runtime,
    tmp_path: Path,
) -> None:
    for number in ("102", "100", "101"):
        await make_number(runtime, acme, number)
    assert (await create(runtime, globex, "100", tmp_path)).exit_code == 0  # same number, allowed
    await make_number(runtime, globex, "900")
    acme_h, globex_h = await acme.auth(app_client), await globex.auth(app_client)
    page = (await app_client.get(URL, params={"limit": 2}, headers=acme_h)).json()
    assert [i["number"] for i in page["data"]] == ["100", "101"]
    assert (page["total"], page["next"]) == (3, "/api.ashx/v1/numbers?limit=2&offset=2")
    rest = (await app_client.get(page["next"], headers=acme_h)).json()
    assert ([i["number"] for i in rest["data"]], rest["next"]) == (["102"], None)
    theirs = (await app_client.get(URL, headers=globex_h)).json()
    assert (theirs["tenant"], [i["number"] for i in theirs["data"]]) == ("globex", ["100", "900"])
    async with runtime.db.transaction() as session:
        assert await find_number(session, tenant_id=acme.id, number="900") is None
    denied = await cli(runtime, "number", "delete", "900", "--tenant", "acme")
    assert denied.exit_code == 2
    assert (await app_client.get(URL, params={"limit": 501}, headers=acme_h)).status_code == 400
    assert (await app_client.get(URL)).status_code == 401
    assert (
        await app_client.get(URL, headers=await acme.auth(app_client, "user"))
    ).status_code == 403
