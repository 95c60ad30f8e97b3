"""A web app as a relying party of the identity provider: authorization code with PKCE.

The grant URI and the PKCE challenge come from authlib's OAuth 2.0 primitives, the ID token is
verified with joserfc against the provider's JWKS. Back-channel calls (discovery, token, JWKS)
go to the provider through ``backchannel``: in one process that is the root application itself,
so the app never depends on the host name resolving from the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.types import ASGIApp

from switchboard.kit.clock import Clock

SCOPE = "openid"
LEEWAY_SECONDS = 60


class SignInFailed(Exception):
    """The provider's answer does not prove a sign-in (bad state, code, token or claims)."""


@dataclass(frozen=True, slots=True)
class Login:
    url: str
    state: str
    nonce: str
    verifier: str


@dataclass(frozen=True, slots=True)
class Identity:
    """The verified claims of an ID token."""

    subject: str
    tenant: str
    role: str
    username: str
    id_token: str
    # The provider's browser session the sign-in came from (the ``sid`` claim; decision 0605).
    sid: str


class RelyingParty:
    """``client_id``: the app's registered client; ``mount``: where the app is served
    (its callback is ``<mount>/callback``)."""

    def __init__(
        self, *, client_id: str, mount: str, clock: Clock, backchannel: ASGIApp | None = None
    ) -> None:
        self.client_id = client_id
        self.mount = mount
        self._clock = clock
        self.backchannel = backchannel

    def _http(self, base: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.backchannel) if self.backchannel else None
        return httpx.AsyncClient(transport=transport, base_url=base, timeout=10)

    def redirect_uri(self, base: str) -> str:
        return f"{base}{self.mount}/callback"

    async def discover(self, base: str) -> dict[str, Any]:
        async with self._http(base) as http:
            response = await http.get("/oidc.ashx/.well-known/openid-configuration")
        if response.status_code != 200:
            raise SignInFailed("the identity provider does not serve this host")
        metadata: dict[str, Any] = response.json()
        return metadata

    async def start(self, base: str, *, fresh: bool = False) -> Login:
        """``fresh``: ask for the password even when the provider has a session (another user)."""
        metadata = await self.discover(base)
        endpoint = metadata.get("authorization_endpoint") or f"{metadata['issuer']}/authorize"
        state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
        url = prepare_grant_uri(
            endpoint,
            client_id=self.client_id,
            response_type="code",
            redirect_uri=self.redirect_uri(base),
            scope=SCOPE,
            state=state,
            nonce=nonce,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
            **({"prompt": "login"} if fresh else {}),
        )
        return Login(url=url, state=state, nonce=nonce, verifier=verifier)

    async def finish(self, base: str, *, code: str, verifier: str, nonce: str) -> Identity:
        metadata = await self.discover(base)
        async with self._http(base) as http:
            response = await http.post(
                metadata["token_endpoint"],
                data={
                    "grant_type": "authorization_code",
                    "client_id": self.client_id,
                    "code": code,
                    "redirect_uri": self.redirect_uri(base),
                    "code_verifier": verifier,
                },
            )
            if response.status_code != 200:
                raise SignInFailed("the identity provider refused the authorization code")
            id_token = response.json().get("id_token")
            if not isinstance(id_token, str):
                raise SignInFailed("the identity provider returned no ID token")
            keys = (await http.get(metadata["jwks_uri"])).json()
        return self._verify(id_token, keys=keys, issuer=metadata["issuer"], nonce=nonce)

    def _verify(self, id_token: str, *, keys: dict[str, Any], issuer: str, nonce: str) -> Identity:
        try:
            token = jwt.decode(
                id_token, KeySet.import_key_set(cast(Any, keys)), algorithms=["RS256"]
            )
        except (JoseError, ValueError) as exc:
            raise SignInFailed("the ID token's signature does not verify") from exc
        claims = token.claims
        now = int(self._clock.timestamp())
        checks = {
            "iss": claims.get("iss") == issuer,
            "aud": claims.get("aud") == self.client_id
            or (isinstance(claims.get("aud"), list) and self.client_id in claims["aud"]),
            "exp": isinstance(claims.get("exp"), int) and claims["exp"] + LEEWAY_SECONDS > now,
            "nonce": claims.get("nonce") == nonce,
        }
        failed = [name for name, ok in checks.items() if not ok]
        if failed:
            raise SignInFailed("the ID token's " + ", ".join(failed) + " claim is wrong")
        return Identity(
            subject=str(claims.get("sub", "")),
            tenant=str(claims.get("tenant", "")),
            role=str(claims.get("role", "")),
            username=str(claims.get("preferred_username", "")),
            id_token=id_token,
            sid=str(claims.get("sid", "")),
        )
