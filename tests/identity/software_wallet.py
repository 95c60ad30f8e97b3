"""A software wallet for the tests: holder keys, a PID from a test issuer key, presentations
with key binding (the ``sd-jwt`` library), and the receiving side of OpenID4VCI 1.0 (a credential
offer redeemed, a c_nonce fetched, a key proof sent), all over HTTP."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

from httpx import AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import ECKey
from jwcrypto.jwk import JWK
from sd_jwt.common import SDObj
from sd_jwt.holder import SDJWTHolder
from sd_jwt.issuer import SDJWTIssuer

from tests.conftest import PRIMARY_HOST

BASE = f"http://{PRIMARY_HOST}"
REDIRECT_URI = f"{BASE}/admin/callback"
CLAIM = "personal_administrative_number"
PID_ISSUER = "https://pid-issuer.example"
PRE_AUTHORIZED_GRANT = "urn:ietf:params:oauth:grant-type:pre-authorized_code"
PROOF_TYP = "openid4vci-proof+jwt"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def links(page: Response) -> list[str]:
    parser = _Links()
    parser.feed(page.text)
    return [urljoin(str(page.url), href) for href in parser.hrefs]


def authorize_url() -> str:
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code", "client_id": "console", "redirect_uri": REDIRECT_URI,
        "scope": "openid", "state": "st-1", "code_challenge_method": "S256",
        "code_challenge": challenge.rstrip(b"=").decode(),
    }  # fmt: skip
    return f"/oidc.ashx/authorize?{urlencode(query)}"


def well_known(identifier: str, name: str) -> str:
    """The metadata URL of an issuer identifier: the well-known string inserted before the path
    (OpenID4VCI 1.0 section 12.2.2, RFC 8414 section 3)."""
    parts = urlsplit(identifier)
    return f"{parts.scheme}://{parts.netloc}/.well-known/{name}{parts.path}"


def credential_offer(link: str) -> dict[str, Any]:
    """The offer of an ``openid-credential-offer://?credential_offer=...`` link (by value)."""
    parts = urlsplit(link)
    assert parts.scheme == "openid-credential-offer", link
    offer: dict[str, Any] = json.loads(parse_qs(parts.query)["credential_offer"][0])
    return offer


@dataclass
class Issuance:
    """What a wallet learnt from an offer: the issuer's metadata and the token endpoint."""

    offer: dict[str, Any]
    metadata: dict[str, Any]
    token_endpoint: str

    @property
    def code(self) -> str:
        return str(self.offer["grants"][PRE_AUTHORIZED_GRANT]["pre-authorized_code"])


@dataclass
class SoftwareWallet:
    """A holder with a PID from an issuer key: presents it to a verifier's request, and takes
    credentials offered by a credential issuer."""

    issuer_key: JWK
    holder_key: JWK
    now: int

    def issue(
        self,
        *,
        username: str = "admin",
        expires_in: int = 3600,
        status: dict[str, Any] | None = None,
    ) -> str:
        claims: dict[Any, Any] = {
            "iss": PID_ISSUER,
            "vct": "urn:eudi:pid:1",
            "iat": self.now,
            "exp": self.now + expires_in,
            SDObj("given_name"): "Ada",
            SDObj("family_name"): "Lovelace",
            SDObj(CLAIM): username,
        }
        if status is not None:
            claims["status"] = status
        issuer = SDJWTIssuer(
            claims, self.issuer_key, self.holder_key,
            extra_header_parameters={"typ": "dc+sd-jwt", "kid": self.issuer_key.kid},
        )  # fmt: skip
        return str(issuer.sd_jwt_issuance)

    @staticmethod
    def present(
        credential: str, *, nonce: str, aud: str, holder_key: JWK, claim: str = CLAIM
    ) -> str:
        holder = SDJWTHolder(credential)
        holder.create_presentation({claim: True}, nonce, aud, holder_key)
        return str(holder.sd_jwt_presentation)

    # Receiving a credential (OpenID4VCI 1.0) -----------------------------------------------

    async def discover(self, http: AsyncClient, link: str) -> Issuance:
        offer = credential_offer(link)
        identifier = offer["credential_issuer"]
        metadata = await http.get(well_known(identifier, "openid-credential-issuer"))
        assert metadata.status_code == 200, metadata.text
        assert metadata.json()["credential_issuer"] == identifier
        server = await http.get(well_known(identifier, "oauth-authorization-server"))
        assert server.status_code == 200, server.text
        assert PRE_AUTHORIZED_GRANT in server.json()["grant_types_supported"]
        return Issuance(offer, metadata.json(), server.json()["token_endpoint"])

    async def redeem(
        self, http: AsyncClient, issuance: Issuance, *, tx_code: str | None = None
    ) -> Response:
        form = {"grant_type": PRE_AUTHORIZED_GRANT, "pre-authorized_code": issuance.code}
        if tx_code is not None:
            form["tx_code"] = tx_code
        return await http.post(issuance.token_endpoint, data=form)

    async def nonce(self, http: AsyncClient, issuance: Issuance) -> str:
        response = await http.post(issuance.metadata["nonce_endpoint"])
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        return str(response.json()["c_nonce"])

    def proof(
        self, *, aud: str, nonce: str | None, typ: str = PROOF_TYP, iat: int | None = None
    ) -> str:
        """A key proof of type jwt, signed by the holder key carried in its ``jwk`` header."""
        key = ECKey.import_key(self.holder_key.export_private(as_dict=True))
        header = {"alg": "ES256", "typ": typ, "jwk": self.holder_key.export_public(as_dict=True)}
        claims: dict[str, Any] = {"aud": aud, "iat": self.now if iat is None else iat}
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(header, claims, key, algorithms=["ES256"])

    async def request_credential(
        self, http: AsyncClient, issuance: Issuance, *, token: str, proof: str
    ) -> Response:
        body = {"credential_configuration_id": "staff", "proofs": {"jwt": [proof]}}
        headers = {"Authorization": f"Bearer {token}"}
        return await http.post(issuance.metadata["credential_endpoint"], json=body, headers=headers)

    async def receive(self, http: AsyncClient, link: str, *, tx_code: str | None = None) -> str:
        """Take an offer through: the pre-authorized code redeemed, a c_nonce fetched, the
        key proof sent; the credential issued."""
        issuance = await self.discover(http, link)
        token = await self.redeem(http, issuance, tx_code=tx_code)
        assert token.status_code == 200, token.text
        nonce = await self.nonce(http, issuance)
        proof = self.proof(aud=issuance.offer["credential_issuer"], nonce=nonce)
        answer = await self.request_credential(
            http, issuance, token=token.json()["access_token"], proof=proof
        )
        assert answer.status_code == 200, answer.text
        [issued] = answer.json()["credentials"]
        return str(issued["credential"])
