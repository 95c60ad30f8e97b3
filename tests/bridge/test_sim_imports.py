"""The bridge side, the protocol and the simulated bridge, stays apart from the platform and from
the media bridge; the WebRTC pieces it shares with the media bridge import nothing of
switchboard."""

from __future__ import annotations

from pathlib import Path

import switchboard.bridge
import switchboard.webrtc
from tests.mediabridge.test_imports import _imports

BRIDGE = Path(switchboard.bridge.__file__).parent
MODULES = sorted(p.name for p in BRIDGE.glob("*.py"))


def test_the_simulated_bridge_imports_neither_the_platform_nor_the_media_bridge() -> None:
    assert {"protocol.py", "simulator.py", "simulated_aipeer.py"} <= set(MODULES)
    offending = {
        f"{name}: {module}"
        for name in MODULES
        for module in _imports(BRIDGE / name)
        if module.startswith(("switchboard.platform", "switchboard.mediabridge"))
    }
    assert offending == set()


def test_the_shared_webrtc_pieces_import_nothing_of_switchboard() -> None:
    package = Path(switchboard.webrtc.__file__).parent
    modules = sorted(package.glob("*.py"))
    assert len(modules) >= 3
    assert [m for p in modules for m in _imports(p) if m.startswith("switchboard")] == []
