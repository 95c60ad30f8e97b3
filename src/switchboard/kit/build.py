"""The build string: changes whenever the code of the handlers changes."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import switchboard


@cache
def build_id() -> str:
    root = Path(switchboard.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return f"{switchboard.__version__}+{digest.hexdigest()[:12]}"
