"""``switchboard number create|update|delete|list``: operators manage virtual numbers.

The AI engine key and the system prompt are never taken from the command line, where they
would land in shell history and in the process list: ``--api-key-file`` and
``--system-prompt-file`` name files, and ``-`` reads standard input (for one of the two).
"""

from __future__ import annotations

import sys
from typing import IO

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction
from switchboard.kit.cli import json_flag, print_json
from switchboard.platform.numbers import service
from switchboard.platform.numbers.models import (
    DEFAULT_MAX_DURATION_SEC,
    MODE_LIVE_VOICE_AI,
    MODES,
    VISIBILITIES,
    VirtualNumber,
)
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.config import TenantConfig


def _line(row: VirtualNumber) -> str:
    save = "save-transcripts" if row.save_transcripts else "no-transcripts"
    fields = (
        row.number, row.name, row.mode, row.voice, row.language, save,
        str(row.max_duration_sec), row.visibility,
    )  # fmt: skip
    return "\t".join(fields)


def _read_secrets(
    api_key_file: IO[str] | None, system_prompt_file: IO[str] | None
) -> tuple[str | None, str | None]:
    names = [getattr(f, "name", "") for f in (api_key_file, system_prompt_file) if f is not None]
    if names.count("<stdin>") > 1:
        click.echo("error: only one of the secret options can read standard input", err=True)
        sys.exit(2)
    api_key = api_key_file.read().strip() if api_key_file is not None else None
    prompt = system_prompt_file.read().rstrip("\r\n") if system_prompt_file is not None else None
    return api_key, prompt


_api_key_help = "File holding the AI engine API key; '-' reads standard input"
_prompt_help = "File holding the system prompt; '-' reads standard input"


@click.group("number")
def number_cli() -> None:
    """Virtual numbers answered by a live AI voice agent (read-only over REST)."""


@number_cli.command("create")
@click.argument("number")
@click.option("--tenant", required=True)
@click.option("--name", required=True, help="Operator label, shown as `name`")
@click.option("--api-key-file", type=click.File("r"), required=True, help=_api_key_help)
@click.option("--system-prompt-file", type=click.File("r"), required=True, help=_prompt_help)
@click.option("--voice", default=None, help="Default: the tenant's DefaultVoice")
@click.option("--language", default=None, help="Locale tag; default: the tenant's DefaultLanguage")
@click.option("--mode", type=click.Choice(MODES), default=MODE_LIVE_VOICE_AI, show_default=True)
@click.option("--save-transcripts/--no-save-transcripts", default=True, show_default=True)
@click.option("--max-duration-sec", type=int, default=DEFAULT_MAX_DURATION_SEC, show_default=True)
@click.option("--visibility", type=click.Choice(VISIBILITIES), default="public", show_default=True)
def create(
    number: str,
    tenant: str,
    name: str,
    api_key_file: IO[str],
    system_prompt_file: IO[str],
    voice: str | None,
    language: str | None,
    mode: str,
    save_transcripts: bool,
    max_duration_sec: int,
    visibility: str,
) -> None:
    """Create virtual number NUMBER in a tenant."""
    api_key, prompt = _read_secrets(api_key_file, system_prompt_file)

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        config = TenantConfig.from_settings(row.settings)
        created = await service.create_number(
            session,
            tenant_id=row.id,
            name=name,
            number=number,
            voice=voice or config.default_voice,
            language=language or config.default_language,
            api_key=api_key or "",
            system_prompt=prompt or "",
            save_transcripts=save_transcripts,
            max_duration_sec=max_duration_sec,
            visibility=visibility,
            mode=mode,
            box=runtime.box,
            clock=runtime.clock,
        )
        click.echo(_line(created))

    run_in_transaction(work)


@number_cli.command("update")
@click.argument("number")
@click.option("--tenant", required=True)
@click.option("--name", default=None)
@click.option("--api-key-file", type=click.File("r"), default=None, help=_api_key_help)
@click.option("--system-prompt-file", type=click.File("r"), default=None, help=_prompt_help)
@click.option("--voice", default=None)
@click.option("--language", default=None)
@click.option("--mode", type=click.Choice(MODES), default=None)
@click.option("--save-transcripts/--no-save-transcripts", default=None)
@click.option("--max-duration-sec", type=int, default=None)
@click.option("--visibility", type=click.Choice(VISIBILITIES), default=None)
def update(
    number: str,
    tenant: str,
    name: str | None,
    api_key_file: IO[str] | None,
    system_prompt_file: IO[str] | None,
    voice: str | None,
    language: str | None,
    mode: str | None,
    save_transcripts: bool | None,
    max_duration_sec: int | None,
    visibility: str | None,
) -> None:
    """Change the given fields of virtual number NUMBER; the others keep their values."""
    api_key, prompt = _read_secrets(api_key_file, system_prompt_file)
    changes = service.NumberChanges(
        name=name, mode=mode, voice=voice, language=language, save_transcripts=save_transcripts,
        max_duration_sec=max_duration_sec, visibility=visibility, api_key=api_key,
        system_prompt=prompt,
    )  # fmt: skip

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        updated = await service.update_number(
            session,
            tenant_id=row.id,
            number=number,
            changes=changes,
            box=runtime.box,
            clock=runtime.clock,
        )
        click.echo(_line(updated))

    run_in_transaction(work)


@number_cli.command("delete")
@click.argument("number")
@click.option("--tenant", required=True)
def delete(number: str, tenant: str) -> None:
    """Delete virtual number NUMBER."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        deleted = await service.delete_number(session, tenant_id=row.id, number=number)
        click.echo(f"deleted\t{deleted.number}")

    run_in_transaction(work)


@number_cli.command("list")
@click.option("--tenant", required=True)
@json_flag
def list_(tenant: str, as_json: bool) -> None:
    """One line per number: number, name, mode, voice, language, transcripts, max s, visibility."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        offset = 0
        while True:
            rows, total = await service.list_numbers(
                session, tenant_id=row.id, limit=500, offset=offset
            )
            for number in rows:
                if as_json:
                    print_json({
                        "number": number.number, "name": number.name, "mode": number.mode,
                        "voice": number.voice, "language": number.language,
                        "saveTranscripts": number.save_transcripts,
                        "maxDurationSec": number.max_duration_sec,
                        "visibility": number.visibility,
                    })  # fmt: skip
                else:
                    click.echo(_line(number))
            offset += len(rows)
            if not rows or offset >= total:
                break

    run_in_transaction(work)
