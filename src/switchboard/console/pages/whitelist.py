"""Whitelist: add, remove, comments, and replacing the whole list after a confirmation."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, OperatorDep, notice_of, render
from switchboard.platform.whitelist import service
from switchboard.runtime import Session

router = APIRouter(prefix="/whitelist")

LINE_SPLIT = re.compile(r"[\t,;]|\s{2,}")


def parse_lines(text: str) -> list[service.Entry]:
    """One number per line, optionally followed by a tab, comma or semicolon and a comment."""
    entries = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = LINE_SPLIT.split(line.strip(), maxsplit=1)
        comment = parts[1].strip() if len(parts) > 1 else ""
        entries.append(
            service.Entry(service.clean_number(parts[0]), service.clean_comment(comment))
        )
    return entries


def _back(notice: str) -> Response:
    return RedirectResponse(f"/admin/whitelist?notice={notice}", status_code=303)


@router.get("")
async def whitelist_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    entries = await service.list_entries(session, tenant_id=operator.tenant.id)
    return render(request, "whitelist.html", operator, entries=entries, notice=notice_of(request))


@router.post("")
async def add(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    added, _ = await service.add_number(
        session, tenant_id=operator.tenant.id, number=str(form.get("number", "")),
        comment=str(form.get("comment", "")),
    )  # fmt: skip
    return _back("created" if added else "already-listed")


@router.post("/comment")
async def comment(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    await service.set_comment(
        session, tenant_id=operator.tenant.id, number=str(form.get("number", "")),
        comment=str(form.get("comment", "")),
    )  # fmt: skip
    return _back("saved")


@router.post("/remove")
async def remove(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    await service.remove_number(
        session, tenant_id=operator.tenant.id, number=str(form.get("number", ""))
    )
    return _back("deleted")


@router.post("/replace")
async def replace(request: Request, operator: FormOperator, session: Session) -> Response:
    """First a confirmation page with what would change; the confirmed form writes it."""
    form = await request.form()
    text = str(form.get("lines", ""))
    entries = parse_lines(text)
    if form.get("confirmed") == "yes":
        await service.write_numbers(
            session, tenant_id=operator.tenant.id, entries=entries, confirm_empty=True
        )
        return _back("replaced")
    current = await service.list_entries(session, tenant_id=operator.tenant.id)
    kept = {e.number for e in entries}
    removed = [e for e in current if e.number not in kept]
    return render(
        request, "whitelist_confirm.html", operator, entries=entries, removed=removed,
        lines=text,
    )  # fmt: skip
