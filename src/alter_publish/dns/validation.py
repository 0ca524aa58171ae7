"""DNSSEC validation for the stub resolver (RFC 4035 section 5, RFC 5155 section 8, RFC 9276).

The resolver asks one authoritative server directly and holds a trust anchor
(DS or DNSKEY records) for the zone. :func:`validate_dnskeys` checks the
zone's DNSKEY rrset against the anchor; :func:`validate_response` then checks
one response with those keys: positive answers (with in-zone CNAME chains and
wildcard expansions), NXDOMAIN and NODATA with NSEC or NSEC3 proofs.

Both are pure: the time comes in as ``now``, a :class:`Validation` comes out,
and bad data never raises. Internally a failed check raises
:class:`_NotSecureError`, which the two public functions turn into a verdict.

Trust anchors are parsed in :mod:`alter_publish.dns.anchors`. NSEC3 owner hashes come from
:func:`alter_publish.dns.nsec3.nsec3_hash`, the one the loopback server uses.

Zone cuts below a trust anchor are followed by :mod:`alter_publish.dns.chain`, with
:func:`signer_of` (which zone signed an answer) and :func:`proves_delegation` (a DS
denial at a delegation: the child is insecure).

Not implemented (the answer is then bogus or insecure, never falsely secure):
wildcard NODATA proofs, DNAME.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Final, cast

import dns.dnssec
import dns.dnssecalgs
import dns.dnssectypes
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.CNAME
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.DS
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.RRSIG
import dns.rdtypes.dnskeybase
import dns.rrset

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.nsec3 import NSEC3_HASH_SHA1, nsec3_hash

__all__ = [
    "CNAME_CHAIN_MAX",
    "NSEC3_ITERATIONS_MAX",
    "DNSSECStatus",
    "RRsetValidator",
    "Validation",
    "proves_delegation",
    "signer_of",
    "validate_dnskeys",
    "validate_response",
]

#: NSEC3 chains with more iterations are treated as insecure (RFC 9276 section 3.2).
NSEC3_ITERATIONS_MAX: Final = 150
#: The longest CNAME chain followed inside the zone.
CNAME_CHAIN_MAX: Final = 8

_DS_DIGESTS_STRONG: Final = frozenset({2, 4})  # SHA-256, SHA-384
_DS_DIGEST_SHA1: Final = int(dns.dnssectypes.DSDigest.SHA1)
_ALGORITHMS_DENIED: Final = frozenset({1, 3, 6})  # RSAMD5, DSA, DSA-NSEC3-SHA1 (RFC 8624)
_NSEC3_OPT_OUT: Final = 0x01
_ZONE_KEY: Final = int(dns.rdtypes.dnskeybase.Flag.ZONE)
_SEP: Final = int(dns.rdtypes.dnskeybase.Flag.SEP)
_NONE: Final = int(dns.rdatatype.NONE)
_NS: Final = int(dns.rdatatype.NS)
_SOA: Final = int(dns.rdatatype.SOA)
_CNAME: Final = int(dns.rdatatype.CNAME)
_DS: Final = int(dns.rdatatype.DS)
_RRSIG: Final = int(dns.rdatatype.RRSIG)
_NSEC: Final = int(dns.rdatatype.NSEC)
_DNSKEY: Final = int(dns.rdatatype.DNSKEY)
_NSEC3: Final = int(dns.rdatatype.NSEC3)
_DENIAL_TYPES: Final = frozenset({_SOA, _NSEC, _NSEC3})

# Rdata classes, for annotations and isinstance checks (the _UPPER names above are type codes).
DS = dns.rdtypes.ANY.DS.DS
DNSKEY = dns.rdtypes.ANY.DNSKEY.DNSKEY
NSEC = dns.rdtypes.ANY.NSEC.NSEC
NSEC3 = dns.rdtypes.ANY.NSEC3.NSEC3
RRSIG = dns.rdtypes.ANY.RRSIG.RRSIG
#: One message section: ``(owner, rdtype, covers) -> rrset``.
_Section = dict[tuple[dns.name.Name, int, int], dns.rrset.RRset]


class DNSSECStatus(StrEnum):
    """The three outcomes of validation (RFC 4033 section 5)."""

    SECURE = "secure"
    INSECURE = "insecure"
    BOGUS = "bogus"


@dataclass(frozen=True, slots=True)
class Validation:
    """A verdict on one response.

    Attributes:
        status: secure, insecure or bogus.
        reason: empty when secure; otherwise one line saying why.
    """

    status: DNSSECStatus
    reason: str


_SECURE: Final = Validation(DNSSECStatus.SECURE, "")


class _NotSecureError(Exception):
    """A check failed; ``validation`` is the verdict to return."""

    def __init__(self, status: DNSSECStatus, reason: str) -> None:
        super().__init__(reason)
        self.validation = Validation(status, reason)


def _bogus(reason: str) -> _NotSecureError:
    return _NotSecureError(DNSSECStatus.BOGUS, reason)


def _insecure(reason: str) -> _NotSecureError:
    return _NotSecureError(DNSSECStatus.INSECURE, reason)


# --------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------


def _index(section: Iterable[dns.rrset.RRset]) -> _Section:
    return {
        (rrset.name, int(rrset.rdtype), int(rrset.covers)): rrset
        for rrset in section
        if rrset.rdclass == dns.rdataclass.IN
    }


def _label_count(name: dns.name.Name) -> int:
    """The RRSIG labels value for ``name`` (RFC 4034 section 3.1.3)."""
    return len(name) - 1 - int(name.is_wild())


def _time_text(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _type_text(rdtype: int) -> str:
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rdtype))


def _what(rrset: dns.rrset.RRset) -> str:
    return f"{dns.rdatatype.to_text(rrset.rdtype)} at {rrset.name}"


@dataclass(frozen=True, slots=True)
class _Checker:
    """Checks RRSIGs made by the zone's trusted keys at one point in time."""

    zone: dns.name.Name
    keys: dns.rdataset.Rdataset
    now: int
    key_ids: frozenset[tuple[int, int]] = field(default=frozenset())

    @classmethod
    def make(cls, zone: dns.name.Name, keys: Iterable[dns.rdata.Rdata], now: int) -> _Checker:
        zone_keys = [key for key in keys if isinstance(key, DNSKEY) and key.flags & _ZONE_KEY]
        ids = frozenset((dns.dnssec.key_id(key), int(key.algorithm)) for key in zone_keys)
        rdataset = dns.rdataset.Rdataset(dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        for key in zone_keys:
            rdataset.add(key)
        return cls(zone, rdataset, now, ids)

    def verify(self, rrset: dns.rrset.RRset, section: _Section) -> dns.name.Name | None:
        """Check that some RRSIG in ``section`` validates ``rrset``.

        Returns the wildcard's parent (the closest encloser) when the rrset
        was expanded from a wildcard, else None.
        """
        sigs = section.get((rrset.name, _RRSIG, int(rrset.rdtype)))
        if sigs is None or len(sigs) == 0:
            raise _bogus(f"{_what(rrset)} has no RRSIG")
        problems: list[tuple[int, str]] = []
        for rdata in sigs:
            rrsig = cast("RRSIG", rdata)
            problem = self._problem(rrset, rrsig)
            if problem is None:
                labels = int(rrsig.labels)
                if labels < _label_count(rrset.name):
                    return dns.name.Name(rrset.name.labels[-(labels + 1) :])
                return None
            problems.append(problem)
        raise _bogus(max(problems, key=lambda problem: problem[0])[1])

    def _problem(self, rrset: dns.rrset.RRset, rrsig: RRSIG) -> tuple[int, str] | None:
        """Why ``rrsig`` does not validate ``rrset`` (rank, reason); None if it does."""
        what = _what(rrset)
        if rrsig.signer != self.zone or not rrset.name.is_subdomain(self.zone):
            return 0, f"{what} signed by {rrsig.signer}, not by the zone {self.zone}"
        if (int(rrsig.key_tag), int(rrsig.algorithm)) not in self.key_ids:
            return 0, f"{what} not signed by a trusted key"
        if int(rrsig.labels) > _label_count(rrset.name):
            return 1, f"RRSIG over {what} has more labels than its owner"
        if self.now > int(rrsig.expiration):
            return 1, f"RRSIG over {what} expired at {_time_text(int(rrsig.expiration))}"
        if self.now < int(rrsig.inception):
            return 1, f"RRSIG over {what} not valid until {_time_text(int(rrsig.inception))}"
        try:
            dns.dnssec.validate_rrsig(rrset, rrsig, {self.zone: self.keys}, now=self.now)
        except dns.exception.DNSException as exc:  # ValidationFailure, UnsupportedAlgorithm
            return 1, f"RRSIG over {what} does not verify ({exc})"
        return None


@dataclass(frozen=True, slots=True)
class RRsetValidator:
    """Checks rrsets read from a zone file with the zone's keys (``verify``'s whole-zone
    check), as :func:`validate_response` checks each rrset of an answer."""

    checker: _Checker

    @classmethod
    def make(
        cls, zone: dns.name.Name, dnskeys: Iterable[dns.rdata.Rdata], *, now: int
    ) -> RRsetValidator:
        """A validator trusting the zone keys in ``dnskeys`` (validated first, e.g. by
        :func:`validate_dnskeys`) at ``now``."""
        return cls(_Checker.make(zone, dnskeys, now))

    def validate(
        self,
        name: dns.name.Name,
        rdataset: dns.rdataset.Rdataset,
        rrsigs: dns.rdataset.Rdataset | None,
    ) -> Validation:
        """Whether some RRSIG in ``rrsigs`` validates the rrset ``name``/``rdataset`` (not
        as a wildcard expansion).

        Returns:
            The verdict; ``reason`` says why not, as the validator says it for an answer.
        """
        rrset = _as_rrset(name, rdataset)
        section: _Section = {}
        if rrsigs is not None:
            section[(name, _RRSIG, int(rdataset.rdtype))] = _as_rrset(name, rrsigs)
        try:
            if self.checker.verify(rrset, section) is not None:
                return Validation(DNSSECStatus.BOGUS, f"{_what(rrset)} signed as a wildcard")
        except _NotSecureError as exc:
            return exc.validation
        return _SECURE


def _as_rrset(name: dns.name.Name, rdataset: dns.rdataset.Rdataset) -> dns.rrset.RRset:
    """An rrset sharing ``rdataset``'s records: adding them one by one would hash (so
    convert to canonical wire) each record once more, a third of a whole-zone check."""
    rrset = dns.rrset.RRset(name, rdataset.rdclass, rdataset.rdtype, rdataset.covers)
    rrset.ttl = rdataset.ttl
    rrset.items = rdataset.items  # read only here
    return rrset


# --------------------------------------------------------------------------
# DNSKEY against the trust anchor
# --------------------------------------------------------------------------


def validate_dnskeys(
    response: dns.message.Message, anchor: TrustAnchor, *, now: int
) -> tuple[Validation, dns.rrset.RRset | None]:
    """Validate the zone's DNSKEY rrset against its trust anchor.

    Args:
        response: the answer to ``<anchor.zone> DNSKEY`` asked with DO set.
        anchor: the trust anchor for the zone.
        now: the current time, seconds since the epoch.

    Returns:
        The verdict, and the DNSKEY rrset when it is secure (else None).
    """
    try:
        return _SECURE, _validated_dnskeys(response, anchor, now)
    except _NotSecureError as exc:
        return exc.validation, None


def _validated_dnskeys(
    response: dns.message.Message, anchor: TrustAnchor, now: int
) -> dns.rrset.RRset:
    answer = _index(response.answer)
    dnskeys = answer.get((anchor.zone, _DNSKEY, _NONE))
    if dnskeys is None or len(dnskeys) == 0:
        raise _bogus(f"no DNSKEY rrset in answer for {anchor.zone}")
    checker = _Checker.make(anchor.zone, _trusted_keys(anchor, dnskeys), now)
    if checker.verify(dnskeys, answer) is not None:
        raise _bogus(f"DNSKEY rrset at {anchor.zone} signed as a wildcard")
    return dnskeys


def _trusted_keys(anchor: TrustAnchor, dnskeys: dns.rrset.RRset) -> list[DNSKEY]:
    """The zone keys in ``dnskeys`` that the anchor vouches for."""
    anchor_keys = [key for key in anchor.dnskeys if _algorithm_supported(int(key.algorithm))]
    supported = [ds for ds in anchor.ds if _algorithm_supported(int(ds.algorithm))]
    strong = [ds for ds in supported if ds.digest_type in _DS_DIGESTS_STRONG]
    usable_ds = strong or [ds for ds in supported if ds.digest_type == _DS_DIGEST_SHA1]
    if not anchor_keys and not usable_ds:
        raise _insecure(f"trust anchor for {anchor.zone} has no supported algorithm or digest")
    trusted = [
        key
        for key in cast("Iterable[DNSKEY]", dnskeys)
        if key.flags & _ZONE_KEY
        and (key in anchor_keys or any(_ds_matches(anchor.zone, ds, key) for ds in usable_ds))
    ]
    if not trusted and anchor.source:
        tags = ", ".join(
            str(dns.dnssec.key_id(key))
            for key in cast("Iterable[DNSKEY]", dnskeys)
            if key.flags & _ZONE_KEY and key.flags & _SEP
        )
        raise _bogus(
            f"{anchor.source}: no DS matches a KSK of {anchor.zone} DNSKEY (tags {tags or 'none'})"
        )
    if not trusted:
        kinds = " or ".join(
            kind for kind, used in (("DS", usable_ds), ("DNSKEY", anchor_keys)) if used
        )
        raise _bogus(f"no DNSKEY at {anchor.zone} matches the trust anchor's {kinds}")
    return trusted


def _ds_matches(zone: dns.name.Name, ds: DS, key: DNSKEY) -> bool:
    if ds.key_tag != dns.dnssec.key_id(key) or ds.algorithm != key.algorithm:
        return False
    digest_type = dns.dnssectypes.DSDigest(ds.digest_type)
    try:
        made = dns.dnssec.make_ds(zone, key, digest_type, validating=True)
    except dns.exception.DNSException:  # UnsupportedAlgorithm, DeniedByPolicy
        return False
    return bool(made.digest == ds.digest)


def _algorithm_supported(algorithm: int) -> bool:
    if algorithm in _ALGORITHMS_DENIED:
        return False
    try:
        dns.dnssecalgs.get_algorithm_cls(algorithm)
    except dns.exception.UnsupportedAlgorithm:
        return False
    return True


# --------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------


def validate_response(
    response: dns.message.Message,
    qname: dns.name.Name,
    qtype: int,
    *,
    zone: dns.name.Name,
    dnskeys: dns.rrset.RRset,
    now: int,
) -> Validation:
    """Validate one response from the zone's authoritative server.

    Args:
        response: the response to ``qname``/``qtype`` asked with DO set.
        qname: the name asked for, at or below ``zone``.
        qtype: the type asked for.
        zone: the zone apex (the signer of every RRSIG).
        dnskeys: the zone's DNSKEY rrset, as returned by :func:`validate_dnskeys`.
        now: the current time, seconds since the epoch.

    Returns:
        The verdict.
    """
    try:
        _validate(response, qname, qtype, _Checker.make(zone, dnskeys, now))
    except _NotSecureError as exc:
        return exc.validation
    return _SECURE


def _validate(
    response: dns.message.Message, qname: dns.name.Name, qtype: int, checker: _Checker
) -> None:
    rcode = response.rcode()
    if rcode not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
        raise _bogus(f"cannot validate rcode {dns.rcode.to_text(rcode)}")
    if not qname.is_subdomain(checker.zone):
        raise _bogus(f"{qname} is not in zone {checker.zone}")
    for rrset in (*response.answer, *response.authority):
        if rrset.rdclass != dns.rdataclass.IN:  # never validated, so never to be used
            raise _bogus(f"{_what(rrset)} is of class {dns.rdataclass.to_text(rrset.rdclass)}")
    name, found, expansions = _walk_answer(checker, _index(response.answer), qname, qtype)
    if found and rcode == dns.rcode.NXDOMAIN:
        raise _bogus(f"NXDOMAIN with an answer at {name}")
    denial = _Denial.collect(checker, _index(response.authority))
    for expanded, encloser in expansions:
        denial.deny_expansion(expanded, encloser)
    if found:
        return
    if rcode == dns.rcode.NXDOMAIN:
        denial.deny_name(name)
    else:
        denial.deny_type(name, qtype)


def _walk_answer(
    checker: _Checker, answer: _Section, qname: dns.name.Name, qtype: int
) -> tuple[dns.name.Name, bool, list[tuple[dns.name.Name, dns.name.Name]]]:
    """Validate the answer from ``qname`` along in-zone CNAMEs.

    Returns the name the chain ends at, whether ``qtype`` was found there, and
    ``(owner, closest encloser)`` for every rrset expanded from a wildcard.
    """
    name, seen = qname, {qname}
    expansions: list[tuple[dns.name.Name, dns.name.Name]] = []
    for _ in range(CNAME_CHAIN_MAX + 1):
        rrset = answer.get((name, qtype, _NONE)) or answer.get((name, _CNAME, _NONE))
        if rrset is None:
            return name, False, expansions
        encloser = checker.verify(rrset, answer)
        if encloser is not None:
            expansions.append((name, encloser))
        if rrset.rdtype == qtype:
            return name, True, expansions
        if len(rrset) != 1:
            raise _bogus(f"CNAME at {name} has {len(rrset)} targets")
        name = cast("dns.rdtypes.ANY.CNAME.CNAME", rrset[0]).target
        if name in seen:
            raise _bogus(f"CNAME loop at {name}")
        if not name.is_subdomain(checker.zone):
            raise _insecure(f"CNAME chain leaves zone {checker.zone} at {name}")
        seen.add(name)
    raise _bogus(f"CNAME chain from {qname} longer than {CNAME_CHAIN_MAX}")


def _has_type(rdata: NSEC | NSEC3, rdtype: int) -> bool:
    window, offset = divmod(rdtype, 256)
    for number, bitmap in rdata.windows:
        if number == window:
            index, bit = divmod(offset, 8)
            return index < len(bitmap) and bool(bitmap[index] & (0x80 >> bit))
    return False


def _check_bitmap(kind: str, name: dns.name.Name, rdata: NSEC | NSEC3, qtype: int) -> None:
    """Check that a matching NSEC/NSEC3 at ``name`` proves there is no ``qtype``."""
    for rdtype in (qtype, _CNAME):
        if _has_type(rdata, rdtype):
            raise _bogus(f"{kind} at {name} lists {_type_text(rdtype)}")
    if qtype == _DS and _has_type(rdata, _SOA):
        raise _bogus(f"{kind} at {name} is from the child zone and cannot deny DS")
    if qtype != _DS and _has_type(rdata, _NS) and not _has_type(rdata, _SOA):
        raise _bogus(f"{kind} at {name} is from a delegation")


def _hash_covers(owner: str, next_hash: str, hashed: str) -> bool:
    if owner < next_hash:
        return owner < hashed < next_hash
    return hashed > owner or hashed < next_hash  # the last NSEC3 wraps around


@dataclass(frozen=True, slots=True)
class _Denial:
    """The validated NSEC and NSEC3 records of one response's authority section."""

    zone: dns.name.Name
    nsecs: dict[dns.name.Name, NSEC]
    nsec3s: dict[str, NSEC3]  # owner hash (upper-case base32hex) -> rdata
    hashes: dict[tuple[dns.name.Name, bytes, int], str] = field(default_factory=dict)

    @classmethod
    def collect(cls, checker: _Checker, authority: _Section) -> _Denial:
        """Validate every in-zone SOA, NSEC and NSEC3 rrset in ``authority``."""
        denial = cls(checker.zone, {}, {})
        for (owner, rdtype, _), rrset in authority.items():
            if rdtype not in _DENIAL_TYPES or not owner.is_subdomain(checker.zone):
                continue
            if checker.verify(rrset, authority) is not None:
                raise _bogus(f"{_what(rrset)} signed as a wildcard")
            if rdtype == _NSEC:
                denial.nsecs[owner] = cast("NSEC", rrset[0])
            elif rdtype == _NSEC3 and owner.parent() == checker.zone:
                denial.nsec3s[owner.labels[0].decode("latin-1").upper()] = _nsec3(rrset)
        return denial

    def deny_name(self, name: dns.name.Name) -> None:
        """Check the proof that ``name`` does not exist (NXDOMAIN)."""
        if self.nsecs:
            owner = self._nsec_covering(name)
            if owner is None:
                raise _bogus(f"NSEC does not deny {name}")
            encloser = _nsec_encloser(name, owner, self.nsecs[owner].next)
            if encloser == name:
                raise _bogus(f"NSEC shows that {name} exists")
            wildcard = dns.name.Name((b"*", *encloser.labels))
            if self._nsec_covering(wildcard) is None:
                raise _bogus(f"NSEC does not deny wildcard {wildcard}")
        elif self.nsec3s:
            encloser, next_closer, cover = self._nsec3_encloser(name)
            wildcard = dns.name.Name((b"*", *encloser.labels))
            if self._nsec3_covering(wildcard) is None:
                raise _bogus(f"no NSEC3 covers wildcard {wildcard}")
            if cover.flags & _NSEC3_OPT_OUT:
                raise _insecure(f"NSEC3 opt-out covers {next_closer}")
        else:
            raise _bogus(f"no NSEC/NSEC3 proof for NXDOMAIN at {name}")

    def deny_type(self, name: dns.name.Name, qtype: int) -> None:
        """Check the proof that ``name`` has no ``qtype`` and no CNAME (NODATA)."""
        type_text = _type_text(qtype)
        if self.nsecs:
            rdata = self.nsecs.get(name)
            if rdata is not None:
                _check_bitmap("NSEC", name, rdata, qtype)
                return
            owner = self._nsec_covering(name)  # an empty non-terminal
            if owner is None or not self.nsecs[owner].next.is_subdomain(name):
                raise _bogus(f"NSEC does not deny {type_text} at {name}")
        elif self.nsec3s:
            match = self._nsec3_matching(name)
            if match is None and qtype == _DS:
                _, next_closer, cover = self._nsec3_encloser(name)
                if cover.flags & _NSEC3_OPT_OUT:  # RFC 5155 section 8.6
                    raise _insecure(f"NSEC3 opt-out covers {next_closer}: an unsigned delegation")
            if match is None:
                raise _bogus(f"no NSEC3 matches {name} to deny {type_text}")
            _check_bitmap("NSEC3", name, match, qtype)
        else:
            raise _bogus(f"no NSEC/NSEC3 proof for NODATA {type_text} at {name}")

    def deny_expansion(self, name: dns.name.Name, encloser: dns.name.Name) -> None:
        """Check the proof that ``name``, answered from ``*.encloser``, does not exist."""
        next_closer = dns.name.Name(name.labels[-(len(encloser) + 1) :])
        owner = self._nsec_covering(name)
        if owner is not None:
            # RFC 4035 5.3.4: the NSEC must also show the wildcard's parent is the closest
            # encloser, or a closer name exists and the expansion is forged.
            if _nsec_encloser(name, owner, self.nsecs[owner].next) == encloser:
                return
            raise _bogus(f"NSEC shows a closer encloser than {encloser} for {name}")
        if self._nsec3_covering(next_closer) is None:
            raise _bogus(f"wildcard answer for {name} without proof that {name} does not exist")

    def _nsec_covering(self, name: dns.name.Name) -> dns.name.Name | None:
        """The owner of the NSEC that proves ``name`` does not exist, if any."""
        for owner, rdata in self.nsecs.items():
            after_owner = owner < name
            before_next = name < rdata.next or rdata.next <= owner  # the last NSEC wraps
            cut = _has_type(rdata, _NS) and not _has_type(rdata, _SOA)
            if after_owner and before_next and not (cut and name.is_subdomain(owner)):
                return owner
        return None

    def _hash(self, name: dns.name.Name, rdata: NSEC3) -> str:
        key = (name, bytes(rdata.salt), int(rdata.iterations))
        hashed = self.hashes.get(key)
        if hashed is None:
            hashed = nsec3_hash(name, key[1], key[2], NSEC3_HASH_SHA1)
            self.hashes[key] = hashed
        return hashed

    def _nsec3_matching(self, name: dns.name.Name) -> NSEC3 | None:
        for owner, rdata in self.nsec3s.items():
            if self._hash(name, rdata) == owner:
                return rdata
        return None

    def _nsec3_covering(self, name: dns.name.Name) -> NSEC3 | None:
        for owner, rdata in self.nsec3s.items():
            next_hash = base64.b32hexencode(rdata.next).decode("ascii")
            if _hash_covers(owner, next_hash, self._hash(name, rdata)):
                return rdata
        return None

    def _nsec3_encloser(self, name: dns.name.Name) -> tuple[dns.name.Name, dns.name.Name, NSEC3]:
        """The closest-encloser proof (RFC 5155 section 8.3) for a name that does not exist.

        Returns the closest encloser, the next closer name and the NSEC3 covering it.
        """
        candidate, next_closer = name, None
        while (match := self._nsec3_matching(candidate)) is None:
            if candidate == self.zone:
                raise _bogus(f"no NSEC3 proves a closest encloser for {name}")
            candidate, next_closer = candidate.parent(), candidate
        if next_closer is None:
            raise _bogus(f"NSEC3 shows that {name} exists")
        if _has_type(match, _NS) and not _has_type(match, _SOA):
            raise _bogus(f"closest encloser {candidate} of {name} is a delegation")
        cover = self._nsec3_covering(next_closer)
        if cover is None:
            raise _bogus(f"no NSEC3 covers next closer name {next_closer}")
        return candidate, next_closer, cover


def _nsec3(rrset: dns.rrset.RRset) -> NSEC3:
    rdata = cast("NSEC3", rrset[0])
    if rdata.algorithm != NSEC3_HASH_SHA1:
        raise _insecure(f"NSEC3 at {rrset.name} uses unknown hash algorithm {rdata.algorithm}")
    if rdata.iterations > NSEC3_ITERATIONS_MAX:
        raise _insecure(
            f"NSEC3 at {rrset.name} has {rdata.iterations} iterations,"
            f" above {NSEC3_ITERATIONS_MAX} (RFC 9276)"
        )
    return rdata


def _nsec_encloser(
    name: dns.name.Name, owner: dns.name.Name, next_name: dns.name.Name
) -> dns.name.Name:
    """The closest encloser of ``name`` given the NSEC covering it (RFC 4035 section 5.4)."""
    common = max(name.fullcompare(owner)[2], name.fullcompare(next_name)[2])
    return dns.name.Name(name.labels[-common:])


def signer_of(response: dns.message.Message, qname: dns.name.Name) -> dns.name.Name | None:
    """The zone that signed ``response``: its first RRSIG signer at or above ``qname``, in
    the answer section, else the authority section; None when there is none.

    Only ancestors of ``qname`` count: a record signed by some other zone (an insecure
    one, say) must not choose the chain the answer is judged by."""
    for section in (response.answer, response.authority):
        for rrset in section:
            if rrset.rdtype != _RRSIG:
                continue
            for rdata in rrset:
                signer = cast("RRSIG", rdata).signer
                if qname.is_subdomain(signer):
                    return signer
    return None


def proves_delegation(
    response: dns.message.Message, name: dns.name.Name, zone: dns.name.Name
) -> bool:
    """Whether the NSEC or NSEC3 of ``zone`` (the parent) matching ``name`` in
    ``response``'s authority section lists NS and not SOA: ``name`` is a delegation, so
    a validated DS denial in the same response proves it insecure (RFC 4035 section
    5.2). Check the denial first (:func:`validate_response` for DS, which validates the
    zone's NSEC and NSEC3 records): this only reads the bitmap of a record of ``zone``
    (one of another zone was never validated, so it proves nothing)."""
    for rrset in response.authority:
        rdata = rrset[0] if len(rrset) else None
        if isinstance(rdata, NSEC) and rrset.name == name and name.parent() == zone:
            return _has_type(rdata, _NS) and not _has_type(rdata, _SOA)
        if (
            isinstance(rdata, NSEC3)
            and rdata.algorithm == NSEC3_HASH_SHA1
            and rrset.name.parent() == zone
        ):
            hashed = nsec3_hash(name, bytes(rdata.salt), int(rdata.iterations), NSEC3_HASH_SHA1)
            if rrset.name.labels[0].decode("latin-1").upper() == hashed:
                return _has_type(rdata, _NS) and not _has_type(rdata, _SOA)
    return False
