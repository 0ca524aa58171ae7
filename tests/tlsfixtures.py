"""Real TLS material for DANE tests: certificates made with ``cryptography`` and a
loopback TLS server (Python's ``ssl`` in a thread) that presents one of them."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: Certificates are dated from this time (expired ones too: DANE-EE ignores expiry).
_EPOCH = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True, slots=True)
class Certificate:
    """A self-signed certificate and its key, as PEM files."""

    cert: Path
    key: Path
    public_key: Path

    @property
    def der(self) -> bytes:
        """The certificate, DER."""
        loaded = x509.load_pem_x509_certificate(self.cert.read_bytes())
        return loaded.public_bytes(serialization.Encoding.DER)


def make_certificate(directory: Path, name: str, host: str, *, days: int = 3650) -> Certificate:
    """A self-signed P-256 certificate for ``host`` in ``directory`` (``name``.pem,
    ``name``.key, ``name``.pub), valid ``days`` from 2020-01-01."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_EPOCH)
        .not_valid_after(_EPOCH + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    found = Certificate(
        directory / f"{name}.pem", directory / f"{name}.key", directory / f"{name}.pub"
    )
    found.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    found.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    found.public_key.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return found


@dataclass
class TLSServer:
    """A TLS server on ``host:port`` presenting ``certificate``; it completes the
    handshake, then closes. ``names`` records the SNI each client sent."""

    host: str
    port: int
    names: list[str | None]


@contextmanager
def tls_server(certificate: Certificate, host: str = "127.0.0.1") -> Iterator[TLSServer]:
    """Serve TLS with ``certificate`` on ``host`` and a free port until the block ends."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate.cert, certificate.key)
    names: list[str | None] = []

    def remember(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        names.append(name)

    context.sni_callback = remember
    listener = socket.create_server((host, 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(5)
            try:
                with context.wrap_socket(connection, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield TLSServer(host, listener.getsockname()[1], names)
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
