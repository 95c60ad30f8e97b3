"""The lockout does not tell which usernames exist (decision 0006): wrong passwords for a name no
user has are counted, locked and answered exactly as a user's, at the token endpoint and at the
login page, on both databases."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from httpx import ASGITransport, AsyncClient, Response
from sqlalchemy import select

from switchboard.app import create_app
from switchboard.auth.models import UnknownUserFailures
from switchboard.identity import lockout
from switchboard.identity import service as identity
from switchboard.identity.signin.tasks import purge
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.console.signin import console_clients
from tests.factories import PASSWORD, TenantFixture
from tests.identity.signin_helpers import parse_form
from tests.identity.test_signin_errors import console_authorize_url

WRONG = "not-the-password"
NOBODY = "no-such-user"
# An answer as a client can tell answers apart: status, Retry-After, and the error (the body's
# at the token endpoint, the page's message at the login page).
Answer = tuple[int, str | None, str]
Attempt = Callable[[ASGITransport, str, str, str], Awaitable[Answer]]
REFUSED = (400, None, "invalid_grant: invalid username or password")


@pytest.fixture
async def server(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[ASGITransport]:
    await console_clients(runtime, acme)
    async with runtime.lifespan():
        yield ASGITransport(app=create_app(runtime=runtime))


async def grant(transport: ASGITransport, host: str, username: str, password: str) -> Answer:
    async with AsyncClient(transport=transport) as client:
        response = await client.post(
            f"http://{host}/oidc.ashx/token",
            data={"grant_type": "password", "client_id": "cli", "username": username,
                  "password": password},
        )  # fmt: skip
    body = response.json()
    error = f"{body.get('error')}: {body.get('error_description')}" if "error" in body else "ok"
    return response.status_code, response.headers.get("retry-after"), error


def message(page: Response) -> str:
    found = re.search(r'<p class="error" role="alert">(.*?)</p>', page.text)
    return html.unescape(found.group(1)) if found else ""


async def login(transport: ASGITransport, host: str, username: str, password: str) -> Answer:
    """One try at the login page in a browser of its own (no device cookie)."""
    async with AsyncClient(transport=transport) as browser:
        form = parse_form(await browser.get(console_authorize_url(host)))
        fields = {**form.fields, "username": username, "password": password}
        answer = await browser.post(form.url, data=fields)
    return answer.status_code, answer.headers.get("retry-after"), message(answer)


async def both(attempt: Attempt, transport: ASGITransport, host: str) -> tuple[Answer, Answer]:
    """The same wrong password for the user ``admin`` and for a name no user has, at the same
    time."""
    return (
        await attempt(transport, host, "admin", WRONG),
        await attempt(transport, host, NOBODY, WRONG),
    )


@pytest.mark.parametrize("attempt", [grant, login], ids=["password grant", "login page"])
async def test_an_unknown_name_is_answered_as_a_user_is(
    server: ASGITransport, acme: TenantFixture, clock: ManualClock, attempt: Attempt
) -> None:
    answers: list[tuple[Answer, Answer]] = []
    for _ in range(6):
        answers.append(await both(attempt, server, acme.host))
    clock.advance(301)  # the first lock is over: one more wrong password locks for twice as long
    for _ in range(2):
        answers.append(await both(attempt, server, acme.host))
    clock.advance(300)
    answers.append(await both(attempt, server, acme.host))
    known = [k for k, _ in answers]
    assert known == [u for _, u in answers]
    assert [status for status, _, _ in known] == [400] * 5 + [429, 400, 429, 429]
    assert [retry for _, retry, _ in known] == [None] * 5 + ["301", None, "601", "301"]
    refused, locked = known[0][2], known[5][2]
    assert "invalid" in refused.lower()
    assert "try again in 301 s" in locked
    # Past the second lock the name can be tried again (and the right password signs the user in).
    clock.advance(301)
    assert (await attempt(server, acme.host, NOBODY, WRONG))[0] == 400
    assert (await attempt(server, acme.host, "admin", PASSWORD))[0] in (200, 303)


async def test_both_surfaces_share_the_unknown_names_tally(
    server: ASGITransport, acme: TenantFixture, globex: TenantFixture
) -> None:
    for _ in range(3):
        assert (await grant(server, acme.host, NOBODY, WRONG))[0] == 400
    for _ in range(2):
        assert (await login(server, acme.host, NOBODY, WRONG))[0] == 400
    assert (await grant(server, acme.host, NOBODY, WRONG))[:2] == (429, "301")
    assert (await login(server, acme.host, NOBODY, WRONG))[:2] == (429, "301")
    # Counted per tenant, and per name as the sign-in matches names: exactly as typed.
    assert (await grant(server, globex.host, NOBODY, WRONG))[0] == 400
    assert (await grant(server, acme.host, NOBODY.upper(), WRONG))[0] == 400


async def test_wrong_passwords_at_once_are_all_counted(
    server: ASGITransport, acme: TenantFixture
) -> None:
    for username in ("admin", NOBODY):
        answers = await asyncio.gather(
            *(grant(server, acme.host, username, WRONG) for _ in range(5))
        )
        assert [status for status, _, _ in answers] == [400] * 5
        assert (await grant(server, acme.host, username, WRONG))[:2] == (429, "301")


async def test_a_user_made_under_a_locked_name_starts_clean(
    server: ASGITransport, runtime: Runtime, acme: TenantFixture
) -> None:
    for _ in range(5):
        assert (await grant(server, acme.host, "newcomer", WRONG))[0] == 400
    assert (await grant(server, acme.host, "newcomer", PASSWORD))[0] == 429
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, acme.name)
        await identity.create_user(
            session, tenant=tenant, username="newcomer", password=PASSWORD, role="user",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
    assert await grant(server, acme.host, "newcomer", PASSWORD) == (200, None, "ok")
    assert (await login(server, acme.host, "newcomer", PASSWORD))[0] == 303
    # ... and its own wrong passwords count from nought.
    for _ in range(5):
        assert (await grant(server, acme.host, "newcomer", WRONG))[0] == 400
    assert (await grant(server, acme.host, "newcomer", PASSWORD))[0] == 429


async def test_the_name_is_stored_only_as_a_keyed_hash(
    server: ASGITransport, runtime: Runtime, acme: TenantFixture
) -> None:
    secretish = "hunter2-typed-as-a-username"
    assert (await login(server, acme.host, secretish, WRONG))[0] == 400
    async with runtime.db.transaction() as session:
        rows = (await session.execute(select(UnknownUserFailures.__table__))).all()
    assert len(rows) == 1
    assert secretish not in " ".join(str(value) for value in rows[0])
    row = rows[0]._mapping
    # Named by an HMAC under the server's key: nobody without it can test names against it.
    names = lockout.unknown_names(runtime.settings.secret_key)
    assert row["name_hash"] == names.digest(acme.id, secretish)
    other = lockout.unknown_names("another secret key, as long as the first").digest
    assert row["name_hash"] != other(acme.id, secretish)
    assert (row["tenant_id"], row["failures"]) == (acme.id, 1)


async def test_a_quiet_tally_is_forgotten_and_purged(
    server: ASGITransport, runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> None:
    for _ in range(5):
        assert await both(grant, server, acme.host) == (REFUSED, REFUSED)
    clock.advance(301)
    async with runtime.db.transaction() as session:  # the lock is over, the tally stays
        assert (await purge(session, now=clock.now()))[3] == 0
    # A day after the last failure both tallies start again: five more before a lock.
    clock.advance(int(lockout.FORGET_AFTER.total_seconds()))
    async with runtime.db.transaction() as session:
        assert (await purge(session, now=clock.now()))[3] == 1
        assert (await session.execute(select(UnknownUserFailures))).first() is None
    answers = [await both(grant, server, acme.host) for _ in range(6)]
    assert [k for k, _ in answers] == [u for _, u in answers]
    assert [k[0] for k, _ in answers] == [400] * 5 + [429]
