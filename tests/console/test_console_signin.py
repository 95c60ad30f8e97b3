"""The console's sign-in page: the tenant's external OpenID Connect providers (add, edit,
disable, enable, delete) and its trusted PID issuers (add, remove), over HTTP, for admins of
that tenant only. A client secret is entered as its value, stored sealed and never shown back;
naming a variable or a file the server would read it from is the operator's alone."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from httpx import AsyncClient
from jwcrypto.jwk import JWK
from sqlalchemy import update

from switchboard.identity import service as identity
from switchboard.identity.federation import repository as providers
from switchboard.identity.federation import service as federation
from switchboard.identity.federation.models import ExternalProvider
from switchboard.identity.federation.secrets import ClientSecrets, SecretReference
from switchboard.identity.issuance import status
from switchboard.identity.wallet import repository as issuers
from switchboard.kit.errors import BadRequest
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.console.signin import csrf_of, sign_in
from tests.factories import TenantFixture

PARTNERS_ENV = "SWITCHBOARD_FEDERATION_SECRET_ACME_PARTNERS"
PROVIDER = {
    "name": "partners",
    "display_name": "Partners",
    "issuer": "https://login.partners.example/realms/staff",
    "client_id": "acme-idp",
    "secret": "value",
    "secret_value": "cs-entered-in-the-console",
    "scopes": "openid email",
    "username_claim": "preferred_username",
    "role_claim": "roles",
    "default_role": "user",
    "allowed_domains": "partners.example, staff.example",
    "first_login": "link-by-verified-email",
}


async def _signed_in(client: AsyncClient) -> str:
    assert (await sign_in(client)).status_code == 303
    page = await client.get("/admin/sign-in")
    assert page.status_code == 200
    title = page.text.split("<title>")[1].split("</title>")[0]
    assert "<" not in title  # the head holds the title only, the tables are in the body
    assert page.text.count('id="credentials"') == 1
    return csrf_of(page.text)


async def test_providers_are_added_edited_switched_and_deleted(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    client = browsers["acme"]
    csrf = await _signed_in(client)
    added = await client.post("/admin/sign-in/providers", data={**PROVIDER, "csrf": csrf})
    assert added.status_code == 303
    assert added.headers["location"] == "/admin/sign-in?notice=created"
    page = await client.get(added.headers["location"])
    assert 'data-provider="partners"' in page.text
    assert page.text.count('class="notice"') == 1  # said once, by the layout
    assert "set (stored sealed)" in page.text
    assert "cs-entered-in-the-console" not in page.text
    async with runtime.db.transaction(read_only=True) as session:
        row = await providers.find_provider(session, tenant_id=acme.id, name="partners")
    assert row is not None
    assert row.secret_source is None
    assert row.secret_sealed is not None
    assert "cs-entered-in-the-console" not in row.secret_sealed
    assert runtime.box.open(row.secret_sealed) == "cs-entered-in-the-console"
    sealed = row.secret_sealed
    assert row.allowed_domains == ["partners.example", "staff.example"]
    assert row.first_login == "link-by-verified-email"

    edit = await client.get("/admin/sign-in/providers/partners")
    assert edit.status_code == 200
    assert "cs-entered-in-the-console" not in edit.text
    assert 'value="acme-idp"' in edit.text
    changed = {**PROVIDER, "client_id": "acme-idp-2", "secret": "keep", "secret_value": ""}
    saved = await client.post("/admin/sign-in/providers/partners", data={**changed, "csrf": csrf})
    assert saved.status_code == 303
    async with runtime.db.transaction(read_only=True) as session:
        row = await providers.find_provider(session, tenant_id=acme.id, name="partners")
    assert row is not None
    assert row.client_id == "acme-idp-2"
    assert row.secret_sealed == sealed  # kept
    public = {**changed, "secret": "none"}
    await client.post("/admin/sign-in/providers/partners", data={**public, "csrf": csrf})
    assert "none (public client)" in (await client.get("/admin/sign-in")).text
    bad = await client.post(
        "/admin/sign-in/providers/partners",
        data={**changed, "issuer": "http://x.example", "csrf": csrf},
    )
    assert bad.status_code == 400
    assert "https" in bad.text

    off = await client.post("/admin/sign-in/providers/partners/disable", data={"csrf": csrf})
    assert off.status_code == 303
    async with runtime.db.transaction(read_only=True) as session:
        row = await providers.find_provider(session, tenant_id=acme.id, name="partners")
    assert row is not None
    assert not row.enabled
    await client.post("/admin/sign-in/providers/partners/enable", data={"csrf": csrf})
    deleted = await client.post("/admin/sign-in/providers/partners/delete", data={"csrf": csrf})
    assert deleted.status_code == 303
    async with runtime.db.transaction(read_only=True) as session:
        assert await providers.list_providers(session, tenant_id=acme.id) == []
    missing = await client.post("/admin/sign-in/providers/partners/delete", data={"csrf": csrf})
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("kind", "where"),
    [("file", "/proc/self/environ"), ("env", "SWITCHBOARD_SECRET_KEY"), ("env", PARTNERS_ENV)],
)
async def test_an_admin_cannot_name_a_variable_or_a_file_to_read(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture, kind: str, where: str
) -> None:
    """The server would read it and send it to the token endpoint of an issuer the admin
    chose: not even a variable inside the operator's boundary (another tenant's secret)."""
    client = browsers["acme"]
    csrf = await _signed_in(client)
    form = {**PROVIDER, "secret": kind, "secret_where": where, "csrf": csrf}
    refused = await client.post("/admin/sign-in/providers", data=form)
    assert refused.status_code == 400, refused.text
    async with runtime.db.transaction(read_only=True) as session:
        assert await providers.list_providers(session, tenant_id=acme.id) == []
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        spec = federation.ProviderSpec(
            name="partners", issuer=PROVIDER["issuer"], client_id="acme-idp",
            secret=SecretReference(f"{kind}:{where}"),
        )  # fmt: skip
        with pytest.raises(BadRequest, match="only the operator"):
            await federation.add_provider(
                session, tenant=tenant, spec=spec, client_secrets=ClientSecrets.of(runtime),
                now=runtime.clock.now(),
            )  # fmt: skip


async def test_the_operators_reference_is_kept_for_its_issuer_only(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        spec = federation.ProviderSpec(
            name="partners", issuer=PROVIDER["issuer"], client_id="acme-idp",
            secret=SecretReference(f"env:{PARTNERS_ENV}"),
        )  # fmt: skip
        await federation.add_provider(
            session, tenant=tenant, spec=spec, client_secrets=ClientSecrets.of(runtime),
            now=runtime.clock.now(), operator=True,
        )  # fmt: skip
    client = browsers["acme"]
    csrf = await _signed_in(client)
    assert "set by the operator" in (await client.get("/admin/sign-in")).text
    keep = {**PROVIDER, "secret": "keep", "secret_value": "", "csrf": csrf}
    saved = await client.post("/admin/sign-in/providers/partners", data=keep)
    assert saved.status_code == 303
    elsewhere = {**keep, "issuer": "https://login.elsewhere.example"}
    refused = await client.post("/admin/sign-in/providers/partners", data=elsewhere)
    assert refused.status_code == 400
    assert "enter the new provider" in refused.text
    async with runtime.db.transaction(read_only=True) as session:
        row = await providers.find_provider(session, tenant_id=acme.id, name="partners")
    assert row is not None
    assert (row.issuer, row.secret_source) == (PROVIDER["issuer"], f"env:{PARTNERS_ENV}")
    replaced = {**elsewhere, "secret": "value", "secret_value": "cs-of-the-new-provider"}
    assert (await client.post("/admin/sign-in/providers/partners", data=replaced)).is_redirect
    async with runtime.db.transaction(read_only=True) as session:
        row = await providers.find_provider(session, tenant_id=acme.id, name="partners")
    assert row is not None
    assert row.secret_source is None
    assert row.secret_sealed is not None
    # A stored reference outside the boundary (from before it existed) is shown as refused.
    async with runtime.db.transaction() as session:
        await session.execute(
            update(ExternalProvider).values(secret_source="file:/proc/self/environ",
                                            secret_sealed=None)
        )  # fmt: skip
    assert "but refused" in (await client.get("/admin/sign-in/providers/partners")).text


async def test_trusted_issuers_are_added_and_removed(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    client = browsers["acme"]
    csrf = await _signed_in(client)
    key = JWK.generate(kty="EC", crv="P-256")
    form = {"name": "pid", "username_claim": "personal_administrative_number", "csrf": csrf}
    added = await client.post("/admin/sign-in/issuers", data={**form, "jwk": key.export_private()})
    assert added.status_code == 303
    page = await client.get("/admin/sign-in")
    assert 'data-issuer="pid"' in page.text
    assert key.thumbprint() in page.text
    assert json.loads(key.export_private())["d"] not in page.text
    again = await client.post("/admin/sign-in/issuers", data={**form, "jwk": key.export_public()})
    assert again.status_code == 409
    removed = await client.post("/admin/sign-in/issuers/pid/delete", data={"csrf": csrf})
    assert removed.status_code == 303
    async with runtime.db.transaction(read_only=True) as session:
        assert await issuers.list_issuers(session, tenant_id=acme.id) == []


async def test_forms_need_the_csrf_token_and_tenants_stay_apart(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    acme_client, globex_client = browsers["acme"], browsers["globex"]
    csrf = await _signed_in(acme_client)
    forged = await acme_client.post("/admin/sign-in/providers", data={**PROVIDER, "csrf": "x"})
    assert forged.status_code == 403
    await acme_client.post("/admin/sign-in/providers", data={**PROVIDER, "csrf": csrf})
    globex_csrf = await _signed_in(globex_client)
    page = await globex_client.get("/admin/sign-in")
    assert page.status_code == 200
    assert "data-provider=" not in page.text
    assert (await globex_client.get("/admin/sign-in/providers/partners")).status_code == 404
    refused = await globex_client.post(
        "/admin/sign-in/providers/partners/delete", data={"csrf": globex_csrf}
    )
    assert refused.status_code == 404
    async with runtime.db.transaction(read_only=True) as session:
        assert await providers.find_provider(session, tenant_id=acme.id, name="partners")


async def test_non_admins_are_refused(browsers: dict[str, AsyncClient]) -> None:
    client = browsers["acme"]
    for username in ("power", "user"):
        refused = await sign_in(client, username, switch=True)
        assert refused.status_code == 403
        assert "admins only" in refused.text
        page = await client.get("/admin/sign-in")
        assert page.status_code == 303  # no console session: back to the sign-in
        posted = await client.post("/admin/sign-in/issuers", data={"name": "x"})
        assert posted.status_code == 303
        assert posted.headers["location"] == "/admin/login"


async def test_an_issued_staff_credential_is_revoked(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        power = await identity.get_user(session, tenant_id=tenant.id, username="power")
        entry = await status.allocate(
            session, tenant=tenant, identifier=f"http://{acme.host}/oidc.ashx", user_id=power.id,
            username=power.username, expires_at=now + timedelta(days=30), now=now,
        )  # fmt: skip
        [(row, list_id)] = await status.credentials(session, tenant=tenant)
    idx = entry["status_list"]["idx"]
    client = browsers["acme"]
    csrf = await _signed_in(client)
    page = await client.get("/admin/sign-in")
    assert f'data-credential="{row.id}"' in page.text
    assert f"/admin/sign-in/credentials/{row.id}/revoke" in page.text
    revoked = await client.post(f"/admin/sign-in/credentials/{row.id}/revoke", data={"csrf": csrf})
    assert revoked.status_code == 303
    assert revoked.headers["location"] == "/admin/sign-in?notice=revoked"
    page = await client.get(revoked.headers["location"])
    assert "(revoked by an administrator)" in page.text
    assert f"/admin/sign-in/credentials/{row.id}/revoke" not in page.text
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await tenants.require_by_name(session, "acme")
        assert await status.entry_status(session, tenant=tenant, list_id=list_id, idx=idx) == 1
    again = await client.post(f"/admin/sign-in/credentials/{row.id}/revoke", data={"csrf": csrf})
    assert again.status_code == 409
    other = browsers["globex"]
    other_csrf = await _signed_in(other)
    assert f'data-credential="{row.id}"' not in (await other.get("/admin/sign-in")).text
    foreign = await other.post(
        f"/admin/sign-in/credentials/{row.id}/revoke", data={"csrf": other_csrf}
    )
    assert foreign.status_code == 404
