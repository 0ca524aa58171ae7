"""NSEC3 (RFC 5155): the hash both sides compare, and the server's index of a zone's chain.

:func:`nsec3_hash` turns a name into the upper-case base32hex label that NSEC3
owner names carry; the loopback server's index (:mod:`alter_publish.dns.zoneindex`)
and the validator (:mod:`alter_publish.dns.validation`) both hash through it.

:class:`Nsec3Chain` is the server side: the NSEC3 chain of one zone, sorted
so that :mod:`alter_publish.dns.zoneindex` can pick the NSEC3 rrsets that match
or cover a name for its denial proofs (RFC 5155 section 7.2). The validator
checks proofs record by record (RFC 5155 section 8) and keeps its own
matching and covering tests: they work from each record's own parameters and
next hashed owner, not from a sorted chain.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, cast

import dns.dnssec
import dns.dnssectypes
import dns.name
import dns.rdatatype
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.NSEC3PARAM
import dns.rrset

from alter_publish.errors import ServeError

__all__ = [
    "NSEC3_HASH_SHA1",
    "Nsec3Chain",
    "find_hashed_owners",
    "nsec3_hash",
]

#: The one NSEC3 hash algorithm (RFC 5155 section 11).
NSEC3_HASH_SHA1: Final = int(dns.dnssectypes.NSEC3Hash.SHA1)
_NONE: Final = int(dns.rdatatype.NONE)
_NSEC3: Final = int(dns.rdatatype.NSEC3)
_NSEC3PARAM: Final = int(dns.rdatatype.NSEC3PARAM)
_WILDCARD_LABEL: Final = b"*"

#: All rrsets at one owner name, keyed by ``(rdtype, covers)``: the shape of
#: :data:`alter_publish.dns.zoneindex.Node` (spelled out, as zoneindex imports this module).
_Node = Mapping[tuple[int, int], dns.rrset.RRset]


def nsec3_hash(name: dns.name.Name, salt: bytes, iterations: int, algorithm: int) -> str:
    """Return the NSEC3 hash of ``name`` as an upper-case base32hex label (RFC 5155 section 5).

    Args:
        name: the name to hash (hashed in canonical, lower-case form).
        salt: the salt.
        iterations: the additional hash iterations.
        algorithm: the hash algorithm; only 1 (SHA-1) is defined.

    Returns:
        The label, as it appears (upper-cased) in an NSEC3 owner name.

    Raises:
        ValueError: ``algorithm`` is not SHA-1.
    """
    return dns.dnssec.nsec3_hash(name, salt, iterations, algorithm)


def find_hashed_owners(
    origin: dns.name.Name, nodes: Mapping[dns.name.Name, _Node]
) -> frozenset[dns.name.Name]:
    """Return the hashed owner names of a zone: NSEC3 owners directly below the apex.

    Args:
        origin: the zone apex.
        nodes: every owner name of the zone -> its rrsets.

    Returns:
        The owners (empty when the apex has no NSEC3PARAM rrset: the zone is
        then not served as an NSEC3 zone and its NSEC3 rrsets are plain data).
    """
    if (_NSEC3PARAM, _NONE) not in nodes.get(origin, {}):
        return frozenset()
    depth = len(origin) + 1
    return frozenset(
        owner for owner, node in nodes.items() if len(owner) == depth and (_NSEC3, _NONE) in node
    )


@dataclass(frozen=True, slots=True, eq=False)
class Nsec3Chain:
    """The NSEC3 chain of one zone, sorted for denial proofs (RFC 5155).

    Attributes:
        algorithm: the hash algorithm of the apex NSEC3PARAM (1, SHA-1).
        iterations: the additional hash iterations of the apex NSEC3PARAM.
        salt: the salt of the apex NSEC3PARAM.
        hashes: the hash labels of the chain's owners, upper case, sorted
            (base32hex sorts as the hashes it encodes).
        owners: the owner names of the chain's NSEC3 rrsets, in ``hashes`` order.
        hashed_owners: the owner of every NSEC3 rrset in the zone, whatever
            its parameters; none of them is a name of the zone.
        known_hashes: precomputed hashes: every name of the zone and the
            wildcard name directly below each.
    """

    algorithm: int
    iterations: int
    salt: bytes
    hashes: tuple[str, ...]
    owners: tuple[dns.name.Name, ...]
    hashed_owners: frozenset[dns.name.Name]
    known_hashes: Mapping[dns.name.Name, str]

    @classmethod
    def build(
        cls,
        origin: dns.name.Name,
        nodes: Mapping[dns.name.Name, _Node],
        names: Iterable[dns.name.Name],
    ) -> Nsec3Chain | None:
        """Index the NSEC3 chain of a zone, if the zone is signed with NSEC3.

        Args:
            origin: the zone apex.
            nodes: every owner name of the zone -> its rrsets.
            names: the names of the zone (owners and empty non-terminals, but
                not the hashed owner names).

        Returns:
            The chain, or ``None`` when the apex has no NSEC3PARAM rrset or
            the zone has no NSEC3 rrset.

        Raises:
            ServeError: no NSEC3PARAM with flags 0 has NSEC3 records with its
                parameters, or the chosen one uses a hash algorithm other than
                SHA-1.
        """
        hashed_owners = find_hashed_owners(origin, nodes)
        param_rrset = nodes.get(origin, {}).get((_NSEC3PARAM, _NONE))
        if param_rrset is None or not hashed_owners:
            return None
        where = origin.to_text()
        # RFC 5155 4.1.2: NSEC3PARAM with other flags must be ignored by servers.
        params = [
            cast("dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM", rdata)
            for rdata in param_rrset
            if cast("dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM", rdata).flags == 0
        ]
        for param in params:  # more than one while a chain is replaced: the first one present
            chain = sorted(
                (owner[0].upper().decode("latin-1"), owner)
                for owner in hashed_owners
                if _has_params(nodes[owner][(_NSEC3, _NONE)], param)
            )
            if chain:
                break
        else:
            raise ServeError(
                "no NSEC3 records have the parameters of an NSEC3PARAM with flags 0",
                where=where,
            )
        if param.algorithm != NSEC3_HASH_SHA1:
            raise ServeError(f"unsupported NSEC3 hash algorithm {param.algorithm}", where=where)
        known: dict[dns.name.Name, str] = {}
        for name in names:
            for hashed in (name, dns.name.Name((_WILDCARD_LABEL, *name.labels))):
                known[hashed] = nsec3_hash(hashed, param.salt, param.iterations, param.algorithm)
        return cls(
            algorithm=param.algorithm,
            iterations=param.iterations,
            salt=param.salt,
            hashes=tuple(label for label, _ in chain),
            owners=tuple(owner for _, owner in chain),
            hashed_owners=hashed_owners,
            known_hashes=MappingProxyType(known),
        )

    def hash_name(self, name: dns.name.Name) -> str:
        """Return the NSEC3 hash of ``name`` as an upper-case base32hex label."""
        known = self.known_hashes.get(name)
        if known is not None:
            return known
        return nsec3_hash(name, self.salt, self.iterations, self.algorithm)

    def matching(self, name: dns.name.Name) -> dns.name.Name | None:
        """Return the owner of the NSEC3 that matches ``name`` (its hash), if any."""
        digest = self.hash_name(name)
        index = bisect.bisect_left(self.hashes, digest)
        if index < len(self.hashes) and self.hashes[index] == digest:
            return self.owners[index]
        return None

    def covering(self, name: dns.name.Name) -> dns.name.Name:
        """Return the owner of the NSEC3 that covers (or matches) ``name``.

        A hash before the first owner's is covered by the last NSEC3, whose
        next hashed owner wraps around to the first.
        """
        index = bisect.bisect_right(self.hashes, self.hash_name(name)) - 1
        return self.owners[index]  # -1 wraps to the last NSEC3, as the chain does


def _has_params(rrset: dns.rrset.RRset, param: dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM) -> bool:
    """Whether an NSEC3 rrset holds a record with the hash parameters of ``param``."""
    for rdata in rrset:
        nsec3 = cast("dns.rdtypes.ANY.NSEC3.NSEC3", rdata)
        if (nsec3.algorithm, nsec3.iterations, nsec3.salt) == (
            param.algorithm,
            param.iterations,
            param.salt,
        ):
            return True
    return False
