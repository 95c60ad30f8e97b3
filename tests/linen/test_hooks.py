"""The hooks through which a lower linen feature reaches one built on it (linen/hooks.py) are
registered wherever the portal is loaded: its API, its web app and the demo data each load
every service that registers one (the application mounts the first two). Each is checked in a
fresh interpreter, as a server or a command starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from switchboard.linen.hooks import Hook

ROOT = Path(__file__).resolve().parents[2]
CHECK = (
    "import importlib, sys; importlib.import_module(sys.argv[1]); "
    "from switchboard.linen import hooks; print(hooks.unregistered())"
)


@pytest.mark.parametrize(
    "entry", ["switchboard.linen.app", "switchboard.linen.web.app", "switchboard.linen.demo"]
)
def test_every_hook_is_registered_where_the_portal_is_loaded(entry: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(
        [sys.executable, "-c", CHECK, entry],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_hook_not_registered_refuses_rather_than_skip_the_call() -> None:
    hook = Hook[object]("the uses of a towel", by="sheets")
    with pytest.raises(RuntimeError, match=r"switchboard\.linen\.sheets\.service is not loaded"):
        hook()
    hook.register(len)
    assert hook() is len
