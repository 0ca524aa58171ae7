"""Root hints: the name servers iterative resolution starts from (``named.root``).

:func:`read_root_hints` reads a hints file in master-file syntax (``. NS`` records and
the A/AAAA records of those servers); :func:`default_root_hints` is the copy of IANA's
``named.root`` that ships with the package, and :func:`default_root_anchors` the IANA
root trust anchors beside it (both replaced by ``--root-hints`` and ``--trust-anchor``).
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import dns.exception
import dns.name
import dns.rdatatype
import dns.zonefile

from alter_publish.dns.anchors import TrustAnchor, parse_trust_anchors, read_utf8
from alter_publish.errors import UsageError

__all__ = [
    "ROOT_ANCHORS_RESOURCE",
    "ROOT_HINTS_RESOURCE",
    "RootHints",
    "default_root_anchors",
    "default_root_hints",
    "parse_root_hints",
    "read_root_hints",
]

#: The package files (under ``alter_publish/dns/rootdata``) holding the defaults.
ROOT_HINTS_RESOURCE: Final = "named.root"
ROOT_ANCHORS_RESOURCE: Final = "root-anchors.ds"
_ADDRESS_TYPES: Final = (dns.rdatatype.A, dns.rdatatype.AAAA)
_HINTS_TTL_SECONDS: Final = 3600000  # named.root's; a hints file may leave TTLs out


@dataclass(frozen=True, slots=True)
class RootHints:
    """The root name servers and their addresses.

    Attributes:
        servers: ``(name, addresses)`` per root server named by a ``. NS`` record that
            has an address, in file order.
    """

    servers: tuple[tuple[dns.name.Name, tuple[str, ...]], ...]

    @property
    def addresses(self) -> tuple[str, ...]:
        """Every address, IPv4 first (interleaved by server), then IPv6."""
        flat = [address for _, addresses in self.servers for address in addresses]
        return tuple(sorted(flat, key=lambda address: ":" in address))


def parse_root_hints(text: str, *, where: str) -> RootHints:
    """Parse a hints file: ``. NS`` records and the A/AAAA records of the servers named.

    Raises:
        UsageError: the text does not parse, or names no server with an address.
    """
    try:
        rrsets = dns.zonefile.read_rrsets(text, default_ttl=_HINTS_TTL_SECONDS)
    except (dns.exception.DNSException, ValueError) as exc:
        raise UsageError(f"bad root hints: {exc}", where=where) from exc
    addresses: dict[dns.name.Name, list[str]] = {}
    targets: list[dns.name.Name] = []
    for rrset in rrsets:
        if rrset.rdtype == dns.rdatatype.NS and rrset.name == dns.name.root:
            targets.extend(rdata.target for rdata in rrset)
        elif rrset.rdtype in _ADDRESS_TYPES:
            addresses.setdefault(rrset.name, []).extend(rdata.address for rdata in rrset)
    servers = tuple(
        (target, tuple(addresses[target])) for target in targets if addresses.get(target)
    )
    if not servers:
        raise UsageError("no root server with an address ('. NS' and its A/AAAA)", where=where)
    return RootHints(servers)


def read_root_hints(path: Path) -> RootHints:
    """Read and parse a hints file (see :func:`parse_root_hints`).

    Raises:
        UsageError: the file is missing, unreadable, not UTF-8 or not valid.
    """
    text = read_utf8(path, "root hints", where=str(path))
    return parse_root_hints(text, where=str(path))


def _resource_text(name: str) -> str:
    return (
        importlib.resources.files("alter_publish.dns")
        .joinpath("rootdata", name)
        .read_text(encoding="utf-8")
    )


def default_root_hints() -> RootHints:
    """The IANA root hints shipped with the package."""
    return parse_root_hints(_resource_text(ROOT_HINTS_RESOURCE), where=ROOT_HINTS_RESOURCE)


def default_root_anchors() -> tuple[TrustAnchor, ...]:
    """The IANA root trust anchors shipped with the package (KSK-2017 and KSK-2024)."""
    return parse_trust_anchors(_resource_text(ROOT_ANCHORS_RESOURCE), where=ROOT_ANCHORS_RESOURCE)
