"""TLSA association data (RFC 6698 section 2.1, RFC 7671): what a TLSA record says of a
certificate, and where the record lives (``_<port>._tcp.<host>.``).

No I/O: the definition reads the zone owner's certificate or public key file and the
DANE check reads the certificate a server presents; both compute the record's data here,
so what ``sign`` publishes and what ``check`` compares are the same bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import IntEnum

from cryptography.hazmat.primitives import serialization

__all__ = [
    "DEFAULT_MATCHING",
    "DEFAULT_SELECTOR",
    "DEFAULT_USAGE",
    "DIGEST_OCTETS",
    "Matching",
    "Selector",
    "TLSAData",
    "Usage",
    "association_data",
    "certificate_spki",
    "data_for_certificate",
    "tlsa_owner",
]


class Usage(IntEnum):
    """Certificate usage (RFC 7218 acronyms)."""

    PKIX_TA = 0
    PKIX_EE = 1
    DANE_TA = 2
    DANE_EE = 3


class Selector(IntEnum):
    """Which part of the certificate is matched."""

    CERT = 0  # the whole certificate, DER
    SPKI = 1  # the SubjectPublicKeyInfo, DER


class Matching(IntEnum):
    """How the selected bytes are compared."""

    FULL = 0
    SHA2_256 = 1
    SHA2_512 = 2


DEFAULT_USAGE = Usage.DANE_EE
DEFAULT_SELECTOR = Selector.SPKI
DEFAULT_MATCHING = Matching.SHA2_256
#: The length of the association data each digest matching type gives.
DIGEST_OCTETS = {Matching.SHA2_256: 32, Matching.SHA2_512: 64}


@dataclass(frozen=True, slots=True, order=True)
class TLSAData:
    """One TLSA rdata: usage, selector, matching type and the association data."""

    usage: int
    selector: int
    matching: int
    data: bytes

    def to_text(self) -> str:
        """Master-file rdata, ``3 1 1 <HEX>`` (hex in capitals, as dig prints it)."""
        return f"{self.usage} {self.selector} {self.matching} {self.data.hex().upper()}"


def tlsa_owner(host: str, port: int) -> str:
    """The owner name of ``host``'s TLSA record for TCP ``port`` (absolute, lowercase)."""
    return f"_{port}._tcp.{host.lower().rstrip('.')}."


def certificate_spki(certificate_der: bytes) -> bytes:
    """The DER SubjectPublicKeyInfo of a DER certificate.

    Raises:
        ValueError: not a DER X.509 certificate.
    """
    from cryptography import x509  # here: 10 ms of every start, for TLSA records only

    certificate = x509.load_der_x509_certificate(certificate_der)
    return certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def association_data(selected: bytes, matching: int) -> bytes:
    """The association data of ``selected`` (certificate or SPKI DER) for ``matching``.

    Raises:
        ValueError: an unknown matching type.
    """
    if matching == Matching.FULL:
        return selected
    if matching == Matching.SHA2_256:
        return hashlib.sha256(selected).digest()
    if matching == Matching.SHA2_512:
        return hashlib.sha512(selected).digest()
    raise ValueError(f"matching type {matching} is not 0, 1 or 2")


def data_for_certificate(certificate_der: bytes, selector: int, matching: int) -> bytes:
    """What a TLSA record with ``selector`` and ``matching`` holds for a DER certificate.

    Raises:
        ValueError: not a certificate, or an unknown selector or matching type.
    """
    if selector == Selector.CERT:
        from cryptography import x509  # here: 10 ms of every start, for TLSA records only

        x509.load_der_x509_certificate(certificate_der)  # a certificate, not any bytes
        return association_data(certificate_der, matching)
    if selector == Selector.SPKI:
        return association_data(certificate_spki(certificate_der), matching)
    raise ValueError(f"selector {selector} is not 0 or 1")
