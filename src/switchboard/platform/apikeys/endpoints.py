"""API keys: listed and revoked by admins, minted only with an admin OIDC bearer (spec 5.3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from switchboard.auth.bearer import Caller
from switchboard.auth.models import ApiKey, User
from switchboard.identity import service
from switchboard.identity.deps import AdminCaller
from switchboard.kit.clock import iso_utc
from switchboard.kit.errors import Forbidden, NotFound
from switchboard.kit.paging import Paging, page_with_total
from switchboard.kit.schemas import ERROR_RESPONSES, ErrorBody, Page
from switchboard.platform.apikeys.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyItem
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/api.ashx/v1/api-keys", tags=["api-keys"], responses=ERROR_RESPONSES)


def _item(key: ApiKey, username: str) -> ApiKeyItem:
    return ApiKeyItem(
        id=key.id,
        name=key.name,
        prefix=key.prefix,
        created_by=username,
        created_at_utc=iso_utc(key.created_at) or "",
        last_used_utc=iso_utc(key.last_used_at),
        revoked_at_utc=iso_utc(key.revoked_at),
    )


@router.get(
    "",
    operation_id="listApiKeys",
    response_model=Page[ApiKeyItem],
    summary="List API keys (hashes are never shown)",
)
async def list_keys(caller: AdminCaller, session: Session, paging: Paging) -> Page[ApiKeyItem]:
    rows, total = await page_with_total(
        session,
        service.api_keys_statement(caller.tenant_id),
        limit=paging.limit,
        offset=paging.offset,
    )
    return Page(
        data=[_item(key, username) for key, username in rows],
        **paging.envelope(total),
    )


async def _minting_caller(caller: AdminCaller) -> Caller:
    """Who may mint: an admin signed in with a token, never an API key. A dependency, so the
    refusal comes before the body is validated (decision 0016)."""
    if caller.method == "apikey":
        raise Forbidden("an API key cannot create another API key", code="api_key_cannot_mint")
    return caller


MintingCaller = Annotated[Caller, Depends(_minting_caller)]


@router.post(
    "",
    operation_id="createApiKey",
    status_code=201,
    response_model=ApiKeyCreated,
    summary="Mint an API key (admin OIDC bearer only; an API key cannot mint keys)",
)
async def create_key(
    body: ApiKeyCreate, caller: MintingCaller, session: Session, runtime: RuntimeDep
) -> ApiKeyCreated:
    user = await session.get(User, int(caller.subject)) if caller.method == "oidc" else None
    if user is None or user.tenant_id != caller.tenant_id:
        raise Forbidden("API keys are minted by a local admin user")
    key, plaintext = await service.create_api_key(
        session, tenant_id=caller.tenant_id, user=user, name=body.name, clock=runtime.clock
    )
    return ApiKeyCreated(**_item(key, user.username).model_dump(), key=plaintext)


@router.delete(
    "/{key_id}",
    operation_id="revokeApiKey",
    response_model=ApiKeyItem,
    responses={404: {"model": ErrorBody, "description": "No such key"}},
    summary="Revoke one API key (the others are unaffected)",
)
async def revoke_key(
    key_id: str, caller: AdminCaller, session: Session, runtime: RuntimeDep
) -> ApiKeyItem:
    key = await service.revoke_api_key(
        session, tenant_id=caller.tenant_id, key_id=key_id, clock=runtime.clock
    )
    user = await session.get(User, key.user_id)
    if user is None:
        raise NotFound("no such key")
    return _item(key, user.username)
