"""The vault: masked for every role; reveal (audited) for admin and power-user."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import Ok, Page
from switchboard.linen.common import (
    ID_MAX,
    READ_ERRORS,
    WRITE_ERRORS,
    IdPath,
    error_responses,
    page,
    sort_param,
)
from switchboard.linen.deps import PortalAdmin, PortalCaller, VaultRevealer
from switchboard.linen.vault import service
from switchboard.linen.vault.models import VaultEntry
from switchboard.linen.vault.repository import SORTS
from switchboard.linen.vault.schemas import (
    MASK,
    RevealLogItem,
    RevealOut,
    VaultCreate,
    VaultKind,
    VaultOut,
    VaultUpdate,
)
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/v1/vault", tags=["vault"])
REVEAL_ERRORS = error_responses(400, 401, 403, 404)


def entry_out(row: VaultEntry) -> VaultOut:
    return VaultOut(
        id=row.id,
        property_id=row.property_id,
        group_id=row.group_id,
        kind=row.kind,
        label=row.label,
        secret=MASK,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        notes=row.notes,
        rotated_at=iso_utc(row.rotated_at),
        created_at=iso_utc(row.created_at) or "",
        updated_at=iso_utc(row.updated_at) or "",
        updated_by=row.updated_by,
    )


@router.get(
    "",
    response_model=Page[VaultOut],
    responses=READ_ERRORS,
    summary="List vault entries (secrets masked)",
    description=(
        "Filters: `propertyId` (also lists the entries of the property's groups), `groupId`, "
        "`kind`. Sort keys: `id`, `label` (default), `kind`, `updatedAt`."
    ),
)
async def list_entries(
    caller: PortalCaller,
    session: Session,
    paging: Paging,
    property_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="propertyId")] = None,
    group_id: Annotated[int | None, Query(ge=1, le=ID_MAX, alias="groupId")] = None,
    kind: Annotated[VaultKind | None, Query()] = None,
    sort: Annotated[str | None, sort_param(SORTS)] = None,
) -> Page[VaultOut]:
    rows, total = await service.list_entries(
        session, tenant_id=caller.tenant_id, property_id=property_id, group_id=group_id,
        kind=kind, paging=paging, sort=sort,
    )  # fmt: skip
    return page([entry_out(r) for r in rows], total, paging)


@router.post("", status_code=201, response_model=VaultOut, responses=WRITE_ERRORS, summary="Create")
async def create_entry(
    body: VaultCreate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> VaultOut:
    row = await service.create(
        session, tenant_id=caller.tenant_id, body=body, actor=caller.username, box=runtime.box,
        clock=runtime.clock,
    )  # fmt: skip
    return entry_out(row)


@router.get("/{entry_id}", response_model=VaultOut, responses=READ_ERRORS, summary="Get (masked)")
async def get_entry(entry_id: IdPath, caller: PortalCaller, session: Session) -> VaultOut:
    return entry_out(await service.get(session, tenant_id=caller.tenant_id, entry_id=entry_id))


@router.patch("/{entry_id}", response_model=VaultOut, responses=WRITE_ERRORS, summary="Update")
async def update_entry(
    entry_id: IdPath, body: VaultUpdate, caller: PortalAdmin, session: Session, runtime: RuntimeDep
) -> VaultOut:
    row = await service.update(
        session, tenant_id=caller.tenant_id, entry_id=entry_id, body=body, actor=caller.username,
        box=runtime.box, clock=runtime.clock,
    )  # fmt: skip
    return entry_out(row)


@router.delete("/{entry_id}", response_model=Ok, responses=WRITE_ERRORS, summary="Delete")
async def delete_entry(entry_id: IdPath, caller: PortalAdmin, session: Session) -> Ok:
    await service.delete(session, tenant_id=caller.tenant_id, entry_id=entry_id)
    return Ok()


@router.post(
    "/{entry_id}/reveal",
    response_model=RevealOut,
    responses=REVEAL_ERRORS,
    summary="Reveal the secret (admin, power-user); writes an audit row with who and when",
)
async def reveal_entry(
    entry_id: IdPath, caller: VaultRevealer, session: Session, runtime: RuntimeDep
) -> RevealOut:
    row, audit, secret = await service.reveal(
        session, tenant_id=caller.tenant_id, entry_id=entry_id, caller=caller, box=runtime.box,
        clock=runtime.clock,
    )  # fmt: skip
    return RevealOut(
        id=row.id,
        secret=secret,
        revealed_at=iso_utc(audit.revealed_at) or "",
        revealed_by=audit.username,
    )


@router.get(
    "/{entry_id}/reveals",
    response_model=Page[RevealLogItem],
    responses=REVEAL_ERRORS,
    summary="The reveal audit log of an entry, newest first (admin, power-user)",
    description=(
        "The log outlives the entry: a deleted entry's reveals stay readable here by its id "
        "(entry ids are never given again); 404 when there is neither the entry nor a reveal."
    ),
)
async def list_reveals(
    entry_id: IdPath, caller: VaultRevealer, session: Session, paging: Paging
) -> Page[RevealLogItem]:
    rows, total = await service.reveals(
        session, tenant_id=caller.tenant_id, entry_id=entry_id, paging=paging
    )
    items = [
        RevealLogItem(
            entry_id=r.entry_id,
            entry_label=r.entry_label,
            username=r.username,
            role=r.role,
            revealed_at=iso_utc(r.revealed_at) or "",
        )
        for r in rows
    ]
    return page(items, total, paging)
