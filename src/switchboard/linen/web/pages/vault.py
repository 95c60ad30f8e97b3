"""The vault: masked entries; reveal after a confirmation, audited; the audit trail for admins."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.linen.common import IdPath
from switchboard.linen.properties import service as properties
from switchboard.linen.vault import service
from switchboard.linen.vault.models import VaultEntry, VaultReveal
from switchboard.linen.web.deps import Revealer, Viewer, ViewerDep, render
from switchboard.linen.web.pages._shared import ALL
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/vault")


async def _page(
    request: Request, viewer: Viewer, session: AsyncSession, entry: VaultEntry, secret: str | None
) -> Response:
    audit: list[VaultReveal] = []
    if viewer.can_write:
        audit, _ = await service.reveals(
            session, tenant_id=viewer.tenant.id, entry_id=entry.id, paging=ALL
        )
    prop = None
    if entry.property_id is not None:
        prop = await properties.get(
            session, tenant_id=viewer.tenant.id, property_id=entry.property_id
        )
    return render(request, "vault.html", viewer, entry=entry, prop=prop, audit=audit, secret=secret)


@router.get("/{entry_id}")
async def entry_page(
    request: Request, entry_id: IdPath, viewer: ViewerDep, session: Session
) -> Response:
    """The masked entry and, for those who may, the confirmation before a reveal."""
    entry = await service.get(session, tenant_id=viewer.tenant.id, entry_id=entry_id)
    return await _page(request, viewer, session, entry, None)


@router.post("/{entry_id}/reveal")
async def reveal(
    request: Request, entry_id: IdPath, viewer: Revealer, session: Session, runtime: RuntimeDep
) -> Response:
    entry, _audit, secret = await service.reveal(
        session, tenant_id=viewer.tenant.id, entry_id=entry_id, caller=viewer.caller,
        box=runtime.box, clock=runtime.clock,
    )  # fmt: skip
    return await _page(request, viewer, session, entry, secret)
