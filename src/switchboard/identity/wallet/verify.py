"""Verifying a credential (a PID, or the tenant's own staff credential) presented as an SD-JWT
VC with key binding (RFC 9901, SD-JWT VC), with the ``sd-jwt`` reference library for the issuer
signature, the disclosures and the key binding JWT, and joserfc to read the claims the library
leaves to the verifier (``iat``, ``exp``, ``vct``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from joserfc.errors import JoseError
from joserfc.jws import extract_compact
from jwcrypto.common import JWException
from jwcrypto.jwk import JWK
from sd_jwt.verifier import SDJWTVerifier

PID_VCT = "urn:eudi:pid:1"
SD_JWT_VC_TYPES = ("dc+sd-jwt", "vc+sd-jwt")  # the current media type, and the earlier one
KB_MAX_AGE = 300  # seconds a key binding JWT may be old (and ahead: clock skew)


class Invalid(Exception):
    """The presentation is not accepted; the description says why (for the wallet's error)."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True, slots=True)
class Trust:
    """A key whose credentials of one type (``vct``) sign users in, and the claim of those
    credentials that names the local user."""

    kid: str
    jwk: dict[str, Any]
    vct: str
    username_claim: str


@dataclass(frozen=True, slots=True)
class Presented:
    issuer: Trust
    claims: dict[str, Any]


def _payload(compact: str) -> dict[str, Any]:
    try:
        claims = json.loads(extract_compact(compact.encode()).payload)
    except (JoseError, ValueError, UnicodeError):
        raise Invalid("a JWT of the presentation cannot be read") from None
    if not isinstance(claims, dict):
        raise Invalid("a JWT of the presentation has no claims")
    return claims


def _digests(value: Any) -> set[str]:
    """Every disclosure digest an object refers to (``_sd`` lists and ``{"...": digest}``)."""
    if isinstance(value, list):
        return set().union(*(_digests(item) for item in value))
    if not isinstance(value, dict):
        return set()
    found = {d for d in value.get("_sd", []) if isinstance(d, str)}
    if isinstance(value.get("..."), str) and len(value) == 1:
        found.add(value["..."])
    return found.union(*(_digests(v) for k, v in value.items() if k != "_sd"))


def _all_referenced(verifier: SDJWTVerifier) -> None:
    """RFC 9901 section 7.1: a disclosure nothing in the signed payload (or another disclosure)
    refers to is refused. The library decodes the disclosures; it does not check this."""
    decoded: dict[str, list[Any]] = verifier._hash_to_decoded_disclosure
    referenced = _digests(verifier._sd_jwt_payload)
    for disclosure in decoded.values():
        referenced |= _digests(disclosure[-1])
    if set(decoded) - referenced:
        raise Invalid("a disclosure is not part of the credential")


def _issuer_key(trusted: Sequence[Trust], header: dict[str, Any]) -> Trust:
    kid = header.get("kid")
    if kid is None and len(trusted) == 1:
        return trusted[0]
    for issuer in trusted:
        if kid is not None and issuer.kid == kid:
            return issuer
    raise Invalid("the credential is not signed by a trusted issuer")


def verify(
    presentation: str,
    *,
    trusted: Sequence[Trust],
    audience: str,
    nonce: str,
    now: int,
) -> Presented:
    """The trusted key and the disclosed claims of a presentation (``<sd-jwt>~<disclosures>~<kb>``)
    bound to this request: any failure raises :class:`Invalid`."""
    parts = presentation.split("~")
    if len(parts) < 2 or not parts[-1]:
        raise Invalid("the presentation has no key binding JWT")
    try:
        typ = extract_compact(parts[0].encode()).headers().get("typ")
    except (JoseError, ValueError, UnicodeError):
        raise Invalid("the credential cannot be read") from None
    if typ not in SD_JWT_VC_TYPES:
        raise Invalid("the credential is not an SD-JWT VC")
    chosen: list[Trust] = []

    def issuer_key(_iss: str, header: dict[str, Any]) -> JWK:
        issuer = _issuer_key(trusted, header)
        chosen.append(issuer)
        return JWK(**issuer.jwk)

    try:
        verifier = SDJWTVerifier(
            presentation, issuer_key, expected_aud=audience, expected_nonce=nonce
        )
        claims = verifier.get_verified_payload()
        _all_referenced(verifier)
    except Invalid:
        raise
    except (JWException, ValueError, KeyError, TypeError) as exc:
        raise Invalid(f"the presentation does not verify: {exc}") from None
    if not isinstance(claims, dict) or not chosen:
        raise Invalid("the presentation does not verify")
    if claims.get("vct") != chosen[0].vct:
        raise Invalid(
            f"the credential is not of the type its issuer is trusted for ({chosen[0].vct})"
        )
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp <= now:
        raise Invalid("the credential has expired (or has no expiry)")
    nbf = claims.get("nbf")
    if isinstance(nbf, int) and nbf > now + KB_MAX_AGE:
        raise Invalid("the credential is not valid yet")
    iat = _payload(parts[-1]).get("iat")
    if not isinstance(iat, int) or abs(now - iat) > KB_MAX_AGE:
        raise Invalid("the key binding JWT is not fresh")
    return Presented(issuer=chosen[0], claims=claims)
