"""``/oidc.ashx``: the OpenID4VCI 1.0 credential issuer of the Host's tenant.

``.well-known/openid-credential-issuer`` describes it, ``credential-offer`` is the page where a
signed-in user makes an offer (QR code and link), ``nonce`` hands out a ``c_nonce`` and
``credential`` answers a credential request with the staff SD-JWT VC. The token endpoint's
pre-authorized code grant is in the identity provider's ``/token``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from pydantic import ValidationError
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.identity.deps import HostTenant, request_host
from switchboard.identity.errors import OAuthError
from switchboard.identity.issuance import service as issuance
from switchboard.identity.issuance import status
from switchboard.identity.issuance.schemas import (
    CredentialIssuerMetadata,
    CredentialRequest,
    CredentialResponse,
    IssuedCredential,
    JwtVcIssuerMetadata,
    NonceResponse,
)
from switchboard.identity.signin import pages
from switchboard.identity.signin import service as signin
from switchboard.identity.signin.endpoints import issuer_url, secure_cookies
from switchboard.kit.schemas import ErrorBody
from switchboard.runtime import Runtime, RuntimeDep, Session
from switchboard.tenants import service as tenants

router = APIRouter(tags=["identity provider (OIDC)"])

METADATA_PATH = "/.well-known/openid-credential-issuer"
KEYS_PATH = "/.well-known/jwt-vc-issuer"

PAGE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/html": {}}, "description": "The offer page"},
    400: {"content": {"text/html": {}}, "description": "The form expired (CSRF)"},
    401: {"content": {"text/html": {}}, "description": "Nobody is signed in on this browser"},
    404: {"content": {"text/html": {}}, "description": "No tenant serves this host"},
}
CREDENTIAL_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": ErrorBody,
        "description": "invalid_credential_request, unknown_credential_configuration, "
        "unknown_credential_identifier, invalid_proof, invalid_nonce, "
        "invalid_encryption_parameters, credential_request_denied",
    },
    401: {"model": ErrorBody, "description": "invalid_token: the access token is missing, "
          "unknown, expired or used"},
    404: {"model": ErrorBody, "description": "No tenant serves this host"},
}  # fmt: skip


def credential_issuer(runtime: Runtime, request: Request) -> issuance.Issuer:
    """The Host's credential issuer: its identifier is the identity provider's issuer."""
    return issuance.Issuer(identifier=issuer_url(runtime, request))


@router.get(
    METADATA_PATH,
    operation_id="getCredentialIssuerMetadata",
    response_model=CredentialIssuerMetadata,
    responses={404: {"model": ErrorBody, "description": "No tenant serves this host"}},
    summary="Credential Issuer Metadata (OpenID4VCI 1.0); also at "
    "/.well-known/openid-credential-issuer/oidc.ashx",
)
async def credential_issuer_metadata(
    request: Request, runtime: RuntimeDep, tenant: HostTenant
) -> CredentialIssuerMetadata:
    issuer = credential_issuer(runtime, request)
    return CredentialIssuerMetadata(
        credential_issuer=issuer.identifier,
        credential_endpoint=issuer.credential_endpoint,
        nonce_endpoint=issuer.nonce_endpoint,
        display=[{"name": tenant.name, "locale": "en"}],
        credential_configurations_supported={
            issuance.CONFIGURATION_ID: issuance.configuration(issuer, tenant_name=tenant.name)
        },
    )


@router.get(
    KEYS_PATH,
    operation_id="getJwtVcIssuerMetadata",
    response_model=JwtVcIssuerMetadata,
    responses={404: {"model": ErrorBody, "description": "No tenant serves this host"}},
    summary="JWT VC Issuer Metadata (SD-JWT VC): the keys that sign the staff credentials; "
    "also at /.well-known/jwt-vc-issuer/oidc.ashx",
)
async def jwt_vc_issuer_metadata(
    request: Request, runtime: RuntimeDep, session: Session, tenant: HostTenant
) -> JwtVcIssuerMetadata:
    keys = await issuance.trusted_keys(session, tenant=tenant)
    return JwtVcIssuerMetadata(
        issuer=credential_issuer(runtime, request).identifier,
        jwks={"keys": [key.public_jwk for key in keys]},
    )


@router.post(
    "/nonce",
    operation_id="requestCredentialNonce",
    response_model=NonceResponse,
    responses={404: {"model": ErrorBody, "description": "No tenant serves this host"}},
    summary="Nonce endpoint (OpenID4VCI 1.0): a fresh c_nonce for one key proof",
)
async def nonce(runtime: RuntimeDep, session: Session, tenant: HostTenant) -> NonceResponse:
    value = await issuance.new_nonce(session, tenant=tenant, now=runtime.clock.now())
    return NonceResponse(c_nonce=value)


async def _credential_request(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
        parsed = CredentialRequest.model_validate(body)
    except (ValueError, ValidationError):
        raise OAuthError(
            "invalid_credential_request", "the body is not a JSON credential request"
        ) from None
    return parsed.model_dump(exclude_none=True)


@router.post(
    "/credential",
    operation_id="requestCredential",
    response_model=CredentialResponse,
    responses=CREDENTIAL_ERRORS,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": CredentialRequest.model_json_schema()}},
        },
        "security": [{"bearer": []}],
    },
    summary="Credential endpoint (OpenID4VCI 1.0): the staff credential as SD-JWT VC",
)
async def credential(
    request: Request,
    runtime: RuntimeDep,
    session: Session,
    tenant: HostTenant,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> CredentialResponse:
    token = issuance.bearer_token(authorization)
    body = await _credential_request(request)
    issued = await issuance.issue(
        session, tenant=tenant, issuer=credential_issuer(runtime, request), box=runtime.box,
        token=token, request=body, now=runtime.clock.now(),
    )  # fmt: skip
    return CredentialResponse(credentials=[IssuedCredential(credential=issued)])


@router.get(
    "/status/{list_id}",
    response_class=Response,
    responses={
        200: {
            "content": {status.MEDIA_TYPE: {}},
            "description": "The status list token: a JWT signed by the tenant's issuer key",
        },
        404: {"model": ErrorBody, "description": "No such list of this host's tenant"},
    },
    operation_id="getStatusList",
    summary="A status list of the staff credentials (Token Status List, "
    "draft-ietf-oauth-status-list-21): one bit per credential, 1 = revoked",
)
async def status_list(
    list_id: str, request: Request, runtime: RuntimeDep, session: Session, tenant: HostTenant
) -> Response:
    token = await issuance.status_list_token(
        session, tenant=tenant, issuer=credential_issuer(runtime, request), box=runtime.box,
        list_id=list_id, now=runtime.clock.now(),
    )  # fmt: skip
    # Relying parties cache by the token's ``ttl`` claim; the response itself is no-store.
    return Response(token, media_type=status.MEDIA_TYPE)


# The offer page -------------------------------------------------------------------------


def _signed_out() -> Response:
    return pages.error_page(
        "Sign in first (through the console or any application of your organisation), "
        "then open this page again.",
        status=401,
    )


@router.get(
    "/credential-offer",
    responses=PAGE,
    response_class=Response,
    operation_id="showCredentialOffer",
    summary="The page where a signed-in user asks for a staff credential in their wallet",
)
async def offer_page(request: Request, runtime: RuntimeDep) -> Response:
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            return pages.error_page("no tenant serves this host", status=404)
        browser = await signin.current_session(
            session, tenant=tenant, token=request.cookies.get(pages.SESSION_COOKIE),
            now=runtime.clock.now(),
        )  # fmt: skip
    if browser is None:
        return _signed_out()
    csrf, fresh = pages.csrf_token(request)
    response = pages.render("credential_offer.html", tenant=tenant.name, csrf=csrf, offer=None)
    if fresh:
        pages.set_cookie(
            response, pages.CSRF_COOKIE, csrf, secure=secure_cookies(runtime), max_age=3600
        )
    return response


@router.post(
    "/credential-offer",
    responses=PAGE,
    response_class=Response,
    operation_id="createCredentialOffer",
    summary="Make a credential offer (form: csrf_token, tx_code=on for a transaction code)",
)
async def create_offer(request: Request, runtime: RuntimeDep) -> Response:
    form = await request.form()
    submitted = form.get("csrf_token")
    with_tx_code = form.get("tx_code") == "on"
    async with runtime.db.transaction() as session:
        tenant = await tenants.resolve_host(session, request_host(request))
        if tenant is None:
            return pages.error_page("no tenant serves this host", status=404)
        now = runtime.clock.now()
        browser = await signin.current_session(
            session, tenant=tenant, token=request.cookies.get(pages.SESSION_COOKIE), now=now
        )
        if browser is None:
            return _signed_out()
        if not pages.csrf_ok(request, submitted if isinstance(submitted, str) else None):
            return pages.error_page("The form expired. Please open the page again.", status=400)
        offer = await issuance.create_offer(
            session, tenant=tenant, user_id=browser.user_id,
            issuer=credential_issuer(runtime, request), with_tx_code=with_tx_code, now=now,
        )  # fmt: skip
    qr = pages.qr_svg(offer.link, title="Scan with your wallet")
    minutes = int(issuance.OFFER_TTL.total_seconds() // 60)
    return pages.render(
        "credential_offer.html", tenant=tenant.name, offer=offer, qr=qr, minutes=minutes
    )


# The metadata at the host's root -----------------------------------------------------------


class _Forward:
    """Serves a path of the identity provider's app under another path of the host."""

    def __init__(self, identity: ASGIApp, *, mount: str, target: str) -> None:
        self.identity, self.mount, self.target = identity, mount, target

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = scope.get("root_path", "")
        path = f"{self.mount}{self.target}"
        child = {**scope, "path": f"{root}{path}", "raw_path": path.encode(),
                 "root_path": f"{root}{self.mount}"}  # fmt: skip
        await self.identity(child, receive, send)


def well_known_routes(identity: ASGIApp, *, mount: str) -> list[Route]:
    """Where a wallet looks for the metadata of the issuer ``{host}/oidc.ashx``: the well-known
    string inserted before the path (OpenID4VCI 1.0 section 12.2.2, RFC 8414 section 3), each
    answered by the identity provider's own route. The authorization server's metadata is the
    OpenID Provider's (a superset)."""
    targets = {
        METADATA_PATH: METADATA_PATH,
        KEYS_PATH: KEYS_PATH,
        "/.well-known/oauth-authorization-server": "/.well-known/openid-configuration",
    }
    return [
        Route(f"{path}{mount}", _Forward(identity, mount=mount, target=target), methods=["GET"])
        for path, target in targets.items()
    ]
