"""The vault: masked entries; reveal after a confirmation, audited, the secret shown once after
the redirect; the audit trail for admins; entries created, edited (a new secret rotates it, a
blank one keeps it) and deleted by admins."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.kit.errors import BadRequest
from switchboard.kit.schemas import FORM
from switchboard.linen.common import IdPath
from switchboard.linen.groups import service as groups
from switchboard.linen.properties import service as properties
from switchboard.linen.vault import service
from switchboard.linen.vault.models import VaultEntry, VaultReveal
from switchboard.linen.vault.schemas import VaultCreate, VaultUpdate
from switchboard.linen.web.deps import Editor, Revealer, Viewer, ViewerDep, Writer, render
from switchboard.linen.web.forms import ask_first, confirmed, form_date, form_flag, see
from switchboard.linen.web.pages._shared import ALL, all_groups, all_properties
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.flash import once_for, show_once
from switchboard.web.pages import form_int, form_text

router = APIRouter(prefix="/vault")


async def _page(
    request: Request,
    viewer: Viewer,
    session: AsyncSession,
    entry: VaultEntry,
    secret: str | None,
    *,
    problem: str | None = None,
) -> Response:
    audit: list[VaultReveal] = []
    if viewer.can_write:
        audit, _ = await service.reveals(
            session, tenant_id=viewer.tenant.id, entry_id=entry.id, paging=ALL
        )
    prop = group = None
    if entry.property_id is not None:
        prop = await properties.get(
            session, tenant_id=viewer.tenant.id, property_id=entry.property_id
        )
    if entry.group_id is not None:
        group = await groups.get(session, tenant_id=viewer.tenant.id, group_id=entry.group_id)
    return render(
        request, "vault.html", viewer, entry=entry, prop=prop, group=group, audit=audit,
        secret=secret, problem=problem, status=400 if problem else 200,
    )  # fmt: skip


async def _form(
    request: Request, viewer: Viewer, session: AsyncSession, entry: VaultEntry | None, owner: str
) -> Response:
    tenant_id = viewer.tenant.id
    props = await all_properties(session, tenant_id)
    group_rows = await all_groups(session, tenant_id)
    return render(
        request, "vault_form.html", viewer, entry=entry, owner=owner, properties=props,
        groups=group_rows,
    )  # fmt: skip


@router.get("/new")
async def new_page(request: Request, viewer: Editor, session: Session, owner: str = "") -> Response:
    """``owner``: ``property:<id>`` or ``group:<id>``, preselected (from a property's page)."""
    return await _form(request, viewer, session, None, owner)


@router.get("/{entry_id}")
async def entry_page(
    request: Request, entry_id: IdPath, viewer: ViewerDep, session: Session, runtime: RuntimeDep
) -> Response:
    """The masked entry and, for those who may, the confirmation before a reveal; once after
    a reveal, the secret (the reveal's audit row is the post's: showing it writes none)."""
    entry = await service.get(session, tenant_id=viewer.tenant.id, entry_id=entry_id)
    once = await once_for(request, viewer.session)

    async def page(values: dict[str, str]) -> Response:
        stamp = values.get("stamp")
        secret = None
        if stamp is not None and viewer.can_reveal:
            secret = service.revealed_again(entry, stamp=stamp, box=runtime.box)
        return await _page(request, viewer, session, entry, secret)

    return await once.show(page)


def _fields(form: Any) -> dict[str, Any]:
    return {
        "kind": str(form.get("kind", "")),
        "label": str(form.get("label", "")),
        "validFrom": form_date(form.get("validFrom"), "validFrom"),
        "validTo": form_date(form.get("validTo"), "validTo"),
        "notes": str(form.get("notes", "")),
    }


@router.post("")
async def create(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    kind, _, number = str(form.get("owner", "")).partition(":")
    if kind not in ("property", "group"):
        raise BadRequest("owner: choose a property or a group")
    body = VaultCreate.model_validate(
        {**_fields(form), f"{kind}Id": form_int(number, "owner"), "secret": form.get("secret", "")},
        context=FORM,
    )
    entry = await service.create(
        session, tenant_id=viewer.tenant.id, body=body, actor=viewer.user.username,
        box=runtime.box, clock=runtime.clock,
    )  # fmt: skip
    return see(f"/app/vault/{entry.id}")


@router.get("/{entry_id}/edit")
async def edit_page(
    request: Request, entry_id: IdPath, viewer: Editor, session: Session
) -> Response:
    entry = await service.get(session, tenant_id=viewer.tenant.id, entry_id=entry_id)
    return await _form(request, viewer, session, entry, "")


@router.post("/{entry_id}")
async def update(
    request: Request, entry_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    fields = _fields(form)
    secret = form_text(form.get("secret"))
    if secret is not None:
        fields["secret"] = secret
    await service.update(
        session, tenant_id=viewer.tenant.id, entry_id=entry_id,
        body=VaultUpdate.model_validate(fields, context=FORM), actor=viewer.user.username,
        box=runtime.box, clock=runtime.clock,
    )  # fmt: skip
    return see(f"/app/vault/{entry_id}")


@router.post("/{entry_id}/delete")
async def delete(request: Request, entry_id: IdPath, viewer: Writer, session: Session) -> Response:
    """Asks first: the secret is gone for good (the log of its reveals stays)."""
    entry = await service.get(session, tenant_id=viewer.tenant.id, entry_id=entry_id)
    if not confirmed(await request.form()):
        return ask_first(
            request, viewer, question=f"Delete the vault entry {entry.label}?",
            consequence=(
                "The entry and its secret are deleted for good. The log of its reveals is "
                f"kept: GET /api/v1/vault/{entry.id}/reveals in the Data API."
            ),
            button="Delete the entry", back=f"/app/vault/{entry.id}",
        )  # fmt: skip
    await service.delete(session, tenant_id=viewer.tenant.id, entry_id=entry_id)
    back = f"/app/properties/{entry.property_id}" if entry.property_id else "/app/catalogue"
    return see(back)


@router.post("/{entry_id}/reveal")
async def reveal(
    request: Request, entry_id: IdPath, viewer: Revealer, session: Session, runtime: RuntimeDep
) -> Response:
    """Only with the confirmation ticked: without it the page comes back (400), nothing is
    revealed and nothing is logged. The secret itself stays on the server: the flash holds
    only the stamp of the secret revealed, and the entry's page opens it once."""
    if not form_flag(await request.form(), "confirm"):
        entry = await service.get(session, tenant_id=viewer.tenant.id, entry_id=entry_id)
        problem = "Tick 'I need this secret now' to reveal the secret."
        return await _page(request, viewer, session, entry, None, problem=problem)
    entry, _audit, _secret = await service.reveal(
        session, tenant_id=viewer.tenant.id, entry_id=entry_id, caller=viewer.caller,
        box=runtime.box, clock=runtime.clock,
    )  # fmt: skip
    return await show_once(
        request,
        session,
        viewer.session,
        f"/app/vault/{entry.id}",
        stamp=service.secret_stamp(entry),
    )
