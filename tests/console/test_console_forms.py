"""Console forms over HTTP: what they refuse, what they keep, and where an error leads back."""

from __future__ import annotations

import pytest
from httpx import AsyncClient
from sqlalchemy import select

from switchboard.platform.webhooks.models import FAILED, Attempt, Delivery
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants.models import Tenant
from tests.console.signin import csrf_of, sign_in
from tests.factories import TenantFixture


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": ("127.0.0.0/8",)})


async def _stored(runtime: Runtime, tenant_id: int) -> dict[str, object]:
    async with runtime.db.transaction(read_only=True) as session:
        tenant = await session.get(Tenant, tenant_id)
        assert tenant is not None
        return dict(tenant.settings or {})


async def test_settings_refuse_what_a_call_would_refuse_and_store_nothing(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/settings")).text)
    before = await _stored(runtime, acme.id)
    refused = {
        "DefaultVoice": ("NotAVoice", "must be one of"),
        "DefaultLanguage": ("not a lang", "locale tag"),
        "DefaultModel": ("m" * 300, "at most 128 characters"),
        "OutcomeEmail:Enabled": ("maybe", "true or false"),
        "ExternalOidc:Issuer": ("http://evil.example.com", "must be https"),
        "ExternalOidc:JwksUrl": ("ftp://keys.example.com/jwks", "must be https"),
        "DefaultTrunkId": ("two words", "without spaces"),
        "OutcomeEmail:SenderName": ("Ops\r\nBcc: x@example.com", "control characters"),
        "Phone:Sfu:StressWindowSec": ("lots", "must be a number"),
    }
    for key, (value, words) in refused.items():
        # a valid change in the same form is not stored either: the form is one transaction
        answer = await client.post(
            "/admin/settings", data={"csrf": token, "DefaultModel": "model-y", key: value}
        )
        assert answer.status_code == 400, key
        assert key in answer.text
        assert words in answer.text, answer.text
        assert await _stored(runtime, acme.id) == before, key
    page = await client.get("/admin/settings")
    assert "NotAVoice" not in page.text

    saved = await client.post(
        "/admin/settings",
        data={"csrf": token, "DefaultVoice": "Kore", "DefaultLanguage": "fr-FR",
              "OutcomeEmail:Enabled": "FALSE", "ExternalOidc:Issuer": "https://login.example.com",
              "Phone:Sfu:StressBwMbpsThreshold": "1.25"},
    )  # fmt: skip
    assert (saved.status_code, saved.headers["location"]) == (303, "/admin/settings?notice=saved")
    stored = await _stored(runtime, acme.id)
    assert stored["DefaultVoice"] == "Kore"
    assert stored["DefaultLanguage"] == "fr-FR"
    assert stored["OutcomeEmail:Enabled"] == "false"
    assert stored["ExternalOidc:Issuer"] == "https://login.example.com"
    assert stored["Phone:Sfu:StressBwMbpsThreshold"] == 1.25
    cleared = await client.post("/admin/settings", data={"csrf": token, "DefaultVoice": ""})
    assert cleared.status_code == 303  # blank: back to the default
    assert (await _stored(runtime, acme.id))["DefaultVoice"] == ""


async def test_a_stored_value_that_breaks_its_rule_is_named_on_the_page(
    browsers: dict[str, AsyncClient], runtime: Runtime, acme: TenantFixture
) -> None:
    async with runtime.db.transaction() as session:  # stored before the rule existed
        tenant = await session.get(Tenant, acme.id)
        assert tenant is not None
        tenant.settings = {"DefaultVoice": "NotAVoice", "DefaultLanguage": "de-DE"}
    client = browsers["acme"]
    await sign_in(client)
    page = (await client.get("/admin/settings")).text
    assert 'id="stored-problems"' in page
    assert "DefaultVoice: must be one of" in page
    assert "DefaultLanguage:" not in page
    token = csrf_of(page)
    saved = await client.post("/admin/settings", data={"csrf": token, "DefaultVoice": "Kore"})
    assert saved.status_code == 303
    assert 'id="stored-problems"' not in (await client.get("/admin/settings")).text


async def test_a_refused_form_leads_back_to_its_page_in_plain_words(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/routing")).text)
    form = {"csrf": token, "match": "+49 1*", "trunkIds": "sip-main"}
    here = "http://acme.test/admin/routing?did=%2B491"
    refused = await client.post("/admin/routing/outbound", data=form, headers={"Referer": here})
    assert refused.status_code == 400
    assert "match: the value is not in the form this field takes" in refused.text
    assert "should match pattern" not in refused.text
    assert '<a href="/admin/routing?did=%2B491">Back to the form</a>' in refused.text
    for elsewhere in (
        "http://evil.example.com/admin/routing",  # another host
        "http://acme.test/app/today",  # another app
        "http://acme.test/admin/../oidc.ashx/authorize",
        "javascript:alert(1)",
    ):
        answer = await client.post(
            "/admin/routing/outbound", data=form, headers={"Referer": elsewhere}
        )
        assert answer.status_code == 400
        assert '<a href="/admin/">Back to the console</a>' in answer.text, elsewhere


async def test_number_fields_state_the_bounds_the_server_holds(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    settings = (await client.get("/admin/settings")).text
    for decimal in ("StressBwMbpsThreshold", "StressLossPctThreshold"):
        field = settings.split(f'name="Phone:Sfu:{decimal}"', 1)[1].split(">", 1)[0]
        assert 'step="any"' in field  # 1.25 is accepted by the server, so by the browser too
    page = (await client.get("/admin/numbers")).text
    assert 'name="maxDurationSec" type="number" min="10" max="3600"' in page
    token = csrf_of(page)
    number = {"csrf": token, "name": "Desk", "number": "+4930777", "voice": "Kore",
              "language": "de-DE", "apiKey": "k", "systemPrompt": "p"}  # fmt: skip
    for refused in ("0", "5", "3601"):
        answer = await client.post("/admin/numbers", data=number | {"maxDurationSec": refused})
        assert answer.status_code == 400, refused
        assert "maxDurationSec: 10 to 3600" in answer.text
    assert "+4930777" not in (await client.get("/admin/numbers")).text
    created = await client.post("/admin/numbers", data=number | {"maxDurationSec": ""})
    assert created.status_code == 303
    assert 'value="3500"' in (await client.get(created.headers["location"])).text


async def test_redeliver_is_offered_only_for_a_finished_delivery(
    browsers: dict[str, AsyncClient], runtime: Runtime
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/webhooks")).text)
    created = await client.post(
        "/admin/webhooks", data={"csrf": token, "url": "http://127.0.0.1:9/h", "events": ["*"]}
    )
    assert created.status_code == 303
    page = (await client.get(created.headers["location"])).text
    sub_id = page.split('data-subscription="', 1)[1].split('"', 1)[0]
    queued = await client.post(f"/admin/webhooks/{sub_id}/test", data={"csrf": token})
    assert queued.status_code == 303
    async with runtime.db.transaction() as session:
        delivery = await session.scalar(select(Delivery).where(Delivery.subscription_id == sub_id))
        assert delivery is not None
        session.add(Attempt(
            tenant_id=delivery.tenant_id, subscription_id=sub_id, delivery_id=delivery.id,
            event=delivery.event, attempt=1, started_at=runtime.clock.now(), status_code=500,
            latency_ms=12,
        ))  # fmt: skip
        delivery_id = delivery.id
    retrying = await client.get(f"/admin/webhooks/{sub_id}")
    assert delivery_id in retrying.text  # its failed first attempt is logged...
    assert "Redeliver" not in retrying.text  # ...but it is still being retried
    async with runtime.db.transaction() as session:
        found = await session.get(Delivery, delivery_id)
        assert found is not None
        found.status = FAILED
    finished = await client.get(f"/admin/webhooks/{sub_id}")
    assert f"/admin/webhooks/deliveries/{delivery_id}/redeliver" in finished.text
    again = await client.post(
        f"/admin/webhooks/deliveries/{delivery_id}/redeliver", data={"csrf": token}
    )
    assert again.status_code == 303
    assert "Redeliver" not in (await client.get(f"/admin/webhooks/{sub_id}")).text  # queued


async def test_controls_that_can_only_be_refused_are_not_shown(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    users = (await client.get("/admin/users")).text
    own = users.split('data-user="admin"', 1)[1].split("</tr>", 1)[0]
    assert "Set role" not in own  # an admin cannot change their own role
    assert "Reset password" not in own
    other = users.split('data-user="power"', 1)[1].split("</tr>", 1)[0]
    assert "Set role" in other
    assert "Reset password" in other
    keys = await client.get("/admin/api-keys")
    assert 'id="mint-key"' in keys.text
    # The super-admin acting on another tenant cannot mint there: no form to try.
    await client.post("/admin/tenant", data={"csrf": csrf_of(keys.text), "tenant": "globex"})
    elsewhere = (await client.get("/admin/api-keys")).text
    assert 'id="mint-key"' not in elsewhere
    assert "minted by a local admin of globex" in elsewhere


async def test_adding_a_listed_number_says_it_only_updated_the_comment(
    browsers: dict[str, AsyncClient],
) -> None:
    client = browsers["acme"]
    await sign_in(client)
    token = csrf_of((await client.get("/admin/whitelist")).text)
    entry = {"csrf": token, "number": "+4930555", "comment": "front desk"}
    first = await client.post("/admin/whitelist", data=entry)
    assert first.headers["location"] == "/admin/whitelist?notice=created"
    again = await client.post("/admin/whitelist", data=entry | {"comment": "reception"})
    assert again.headers["location"] == "/admin/whitelist?notice=already-listed"
    page = (await client.get(again.headers["location"])).text
    assert "Already listed; its comment was updated." in page
    assert "Created." not in page


async def test_resetting_a_password_asks_first(browsers: dict[str, AsyncClient]) -> None:
    client = browsers["acme"]
    await sign_in(client)
    users = (await client.get("/admin/users")).text
    row = users.split('data-user="power"', 1)[1].split("</tr>", 1)[0]
    reset = row.split('action="/admin/users/power/password"', 1)[1].split(">", 1)[0]
    assert 'hx-confirm="Reset the password of power?' in reset  # as Delete and Revoke ask
