"""``/signal.ashx?whitelist=list|add|write``: the outbound whitelist of the Host's tenant."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials
from pydantic import BaseModel, ValidationError

from switchboard.identity.deps import HostTenant, bearer_scheme, request_host
from switchboard.kit.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    PayloadTooLarge,
    Unauthorized,
)
from switchboard.kit.http import describe_validation, json_problem
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody
from switchboard.platform.whitelist import service
from switchboard.platform.whitelist.schemas import (
    POST_BODY_OPENAPI,
    WhitelistAddBody,
    WhitelistAdded,
    WhitelistEntry,
    WhitelistList,
    WhitelistWriteBody,
    WhitelistWritten,
)
from switchboard.platform.whitelist.service import ACTIONS, Action
from switchboard.runtime import RuntimeDep, Session

log = logging.getLogger("switchboard.whitelist")

PATH = "/signal.ashx"
SIGNATURE_HEADER = "X-Platform-Admin-Signature"
MAX_BODY_BYTES = 4 * 1024 * 1024  # a full write of 10,000 numbers with long comments fits

router = APIRouter(tags=["whitelist"], responses=ERROR_RESPONSES)

signature_scheme = APIKeyHeader(
    name=SIGNATURE_HEADER,
    auto_error=False,
    scheme_name="signaling-signature",
    description="Lowercase hex HMAC-SHA256 (optionally `sha256=`-prefixed) of the canonical "
    "string, keyed with the tenant's signaling secret (`switchboard tenant signaling-secret`).",
)

WRONG_HOST: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No tenant serves this Host"}
}
WRONG_METHOD: dict[int | str, dict[str, Any]] = {
    405: {"model": ErrorBody, "description": "Action not served on this method"},
    413: {"model": ErrorBody, "description": "Body above 4 MiB"},
}


def _action(request: Request, value: str | None) -> Action:
    if value is None:
        raise BadRequest("whitelist: required: list, add or write")
    if value not in ACTIONS:
        raise BadRequest(f"whitelist: unknown action {value!r}; expected list, add or write")
    action: Action = value
    wanted = "GET" if action == "list" else "POST"
    if request.method != wanted:
        raise ApiError(
            f"whitelist={action} takes {wanted}",
            code="method_not_allowed",
            status=405,
            headers={"Allow": wanted},
        )
    return action


def _readable(raw: bytes) -> None:
    """Refuse a body that is no JSON, or names a key twice, before any credential is looked at
    (decision 0016). The root middleware does this only for bodies sent as JSON; these actions
    take their JSON under any media type (decision 0212), so ``curl -d`` bodies are checked
    here. No body at all is no malformed body: the credentials are looked at first, and its
    absence is refused with the fields."""
    if not raw:
        return
    try:
        problem = json_problem(raw)
    except RecursionError:  # deeper than any parser of ours follows
        problem = "the JSON body nests too deeply"
    if problem is not None:
        raise BadRequest(problem)


async def authorise(
    request: Request,
    session: Session,
    runtime: RuntimeDep,
    tenant: HostTenant,
    credentials: HTTPAuthorizationCredentials | None,
    signature: str | None,
    whitelist: str | None,
) -> Action:
    """An admin bearer of the Host's tenant, or a valid signature; returns the action."""
    action = _action(request, whitelist)
    body = b""
    if action != "list":
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"the body is limited to {MAX_BODY_BYTES} bytes")
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"the body is limited to {MAX_BODY_BYTES} bytes")
        _readable(body)
    if signature is not None:
        canonical = service.canonical_string(action, tenant.name, len(body))
        secret = runtime.box.open(tenant.signaling_secret)
        if not service.signature_valid(secret, canonical, signature):
            raise ApiError(
                f"{SIGNATURE_HEADER} does not match", code="invalid_signature", status=401
            )
        return action
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized(f"a bearer token or {SIGNATURE_HEADER} is required", presented=False)
    caller = await runtime.authenticator.authenticate(
        session, credentials.credentials, host=request_host(request)
    )
    if caller.tenant_id != tenant.id:
        raise Forbidden("the bearer belongs to another tenant than this Host's")
    if not caller.is_admin:
        raise Forbidden("the whitelist requires role=admin")
    return action


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]
Signature = Annotated[str | None, Depends(signature_scheme)]


async def authorise_list(
    request: Request,
    session: Session,
    runtime: RuntimeDep,
    tenant: HostTenant,
    credentials: Credentials,
    signature: Signature,
    whitelist: Annotated[str, Query(description="`list`", json_schema_extra={"enum": ["list"]})],
) -> Action:
    return await authorise(request, session, runtime, tenant, credentials, signature, whitelist)


async def authorise_change(
    request: Request,
    session: Session,
    runtime: RuntimeDep,
    tenant: HostTenant,
    credentials: Credentials,
    signature: Signature,
    whitelist: Annotated[
        str | None,
        Query(
            description="`add` one number or `write` the whole list (required but with `sfu-mode`)",
            json_schema_extra={"enum": ["add", "write"]},
        ),
    ] = None,
) -> Action:
    return await authorise(request, session, runtime, tenant, credentials, signature, whitelist)


ListAction = Annotated[Action, Depends(authorise_list)]
ChangeAction = Annotated[Action, Depends(authorise_change)]


def _parse(raw: bytes, model: type[BaseModel]) -> Any:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadRequest("the request body is not valid JSON") from None
    if not isinstance(document, dict):
        raise BadRequest("body: must be a JSON object")
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise BadRequest(describe_validation(exc.errors())) from None


@router.get(
    PATH,
    operation_id="listWhitelist",
    response_model=WhitelistList,
    responses={**WRONG_HOST, **WRONG_METHOD},
    summary="Whitelist of the Host's tenant (`whitelist=list`; signs `whitelist-list|<tenant>`)",
)
async def whitelist_list(action: ListAction, tenant: HostTenant, session: Session) -> WhitelistList:
    entries = await service.list_entries(session, tenant_id=tenant.id)
    return WhitelistList(
        tenant=tenant.name,
        numbers=[WhitelistEntry(number=e.number, comment=e.comment) for e in entries],
        count=len(entries),
    )


@router.post(
    PATH,
    operation_id="changeWhitelist",
    response_model=WhitelistAdded | WhitelistWritten,
    responses={**WRONG_HOST, **WRONG_METHOD},
    openapi_extra=POST_BODY_OPENAPI,
    summary="Add one number (`whitelist=add`) or replace the list (`whitelist=write`); signs "
    "`whitelist-<action>|<tenant>|<bodyLen>`",
)
async def whitelist_change(
    request: Request,
    action: ChangeAction,
    tenant: HostTenant,
    session: Session,
    confirm_empty: Annotated[
        str | None,
        Query(alias="confirmEmpty", description="`1` (or `true`) to allow writing an empty list"),
    ] = None,
) -> WhitelistAdded | WhitelistWritten:
    raw = await request.body()
    if action == "add":
        body: WhitelistAddBody = _parse(raw, WhitelistAddBody)
        added, count = await service.add_number(
            session, tenant_id=tenant.id, number=body.number, comment=body.comment
        )
        number = service.clean_number(body.number)
        comment = await service.comment_of(session, tenant_id=tenant.id, number=number)
        log.info("whitelist add tenant=%s added=%s count=%d", tenant.name, added, count)
        return WhitelistAdded(
            ok=True, tenant=tenant.name, number=number, comment=comment, added=added, count=count
        )
    write: WhitelistWriteBody = _parse(raw, WhitelistWriteBody)
    entries = [service.Entry(e.number, e.comment or "") for e in write.numbers]
    count = await service.write_numbers(
        session,
        tenant_id=tenant.id,
        entries=entries,
        confirm_empty=confirm_empty in ("1", "true"),
    )
    log.info("whitelist write tenant=%s count=%d", tenant.name, count)
    return WhitelistWritten(ok=True, tenant=tenant.name, count=count)
