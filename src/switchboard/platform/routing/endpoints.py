"""``/api.ashx/v1/inbound-routes`` and ``/api.ashx/v1/outbound-routes``, with dry runs."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query

from switchboard.identity.deps import AdminCaller
from switchboard.kit.errors import BadRequest, NotFound
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody, Page
from switchboard.platform.routing import service
from switchboard.platform.routing.matching import canonical_number
from switchboard.platform.routing.models import InboundRoute, OutboundRoute
from switchboard.platform.routing.schemas import (
    InboundResolution,
    InboundRouteCreate,
    InboundRouteDeleted,
    InboundRouteEcho,
    InboundRouteItem,
    InboundRouteUpdate,
    OutboundResolution,
    OutboundRouteCreate,
    OutboundRouteDeleted,
    OutboundRouteItem,
    OutboundRoutePage,
    OutboundRouteUpdate,
)
from switchboard.runtime import Session
from switchboard.tenants import service as tenants
from switchboard.tenants.config import TenantConfig

INBOUND = "/api.ashx/v1/inbound-routes"
OUTBOUND = "/api.ashx/v1/outbound-routes"

router = APIRouter(responses=ERROR_RESPONSES)

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such route (code `not_found`)"}
}
DUPLICATE: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "The key exists (code `duplicate_route`)"}
}
CATCHALL: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input; `cannot_delete_catchall`"}
}

FromNumberQuery = Annotated[
    str | None,
    Query(
        alias="fromNumber",
        max_length=128,
        description="FromNumber of the row to address; absent or empty: the row without one",
    ),
]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def stored_key(value: str) -> str:
    """A path or query key; one with control characters cannot name a stored row (creation
    refuses them, and PostgreSQL cannot even compare a NUL), so it is a plain 404."""
    if _CONTROL.search(value):
        raise NotFound("no route has this key")
    return value


def query_number(value: str) -> str:
    """Undo the one common mangling of query strings: an unencoded ``+`` arrives as a space."""
    if value.startswith(" ") and value[1:2].isdigit():
        return "+" + value[1:]
    return value


def same_key(field: str, sent: str | None, addressed: str) -> None:
    """A PUT body may repeat the key the path (or query) addresses, never name another one: the
    key cannot change, and a silent ignore would let a client believe it moved (decision
    0104)."""
    if sent is not None and sent != addressed:
        raise BadRequest(
            f"{field}: {sent!r} differs from the addressed route's {addressed!r}; the key cannot "
            "change: create the new route and delete this one"
        )


def _item(row: InboundRoute) -> InboundRouteItem:
    return InboundRouteItem(did=row.did, from_number=row.from_number, user=row.user)


def _echo(row: InboundRoute) -> InboundRouteEcho:
    return InboundRouteEcho(did=row.did, from_number=row.from_number, user=row.user)


def _outbound(row: OutboundRoute) -> OutboundRouteItem:
    return OutboundRouteItem(match=row.match, trunk_ids=[str(t) for t in row.trunk_ids])


async def _default_trunk(session: Session, caller: AdminCaller) -> str:
    tenant = await tenants.require_by_name(session, caller.tenant_name)
    return TenantConfig.from_settings(tenant.settings).default_trunk_id


# Inbound -------------------------------------------------------------------------------------


@router.get(
    INBOUND,
    operation_id="listInboundRoutes",
    response_model=Page[InboundRouteItem],
    tags=["inbound-routes"],
    summary="List inbound routes in evaluation order (the `*` catchall last)",
)
async def list_inbound(
    caller: AdminCaller, session: Session, paging: Paging
) -> Page[InboundRouteItem]:
    rows, total = await service.list_inbound(
        session, tenant_id=caller.tenant_id, limit=paging.limit, offset=paging.offset
    )
    return Page(
        data=[_item(r) for r in rows],
        **paging.envelope(total),
    )


@router.get(
    INBOUND + ":resolve",
    operation_id="resolveInboundRoute",
    response_model=InboundResolution,
    tags=["inbound-routes"],
    summary="Dry run: which inbound route a call would ring, its index, and why",
)
async def resolve_inbound(
    caller: AdminCaller,
    session: Session,
    did: Annotated[str, Query(min_length=1, max_length=128, description="Dialled number")],
    from_number: Annotated[
        str | None,
        Query(alias="fromNumber", max_length=128, description="Caller ID; absent: anonymous"),
    ] = None,
) -> InboundResolution:
    did = query_number(did)
    caller_id = query_number(from_number) if from_number else None
    result = await service.explain_inbound(
        session, tenant_id=caller.tenant_id, did=did, from_number=caller_id
    )
    route = None
    if result.row is not None:
        route = InboundRouteItem(
            did=result.row.did, from_number=result.row.from_number, user=result.row.user
        )
    return InboundResolution(
        did=did,
        from_number=result.from_number,
        normalised_did=canonical_number(did),
        matched=result.index is not None,
        index=result.index,
        route=route,
        user=result.user,
        reason=result.reason,
    )


@router.get(
    INBOUND + "/{did:path}",
    operation_id="getInboundRoute",
    response_model=InboundRouteItem,
    responses=NOT_FOUND,
    tags=["inbound-routes"],
    summary="The first inbound route whose Did is `{did}` (URL-encoded; `*` is `%2A`)",
)
async def get_inbound(did: str, caller: AdminCaller, session: Session) -> InboundRouteItem:
    if not did:
        raise NotFound("no inbound route for an empty Did")
    return _item(
        await service.get_inbound(session, tenant_id=caller.tenant_id, did=stored_key(did))
    )


@router.post(
    INBOUND,
    operation_id="createInboundRoute",
    status_code=201,
    response_model=InboundRouteEcho,
    responses=DUPLICATE,
    tags=["inbound-routes"],
    summary="Create an inbound route just before the `*` catchall (echoed in PascalCase)",
)
async def create_inbound(
    body: InboundRouteCreate, caller: AdminCaller, session: Session
) -> InboundRouteEcho:
    row = await service.create_inbound(
        session,
        tenant_id=caller.tenant_id,
        did=body.did,
        from_number=body.from_number or "",
        user=body.user,
    )
    return _echo(row)


@router.put(
    INBOUND + "/{did:path}",
    operation_id="updateInboundRoute",
    response_model=InboundRouteEcho,
    responses=NOT_FOUND,
    tags=["inbound-routes"],
    summary="Change the User of the route keyed (Did, fromNumber) (echoed in PascalCase); "
    "a body Did or FromNumber other than the addressed one is 400",
)
async def update_inbound(
    did: str,
    body: InboundRouteUpdate,
    caller: AdminCaller,
    session: Session,
    from_number: FromNumberQuery = None,
) -> InboundRouteEcho:
    addressed = stored_key(query_number(from_number or ""))
    same_key("Did", body.did, did)
    same_key("FromNumber", body.from_number, addressed)
    row = await service.update_inbound(
        session, tenant_id=caller.tenant_id, did=stored_key(did), from_number=addressed,
        user=body.user,
    )  # fmt: skip
    return _echo(row)


@router.delete(
    INBOUND + "/{did:path}",
    operation_id="deleteInboundRoute",
    response_model=InboundRouteDeleted,
    responses={**NOT_FOUND, **CATCHALL},
    tags=["inbound-routes"],
    summary="Delete the first inbound route with this Did (`*` cannot be deleted)",
)
async def delete_inbound(
    did: str,
    caller: AdminCaller,
    session: Session,
    from_number: Annotated[
        str | None,
        Query(
            alias="fromNumber",
            max_length=128,
            description="Optional: delete the row keyed (Did, fromNumber) instead of the first "
            "row with this Did",
        ),
    ] = None,
) -> InboundRouteDeleted:
    row = await service.delete_inbound(
        session,
        tenant_id=caller.tenant_id,
        did=stored_key(did),
        from_number=None if from_number is None else stored_key(query_number(from_number)),
    )
    return InboundRouteDeleted(deleted=_echo(row))


# Outbound ------------------------------------------------------------------------------------


@router.get(
    OUTBOUND,
    operation_id="listOutboundRoutes",
    response_model=OutboundRoutePage,
    tags=["outbound-routes"],
    summary="List outbound routes in evaluation order, with the tenant's `defaultTrunkId`",
)
async def list_outbound(caller: AdminCaller, session: Session, paging: Paging) -> OutboundRoutePage:
    rows, total = await service.list_outbound(
        session, tenant_id=caller.tenant_id, limit=paging.limit, offset=paging.offset
    )
    return OutboundRoutePage(
        data=[_outbound(r) for r in rows],
        **paging.envelope(total),
        default_trunk_id=await _default_trunk(session, caller),
    )


@router.get(
    OUTBOUND + ":resolve",
    operation_id="resolveOutboundRoute",
    response_model=OutboundResolution,
    tags=["outbound-routes"],
    summary="Dry run: which outbound route a dialled number would use, its index, and why",
)
async def resolve_outbound(
    caller: AdminCaller,
    session: Session,
    number: Annotated[str, Query(min_length=1, max_length=128, description="Dialled number")],
) -> OutboundResolution:
    number = query_number(number)
    default = await _default_trunk(session, caller)
    result = await service.explain_outbound(
        session, tenant_id=caller.tenant_id, number=number, default_trunk_id=default
    )
    route = None
    if result.row is not None:
        route = OutboundRouteItem(match=result.row.match, trunk_ids=list(result.row.trunk_ids))
    return OutboundResolution(
        number=number,
        normalised_number=result.normalised_number,
        matched=result.index is not None,
        index=result.index,
        route=route,
        trunk_ids=result.trunk_ids,
        default_trunk_id=default,
        used_default=result.used_default,
        reason=result.reason,
    )


@router.get(
    OUTBOUND + "/{match:path}",
    operation_id="getOutboundRoute",
    response_model=OutboundRouteItem,
    responses=NOT_FOUND,
    tags=["outbound-routes"],
    summary="One outbound route (`{match}` URL-encoded: `*` is `%2A`, `+` is `%2B`)",
)
async def get_outbound(match: str, caller: AdminCaller, session: Session) -> OutboundRouteItem:
    row = await service.get_outbound(session, tenant_id=caller.tenant_id, match=stored_key(match))
    return _outbound(row)


@router.post(
    OUTBOUND,
    operation_id="createOutboundRoute",
    status_code=201,
    response_model=OutboundRouteItem,
    responses=DUPLICATE,
    tags=["outbound-routes"],
    summary="Append an outbound route at the end of the table",
)
async def create_outbound(
    body: OutboundRouteCreate, caller: AdminCaller, session: Session
) -> OutboundRouteItem:
    row = await service.create_outbound(
        session, tenant_id=caller.tenant_id, match=body.match, trunk_ids=list(body.trunk_ids)
    )
    return _outbound(row)


@router.put(
    OUTBOUND + "/{match:path}",
    operation_id="updateOutboundRoute",
    response_model=OutboundRouteItem,
    responses=NOT_FOUND,
    tags=["outbound-routes"],
    summary="Replace the trunk ids of an outbound route; a body match other than the path's is 400",
)
async def update_outbound(
    match: str, body: OutboundRouteUpdate, caller: AdminCaller, session: Session
) -> OutboundRouteItem:
    same_key("match", body.match, match)
    row = await service.update_outbound(
        session, tenant_id=caller.tenant_id, match=stored_key(match), trunk_ids=list(body.trunk_ids)
    )
    return _outbound(row)


@router.delete(
    OUTBOUND + "/{match:path}",
    operation_id="deleteOutboundRoute",
    response_model=OutboundRouteDeleted,
    responses=NOT_FOUND,
    tags=["outbound-routes"],
    summary="Delete an outbound route",
)
async def delete_outbound(
    match: str, caller: AdminCaller, session: Session
) -> OutboundRouteDeleted:
    row = await service.delete_outbound(
        session, tenant_id=caller.tenant_id, match=stored_key(match)
    )
    return OutboundRouteDeleted(deleted=_outbound(row))
