"""Self-signed certificates for the test servers that speak TLS (SMTP, the Live endpoint, the
relay): each certificate is its own CA, so a client trusts it by loading it as the CA file."""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed_pem(
    common_name: str,
    *,
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    valid_for: dt.timedelta = dt.timedelta(days=1),
) -> tuple[bytes, bytes]:
    """A fresh P-256 certificate (PEM) for these names, and its PKCS#8 key (PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    )
    alternatives: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    alternatives += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    if alternatives:
        builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
    cert = builder.sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def write_self_signed(
    cert_file: Path,
    key_file: Path,
    common_name: str = "127.0.0.1",
    *,
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = ("127.0.0.1",),
) -> tuple[Path, Path]:
    """Write a certificate for loopback (by default) and its key; return both paths."""
    cert, key = self_signed_pem(common_name, dns_names=dns_names, ip_addresses=ip_addresses)
    cert_file.write_bytes(cert)
    key_file.write_bytes(key)
    return cert_file, key_file
