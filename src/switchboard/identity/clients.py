"""Registered OIDC clients: their redirect and post-logout URIs, their optional secret."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import OidcClient, OidcClientUri
from switchboard.identity.errors import OAuthError
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import constant_time_equals, random_token, sha256_hex
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.tenants.models import Tenant
from switchboard.tenants.repository import domains_of

REDIRECT = "redirect"
POST_LOGOUT = "post_logout"
MAX_URI = 2048
CONSOLE_CLIENT = "console"
LINEN_CLIENT = "linen"
# The first-party web apps' clients and where they are mounted (the console's first).
WEB_MOUNTS = {CONSOLE_CLIENT: "/admin", LINEN_CLIENT: "/app"}


def check_uri(uri: str) -> str:
    """An absolute http(s) URI without fragment: the only kind codes are sent to."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError:
        raise BadRequest(f"{uri!r} is not an absolute http(s) URI without fragment") from None
    if (
        len(uri) > MAX_URI
        or parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.fragment
        or "#" in uri
        or any(c.isspace() or ord(c) < 32 for c in uri)
    ):
        raise BadRequest(f"{uri!r} is not an absolute http(s) URI without fragment")
    return uri


async def find_client(
    session: AsyncSession, *, tenant_id: int, client_id: str
) -> OidcClient | None:
    stmt = select(OidcClient).where(
        OidcClient.tenant_id == tenant_id, OidcClient.client_id == client_id
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def require_client(session: AsyncSession, *, tenant_id: int, client_id: str) -> OidcClient:
    client = await find_client(session, tenant_id=tenant_id, client_id=client_id)
    if client is None:
        raise NotFound(f"no client {client_id!r} in this tenant")
    return client


async def create_client(
    session: AsyncSession,
    *,
    tenant: Tenant,
    client_id: str,
    clock: Clock,
    redirect_uris: Sequence[str] = (),
    post_logout_redirect_uris: Sequence[str] = (),
) -> OidcClient:
    if not client_id or len(client_id) > 128 or any(c.isspace() for c in client_id):
        raise BadRequest("client_id must be 1-128 characters without spaces")
    if await find_client(session, tenant_id=tenant.id, client_id=client_id) is not None:
        raise Conflict(f"client {client_id!r} already exists", code="duplicate_client")
    client = OidcClient(tenant_id=tenant.id, client_id=client_id, created_at=clock.now())
    session.add(client)
    await session.flush()
    await set_uris(session, client, REDIRECT, redirect_uris)
    await set_uris(session, client, POST_LOGOUT, post_logout_redirect_uris)
    return client


async def set_uris(
    session: AsyncSession, client: OidcClient, kind: str, uris: Sequence[str]
) -> list[str]:
    """Replace the client's URIs of one kind."""
    clean = list(dict.fromkeys(check_uri(uri) for uri in uris))
    await session.execute(
        delete(OidcClientUri).where(
            OidcClientUri.client_pk == client.id, OidcClientUri.kind == kind
        )
    )
    for uri in clean:
        session.add(OidcClientUri(client_pk=client.id, kind=kind, uri=uri))
    await session.flush()
    return clean


async def uris_of(session: AsyncSession, client: OidcClient, kind: str) -> list[str]:
    stmt = (
        select(OidcClientUri.uri)
        .where(OidcClientUri.client_pk == client.id, OidcClientUri.kind == kind)
        .order_by(OidcClientUri.id)
    )
    return list((await session.execute(stmt)).scalars())


async def is_registered(session: AsyncSession, client: OidcClient, kind: str, uri: str) -> bool:
    """Exact, case-sensitive string comparison (OAuth 2.0 Security BCP section 4.1)."""
    return uri in await uris_of(session, client, kind)


async def list_clients(session: AsyncSession, *, tenant_id: int) -> list[OidcClient]:
    stmt = select(OidcClient).where(OidcClient.tenant_id == tenant_id).order_by(OidcClient.id)
    return list((await session.execute(stmt)).scalars())


def new_secret(client: OidcClient) -> str:
    """Make the client confidential with a fresh secret, returned once (only its hash is kept)."""
    secret = random_token("cs_", 32)
    client.secret_hash = sha256_hex(secret)
    return secret


async def ensure_web_client(
    session: AsyncSession,
    *,
    tenant: Tenant,
    base_urls: Sequence[str],
    clock: Clock,
    client_id: str,
    mount: str,
) -> OidcClient:
    """A first-party public client of a web app mounted at ``mount``: code + PKCE back to
    ``<mount>/callback``, sign-out back to ``<mount>/``, on each of ``base_urls``. A client
    that exists is left as it is (its operator may have changed its addresses)."""
    existing = await find_client(session, tenant_id=tenant.id, client_id=client_id)
    if existing is not None:
        return existing
    return await create_client(
        session,
        tenant=tenant,
        client_id=client_id,
        clock=clock,
        redirect_uris=[f"{base}{mount}/callback" for base in base_urls],
        post_logout_redirect_uris=[f"{base}{mount}/" for base in base_urls],
    )


async def ensure_console_client(
    session: AsyncSession, *, tenant: Tenant, base_url: str, clock: Clock
) -> OidcClient:
    """The operator console's client (``/admin/``) on one address."""
    return await ensure_web_client(
        session, tenant=tenant, base_urls=[base_url], clock=clock, client_id=CONSOLE_CLIENT,
        mount="/admin",
    )  # fmt: skip


async def ensure_web_clients(
    session: AsyncSession, *, tenant: Tenant, scheme: str, clock: Clock
) -> OidcClient:
    """The operator console's client (``/admin/``) and the linen web app's (``/app/``), with
    their callback and sign-out addresses on every domain the tenant serves, so that signing
    in works on whichever of them the browser opened; returns the console's."""
    bases = [f"{scheme}://{domain}" for domain in await domains_of(session, tenant.id)]
    made = [
        await ensure_web_client(
            session, tenant=tenant, base_urls=bases, clock=clock, client_id=id_, mount=mount
        )
        for id_, mount in WEB_MOUNTS.items()
    ]
    return made[0]


async def follow_domains(
    session: AsyncSession,
    *,
    tenant: Tenant,
    scheme: str,
    added: Sequence[str] = (),
    removed: Sequence[str] = (),
) -> None:
    """The web apps' clients (console and linen) after the tenant's domains changed: their
    callback and sign-out addresses on the ``added`` domains are registered, those on the
    ``removed`` ones dropped; the operator's other addresses stay."""
    for client_id, mount in WEB_MOUNTS.items():
        client = await find_client(session, tenant_id=tenant.id, client_id=client_id)
        if client is None:
            continue
        for kind, path in ((REDIRECT, f"{mount}/callback"), (POST_LOGOUT, f"{mount}/")):
            gone = {f"{scheme}://{domain}{path}" for domain in removed}
            kept = [uri for uri in await uris_of(session, client, kind) if uri not in gone]
            await set_uris(
                session, client, kind, [*kept, *(f"{scheme}://{d}{path}" for d in added)]
            )


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """``client_id`` and secret of an ``Authorization: Basic`` header (RFC 6749 section 2.3.1)."""
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        raw = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_client", "malformed Basic credentials", status=401) from None
    client_id, sep, secret = raw.partition(":")
    if not sep:
        raise OAuthError("invalid_client", "malformed Basic credentials", status=401)
    return unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " "))


async def authenticate_client(
    session: AsyncSession,
    *,
    tenant: Tenant,
    client_id: str | None,
    client_secret: str | None,
    authorization: str | None,
) -> OidcClient:
    """The calling client. A confidential one must present its secret (Basic or form, not both:
    RFC 6749 §2.3); a public one is identified by ``client_id`` alone, and one that presents a
    secret anyway is refused, as any failed authentication is."""
    basic = basic_credentials(authorization)
    if basic is not None:
        if client_id is not None and client_id != basic[0]:
            raise OAuthError("invalid_request", "client_id differs from the Basic credentials")
        if client_secret is not None:
            raise OAuthError(
                "invalid_request", "the client authenticated twice (Basic and client_secret)"
            )
        client_id, client_secret = basic[0], basic[1] or None
    if not client_id:
        raise OAuthError("invalid_request", "client_id is required")
    client = await find_client(session, tenant_id=tenant.id, client_id=client_id)
    if client is None:
        raise OAuthError("invalid_client", "unknown client", status=401)
    if client.secret_hash is None:
        if client_secret:  # a secret this client does not have
            raise OAuthError("invalid_client", "client authentication failed", status=401)
    elif not (
        client_secret and constant_time_equals(sha256_hex(client_secret), client.secret_hash)
    ):
        raise OAuthError("invalid_client", "client authentication failed", status=401)
    return client
