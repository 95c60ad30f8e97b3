"""``Database.read``: a read-only unit of work in one piece (one hand-off to a reader thread on
SQLite), seeing what has committed and nothing of a transaction still open."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from switchboard.runtime import Runtime
from tests import factories


def names(session: Session) -> list[str]:
    return list(session.execute(text("SELECT name FROM tenants ORDER BY name")).scalars())


async def test_a_read_sees_what_has_committed_and_nothing_uncommitted(runtime: Runtime) -> None:
    await factories.tenant(runtime, "zeta", ["zeta.test"])
    assert "zeta" in await runtime.db.read(names)
    async with runtime.db.transaction() as session:  # a writer still open: the read does not wait
        await session.execute(text("UPDATE tenants SET name = 'omega' WHERE name = 'zeta'"))
        assert "zeta" in await runtime.db.read(names)
    after = await runtime.db.read(names)
    assert "omega" in after
    assert "zeta" not in after


async def test_a_read_on_sqlite_cannot_write(runtime: Runtime) -> None:
    if runtime.db.dialect != "sqlite":
        pytest.skip("SQLite's reader connections are query-only; PostgreSQL reads in the loop")
    await factories.tenant(runtime, "zeta", ["zeta.test"])

    def write(session: Session) -> None:
        session.execute(text("DELETE FROM tenants"))

    with pytest.raises(OperationalError, match="readonly"):
        await runtime.db.read(write)
    assert "zeta" in await runtime.db.read(names)
