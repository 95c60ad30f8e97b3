"""Token Status List (draft-ietf-oauth-status-list-21): every staff credential names an entry
of a status list its issuer serves signed; revoking it (by command, or by disabling or deleting
its user) sets the entry, and the wallet sign-in refuses it. A PID's list is fetched from its
issuer over HTTP, cached for its ttl, and refused when it cannot be trusted.

The PID issuer's list server listens on loopback, which the operator opens to issuers here
(``SWITCHBOARD_ISSUER_ALLOW_PRIVATE``); a test parametrized with ``issuer_allow`` runs without.
"""

from __future__ import annotations

import asyncio
import base64
import json
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner, Result
from httpx import AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet
from sqlalchemy.pool import QueuePool
from starlette.applications import Starlette

from switchboard.cli import main
from switchboard.identity import accounts
from switchboard.identity.issuance import service as issuance
from switchboard.identity.issuance import status
from switchboard.identity.wallet import service as wallet
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.aioserve import serving
from tests.factories import TenantFixture
from tests.identity.issuance.steps import (
    answer,
    authorization,
    client,
    make_offer,
    start_wallet_sign_in,
)
from tests.identity.software_wallet import BASE, CLAIM, PID_ISSUER, SoftwareWallet, well_known

ISSUER = f"{BASE}/oidc.ashx"
LIST_TYP = "statuslist+jwt"
CANNOT_BE_FETCHED = "the credential's status list cannot be fetched"


@pytest.fixture
def issuer_allow() -> tuple[str, ...]:
    return ("127.0.0.0/8",)


@pytest.fixture
def settings(settings: Settings, issuer_allow: tuple[str, ...]) -> Settings:
    return settings.model_copy(update={"issuer_allow_private": issuer_allow})


def payload(compact: str) -> dict[str, Any]:
    part = compact.split("~")[0].split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return claims


def lst(revoked: list[int], *, size: int = 1024) -> str:
    """A one-bit list built here, apart from the product's code: entry i at bit i % 8 (least
    significant first) of byte i // 8, ZLIB, base64url."""
    raw = bytearray(size // 8)
    for idx in revoked:
        raw[idx // 8] |= 1 << (idx % 8)
    return base64.urlsafe_b64encode(zlib.compress(bytes(raw))).rstrip(b"=").decode()


def bit(value: str, idx: int) -> int:
    raw = zlib.decompress(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    return (raw[idx // 8] >> (idx % 8)) & 1


def test_the_drafts_example_list_reads_and_writes_the_same() -> None:
    # Section 4.1's example: 16 entries of one bit, "eNrbuRgAAhcBXQ".
    values = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
    assert [status.status_at("eNrbuRgAAhcBXQ", i) for i in range(16)] == values
    assert status.encode([i for i, v in enumerate(values) if v], size=16) == "eNrbuRgAAhcBXQ"
    with pytest.raises(status.InvalidList):
        status.status_at("eNrbuRgAAhcBXQ", 16)
    bomb = base64.urlsafe_b64encode(zlib.compress(bytes(1 << 21))).decode()
    with pytest.raises(status.InvalidList):
        status.status_at(bomb, 0)


async def run_cli(runner: CliRunner, *args: str) -> Result:
    """The CLI from a thread: it runs its own event loop."""
    return await asyncio.to_thread(runner.invoke, main, list(args))


async def sign_in(
    app: Starlette,
    device: AsyncClient,
    holder: SoftwareWallet,
    credential: str,
    *,
    credential_id: str = "staff",
    claim: str = "username",
) -> Response:
    """A wallet sign-in presenting ``credential``: the wallet's answer (200 when accepted, the
    browser then signed in)."""
    async with client(app) as other:
        started = await start_wallet_sign_in(other, device, authorization().url)
        presentation = holder.present(
            credential, nonce=started.request["nonce"], aud=started.request["client_id"],
            holder_key=holder.holder_key, claim=claim,
        )  # fmt: skip
        answered = await answer(device, started, credential_id, presentation)
        page = await other.get(started.status_url)
        assert page.status_code == (302 if answered.status_code == 200 else 403), page.text
    return answered


async def read_list(device: AsyncClient, uri: str) -> dict[str, Any]:
    """The status list token at ``uri``, checked against the issuer's published keys."""
    response = await device.get(uri)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/statuslist+jwt")
    assert response.headers["cache-control"] == "no-store"  # a verifier caches by ``ttl``
    keys = (await device.get(well_known(ISSUER, "jwt-vc-issuer"))).json()["jwks"]
    token = jwt.decode(response.text, KeySet.import_key_set(keys), algorithms=["ES256"])
    assert token.header["typ"] == LIST_TYP
    assert token.claims["sub"] == uri
    assert token.claims["status_list"]["bits"] == 1
    assert token.claims["ttl"] > 0
    assert token.claims["exp"] > token.claims["iat"]
    return dict(token.claims)


async def test_a_revoked_staff_credential_is_refused_at_sign_in(
    app: Starlette,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    cli: CliRunner,
) -> None:
    offer = await make_offer(browser, username="power")
    credential = await holder.receive(device, offer.link, tx_code=offer.tx_code)
    entry = payload(credential)["status"]["status_list"]
    assert entry["uri"].startswith(f"{ISSUER}/status/")
    claims = await read_list(device, entry["uri"])
    assert bit(claims["status_list"]["lst"], entry["idx"]) == 0
    assert (await sign_in(app, device, holder, credential)).status_code == 200

    listed = await run_cli(cli, "wallet", "credential", "list", "--tenant", "acme", "--json")
    assert listed.exit_code == 0, listed.output
    view = json.loads(listed.output)
    assert view["username"] == "power"
    assert view["idx"] == entry["idx"]
    assert view["revokedAt"] is None
    revoked = await run_cli(
        cli, "wallet", "credential", "revoke", str(view["id"]), "--tenant", "acme"
    )
    assert revoked.exit_code == 0, revoked.output
    assert revoked.output == f"revoked\t{view['id']}\n"
    again = await run_cli(
        cli, "wallet", "credential", "revoke", str(view["id"]), "--tenant", "acme"
    )
    assert again.exit_code != 0
    assert "revoked already" in again.output

    claims = await read_list(device, entry["uri"])
    assert bit(claims["status_list"]["lst"], entry["idx"]) == 1
    refused = await sign_in(app, device, holder, credential)
    assert refused.status_code == 400
    assert refused.json()["error_description"] == "the credential has been revoked"


async def test_deleting_a_user_revokes_its_credentials(
    app: Starlette,
    runtime: Runtime,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    acme: TenantFixture,
) -> None:
    offer = await make_offer(browser, username="user")
    credential = await holder.receive(device, offer.link, tx_code=offer.tx_code)
    entry = payload(credential)["status"]["status_list"]
    async with runtime.db.transaction() as session:
        await accounts.delete_user(session, tenant_id=acme.id, username="user", clock=runtime.clock)
    claims = await read_list(device, entry["uri"])
    assert bit(claims["status_list"]["lst"], entry["idx"]) == 1
    async with runtime.db.transaction() as session:
        [(row, _list_id)] = await status.credentials(
            session, tenant=await tenants.require_by_name(session, "acme")
        )
    assert row.user_id is None
    assert row.revoked_reason == "user deleted"


async def test_a_list_is_served_on_its_tenants_host_only(
    app: Starlette,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    globex: TenantFixture,
) -> None:
    offer = await make_offer(browser)
    credential = await holder.receive(device, offer.link, tx_code=offer.tx_code)
    path = payload(credential)["status"]["status_list"]["uri"].removeprefix(BASE)
    assert (await device.get(path)).status_code == 200
    async with client(app, f"http://{globex.host}") as other:
        assert (await other.get(path)).status_code == 404
    assert (await device.get("/oidc.ashx/status/unknown")).status_code == 404


# A PID issuer's list, over HTTP ---------------------------------------------------------------


@dataclass
class ListServer:
    """The PID issuer's web server: the list tokens it serves by path, and what was fetched."""

    base: str = ""
    tokens: dict[str, str] = field(default_factory=dict)
    fetches: list[str] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)  # set when a fetch arrives
    gate: asyncio.Event | None = None  # when set, a fetch is answered once it opens

    def uri(self, name: str) -> str:
        return f"{self.base}/{name}"


@pytest.fixture
async def lists() -> AsyncIterator[ListServer]:
    server = ListServer()

    async def serve(request: web.Request) -> web.Response:
        server.fetches.append(request.path)
        server.asked.set()
        if server.gate is not None:
            await server.gate.wait()
        token = server.tokens.get(request.path.lstrip("/"))
        if token is None:
            return web.Response(status=503)
        return web.Response(text=token, content_type="application/statuslist+jwt")

    application = web.Application()
    application.router.add_get("/{name}", serve)
    async with serving(application) as base:
        server.base = base
        yield server
        if server.gate is not None:
            server.gate.set()


def signed_list(
    key: ECKey, uri: str, revoked: list[int], *, now: int, ttl: int = 60, kid: str = "pid"
) -> str:
    claims = {
        "iss": PID_ISSUER, "sub": uri, "iat": now, "exp": now + 3600, "ttl": ttl,
        "status_list": {"bits": 1, "lst": lst(revoked)},
    }  # fmt: skip
    return jwt.encode({"alg": "ES256", "kid": kid, "typ": LIST_TYP}, claims, key)


@pytest.fixture
async def pid_issuer(app: Starlette, runtime: Runtime, holder: SoftwareWallet) -> ECKey:
    """acme trusts the software wallet's PID issuer; its private key, to sign its lists."""
    async with runtime.db.transaction() as session:
        await wallet.add_issuer(
            session, tenant=await tenants.require_by_name(session, "acme"), name="pid",
            jwk=holder.issuer_key.export_public(), username_claim=CLAIM, now=runtime.clock.now(),
        )  # fmt: skip
    return ECKey.import_key(holder.issuer_key.export_private(as_dict=True))


def pid(holder: SoftwareWallet, uri: str, idx: int) -> str:
    return holder.issue(username="admin", status={"status_list": {"idx": idx, "uri": uri}})


async def test_a_pids_list_is_fetched_verified_and_cached_for_its_ttl(
    app: Starlette,
    device: AsyncClient,
    holder: SoftwareWallet,
    pid_issuer: ECKey,
    lists: ListServer,
    clock: ManualClock,
) -> None:
    now = int(clock.now().timestamp())
    uri = lists.uri("pids")
    lists.tokens["pids"] = signed_list(pid_issuer, uri, [7], now=now, kid=holder.issuer_key.kid)
    good, revoked = pid(holder, uri, 3), pid(holder, uri, 7)
    assert (
        await sign_in(app, device, holder, good, credential_id="pid", claim=CLAIM)
    ).status_code == 200
    refused = await sign_in(app, device, holder, revoked, credential_id="pid", claim=CLAIM)
    assert refused.status_code == 400
    assert refused.json()["error_description"] == "the credential has been revoked"
    assert lists.fetches == ["/pids"]  # the second check used the cached list
    # The issuer revokes entry 3; the verifier sees it once the list's ttl (60 s) has passed.
    lists.tokens["pids"] = signed_list(pid_issuer, uri, [3, 7], now=now, kid=holder.issuer_key.kid)
    assert (
        await sign_in(app, device, holder, good, credential_id="pid", claim=CLAIM)
    ).status_code == 200
    assert lists.fetches == ["/pids"]
    clock.advance(61)
    refused = await sign_in(app, device, holder, good, credential_id="pid", claim=CLAIM)
    assert refused.status_code == 400
    assert lists.fetches == ["/pids", "/pids"]


async def test_a_list_that_cannot_be_trusted_refuses_the_credential(
    app: Starlette,
    device: AsyncClient,
    browser: AsyncClient,
    holder: SoftwareWallet,
    pid_issuer: ECKey,
    lists: ListServer,
    clock: ManualClock,
) -> None:
    now = int(clock.now().timestamp())
    kid = holder.issuer_key.kid
    # Tampered: entry 7 cleared in the payload, the signature kept.
    honest = signed_list(pid_issuer, lists.uri("tampered"), [7], now=now, kid=kid)
    head, _body, signature = honest.split(".")
    claims = payload(honest)
    claims["status_list"]["lst"] = lst([])
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    lists.tokens["tampered"] = f"{head}.{forged}.{signature}"
    # Signed by a key that is not the PID issuer's.
    stranger = ECKey.generate_key("P-256", private=True)
    lists.tokens["stranger"] = signed_list(stranger, lists.uri("stranger"), [], now=now, kid=kid)
    # Another issuer's list: the tenant's own staff list, served at the PID's list URI.
    offer = await make_offer(browser)
    staff = await holder.receive(device, offer.link, tx_code=offer.tx_code)
    own_uri = payload(staff)["status"]["status_list"]["uri"]
    lists.tokens["other-issuer"] = (await device.get(own_uri)).text
    # For another list: signed right, but its sub names another URI.
    lists.tokens["elsewhere"] = signed_list(pid_issuer, lists.uri("pids"), [], now=now, kid=kid)
    # Unreachable: the issuer's server answers 503 (fail closed).
    expected = {
        "tampered": "not signed by the credential's issuer",
        "stranger": "not signed by the credential's issuer",
        "other-issuer": "not signed by the credential's issuer",
        "elsewhere": "for another list",
        "down": CANNOT_BE_FETCHED,
    }
    for name, why in expected.items():
        credential = pid(holder, lists.uri(name), 7)
        refused = await sign_in(app, device, holder, credential, credential_id="pid", claim=CLAIM)
        assert refused.status_code == 400, name
        assert why in refused.json()["error_description"], name
    # what the issuer's server answered (503) is not told
    assert refused.json()["error_description"] == CANNOT_BE_FETCHED


@pytest.mark.parametrize("issuer_allow", [()])
async def test_a_list_at_a_private_address_is_never_fetched(
    app: Starlette,
    device: AsyncClient,
    holder: SoftwareWallet,
    pid_issuer: ECKey,
    lists: ListServer,
    clock: ManualClock,
) -> None:
    """Without the operator's allowance, a PID naming a list at a loopback, private, link-local
    or metadata address (by IP or by a name resolving to one) is refused unfetched."""
    now = int(clock.now().timestamp())
    uri = lists.uri("pids")
    lists.tokens["pids"] = signed_list(pid_issuer, uri, [], now=now, kid=holder.issuer_key.kid)
    for named in (
        uri,  # http://127.0.0.1:<port>/pids, a list that would verify
        uri.replace("127.0.0.1", "localhost"),
        "http://169.254.169.254/latest/meta-data/pids",
        "http://192.168.0.1/pids",
    ):
        credential = pid(holder, named, 3)
        refused = await sign_in(app, device, holder, credential, credential_id="pid", claim=CLAIM)
        assert refused.status_code == 400, named
        assert refused.json()["error_description"] == CANNOT_BE_FETCHED, named
    assert lists.fetches == []


async def test_a_staff_credential_naming_another_issuers_list_is_refused(
    app: Starlette,
    runtime: Runtime,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    globex: TenantFixture,
) -> None:
    """The tenant's own credentials must name its own lists: a staff credential (signed by the
    tenant's issuer key) pointing at globex's list, or at an unknown list, is refused."""
    offer = await make_offer(browser)
    credential = await holder.receive(device, offer.link, tx_code=offer.tx_code)
    claims = payload(credential)
    _issuer_jwt, *rest = credential.split("~")
    async with runtime.db.transaction() as session:
        acme = await tenants.require_by_name(session, "acme")
        kid, private = await issuance.signing_key(
            session, tenant=acme, box=runtime.box, now=runtime.clock.now()
        )
    header = {"alg": "ES256", "typ": "dc+sd-jwt", "kid": kid}
    list_id = claims["status"]["status_list"]["uri"].rsplit("/", 1)[1]
    for uri in (f"http://{globex.host}/oidc.ashx/status/{list_id}", f"{ISSUER}/status/unknown"):
        claims["status"]["status_list"]["uri"] = uri
        forged = jwt.encode(header, claims, ECKey.import_key(private), algorithms=["ES256"])
        refused = await sign_in(app, device, holder, "~".join([forged, *rest]))
        assert refused.status_code == 400, uri
        assert refused.json()["error_description"] in (
            "the credential's status list is not its issuer's",
            "the credential's status list entry is unknown",
        )


async def test_a_slow_list_holds_no_transaction_and_no_other_tenants_write(
    app: Starlette,
    runtime: Runtime,
    device: AsyncClient,
    holder: SoftwareWallet,
    pid_issuer: ECKey,
    lists: ListServer,
    clock: ManualClock,
    globex: TenantFixture,
) -> None:
    """The wallet's answer names a PID's list whose server answers slowly: the list is fetched
    before the answer's transaction opens, so no database connection is held meanwhile and
    another tenant's write (a password grant) completes without waiting for it."""
    now = int(clock.now().timestamp())
    uri = lists.uri("pids")
    lists.tokens["pids"] = signed_list(pid_issuer, uri, [], now=now, kid=holder.issuer_key.kid)
    lists.gate = asyncio.Event()
    async with client(app) as browser:
        started = await start_wallet_sign_in(browser, device, authorization().url)
        presentation = holder.present(
            pid(holder, uri, 3), nonce=started.request["nonce"], aud=started.request["client_id"],
            holder_key=holder.holder_key, claim=CLAIM,
        )  # fmt: skip
        pending = asyncio.create_task(answer(device, started, "pid", presentation))
        await asyncio.wait_for(lists.asked.wait(), timeout=30)
        pool = runtime.db.engine.pool
        assert isinstance(pool, QueuePool)
        assert pool.checkedout() == 0
        assert await asyncio.wait_for(globex.token(browser), timeout=30)
        assert not pending.done()  # the other tenant's write did not wait for the fetch
        lists.gate.set()
        answered = await pending
        assert answered.status_code == 200, answered.text
        assert (await browser.get(started.status_url)).status_code == 302  # signed in
    assert lists.fetches == ["/pids"]  # the check used the list fetched before it
