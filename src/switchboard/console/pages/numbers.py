"""Virtual numbers: create, edit, delete. The AI key and the prompt are write-only."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import (
    FormOperator,
    OperatorDep,
    form_int,
    form_text,
    notice_of,
    render,
)
from switchboard.platform.numbers import service
from switchboard.platform.numbers.models import (
    DEFAULT_MAX_DURATION_SEC,
    MODE_LIVE_VOICE_AI,
    MODES,
    VISIBILITIES,
)
from switchboard.platform.numbers.schemas import NumberItem
from switchboard.runtime import RuntimeDep, Session
from switchboard.tenants.config import VOICES, TenantConfig

router = APIRouter(prefix="/numbers")

PAGE_SIZE = 200


def _choices() -> dict[str, Any]:
    return {
        "voices": VOICES, "visibilities": VISIBILITIES, "modes": MODES,
        "min_duration": service.MIN_DURATION_SEC, "max_duration": service.MAX_DURATION_SEC,
    }  # fmt: skip


def _changes(form: FormData) -> service.NumberChanges:
    return service.NumberChanges(
        name=form_text(form.get("name")),
        mode=form_text(form.get("mode")),
        voice=form_text(form.get("voice")),
        language=form_text(form.get("language")),
        save_transcripts=form.get("saveTranscripts") == "on",
        max_duration_sec=form_int(form.get("maxDurationSec"), "maxDurationSec"),
        visibility=form_text(form.get("visibility")),
        api_key=form_text(form.get("apiKey")),
        system_prompt=form_text(form.get("systemPrompt")),
    )


@router.get("")
async def numbers_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    rows, total = await service.list_numbers(
        session, tenant_id=operator.tenant.id, limit=PAGE_SIZE, offset=0
    )
    defaults = TenantConfig.from_settings(operator.tenant.settings)
    return render(
        request, "numbers.html", operator, numbers=[NumberItem.model_validate(r) for r in rows],
        total=total, defaults=defaults, default_max=DEFAULT_MAX_DURATION_SEC, **_choices(),
    )  # fmt: skip


@router.post("")
async def create(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    changes = _changes(form)
    # blank is the default; 0 is refused like any value out of bounds, as on the edit form
    max_seconds = changes.max_duration_sec
    if max_seconds is None:
        max_seconds = DEFAULT_MAX_DURATION_SEC
    row = await service.create_number(
        session,
        tenant_id=operator.tenant.id,
        name=changes.name or "",
        number=str(form.get("number", "")).strip(),
        voice=changes.voice or "",
        language=changes.language or "",
        api_key=changes.api_key or "",
        system_prompt=changes.system_prompt or "",
        save_transcripts=bool(changes.save_transcripts),
        max_duration_sec=max_seconds,
        visibility=changes.visibility or "public",
        mode=changes.mode or MODE_LIVE_VOICE_AI,
        box=runtime.box,
        clock=runtime.clock,
    )
    return RedirectResponse(
        f"/admin/numbers/{quote(row.number, safe='')}?notice=created", status_code=303
    )


@router.get("/{number}")
async def edit_page(
    request: Request, number: str, operator: OperatorDep, session: Session
) -> Response:
    row = await service.require_number(session, tenant_id=operator.tenant.id, number=number)
    return render(
        request, "number.html", operator, item=NumberItem.model_validate(row),
        updated=row.updated_at, notice=notice_of(request), **_choices(),
    )  # fmt: skip


@router.post("/{number}")
async def update(
    request: Request, number: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    changes = _changes(await request.form())
    row = await service.update_number(
        session, tenant_id=operator.tenant.id, number=number, changes=changes, box=runtime.box,
        clock=runtime.clock,
    )  # fmt: skip
    return RedirectResponse(
        f"/admin/numbers/{quote(row.number, safe='')}?notice=saved", status_code=303
    )


@router.post("/{number}/delete")
async def delete(number: str, operator: FormOperator, session: Session) -> Response:
    await service.delete_number(session, tenant_id=operator.tenant.id, number=number)
    return RedirectResponse("/admin/numbers", status_code=303)
