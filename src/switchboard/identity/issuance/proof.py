"""Checking a key proof of type ``jwt`` (OpenID4VCI 1.0 section 8.2.1) with joserfc: explicitly
typed, signed by the public key in its ``jwk`` header, for this credential issuer, fresh. The
``c_nonce`` is only read here; the service uses it up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry
from joserfc.jws import extract_compact

from switchboard.identity.errors import OAuthError

PROOF_TYP = "openid4vci-proof+jwt"
PROOF_ALGS = ("ES256", "ES384", "EdDSA")
MAX_AGE = 300  # seconds a proof may be old
MAX_AHEAD = 60  # seconds a proof's iat may be ahead of our clock
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


class InvalidProof(OAuthError):
    """A key proof is refused (``invalid_proof``, or ``invalid_nonce`` for a stale c_nonce)."""

    def __init__(self, description: str, *, code: str = "invalid_proof") -> None:
        super().__init__(code, description)


@dataclass(frozen=True, slots=True)
class Proof:
    holder_jwk: dict[str, Any]  # the public key the credential is bound to (``cnf.jwk``)
    nonce: str


def _header(proof: str) -> dict[str, Any]:
    try:
        header = extract_compact(proof.encode()).headers()
    except (JoseError, ValueError, UnicodeError):
        raise InvalidProof("the proof is not a JWT") from None
    return dict(header)


def _holder_key(header: dict[str, Any]) -> dict[str, Any]:
    if "kid" in header or "x5c" in header:
        raise InvalidProof("the proof must carry its key in the jwk header (no kid or x5c)")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict):
        raise InvalidProof("the proof has no jwk header")
    if PRIVATE_MEMBERS & set(jwk) or jwk.get("kty") not in ("EC", "OKP"):
        raise InvalidProof("the proof's jwk is not a public EC or OKP key")
    return jwk


def check(proof: str, *, audience: str, now: int) -> Proof:
    """The holder key and ``c_nonce`` of a key proof for ``audience``; anything else raises
    :class:`InvalidProof`."""
    header = _header(proof)
    if header.get("typ") != PROOF_TYP:
        raise InvalidProof(f"the proof's typ must be {PROOF_TYP}")
    alg = header.get("alg")
    if alg not in PROOF_ALGS:
        raise InvalidProof(f"the proof's alg must be one of {', '.join(PROOF_ALGS)}")
    jwk = _holder_key(header)
    try:
        key = JWKRegistry.import_key(jwk)
        token = jwt.decode(proof, key, algorithms=[str(alg)])
    except (JoseError, ValueError, TypeError):
        raise InvalidProof("the proof's signature does not verify with its jwk") from None
    claims = dict(token.claims)
    aud = claims.get("aud")
    if aud != audience and not (isinstance(aud, list) and aud == [audience]):
        raise InvalidProof("the proof's aud is not this credential issuer")
    iat = claims.get("iat")
    if not isinstance(iat, int) or isinstance(iat, bool):
        raise InvalidProof("the proof has no iat")
    if iat < now - MAX_AGE or iat > now + MAX_AHEAD:
        raise InvalidProof("the proof is not fresh (iat)")
    nonce = claims.get("nonce")
    if not isinstance(nonce, str) or not nonce:
        raise InvalidProof("the proof has no nonce (a c_nonce from the nonce endpoint)")
    return Proof(holder_jwk=dict(key.as_dict(private=False)), nonce=nonce)
