"""Certificates for a local secure cluster (tests, ``pykraft local up --secure``): a CA made
with ``trustme`` and, per node, a key and certificate chain written the way Kafka's
``ssl.keystore.type=PEM`` reads them (one file, a PKCS#8 key and the chain), the CA as a PEM
trust store, and the same key store as PKCS12 (for Kafka's tools and JKS-minded operators).

Each file is written 0600: they hold private keys. The CA's key is kept beside its
certificate (``ca.key``), so a directory keeps its CA across runs: a client's copy of
``ca.pem`` stays valid when ``pykraft local up`` issues the nodes' certificates again.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LocalCA", "NodeCert"]


@dataclass(frozen=True, slots=True)
class NodeCert:
    """One node's files: ``pem`` (PKCS#8 key + chain), ``p12`` (same, PKCS12, ``password``)."""

    pem: Path
    p12: Path
    password: str
    subject: str  # RFC 2253, as a Kafka principal builder reads it


def _write(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


class LocalCA:
    """A local certificate authority under ``base`` (made on first use, then reused);
    ``ca_pem`` is the trust store."""

    def __init__(self, base: Path) -> None:
        import trustme

        self.base = base
        base.mkdir(parents=True, exist_ok=True)
        cert, key = base / "ca.pem", base / "ca.key"
        if cert.exists() and key.exists():
            self._ca = trustme.CA.from_pem(cert.read_bytes(), key.read_bytes())
        else:
            self._ca = trustme.CA(organization_name="pykraft local")
            _write(key, self._ca.private_key_pem.bytes())
            _write(cert, self._ca.cert_pem.bytes())
        self.ca_pem = cert

    def issue(
        self,
        name: str,
        *hosts: str,
        password: str = "changeit",
        not_after: datetime.datetime | None = None,
    ) -> NodeCert:
        """A certificate for ``hosts`` (default 127.0.0.1 and localhost) with CN ``name``."""
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import (
            BestAvailableEncryption,
            Encoding,
            NoEncryption,
            PrivateFormat,
            load_pem_private_key,
            pkcs12,
        )

        leaf = self._ca.issue_cert(
            *(hosts or ("127.0.0.1", "localhost")),
            common_name=name,
            organization_name="pykraft",
            not_after=not_after,
        )
        key = load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
        chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
        pkcs8 = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        pem = _write(self.base / f"{name}.pem", pkcs8 + chain)
        certs = x509.load_pem_x509_certificates(chain)
        p12 = _write(
            self.base / f"{name}.p12",
            pkcs12.serialize_key_and_certificates(
                name.encode(),
                key,  # type: ignore[arg-type]
                certs[0],
                certs[1:] or None,
                BestAvailableEncryption(password.encode()),
            ),
        )
        return NodeCert(pem, p12, password, certs[0].subject.rfc4514_string())
