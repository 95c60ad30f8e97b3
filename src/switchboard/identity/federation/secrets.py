"""A provider's client secret (decision 0024): either the value itself, sealed at rest with the
runtime's :class:`SecretBox` (what a tenant's admins enter in the console), or the operator's
reference to where the server reads it at each use, ``env:NAME`` or ``file:/path``. A reference
is read only inside the boundary the operator set: environment variables named
``SWITCHBOARD_FEDERATION_SECRET_*`` and files under ``SWITCHBOARD_FEDERATION_SECRETS_DIR``. A
stored reference outside it is never read (the sign-in is refused; ``switchboard federation
check`` names it)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag

from switchboard.kit.crypto import SecretBox

if TYPE_CHECKING:
    from switchboard.runtime import Runtime

ENV_PREFIX = "SWITCHBOARD_FEDERATION_SECRET_"
DIR_SETTING = "SWITCHBOARD_FEDERATION_SECRETS_DIR"
MAX_SECRET_LENGTH = 1024
_ENV_NAME = re.compile(rf"^{ENV_PREFIX}[A-Z0-9_]+$")


class SecretUnavailable(Exception):
    """The provider's client secret cannot be used; the description is for the operator (it
    names neither the secret nor where it is read)."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True, slots=True)
class SecretValue:
    """The client secret itself, as entered: stored sealed."""

    value: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class SecretReference:
    """Where the operator keeps the client secret: ``env:NAME`` or ``file:/absolute/path``."""

    source: str


@dataclass(frozen=True, slots=True)
class Keep:
    """An update that leaves the client secret as it is."""


KEEP = Keep()
ClientSecret = SecretValue | SecretReference | None


@dataclass(frozen=True, slots=True)
class ClientSecrets:
    """Seals entered secrets and reads stored ones, references only inside the boundary."""

    box: SecretBox
    directory: Path | None = None

    @classmethod
    def of(cls, runtime: Runtime) -> ClientSecrets:
        return cls(runtime.box, runtime.settings.federation_secrets_dir)

    def seal(self, value: str) -> str:
        return self.box.seal(value)

    def problem(self, source: str) -> str | None:
        """Why the reference ``source`` may not be read, or None when it may."""
        kind, _, where = source.partition(":")
        if kind == "env":
            if _ENV_NAME.match(where):
                return None
            return f"an environment variable read as a client secret must be named {ENV_PREFIX}*"
        if kind != "file":
            return "a reference is env:NAME or file:/absolute/path"
        if self.directory is None:
            return f"files are read as client secrets only under {DIR_SETTING}, which is not set"
        if not where.startswith("/"):
            return "a file is named by its absolute path"
        root = self.directory.resolve()
        real = Path(where).resolve()  # symbolic links followed: where the read would really go
        if real == root or not real.is_relative_to(root):
            return f"the file is not under {DIR_SETTING}"
        return None

    def read(self, *, sealed: str | None, source: str | None) -> str | None:
        """The client secret (None: a public client). Raises SecretUnavailable."""
        if sealed is not None:
            try:
                return self.box.open(sealed)
            except (InvalidTag, ValueError):
                raise SecretUnavailable(
                    "the sealed client secret cannot be opened (SWITCHBOARD_SECRET_KEY changed?)"
                ) from None
        if source is None:
            return None
        problem = self.problem(source)
        if problem is not None:
            raise SecretUnavailable(f"its client secret reference is refused: {problem}")
        kind, _, where = source.partition(":")
        value: str | None
        if kind == "env":
            value = os.environ.get(where)
        else:
            try:
                value = Path(where).resolve().read_text(encoding="utf-8").strip()
            except (OSError, UnicodeError):
                value = None
        if not value:
            raise SecretUnavailable(f"its client secret ({kind}) is missing or empty")
        return value
