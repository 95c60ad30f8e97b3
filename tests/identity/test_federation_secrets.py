"""A provider's client secret: a sealed value, or the operator's reference inside the boundary
the settings draw (``SWITCHBOARD_FEDERATION_SECRET_*`` variables, files under
``SWITCHBOARD_FEDERATION_SECRETS_DIR``). A stored reference outside it is never read: the
sign-in is refused before the provider is asked anything."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from httpx import AsyncClient
from sqlalchemy import update

from switchboard.identity.federation.models import ExternalProvider
from switchboard.identity.federation.secrets import SecretReference, SecretValue
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.identity.federation_helpers import (
    CLIENT_ID,
    FakeProvider,
    add_provider,
    app,
    browser,
    provider,
    sign_in,
    signed_in,
    start_url,
)

__all__ = ["app", "browser", "provider"]

ENV_NAME = "SWITCHBOARD_FEDERATION_SECRET_PARTNERS"


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    folder = tmp_path / "federation-secrets"
    folder.mkdir()
    return settings.model_copy(
        update={"federation_allow_private": ("127.0.0.1/32",), "federation_secrets_dir": folder}
    )


def basic(secret: str) -> str:
    return "Basic " + base64.b64encode(f"{CLIENT_ID}:{secret}".encode()).decode()


async def test_a_sealed_secret_is_sent_to_the_token_endpoint(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider
) -> None:
    await add_provider(runtime, provider.issuer, SecretValue("cs-sealed-value"))
    async with runtime.db.transaction(read_only=True) as session:
        row = (await session.execute(ExternalProvider.__table__.select())).one()
    assert "cs-sealed-value" not in str(tuple(row))  # sealed at rest
    signed_in(await sign_in(browser))
    assert provider.token_auth == [basic("cs-sealed-value")]


async def test_the_operators_references_are_read_inside_the_boundary(
    runtime: Runtime,
    browser: AsyncClient,
    provider: FakeProvider,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert settings.federation_secrets_dir is not None
    secret_file = settings.federation_secrets_dir / "partners"
    secret_file.write_text("cs-from-a-file\n")
    await add_provider(
        runtime, provider.issuer, SecretReference(f"file:{secret_file}"), operator=True
    )
    signed_in(await sign_in(browser))
    monkeypatch.setenv(ENV_NAME, "cs-from-the-environment")
    async with runtime.db.transaction() as session:
        await session.execute(update(ExternalProvider).values(secret_source=f"env:{ENV_NAME}"))
    browser.cookies.clear()
    signed_in(await sign_in(browser))
    assert provider.token_auth == [basic("cs-from-a-file"), basic("cs-from-the-environment")]


@pytest.mark.parametrize(
    "source",
    [
        "file:/proc/self/environ",
        "env:SWITCHBOARD_SECRET_KEY",
        "env:PATH",
        "file:{folder}/../outside",  # a path that leaves the folder
        "file:{folder}/link",  # a link inside the folder to a file outside it
    ],
)
async def test_a_stored_reference_outside_the_boundary_is_never_read(
    runtime: Runtime,
    browser: AsyncClient,
    provider: FakeProvider,
    settings: Settings,
    source: str,
) -> None:
    """Such a reference may have been stored before the boundary existed (by a tenant's admin
    in the console): the sign-in is refused, and the provider receives nothing."""
    folder = settings.federation_secrets_dir
    assert folder is not None
    (folder.parent / "outside").write_text("not a secret of the provider's\n")
    (folder / "link").symlink_to(folder.parent / "outside")
    await add_provider(runtime, provider.issuer, None)
    async with runtime.db.transaction() as session:
        stored = source.format(folder=folder)
        await session.execute(update(ExternalProvider).values(secret_source=stored))
    page = await browser.get(start_url())
    assert page.status_code == 502, page.text
    assert "Partners cannot be used: its client secret is not available" in page.text
    assert provider.seen == []


async def test_a_reference_refused_after_the_start_fails_the_callback_closed(
    runtime: Runtime, browser: AsyncClient, provider: FakeProvider, settings: Settings
) -> None:
    """The secret is read again where it is sent, at the code exchange."""
    assert settings.federation_secrets_dir is not None
    secret_file = settings.federation_secrets_dir / "partners"
    secret_file.write_text("cs-from-a-file\n")
    await add_provider(
        runtime, provider.issuer, SecretReference(f"file:{secret_file}"), operator=True
    )
    started = await browser.get(start_url())
    assert started.status_code == 302, started.text
    at_provider = await browser.get(started.headers["location"])
    async with runtime.db.transaction() as session:
        await session.execute(
            update(ExternalProvider).values(secret_source="file:/proc/self/environ")
        )
    page = await browser.get(at_provider.headers["location"])
    assert page.status_code == 403, page.text
    assert "the sign-in with Partners failed: its client secret is not available" in page.text
    assert "/token" not in provider.paths()
