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
    scopes_supported: list[str]
    claims_supported: list[str]
    # OpenID4VCI 1.0 section 12.3: a wallet redeems a pre-authorized code without a client_id.
    pre_authorized_grant_anonymous_access_supported: bool = Field(
        alias="pre-authorized_grant_anonymous_access_supported"
    )
