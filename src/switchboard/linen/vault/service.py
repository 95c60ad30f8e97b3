"""Vault rules: secrets sealed at rest, never shown on read, every reveal audited."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import Caller
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import SecretBox, constant_time_equals, sha256_hex
from switchboard.kit.errors import BadRequest, NotFound
from switchboard.kit.paging import PageParams
from switchboard.linen.common import check_range
from switchboard.linen.groups import service as groups
from switchboard.linen.properties import service as properties
from switchboard.linen.vault import repository
from switchboard.linen.vault.models import VaultEntry, VaultReveal
from switchboard.linen.vault.schemas import VaultCreate, VaultUpdate

VALIDITY = ("validFrom", "validTo")


async def get(session: AsyncSession, *, tenant_id: int, entry_id: int) -> VaultEntry:
    row = await repository.get(session, tenant_id, entry_id)
    if row is None:
        raise NotFound(f"no vault entry {entry_id}")
    return row


async def list_entries(
    session: AsyncSession,
    *,
    tenant_id: int,
    property_id: int | None,
    group_id: int | None,
    kind: str | None,
    paging: PageParams,
    sort: str | None,
) -> tuple[list[VaultEntry], int]:
    return await repository.list_page(
        session, tenant_id, property_id=property_id, group_id=group_id, kind=kind, paging=paging,
        sort=sort,
    )  # fmt: skip


async def create(
    session: AsyncSession,
    *,
    tenant_id: int,
    body: VaultCreate,
    actor: str,
    box: SecretBox,
    clock: Clock,
) -> VaultEntry:
    if body.property_id is not None and body.group_id is not None:
        raise BadRequest("groupId: not with propertyId; an entry belongs to one or the other")
    if body.property_id is None and body.group_id is None:
        raise BadRequest("propertyId: required, or groupId (an entry belongs to one or the other)")
    if body.property_id is not None:
        await properties.require_reference(
            session, tenant_id=tenant_id, property_id=body.property_id, field="propertyId"
        )
    if body.group_id is not None:
        await groups.require_ids(session, tenant_id=tenant_id, ids=[body.group_id], field="groupId")
    check_range(body.valid_from, body.valid_to, VALIDITY)
    now = clock.now()
    row = VaultEntry(
        tenant_id=tenant_id,
        property_id=body.property_id,
        group_id=body.group_id,
        kind=body.kind,
        label=body.label,
        secret_sealed=box.seal(body.secret),
        valid_from=body.valid_from,
        valid_to=body.valid_to,
        notes=body.notes,
        created_at=now,
        updated_at=now,
        updated_by=actor,
    )
    session.add(row)
    await session.flush()
    return row


async def update(
    session: AsyncSession,
    *,
    tenant_id: int,
    entry_id: int,
    body: VaultUpdate,
    actor: str,
    box: SecretBox,
    clock: Clock,
) -> VaultEntry:
    row = await get(session, tenant_id=tenant_id, entry_id=entry_id)
    given = body.model_fields_set
    now = clock.now()
    if body.kind is not None:
        row.kind = body.kind
    if body.label is not None:
        row.label = body.label
    if body.notes is not None:
        row.notes = body.notes
    if "valid_from" in given:
        row.valid_from = body.valid_from
    if "valid_to" in given:
        row.valid_to = body.valid_to
    check_range(row.valid_from, row.valid_to, VALIDITY)
    if body.secret is not None:
        row.secret_sealed = box.seal(body.secret)
        row.rotated_at = now
    row.updated_at = now
    row.updated_by = actor
    await session.flush()
    return row


async def delete(session: AsyncSession, *, tenant_id: int, entry_id: int) -> None:
    """The entry goes; its reveal log stays, readable by its id (``reveals``)."""
    row = await get(session, tenant_id=tenant_id, entry_id=entry_id)
    await session.delete(row)
    await session.flush()


async def reveal(
    session: AsyncSession,
    *,
    tenant_id: int,
    entry_id: int,
    caller: Caller,
    box: SecretBox,
    clock: Clock,
) -> tuple[VaultEntry, VaultReveal, str]:
    """The plaintext, with an audit row written in the same transaction."""
    row = await get(session, tenant_id=tenant_id, entry_id=entry_id)
    audit = VaultReveal(
        tenant_id=tenant_id,
        entry_id=row.id,
        entry_label=row.label,
        subject=caller.subject,
        username=caller.username,
        role=caller.role,
        revealed_at=clock.now(),
    )
    session.add(audit)
    await session.flush()
    return row, audit, box.open(row.secret_sealed)


def secret_stamp(row: VaultEntry) -> str:
    """A short digest of the entry's sealed secret as it is now; a new secret (even the same
    text, sealed again) has another."""
    return sha256_hex(row.secret_sealed)[:16]


def revealed_again(row: VaultEntry, *, stamp: str, box: SecretBox) -> str | None:
    """The plaintext of a secret ``reveal`` has just returned and audited (``stamp`` taken
    then), for the web page that shows it once after the redirect; None when the secret
    changed since: a new secret is shown only by a reveal of its own."""
    if not constant_time_equals(stamp, secret_stamp(row)):
        return None
    return box.open(row.secret_sealed)


async def _labels_of_group(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
    return await repository.labels_of(session, tenant_id, group_id=row_id)


async def _entries_of_property(session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
    labels = await repository.labels_of(session, tenant_id, property_id=row_id)
    return [f"vault entry {label!r}" for label in labels]


# A group is refused deletion while it holds entries, named by their labels; so is a property,
# among what else refers to it.
groups.HELD_BY.register("vault", _labels_of_group)
properties.USED_BY.register("vault", _entries_of_property)


async def reveals(
    session: AsyncSession, *, tenant_id: int, entry_id: int, paging: PageParams
) -> tuple[list[VaultReveal], int]:
    """The reveal log of an entry, newest first; a deleted entry's log is kept and read the
    same way. 404 only when the tenant has neither the entry nor a reveal of it."""
    rows, total = await repository.reveals_page(session, tenant_id, entry_id, paging)
    if total == 0:
        await get(session, tenant_id=tenant_id, entry_id=entry_id)
    return rows, total
