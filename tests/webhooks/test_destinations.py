"""The SSRF guard: a pure rule over addresses, then refusals at creation and at delivery."""

from __future__ import annotations

import ipaddress

import pytest
from sqlalchemy import select

from switchboard.kit.destinations import address_allowed, parse_networks
from switchboard.kit.errors import BadRequest
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.models import Attempt, Subscription
from switchboard.platform.webhooks.tasks import deliver_due
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe

REFUSED = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "169.254.0.7",
    "100.64.0.1",
    "100.127.255.254",
    "0.0.0.0",
    "224.0.0.251",
    "240.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "2002:7f00:1::1",  # 6to4 wrapping 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 wrapping 169.254.169.254
    "2001:db8::1",  # documentation
]
ALLOWED = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("text", REFUSED)
def test_non_public_addresses_are_refused(text: str) -> None:
    assert not address_allowed(ipaddress.ip_address(text))


@pytest.mark.parametrize("text", ALLOWED)
def test_public_addresses_are_allowed(text: str) -> None:
    assert address_allowed(ipaddress.ip_address(text))


def test_allow_list_opens_only_its_ranges() -> None:
    allow = parse_networks(["127.0.0.0/8", "10.20.0.0/16"])
    assert address_allowed(ipaddress.ip_address("127.0.0.1"), allow)
    assert address_allowed(ipaddress.ip_address("::ffff:127.0.0.1"), allow)
    assert address_allowed(ipaddress.ip_address("10.20.3.4"), allow)
    assert not address_allowed(ipaddress.ip_address("10.21.3.4"), allow)
    assert not address_allowed(ipaddress.ip_address("169.254.169.254"), allow)
    assert not address_allowed(ipaddress.ip_address("::1"), allow)


UNSAFE_URLS = [
    "http://127.0.0.1:9/hook",
    "http://localhost:9/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::1]/hook",
    "http://10.0.0.1/hook",
    "http://100.64.1.1/hook",
    "http://0.0.0.0/hook",
    "ftp://example.com/hook",
    "file:///etc/passwd",
    "http://user:pw@example.com/hook",
    "http:///nohost",
    "not a url",
    "http://" + "a" * 2050 + ".com/",
]


async def test_creation_refuses_unsafe_urls(runtime: Runtime, org: TenantFixture) -> None:
    for url in UNSAFE_URLS:
        async with runtime.db.transaction() as session:
            with pytest.raises(BadRequest) as refused:
                await service.create_subscription(
                    session,
                    tenant_id=org.id,
                    url=url,
                    events=["*"],
                    created_by="test",
                    clock=runtime.clock,
                    box=runtime.box,
                    allow=(),
                )
            assert refused.value.code == "invalid_webhook_url", url
    async with runtime.db.transaction() as session:
        assert list(await session.scalars(select(Subscription))) == []


async def test_delivery_rechecks_the_destination(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    # Created while loopback was open; the operator then closes it: nothing is sent.
    await subscribe(runtime, org, receiver.url("/hook"))
    runtime.settings = runtime.settings.model_copy(update={"webhook_allow_private": ()})
    await fire(runtime, org)

    assert await deliver_due(runtime) == 1
    assert receiver.requests == []
    async with runtime.db.transaction() as session:
        attempt = (await session.scalars(select(Attempt))).one()
    assert attempt.status_code is None
    assert attempt.error is not None
    assert attempt.error.startswith("refused")


async def test_delivery_refuses_a_host_name_that_resolves_inward(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    port = receiver.base.rsplit(":", 1)[1]
    await subscribe(runtime, org, f"http://localhost:{port}/hook")
    runtime.settings = runtime.settings.model_copy(update={"webhook_allow_private": ()})
    await fire(runtime, org)

    assert await deliver_due(runtime) == 1
    assert receiver.requests == []
    async with runtime.db.transaction() as session:
        attempt = (await session.scalars(select(Attempt))).one()
    assert attempt.error is not None
    assert attempt.error.startswith("refused")
