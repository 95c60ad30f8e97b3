"""The relay's operator ACL (docs/relay.md): list, block an address or a network, unblock.

The ACL is the operator's, not a tenant's: only admins of the primary tenant see this page.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, Operator, OperatorDep, notice_of, render
from switchboard.kit.errors import BadRequest, Forbidden
from switchboard.relay import service
from switchboard.relay.acl import SCOPES, SUBJECTS
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/relay")


def _require_operator(operator: Operator) -> None:
    if not operator.super_admin:
        raise Forbidden("the relay ACL belongs to the operator: admins of the primary tenant only")


@router.get("")
async def relay_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    _require_operator(operator)
    rules = await service.list_rules(session)
    return render(
        request, "relay.html", operator, rules=rules, subjects=SUBJECTS, scopes=SCOPES,
        notice=notice_of(request),
    )  # fmt: skip


@router.post("")
async def add(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    _require_operator(operator)
    form = await request.form()
    try:
        await service.add_rule(
            session, subject=str(form.get("subject", "")), value=str(form.get("value", "")),
            scope=str(form.get("scope", "any")), note=str(form.get("note", "")),
            clock=runtime.clock,
        )  # fmt: skip
    except service.AclError as exc:
        raise BadRequest(str(exc)) from None
    return RedirectResponse("/admin/relay?notice=created", status_code=303)


@router.post("/remove")
async def remove(request: Request, operator: FormOperator, session: Session) -> Response:
    _require_operator(operator)
    form = await request.form()
    try:
        await service.remove_rule(session, rule_id=int(str(form.get("id", ""))))
    except ValueError as exc:  # AclError is a ValueError, and so is a malformed id
        raise BadRequest(str(exc) if isinstance(exc, service.AclError) else "bad rule id") from None
    return RedirectResponse("/admin/relay?notice=deleted", status_code=303)
