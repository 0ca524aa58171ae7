"""DNSSEC zone signing (Ed25519, RFC 8080): DNSKEY, NSEC or NSEC3 chain, RRSIGs, DS.

Signing is deterministic: Ed25519 signatures depend only on the key and the
signed bytes, and each owner's RRSIGs take the :class:`SignatureWindow`
(inception and expiration) of the owner's renewal slot at the time of signing
(:func:`owner_window`: a function of the owner name and the time alone), so
unchanged inputs give byte-identical output and RRSIGs are re-made only when
their slot comes round: a daily run renews about one slot's share of the zone.

The signing input is built here rather than through ``dns.dnssec.sign``: per
RFC 4034 section 6 it is the RRSIG rdata without the signature followed by the
rrset in canonical form (lowercased owner, original TTL, rdata sorted by their
canonical wire form).
"""

from __future__ import annotations

import array
import base64
import bisect
import functools
import operator
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import dns.dnssec
import dns.dnssectypes
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.util
import dns.zone
from cryptography.hazmat.primitives import serialization

from alter_publish.definition.model import DNSSECSpec
from alter_publish.definition.state import INCEPTION_BACKDATE_SECONDS as INCEPTION_BACKDATE_SECONDS
from alter_publish.definition.state import SignatureWindow as SignatureWindow
from alter_publish.dns.denial import (
    Owners,
    add_nsec3_chain,
    add_nsec_chain,
    hashed_owner_texts,
    negative_ttl,
    zone_shape,
)
from alter_publish.dns.ownerwindows import OwnerWindows
from alter_publish.dns.records import (
    Labels,
    RRs,
    SignedRRs,
    ZoneRecords,
    canonical_key,
    name_text,
    name_wire,
)
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyEntry, ZoneKeyRole, cds_keys
from alter_publish.errors import SigningError
from alter_publish.format.ed25519 import SigningKey
from alter_publish.parallel import Progress, Workers, ranges, shared

ALGORITHM = dns.dnssectypes.Algorithm.ED25519
DS_DIGEST = "SHA256"
RRSIG_TIME_LIMIT = 2**32  # RRSIG times are 32-bit seconds (serial arithmetic aside)

_IN = dns.rdataclass.IN
_RRSIG = dns.rdatatype.RRSIG
_NSEC = dns.rdatatype.NSEC
_NSEC3 = dns.rdatatype.NSEC3
_NSEC3PARAM = dns.rdatatype.NSEC3PARAM
_DNSKEY = dns.rdatatype.DNSKEY
_SOA = dns.rdatatype.SOA
_TXT = dns.rdatatype.TXT
_NS = dns.rdatatype.NS
_DS = dns.rdatatype.DS
_CDS = dns.rdatatype.CDS
_CDNSKEY = dns.rdatatype.CDNSKEY
#: Sort key: an rrset's type.
_BY_TYPE = operator.attrgetter("rdtype")
_RRSIG_HEADER = struct.Struct("!HBBIIIH")
_RR_FIXED = struct.Struct("!HHIH")
#: An Ed25519 signature's length.
_SIGNATURE_OCTETS = 64
#: The types the signer adds (and refuses in the unsigned zone).
_DNSSEC_TYPES = frozenset({_RRSIG, _NSEC, _NSEC3, _NSEC3PARAM, _DNSKEY, _CDS, _CDNSKEY})
#: The apex rrsets the KSKs sign: the DNSKEY set, and CDS/CDNSKEY (RFC 7344 4.1: signed
#: by a key both the DNSKEY set and the parent's DS set hold).
_KSK_SIGNED = frozenset({_DNSKEY, _CDS, _CDNSKEY})


@dataclass(frozen=True, slots=True)
class SignedZone:
    """What signing added to a zone."""

    #: The added records' master-file text, in consecutive parts (never one 100 MB string).
    records_parts: tuple[str, ...]
    ds_text: str
    window: SignatureWindow
    signatures: int
    denial: str
    max_ttl: int = 0  # the largest TTL of a signed rrset (RFC 7583's TTLsig)
    #: Where each owner's lines start and end in ``records_text``.
    blocks: Mapping[Labels, tuple[int, int]] = field(default_factory=dict)
    #: Every rrset of the signed zone (the unsigned ones too), with its RRSIGs, in wire form.
    rrsets: tuple[SignedRRs, ...] = ()
    #: RRSIGs whose window started after ``renewed_since`` (all, when it is None).
    renewed: int = 0

    @property
    def records_text(self) -> str:
        """The added records' master-file text."""
        return "".join(self.records_parts)


def ds_line(origin: dns.name.Name, key: ZoneKey | ZoneKeyEntry, ttl: int) -> str:
    """The DS (SHA-256) of one key as a master-file line."""
    ds = dns.dnssec.make_ds(origin, key.dnskey, DS_DIGEST)
    return f"{origin.to_text()} {ttl} IN DS {ds.to_text()}"


def ds_records(
    origin: dns.name.Name, keys: Sequence[ZoneKey | ZoneKeyEntry], ttl: int
) -> tuple[str, ...]:
    """The DS of each KSK the parent should hold (see ``ZoneKey.in_ds``), as master-file lines."""
    return tuple(ds_line(origin, key, ttl) for key in keys if key.in_ds)


def choose_window(now: int, spec: DNSSECSpec) -> SignatureWindow:
    """The zone's signature window at ``now`` (:meth:`SignatureWindow.newest`): every
    owner's RRSIGs use their own slot's window (:func:`owner_window`), which is a
    function of ``now`` alone, so unchanged inputs give the same bytes until a slot
    starts, and then only that slot's owners get new RRSIGs."""
    return SignatureWindow.newest(now, spec.signature_validity, spec.refresh)


def owner_window(owner: Labels, zone: SignatureWindow, spec: DNSSECSpec) -> SignatureWindow:
    """The window of ``owner``'s RRSIGs in a signing at zone window ``zone``."""
    start = zone.expiration - spec.signature_validity
    return SignatureWindow.for_owner(name_wire(owner), start, spec.signature_validity, spec.refresh)


# --- canonical form ---------------------------------------------------------------


def _sigtime(seconds: int) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(seconds))


@functools.cache
def _rdtype_text(rdtype: int) -> str:
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rdtype))


# --- signing ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Signer:
    """One key's fixed RRSIG fields; ``index`` picks its private key in a signing task."""

    index: int
    tag: int
    origin_wire: bytes
    suffix_text: str  # "<expiration> <inception> <tag> <signer>"


#: A span of signing jobs as a worker takes it: the signing inputs end to end, where each
#: ends and each one's key (an index into the raw keys), both ``array("I")`` bytes, and
#: each one's RRSIG line up to the signature (joined by newlines).
_Packed = tuple[bytes, bytes, bytes, str]


def _packed(todo: Sequence[_Job], names: Mapping[Labels, str], span: tuple[int, int]) -> _Packed:
    """Jobs ``span`` of ``todo`` as a worker signs them (see :data:`_Packed`).

    The inputs are built here, in the parent, and go to the worker with its task: a
    worker that read the jobs themselves would need them all (forked, it would copy
    every page holding them that it touches: ~220 MB a worker at 100,000 handles).
    """
    fixed = _RR_FIXED.pack
    inputs: list[bytes] = []
    ends = array.array("I")
    keys = array.array("I")
    prefixes: list[str] = []
    at = 0
    algorithm = int(ALGORITHM)
    for job in todo[span[0] : span[1]]:
        rrs = job.rrs
        owner, wires, ttl = job.owner, rrs.wires, rrs.ttl
        owner_wire = name_wire(owner)
        if len(wires) == 1:  # most rrsets: one record, nothing to sort
            wire = wires[0]
            signed = b"".join(
                (job.header, owner_wire, fixed(rrs.rdtype, _IN, ttl, len(wire)), wire)
            )
        else:
            signed = job.header + b"".join(
                owner_wire + fixed(rrs.rdtype, _IN, ttl, len(wire)) + wire
                for wire in sorted(set(wires))
            )
        inputs.append(signed)
        at += len(signed)
        ends.append(at)
        keys.append(job.signer.index)
        prefixes.append(
            f"{names[owner]} {ttl} IN RRSIG {_rdtype_text(rrs.rdtype)} "
            f"{algorithm} {job.header[3]} {ttl} {job.signer.suffix_text} "
        )
    return b"".join(inputs), ends.tobytes(), keys.tobytes(), "\n".join(prefixes)


def _packed_spans(todo: Sequence[_Job], names: Mapping[Labels, str]) -> Iterator[_Packed]:
    """Every span of ``todo``, packed as its worker needs it, one at a time."""
    for span in ranges(len(todo)):
        yield _packed(todo, names, span)


#: A worker's signatures for a packed span: the signatures end to end (64 octets each),
#: the RRSIG lines end to end, and where each line ends in them (``array("I")`` bytes).
#: Three objects, not three a job: a parent that took in 300,000 small ones, kept some
#: and dropped the rest was left with ~290 MB of its allocator's pools half used.
_SignedSpan = tuple[bytes, str, bytes]


def _sign_task(task: _Packed) -> _SignedSpan:
    """Sign one packed span of jobs with the shared raw keys (in a worker, or inline)."""
    inputs, ends, keys, prefixes = task
    private = [SigningKey.from_seed(raw) for raw in shared()]
    signatures: list[bytes] = []
    lines: list[str] = []
    line_ends = array.array("I")
    start = at = 0
    spans = zip(array.array("I", ends), array.array("I", keys), prefixes.split("\n"), strict=True)
    for end, key, prefix in spans:
        signature = private[key].sign(inputs[start:end])
        start = end
        line = f"{prefix}{base64.b64encode(signature).decode('ascii')}\n"
        signatures.append(signature)
        lines.append(line)
        at += len(line)
        line_ends.append(at)
    return b"".join(signatures), "".join(lines), line_ends.tobytes()


class _SignedLines:
    """The RRSIG lines of every job, in job order, as the workers' texts gave them."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._starts: list[int] = []  # where each text starts, the texts end to end
        self._ends = array.array("Q")  # where each job's line ends, the texts end to end
        self._size = 0

    def __len__(self) -> int:
        return len(self._ends)

    def add(self, text: str, ends: bytes) -> None:
        """Take in a worker's lines (``ends``: where each ends in ``text``)."""
        base = self._size
        self._texts.append(text)
        self._starts.append(base)
        self._ends.extend(base + end for end in array.array("I", ends))
        self._size += len(text)

    def lines(self, first: int, stop: int) -> str:
        """The lines of jobs ``first`` to ``stop`` (excluded), end to end."""
        if stop <= first:
            return ""
        start = self._ends[first - 1] if first else 0
        end = self._ends[stop - 1]
        index = bisect.bisect_right(self._starts, start) - 1
        pieces = []
        while start < end:
            text, base = self._texts[index], self._starts[index]
            upto = min(end, base + len(text))
            pieces.append(text[start - base : upto - base])
            start = upto
            index += 1
        return "".join(pieces)

    def clear(self) -> None:
        """Drop the texts."""
        self._texts.clear()


def _raw(key: ZoneKey) -> bytes:
    return key.private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


@dataclass(frozen=True, slots=True)
class _Job:
    owner: Labels
    rrs: RRs
    signer: _Signer
    header: bytes  # RRSIG rdata without the signature


def sign_records(
    records: ZoneRecords,
    *,
    keys: Sequence[ZoneKey],
    spec: DNSSECSpec,
    window: SignatureWindow,
    dnskey_ttl: int,
    jobs: int = 1,
    progress: Progress | None = None,
    spread: bool = False,
    renewed_since: int | None = None,
) -> SignedZone:
    """DNSKEY, the denial chain and an RRSIG over every authoritative rrset of a zone.

    ``records`` (no DNSSEC records yet) is only read: the result holds the text to
    append to the zone's master file and every rrset of the signed zone in wire form,
    with its RRSIGs, for the loopback server. The DNSKEY rrset holds every key whose
    state puts it there; active KSKs sign the DNSKEY rrset, active ZSKs the rest.
    Signatures are made by ``jobs`` processes (the same bytes as by one). With
    ``spread``, ``window`` is the zone's (:func:`choose_window`) and each owner's RRSIGs
    take their slot's (:func:`owner_window`); without, every RRSIG takes ``window``.
    ``renewed_since`` (the previous zone window's inception) counts the RRSIGs made in
    a window that started after it.

    Returns:
        The added records as master-file text, the DS records, the served rrsets, counts.

    Raises:
        SigningError: no KSK or no ZSK, RRSIG times out of range, or the zone is not
            signable (no SOA, DNSSEC records already present).
    """
    origin = records.origin
    origin_text = name_text(origin)
    if window.expiration >= RRSIG_TIME_LIMIT:
        raise SigningError(
            f"signatures would expire after {_sigtime(RRSIG_TIME_LIMIT - 1)}, "
            "past what an RRSIG can express (RFC 4034 3.1.5); check --now",
            where=origin_text,
        )
    signers = _SignerCache(keys, origin, window, spec if spread else None)
    owners: Owners = {}
    for labels, rrsets in records.owners.items():
        for rrs in rrsets:
            if rrs.rdtype in _DNSSEC_TYPES:
                raise SigningError(
                    f"the unsigned zone already holds {_rdtype_text(rrs.rdtype)} records; "
                    "alter-publish adds DNSSEC records itself",
                    where=origin_text,
                )
        owners[labels] = list(rrsets)
    # The signers are fresh interpreters (~0.5 s to start), started while the chain and
    # the jobs are made. A forked one would keep this process's pages, and copy those this
    # process goes on touching (~200 MB a worker at 100,000 handles). About one job an
    # rrset and one an NSEC or NSEC3 record: small zones are signed inline.
    size = sum(len(rrsets) for rrsets in owners.values()) + len(owners)
    raw_keys = tuple(_raw(key) for key in signers.signing)
    with Workers(jobs, raw_keys, size=size, fresh=True) as pool:
        names, todo, owner_jobs, (max_ttl, renewed) = _jobs_of(
            records, owners, signers, (keys, dnskey_ttl), spec, renewed_since
        )
        if progress is not None:
            progress.start("dnssec", len(todo))
        sigs, sig_lines = _signatures(pool, todo, names, progress)
    signatures = len(sig_lines)
    if progress is not None:
        progress.done()
    served = tuple(
        SignedRRs(labels, rrs.rdtype, rrs.ttl, rrs.wires, sigs.get(id(rrs), ()))
        for labels, rrsets in owners.items()
        for rrs in rrsets
    )
    del sigs, todo
    parts, blocks = _dnssec_text(owners, names, owner_jobs, sig_lines)
    ds_lines = ds_records(dns.name.Name(origin), keys, dnskey_ttl)
    return SignedZone(
        records_parts=parts,
        blocks=blocks,
        ds_text="".join(line + "\n" for line in ds_lines),
        window=window,
        signatures=signatures,
        denial=spec.denial,
        max_ttl=max_ttl,
        rrsets=served,
        renewed=renewed,
    )


def _jobs_of(
    records: ZoneRecords,
    owners: Owners,
    signers: _SignerCache,
    apex_keys: tuple[Sequence[ZoneKey], int],
    spec: DNSSECSpec,
    renewed_since: int | None,
) -> tuple[dict[Labels, str], list[_Job], dict[Labels, tuple[int, int]], tuple[int, int]]:
    """Add the DNSKEY (CDS, CDNSKEY) rrsets and the NSEC or NSEC3 chain to ``owners``
    (``apex_keys``: the zone keys and the DNSKEY TTL); then every signing job.

    Returns:
        Every owner's text, the jobs, each signed owner's jobs (consecutive: first and
        stop), and (the largest TTL signed, the RRSIGs whose window started after
        ``renewed_since``).
    """
    origin = records.origin
    keys, dnskey_ttl = apex_keys
    denial_ttl = negative_ttl(records)
    owners[origin].extend(_apex_key_rrsets(origin, keys, dnskey_ttl))
    names = dict(records.names)
    shape = zone_shape(records)
    signed_names = list(shape.authoritative)
    if spec.denial == "nsec3":
        hashed = add_nsec3_chain(owners, origin, shape, denial_ttl, spec)
        signed_names.extend(hashed)
        names.update(hashed_owner_texts(hashed, name_text(origin)))
    else:
        add_nsec_chain(owners, names, shape, denial_ttl)
    todo: list[_Job] = []
    max_ttl = renewed = 0
    since = -1 if renewed_since is None else renewed_since
    owner_jobs: dict[Labels, tuple[int, int]] = {}
    for name in signed_names:
        delegation = name in shape.cuts
        owner_at, ksks, zsks = signers.of(name)
        here = owners[name]
        first = len(todo)
        for rrs in sorted(here, key=_BY_TYPE) if len(here) > 1 else here:
            if delegation and rrs.rdtype not in (_DS, _NSEC):
                continue
            max_ttl = max(max_ttl, rrs.ttl)
            todo.extend(_jobs(name, rrs, ksks if rrs.rdtype in _KSK_SIGNED else zsks, owner_at))
        if len(todo) > first:
            owner_jobs[name] = (first, len(todo))
            if owner_at.inception > since:
                renewed += len(todo) - first
    return names, todo, owner_jobs, (max_ttl, renewed)


def _signatures(
    pool: Workers, todo: Sequence[_Job], names: Mapping[Labels, str], progress: Progress | None
) -> tuple[dict[int, tuple[bytes, ...]], _SignedLines]:
    """Sign ``todo`` on ``pool``: per rrset (by ``id``), its RRSIG rdatas; every RRSIG line.

    Each span's signing inputs are built here as its task is sent (the inputs, ~100 MB
    at 100,000 handles, never exist all at once), and each span's signatures taken in
    while the workers sign the next (no list of every result).
    """
    sigs: dict[int, tuple[bytes, ...]] = {}  # the rrs objects live on
    sig_lines = _SignedLines()
    for blob, text, ends in pool.map_chunks(_sign_task, _packed_spans(todo, names)):
        first = len(sig_lines)
        for number, at in enumerate(range(0, len(blob), _SIGNATURE_OCTETS), start=first):
            job = todo[number]
            rdata = job.header + blob[at : at + _SIGNATURE_OCTETS]
            had = sigs.get(id(job.rrs))
            sigs[id(job.rrs)] = (rdata,) if had is None else (*had, rdata)
        sig_lines.add(text, ends)
        if progress is not None:
            progress.advance(len(sig_lines) - first)
    return sigs, sig_lines


def _apex_key_rrsets(origin: Labels, keys: Sequence[ZoneKey], ttl: int) -> list[RRs]:
    """The DNSKEY rrset and, while a KSK rollover runs, the CDS and CDNSKEY rrsets
    (RFC 7344, RFC 8078): the DS set the parent should hold (``cds_keys``), SHA-256."""
    dnskeys = [key.dnskey for key in keys if key.in_dnskey]
    rrsets = [_rrs(_DNSKEY, ttl, dnskeys)]
    listed = cds_keys(keys)
    if listed:
        apex = dns.name.Name(origin)
        rrsets.append(
            _rrs(_CDS, ttl, [dns.dnssec.make_cds(apex, key.dnskey, DS_DIGEST) for key in listed])
        )
        rrsets.append(_rrs(_CDNSKEY, ttl, [_cdnskey(key.dnskey) for key in listed]))
    return rrsets


def _cdnskey(dnskey: dns.rdtypes.ANY.DNSKEY.DNSKEY) -> dns.rdata.Rdata:
    """The CDNSKEY of a DNSKEY: the same rdata (RFC 7344 3.2)."""
    wire = dnskey.to_digestable()
    return dns.rdata.from_wire(_IN, _CDNSKEY, wire, 0, len(wire))


def _rrs(rdtype: int, ttl: int, rdatas: Sequence[dns.rdata.Rdata]) -> RRs:
    return RRs(
        rdtype,
        ttl,
        tuple(rdata.to_digestable() for rdata in rdatas),
        tuple(rdata.to_text() for rdata in rdatas),
    )


#: Lines per part of the DNSSEC records' text.
_PART_LINES = 4096


def _dnssec_text(
    owners: Owners,
    names: Mapping[Labels, str],
    owner_jobs: Mapping[Labels, tuple[int, int]],
    sig_lines: _SignedLines,
) -> tuple[tuple[str, ...], dict[Labels, tuple[int, int]]]:
    """Master-file lines of every DNSSEC record, owners in canonical order, each owner's
    DNSKEY/NSEC/NSEC3/NSEC3PARAM first, then its RRSIGs by covered type (``owner_jobs``:
    its jobs' lines in ``sig_lines``), as consecutive parts of :data:`_PART_LINES` pieces
    or so; and where each owner's lines start and end in that (ASCII) text.
    ``sig_lines`` is dropped once its lines are in the parts."""
    parts: list[str] = []
    lines: list[str] = []
    blocks: dict[Labels, tuple[int, int]] = {}
    at = 0
    for name in sorted(owners, key=canonical_key):
        owner = names[name]
        start = at
        rrsets = owners[name]
        for rrs in sorted(rrsets, key=_BY_TYPE) if len(rrsets) > 1 else rrsets:
            if rrs.rdtype in _DNSSEC_TYPES:
                rdtype = _rdtype_text(rrs.rdtype)
                for text in rrs.texts:
                    line = f"{owner} {rrs.ttl} IN {rdtype} {text}\n"
                    lines.append(line)
                    at += len(line)
        jobs = owner_jobs.get(name)
        if jobs is not None:
            signed = sig_lines.lines(*jobs)
            lines.append(signed)
            at += len(signed)
        blocks[name] = (start, at)
        if len(lines) >= _PART_LINES:
            parts.append("".join(lines))
            lines.clear()
    parts.append("".join(lines))
    sig_lines.clear()
    return tuple(parts), blocks


def _signers(
    keys: Sequence[ZoneKey], window: SignatureWindow, origin: Labels
) -> tuple[list[_Signer], list[_Signer], list[ZoneKey]]:
    """(KSK signers, ZSK signers, the signing keys in signer-index order)."""
    signing = [key for key in keys if key.signs]
    origin_wire = name_wire(origin)
    origin_text = name_text(origin)
    times = f"{_sigtime(window.expiration)} {_sigtime(window.inception)}"
    signers = [
        _Signer(index, key.tag, origin_wire, f"{times} {key.tag} {origin_text}")
        for index, key in enumerate(signing)
    ]
    ksks = [s for s, key in zip(signers, signing, strict=True) if key.role is ZoneKeyRole.KSK]
    zsks = [s for s, key in zip(signers, signing, strict=True) if key.role is ZoneKeyRole.ZSK]
    if not ksks or not zsks:
        raise SigningError(
            "signing needs at least one active KSK and one active ZSK", where=origin_text
        )
    return ksks, zsks, signing


#: An owner's window and its KSK and ZSK signers.
_Signed = tuple[SignatureWindow, list[_Signer], list[_Signer]]


class _SignerCache:
    """The signers of each owner's window (a few distinct ones per zone: each made once)."""

    def __init__(
        self,
        keys: Sequence[ZoneKey],
        origin: Labels,
        window: SignatureWindow,
        spread: DNSSECSpec | None,
    ) -> None:
        self.keys, self.origin = keys, origin
        self.spread = None if spread is None else OwnerWindows(window, spread)
        ksks, zsks, self.signing = _signers(keys, window, origin)
        self._zone = (window, ksks, zsks)
        # Per slot, made when first asked for (a window's hash is computed in Python: a
        # lookup by window cost 0.6 s per 300,000 owners).
        self._slots: list[_Signed | None] = [None] * (
            0 if self.spread is None else self.spread.slots
        )

    def of(self, owner: Labels) -> _Signed:
        """(the owner's window, its KSK signers, its ZSK signers).

        Raises:
            SigningError: no active KSK or ZSK.
        """
        if self.spread is None:
            return self._zone
        slot = self.spread.slot(owner)
        made = self._slots[slot]
        if made is None:
            window = self.spread.windows[slot]
            ksks, zsks, _ = _signers(self.keys, window, self.origin)
            made = self._slots[slot] = (window, ksks, zsks)
        return made


def _jobs(
    name: Labels, rrs: RRs, signers: Sequence[_Signer], window: SignatureWindow
) -> Iterator[_Job]:
    """One signing job per signer for the rrset ``rrs`` at ``name``."""
    label_count = len(name) - (2 if name[0] == b"*" else 1)  # RFC 4034 3.1.3
    for signer in signers:
        header = (
            _RRSIG_HEADER.pack(
                rrs.rdtype,
                ALGORITHM,
                label_count,
                rrs.ttl,
                window.expiration,
                window.inception,
                signer.tag,
            )
            + signer.origin_wire
        )
        yield _Job(name, rrs, signer, header)


def rrsig_lines(
    rrsets: Sequence[tuple[Labels, RRs]],
    *,
    keys: Sequence[ZoneKey],
    window: SignatureWindow,
    origin: Labels,
    names: Mapping[Labels, str],
    spread: DNSSECSpec | None = None,
    jobs: int = 1,
) -> list[str]:
    """The RRSIG lines of a few authoritative rrsets (the DNSKEY, CDS and CDNSKEY rrsets
    signed by the active KSKs, the rest by the active ZSKs), one string per rrset, byte
    for byte as :func:`sign_records` writes them (``spread``: its ``spec`` when it
    spreads renewals), made by ``jobs`` processes when there are many.

    Raises:
        SigningError: no active KSK or ZSK.
    """
    signers = _SignerCache(keys, origin, window, spread)
    signing = signers.signing
    todo: list[_Job] = []
    ends: list[int] = []
    for name, rrs in rrsets:
        owner_at, ksks, zsks = signers.of(name)
        todo.extend(_jobs(name, rrs, ksks if rrs.rdtype in _KSK_SIGNED else zsks, owner_at))
        ends.append(len(todo))
    raw = tuple(_raw(key) for key in signing)
    sig_lines = _SignedLines()
    with Workers(jobs, raw, size=len(todo)) as pool:
        for _, text, line_ends in pool.map_chunks(_sign_task, _packed_spans(todo, names)):
            sig_lines.add(text, line_ends)
    return [sig_lines.lines(start, end) for start, end in zip([0, *ends], ends, strict=False)]
