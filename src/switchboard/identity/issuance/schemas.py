"""The wire bodies of OpenID4VCI 1.0: snake_case, as the standard spells them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class CredentialIssuerMetadata(BaseModel):
    """Credential Issuer Metadata (OpenID4VCI 1.0 section 12.2.4)."""

    credential_issuer: str
    credential_endpoint: str
    nonce_endpoint: str
    display: list[dict[str, str]]
    credential_configurations_supported: dict[str, dict[str, Any]]


class JwtVcIssuerMetadata(BaseModel):
    """JWT VC Issuer Metadata (SD-JWT VC draft, section 4): where verifiers find the keys."""

    issuer: str
    jwks: dict[str, list[dict[str, Any]]]


class NonceResponse(BaseModel):
    c_nonce: str


class CredentialRequest(BaseModel):
    """A Credential Request (section 8.2): the configuration and one ``jwt`` key proof."""

    model_config = ConfigDict(extra="allow")

    credential_configuration_id: str | None = None
    credential_identifier: str | None = None
    proofs: dict[str, list[str]] | None = None
    credential_response_encryption: dict[str, Any] | None = None


class IssuedCredential(BaseModel):
    credential: str


class CredentialResponse(BaseModel):
    """An immediate Credential Response (section 8.3): the SD-JWT VC."""

    credentials: list[IssuedCredential]
