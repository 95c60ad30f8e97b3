"""The bridge deploys apart from the platform: it imports nothing of it but the protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import switchboard.mediabridge

ALLOWED = {"switchboard.bridge.protocol", "switchboard.webrtc"}
PACKAGE = Path(switchboard.mediabridge.__file__).parent


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_the_bridge_imports_only_the_protocol_of_the_platform() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 10
    offending = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in modules
        for name in _imports(path)
        if name.startswith("switchboard.")
        and not name.startswith("switchboard.mediabridge")
        and name not in ALLOWED
        and not any(name.startswith(allowed + ".") for allowed in ALLOWED)
        and name != "switchboard.bridge"  # ``from switchboard.bridge import protocol``
    }
    assert offending == set()


def test_from_package_imports_name_only_the_protocol() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "switchboard.bridge":
                assert [alias.name for alias in node.names] == ["protocol"], path
            if isinstance(node, ast.ImportFrom) and node.module == "switchboard":
                raise AssertionError(f"{path}: imports from the switchboard package itself")
