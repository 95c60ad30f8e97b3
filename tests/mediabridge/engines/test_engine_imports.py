"""The engines belong to the media bridge, a program of its own: of the platform they may import
only the protocol module."""

from __future__ import annotations

import ast
from pathlib import Path

import switchboard.mediabridge.engines as engines

ALLOWED = ("switchboard.mediabridge", "switchboard.bridge.protocol")


def test_the_engines_import_nothing_of_the_platform() -> None:
    found = []
    for path in Path(engines.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            found += [
                (path.name, name)
                for name in names
                if name.startswith("switchboard") and not name.startswith(ALLOWED)
            ]
    assert found == []
