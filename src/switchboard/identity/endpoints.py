"""``/oidc.ashx``: token, revocation, introspection, discovery, JWKS and userinfo. The tenant is
the one the Host maps to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Header, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import issuer_for
from switchboard.auth.models import OidcClient, User
from switchboard.auth.tokens import TokenSet
from switchboard.identity import clients, introspection, lockout, revocation, service
from switchboard.identity.deps import Caller, HostTenant, request_host
from switchboard.identity.errors import OAuthError
from switchboard.identity.issuance import service as issuance
from switchboard.identity.schemas import Discovery, TokenIntrospection, TokenResponse, UserInfo
from switchboard.identity.signin import service as signin
from switchboard.kit.errors import Forbidden, Unauthorized
from switchboard.kit.http import JsonResponse, first_repeated
from switchboard.kit.schemas import ErrorBody
from switchboard.runtime import Runtime, RuntimeDep, Session
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

router = APIRouter(tags=["identity provider (OIDC)"])

OAUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "OAuth error (invalid_request, invalid_grant, ...)"},
    401: {"model": ErrorBody, "description": "invalid_client"},
    429: {"model": ErrorBody, "description": "Too many failed sign-in attempts"},
}


GRANT_TYPES = ("authorization_code", "refresh_token", "password", issuance.PRE_AUTHORIZED_GRANT)
# How a client authenticates, at the token and the revocation endpoint alike.
CLIENT_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
# Introspection is for confidential clients only (decision 0036).
SECRET_AUTH_METHODS = ("client_secret_basic", "client_secret_post")


def _issuer(runtime: RuntimeDep, request: Request) -> str:
    return issuer_for(runtime.settings.public_scheme, request_host(request).lower())


async def _check_form(request: Request, *fields: str | None) -> None:
    """The form rules of every endpoint here: no NUL in a field, no parameter twice."""
    if any(value is not None and "\x00" in value for value in fields):
        raise OAuthError("invalid_request", "form fields must not contain NUL characters")
    repeated = first_repeated((await request.form()).multi_items())
    if repeated is not None:  # RFC 6749 §3.2: which value would win is the parser's whim
        raise OAuthError("invalid_request", f"the parameter {repeated} is repeated")


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    """What a client presents to authenticate at the revocation and introspection endpoints, as
    at the token endpoint: Basic credentials, or ``client_id`` (and ``client_secret``) in the
    form."""

    client_id: str | None
    client_secret: str | None
    authorization: str | None

    @property
    def form_fields(self) -> tuple[str | None, str | None]:
        return self.client_id, self.client_secret

    async def authenticate(self, session: AsyncSession, tenant: Tenant) -> OidcClient:
        return await clients.authenticate_client(
            session,
            tenant=tenant,
            client_id=self.client_id,
            client_secret=self.client_secret,
            authorization=self.authorization,
        )


async def _client_credentials(
    client_id: Annotated[str | None, Form()] = None,
    client_secret: Annotated[str | None, Form()] = None,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> ClientCredentials:
    return ClientCredentials(client_id, client_secret, authorization)


ClientCredentialsForm = Annotated[ClientCredentials, Depends(_client_credentials)]


async def _host_tenant(session: AsyncSession, request: Request) -> Tenant:
    """The tenant the Host maps to, or the OAuth error body's 404."""
    tenant = await tenants.resolve_host(session, request_host(request))
    if tenant is None:
        raise OAuthError("not_found", "no tenant serves this host", status=404)  # spec 7
    return tenant


@router.post(
    "/token",
    operation_id="requestToken",
    response_model=TokenResponse,
    response_model_exclude_none=True,
    responses=OAUTH_ERRORS,
    summary="OAuth 2.0 token endpoint (authorization_code, refresh_token, password and "
    "OpenID4VCI pre-authorized_code grants)",
)
async def token(
    request: Request,
    runtime: RuntimeDep,
    grant_type: Annotated[str, Form(json_schema_extra={"enum": list(GRANT_TYPES)})],
    client_id: Annotated[str | None, Form()] = None,
    client_secret: Annotated[str | None, Form()] = None,
    username: Annotated[str | None, Form()] = None,
    password: Annotated[str | None, Form()] = None,
    scope: Annotated[str | None, Form()] = None,
    refresh_token: Annotated[str | None, Form()] = None,
    code: Annotated[str | None, Form()] = None,
    redirect_uri: Annotated[str | None, Form()] = None,
    code_verifier: Annotated[str | None, Form()] = None,
    pre_authorized_code: Annotated[str | None, Form(alias="pre-authorized_code")] = None,
    tx_code: Annotated[str | None, Form()] = None,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> JsonResponse:
    fields = (
        grant_type, client_id, client_secret, username, password, scope, refresh_token, code,
        redirect_uri, code_verifier, pre_authorized_code, tx_code,
    )  # fmt: skip
    await _check_form(request, *fields)
    issuer = _issuer(runtime, request)
    result: TokenSet | None = None
    failure: OAuthError | None = None
    # Argon2 before the write transaction, which would otherwise hold it (decision 0032).
    checked = None
    if grant_type == "password":
        checked = await service.precheck_password(
            runtime.db,
            runtime.passwords,
            host=request_host(request),
            username=username,
            password=password,
        )
    # Failed attempts must be recorded even though the request fails: commit, then answer.
    async with runtime.db.transaction() as session:
        tenant = await _host_tenant(session, request)
        try:
            if grant_type not in GRANT_TYPES:
                raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r}")
            if grant_type == issuance.PRE_AUTHORIZED_GRANT:
                # Anonymous: a wallet is no registered client; the code is the authorization.
                result = await issuance.redeem(
                    session, tenant=tenant, code=pre_authorized_code, tx_code=tx_code,
                    now=runtime.clock.now(),
                )  # fmt: skip
            else:
                form = _ClientForm(
                    client_id, client_secret, username, password, scope, refresh_token, code,
                    redirect_uri, code_verifier,
                )  # fmt: skip
                result = await _client_grant(
                    session, runtime, tenant=tenant, issuer=issuer, grant_type=grant_type,
                    form=form, authorization=authorization, checked=checked,
                )  # fmt: skip
        except OAuthError as exc:
            failure = exc
    if failure is not None:
        raise failure
    assert result is not None
    return JsonResponse(result.body(), headers={"Pragma": "no-cache"})


@dataclass(frozen=True, slots=True)
class _ClientForm:
    """The token request's fields of the grants a registered client makes."""

    client_id: str | None
    client_secret: str | None
    username: str | None
    password: str | None
    scope: str | None
    refresh_token: str | None
    code: str | None
    redirect_uri: str | None
    code_verifier: str | None


async def _client_grant(
    session: AsyncSession,
    runtime: Runtime,
    *,
    tenant: Tenant,
    issuer: str,
    grant_type: str,
    form: _ClientForm,
    authorization: str | None,
    checked: service.PasswordCheck | None,
) -> TokenSet:
    """The authorization_code, password and refresh_token grants: the client authenticates.
    ``checked``: the password grant's password, verified before the transaction."""
    settings = runtime.settings
    client = await clients.authenticate_client(
        session,
        tenant=tenant,
        client_id=form.client_id,
        client_secret=form.client_secret,
        authorization=authorization,
    )
    if grant_type == "authorization_code":
        return await signin.redeem_code(
            session,
            tenant=tenant,
            issuer=issuer,
            tokens=runtime.tokens,
            clock=runtime.clock,
            client=client,
            code=form.code,
            redirect_uri=form.redirect_uri,
            code_verifier=form.code_verifier,
        )
    if grant_type == "password":
        return await service.password_grant(
            session,
            tenant=tenant,
            issuer=issuer,
            tokens=runtime.tokens,
            clock=runtime.clock,
            client=client,
            username=form.username,
            password=form.password,
            scope=form.scope,
            max_failures=settings.login_max_failures,
            lockout_seconds=settings.login_lockout_seconds,
            passwords=runtime.passwords,
            unknown=lockout.unknown_names(settings.secret_key),
            checked=checked,
        )
    return await service.refresh_grant(
        session,
        tenant=tenant,
        issuer=issuer,
        tokens=runtime.tokens,
        clock=runtime.clock,
        client=client,
        refresh_token=form.refresh_token,
        scope=form.scope,
    )


NO_TENANT: dict[str, Any] = {"model": ErrorBody, "description": "No tenant serves this host"}

REVOKE_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "Revoked, or nothing to revoke (RFC 7009 §2.2): no body", "content": {}},
    400: {
        "model": ErrorBody,
        "description": "invalid_request (no token or client_id, a repeated parameter), "
        "unsupported_token_type (a token_type_hint of neither kind)",
    },
    401: {"model": ErrorBody, "description": "invalid_client"},
    404: NO_TENANT,
}


@router.post(
    "/revoke",
    operation_id="revokeToken",
    response_class=Response,
    responses=REVOKE_ANSWERS,
    summary="OAuth 2.0 token revocation (RFC 7009): a refresh or access token, with its grant",
)
async def revoke(
    request: Request,
    runtime: RuntimeDep,
    token: Annotated[str, Form(min_length=1)],
    credentials: ClientCredentialsForm,
    token_type_hint: Annotated[
        str | None, Form(json_schema_extra={"enum": list(revocation.TOKEN_TYPE_HINTS)})
    ] = None,
) -> Response:
    """The client authenticates as at the token endpoint. A token it was issued ends with its
    whole grant: the refresh tokens at once, the access tokens that came with them on their
    next use. Any other token (another client's or tenant's, unknown, expired) is left as it
    is, with the same empty 200 (RFC 7009 §2.2)."""
    await _check_form(request, token, token_type_hint, *credentials.form_fields)
    async with runtime.db.transaction() as session:
        tenant = await _host_tenant(session, request)
        if token_type_hint is not None and token_type_hint not in revocation.TOKEN_TYPE_HINTS:
            raise OAuthError("unsupported_token_type", f"token_type_hint {token_type_hint!r}")
        client = await credentials.authenticate(session, tenant)
        await revocation.revoke(
            session, tenant=tenant, client=client, token=token, authenticator=runtime.authenticator,
            now=runtime.clock.now(),
        )  # fmt: skip
    return Response()


INTROSPECT_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "The token's state (RFC 7662 §2.2): `active` alone when it is not"},
    400: {
        "model": ErrorBody,
        "description": "invalid_request (no token or client_id, a repeated parameter, a NUL)",
    },
    401: {"model": ErrorBody, "description": "invalid_client (also a public client)"},
    404: NO_TENANT,
}


@router.post(
    "/introspect",
    operation_id="introspectToken",
    response_model=TokenIntrospection,
    response_model_exclude_none=True,
    responses=INTROSPECT_ANSWERS,
    summary="OAuth 2.0 token introspection (RFC 7662): whether an access or refresh token is "
    "valid now",
)
async def introspect(
    request: Request,
    runtime: RuntimeDep,
    token: Annotated[str, Form(min_length=1)],
    credentials: ClientCredentialsForm,
    token_type_hint: Annotated[str | None, Form()] = None,
) -> TokenIntrospection:
    """A confidential client of the Host's tenant asks, authenticated as at the token endpoint;
    it may ask about any token of the tenant, issued to whichever client. An access token is
    active exactly when the platform's bearer check takes it, a refresh token while the token
    endpoint would rotate it; anything else answers ``{"active": false}`` alone. The hint is
    not needed (the token's form tells its kind) and is ignored (RFC 7662 §2.1)."""
    await _check_form(request, token, token_type_hint, *credentials.form_fields)
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await _host_tenant(session, request)
        client = await credentials.authenticate(session, tenant)
        if client.secret_hash is None:  # RFC 7662 §2.1: no token scanning by anyone
            raise OAuthError("invalid_client", "a public client may not introspect", status=401)
        return await introspection.introspect(
            session, authenticator=runtime.authenticator, tenant=tenant, token=token,
            now=runtime.clock.now(),
        )  # fmt: skip


@router.get(
    "/.well-known/openid-configuration",
    operation_id="getOpenidConfiguration",
    response_model=Discovery,
    summary="OpenID Provider metadata",
)
async def discovery(request: Request, runtime: RuntimeDep, tenant: HostTenant) -> Discovery:
    issuer = _issuer(runtime, request)
    return Discovery(
        issuer=issuer,
        authorization_endpoint=f"{issuer}/authorize",
        token_endpoint=f"{issuer}/token",
        jwks_uri=f"{issuer}/jwks",
        userinfo_endpoint=f"{issuer}/userinfo",
        end_session_endpoint=f"{issuer}/end_session",
        revocation_endpoint=f"{issuer}/revoke",
        introspection_endpoint=f"{issuer}/introspect",
        grant_types_supported=list(GRANT_TYPES),
        response_types_supported=["code"],
        response_modes_supported=["query"],
        code_challenge_methods_supported=["S256"],
        prompt_values_supported=sorted(signin.PROMPTS),
        authorization_response_iss_parameter_supported=True,
        subject_types_supported=["public"],
        id_token_signing_alg_values_supported=["RS256"],
        token_endpoint_auth_methods_supported=list(CLIENT_AUTH_METHODS),
        revocation_endpoint_auth_methods_supported=list(CLIENT_AUTH_METHODS),
        introspection_endpoint_auth_methods_supported=list(SECRET_AUTH_METHODS),
        scopes_supported=list(service.SUPPORTED_SCOPES),
        claims_supported=[
            "sub",
            "iss",
            "aud",
            "exp",
            "iat",
            "tenant",
            "role",
            "preferred_username",
            "nonce",
            "auth_time",
            "sid",
            "email",
            "email_verified",
        ],
        pre_authorized_grant_anonymous_access_supported=True,
    )


@router.get("/jwks", operation_id="getJwks", summary="Public signing keys (JWK Set)")
async def jwks(runtime: RuntimeDep, session: Session) -> JsonResponse:
    await runtime.keyring.ensure_signer(session)
    return JsonResponse(runtime.keyring.jwks())


USERINFO_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Bearer missing, invalid or of another tenant"},
    403: {"model": ErrorBody, "description": "An access token issued without the openid scope"},
    404: NO_TENANT,
}


@router.get(
    "/userinfo",
    operation_id="getUserinfo",
    response_model=UserInfo,
    response_model_exclude_none=True,
    responses=USERINFO_ERRORS,
    summary="Claims of the bearer's user",
)
@router.post(
    "/userinfo",
    operation_id="postUserinfo",
    response_model=UserInfo,
    response_model_exclude_none=True,
    responses=USERINFO_ERRORS,
    summary="Claims of the bearer's user (POST, as OpenID Connect Core 5.3.1 requires too)",
)
async def userinfo(tenant: HostTenant, caller: Caller, session: Session) -> UserInfo:
    """The Host's tenant's users only: another tenant's token is refused like an invalid one.
    An access token of this provider needs the ``openid`` scope (OpenID Connect Core 5.3.1);
    with ``email`` the user's address and whether it is verified come too (5.4)."""
    if caller.tenant_id != tenant.id:
        raise Unauthorized("the token belongs to another tenant than this host")
    if caller.method == "oidc" and "openid" not in caller.scopes:
        raise Forbidden("the access token was issued without the openid scope")
    info = UserInfo(
        sub=caller.subject,
        preferred_username=caller.username,
        tenant=caller.tenant_name,
        role=caller.role,
    )
    if "email" in caller.scopes:
        user = await session.get(User, int(caller.subject))
        if user is not None and user.email:
            info.email, info.email_verified = user.email, user.email_verified
    return info
