"""Background work: removing transcript files that no index row names.

Such files exist only when a process died between writing a transcript file and committing
its row (docs/decisions/0400). They are invisible through the API; the sweeper deletes them
once they are older than ``MIN_AGE_SECONDS``, which leaves any in-flight save alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.platform.transcripts import repository, storage
from switchboard.runtime import Runtime
from switchboard.tenants import repository as tenants

log = logging.getLogger("switchboard.transcripts")

MIN_AGE_SECONDS = 3600.0
SWEEP_EVERY_SECONDS = 3600.0
BATCH = 500
_CALL_ID_OF_FILE = re.compile(r"^(?P<call_id>.+)-\d{8}T\d{6}Z-[0-9a-f]{6}\.json$")


def _old_enough(path: Path, clock: Clock, min_age: float) -> bool:
    try:
        return clock.timestamp() - path.stat().st_mtime >= min_age
    except FileNotFoundError:
        return False


async def sweep_orphans(
    session: AsyncSession, *, data_dir: Path, clock: Clock, min_age: float = MIN_AGE_SECONDS
) -> list[Path]:
    """Delete transcript files (and stale temporary files) that no index row names."""
    root = data_dir / storage.TRANSCRIPTS_DIR
    if not root.is_dir():
        return []
    removed: list[Path] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        tenant = await tenants.get_by_name(session, folder.name)
        candidates = [p for p in folder.iterdir() if _old_enough(p, clock, min_age)]
        for start in range(0, len(candidates), BATCH):
            batch = candidates[start : start + BATCH]
            call_ids = {
                m["call_id"] for p in batch if (m := _CALL_ID_OF_FILE.match(p.name)) is not None
            }
            known: set[str] = set()
            if tenant is not None and call_ids:
                known = await repository.files_of_calls(
                    session, tenant_id=tenant.id, call_ids=sorted(call_ids)
                )
            for path in batch:
                if path.name not in known:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    removed.append(path)
    if removed:
        log.info("removed %d unindexed transcript files", len(removed))
    return removed


async def sweeper(runtime: Runtime, stop: asyncio.Event) -> None:
    """Worker: sweep once an hour until stopped."""
    while not stop.is_set():
        try:
            async with runtime.db.transaction() as session:
                await sweep_orphans(
                    session, data_dir=runtime.settings.data_dir, clock=runtime.clock
                )
        except Exception:
            log.exception("transcript sweep failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=SWEEP_EVERY_SECONDS)
