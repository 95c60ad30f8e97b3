"""Passwords, tokens and API keys never reach a log line."""

from __future__ import annotations

import logging

import pytest
from httpx import AsyncClient

from switchboard.kit.logging import RedactingFormatter, redact
from tests.factories import PASSWORD, TenantFixture


async def test_identity_flows_log_no_secret(
    app_client: AsyncClient, acme: TenantFixture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    response = await app_client.post(
        "/oidc.ashx/token",
        data={
            "grant_type": "password",
            "client_id": "cli",
            "username": "admin",
            "password": PASSWORD,
            "scope": "openid offline_access",
        },
        headers={"Host": acme.host},
    )
    tokens = response.json()
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    key = (await app_client.post("/api.ashx/v1/api-keys", json={}, headers=headers)).json()["key"]
    await app_client.get("/api.ashx/v1/api-keys", headers={"Authorization": f"Bearer {key}"})
    await app_client.post(
        "/oidc.ashx/token",
        data={"grant_type": "password", "client_id": "cli", "username": "admin", "password": "x"},
        headers={"Host": acme.host},
    )
    text = caplog.text
    for secret in (PASSWORD, tokens["access_token"], tokens["refresh_token"], key):
        assert secret not in text


def test_formatter_redacts_what_slips_through() -> None:
    record = logging.LogRecord(
        "x",
        logging.INFO,
        __file__,
        1,
        "calling with ak_abcdefghijklmnop password=hunter22",
        (),
        None,
    )
    line = RedactingFormatter("%(message)s").format(record)
    assert "ak_abcdefghijklmnop" not in line
    assert "lk_abcdefghijk" not in line
    assert "hunter22" not in line
    assert redact("Bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl") == "Bearer [redacted]"
