"""The guard's TLS certificate, reloaded when its files change (no restart)."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

log = logging.getLogger("switchboard.relay.certificates")


def _signature(*paths: Path) -> tuple[tuple[int, int], ...] | None:
    try:
        return tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    except OSError:
        return None


class CertificateStore:
    """Holds the current server context; ``None`` until a certificate has loaded."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context: ssl.SSLContext | None = None
        self._loaded: tuple[tuple[int, int], ...] | None = None

    def check(self) -> bool:
        """Load the files when they changed since the last load; True when a new certificate
        replaced a previous one. A broken pair keeps the previous certificate in service."""
        signature = _signature(self.cert_file, self.key_file)
        if signature is None or signature == self._loaded:
            return False
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            log.warning("certificate %s not loaded: %s", self.cert_file, exc)
            return False
        replaced = self.context is not None
        self.context = context
        self._loaded = signature
        log.info("certificate %s %s", self.cert_file, "reloaded" if replaced else "loaded")
        return replaced
