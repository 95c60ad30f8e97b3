"""Who answers an inbound SIP call: the platform's half of ``POST /bridge.ashx/v1/inbound-route``.

The tenant is the one whose domain the INVITE was addressed to; failing that, the one tenant
with a virtual number for the dialled DID (docs/decisions/0321-inbound-route-tenant-resolution.md).
Within the tenant the first match wins: a virtual number with that DID is answered by its AI
receptionist; otherwise the inbound route table names the office-tab user whose phone rings, at
the SIP address an operator stored for them.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.bridge.protocol import InboundRouteReply, InboundRouteRequest
from switchboard.identity import service as identity
from switchboard.kit.crypto import SecretBox
from switchboard.kit.errors import NotFound
from switchboard.platform.numbers import service as numbers
from switchboard.platform.numbers.models import VirtualNumber
from switchboard.platform.routing import service as routing
from switchboard.tenants import service as tenants
from switchboard.tenants.config import TenantConfig
from switchboard.tenants.models import Tenant

log = logging.getLogger("switchboard.bridge")


def _receptionist(tenant: Tenant, number: VirtualNumber, box: SecretBox) -> InboundRouteReply:
    api_key, system_prompt = numbers.reveal_secrets(number, box)
    config = TenantConfig.from_settings(tenant.settings)
    return InboundRouteReply(
        tenant=tenant.name, action="ai", number=number.number, name=number.name,
        voice=number.voice, language=number.language, model=config.default_model,
        max_seconds=number.max_duration_sec, system_prompt=system_prompt, api_key=api_key,
    )  # fmt: skip


async def _tenant_by_did(session: AsyncSession, did: str) -> tuple[Tenant, VirtualNumber]:
    rows = await numbers.numbers_for_did_in_any_tenant(session, did=did)
    tenant_ids = {row.tenant_id for row in rows}
    if not rows:
        raise NotFound(f"no route for {did!r}: not a tenant domain, and no virtual number")
    if len(tenant_ids) > 1:
        raise NotFound(
            f"no route for {did!r}: several tenants have this virtual number; address the "
            "call to a tenant domain"
        )
    tenant = await tenants.get_by_id(session, rows[0].tenant_id)
    if tenant is None:  # deleted in between
        raise NotFound(f"no route for {did!r}")
    return tenant, rows[0]


async def route_inbound(
    session: AsyncSession, *, request: InboundRouteRequest, box: SecretBox
) -> InboundRouteReply:
    """The route of one inbound call; ``NotFound`` when nobody answers it."""
    did = request.did.strip()
    if not did:
        raise NotFound("no route: the call names no DID")
    tenant = await tenants.resolve_host(session, request.domain) if request.domain else None
    if tenant is None:
        tenant, number = await _tenant_by_did(session, did)
        log.info("inbound route: tenant %s by DID, virtual number %s", tenant.name, number.number)
        return _receptionist(tenant, number, box)
    number_row = await numbers.find_number_for_did(session, tenant_id=tenant.id, did=did)
    if number_row is not None:
        log.info("inbound route: tenant %s, virtual number %s", tenant.name, number_row.number)
        return _receptionist(tenant, number_row, box)
    username = await routing.resolve_inbound(
        session, tenant_id=tenant.id, did=did, from_number=request.from_number or None
    )
    user = await identity.find_user(session, tenant_id=tenant.id, username=username)
    if user is None or user.disabled or not user.sip_uri:
        state = (
            "no such user" if user is None else "disabled" if user.disabled else "no SIP address"
        )
        raise NotFound(f"no route for {did!r}: the inbound routes name user {username!r} ({state})")
    log.info("inbound route: tenant %s, office-tab user %s", tenant.name, username)
    return InboundRouteReply(
        tenant=tenant.name, action="office-tab", rule=username, number=did, user=username,
        sip_uri=user.sip_uri,
    )  # fmt: skip
