"""The README's walkthrough, pasted block by block into a fresh bash against a real server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "readme_walkthrough.py"


@pytest.mark.slow
@pytest.mark.long(seconds=45)
def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    out = result.stdout
    assert '"newStatus":"cancelled"' in out  # the hangup
    assert '"callerSource":"vnum"' in out  # the transcript
    assert '"secret":"whsec_' in out  # the webhook subscription
    # The loopback receiver got the signed events of the walkthrough's calls.
    assert "call.ended" in (tmp_path / "webhooks.log").read_text()
