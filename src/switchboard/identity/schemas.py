from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from switchboard.kit.schemas import sometimes_absent


class TokenResponse(BaseModel):
    access_token: str
    token_type: str
    expires_in: int
    scope: str
    id_token: str | None = sometimes_absent("Only with the `openid` scope")
    refresh_token: str | None = sometimes_absent("Only with the `offline_access` scope")


class UserInfo(BaseModel):
    sub: str
    preferred_username: str
    tenant: str
    role: str
    email: str | None = sometimes_absent(
        "With the email scope, when the user has an address (OpenID Connect Core 5.4)"
    )
    email_verified: bool | None = sometimes_absent("With email")


class Discovery(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str
    end_session_endpoint: str
    revocation_endpoint: str
    introspection_endpoint: str
    grant_types_supported: list[str]
    response_types_supported: list[str]
    response_modes_supported: list[str]
    code_challenge_methods_supported: list[str]
    prompt_values_supported: list[str]
    authorization_response_iss_parameter_supported: bool
    subject_types_supported: list[str]
    id_token_signing_alg_values_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    revocation_endpoint_auth_methods_supported: list[str]
    introspection_endpoint_auth_methods_supported: list[str]
    scopes_supported: list[str]
    claims_supported: list[str]
    # OpenID4VCI 1.0 section 12.3: a wallet redeems a pre-authorized code without a client_id.
    pre_authorized_grant_anonymous_access_supported: bool = Field(
        alias="pre-authorized_grant_anonymous_access_supported"
    )


# The ``token_type`` an active token is answered with: an access token, a refresh token.
ACCESS_TYPE, REFRESH_TYPE = INTROSPECTED_TYPES = ("Bearer", "refresh_token")


class TokenIntrospection(BaseModel):
    """RFC 7662 §2.2: ``active`` alone for a token that is not; an active one's facts."""

    active: bool
    scope: str | None = sometimes_absent("Active tokens")
    client_id: str | None = sometimes_absent("Active tokens: the client it was issued to")
    username: str | None = sometimes_absent("Active tokens: the user's current username")
    token_type: str | None = sometimes_absent("Active tokens", values=INTROSPECTED_TYPES)
    exp: int | None = sometimes_absent("Active tokens")
    iat: int | None = sometimes_absent("Active tokens")
    nbf: int | None = sometimes_absent("Access tokens")
    sub: str | None = sometimes_absent("Active tokens: the user's id")
    aud: str | None = sometimes_absent("Access tokens: the client it was issued to")
    iss: str | None = sometimes_absent("Access tokens")
    jti: str | None = sometimes_absent("Access tokens")
    tenant: str | None = sometimes_absent("Access tokens: the tenant's name")
    role: str | None = sometimes_absent("Access tokens: the user's current role")
