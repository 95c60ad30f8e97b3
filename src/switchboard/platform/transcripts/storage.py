"""Transcript files: written atomically before the index row, removed again on rollback.

Ordering keeps the index honest: the file is on disk (written to a temporary name, fsynced,
renamed) before the row that points to it is committed, so a committed row never names a
missing file. When the transaction rolls back instead, the session's rollback removes the files
it wrote. Only a process killed between the write and the commit can leave an unindexed file;
it is invisible (files are reached only through the index) and ``tasks.sweep_orphans`` removes it.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

TRANSCRIPTS_DIR = "transcripts"
FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.json$")
_WRITTEN = "transcripts.written"
_REPLACED = "transcripts.replaced"


def tenant_dir(data_dir: Path, tenant_name: str) -> Path:
    return data_dir / TRANSCRIPTS_DIR / tenant_name


def file_path(data_dir: Path, tenant_name: str, file: str) -> Path:
    if not FILE_RE.match(file):
        raise ValueError("not a transcript file name")
    return tenant_dir(data_dir, tenant_name) / file


def write_atomically(path: Path, payload: bytes) -> None:
    """Write ``payload`` so that ``path`` is either absent or complete, and durable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def track_written(session: AsyncSession, path: Path) -> None:
    """Remove ``path`` if the session's transaction rolls back."""
    session.info.setdefault(_WRITTEN, []).append(path)


def track_replaced(session: AsyncSession, path: Path) -> None:
    """Remove ``path`` (a superseded transcript file) once the transaction commits."""
    session.info.setdefault(_REPLACED, []).append(path)


def _unlink(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    session.info.pop(_WRITTEN, None)
    _unlink(session.info.pop(_REPLACED, []))


@event.listens_for(Session, "after_transaction_end")
def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is not None or transaction.nested:
        return
    # Still listed here means the outermost transaction ended without a commit.
    _unlink(session.info.pop(_WRITTEN, []))
    session.info.pop(_REPLACED, None)
