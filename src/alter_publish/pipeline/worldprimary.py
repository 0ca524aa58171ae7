"""``check --primary``: what a zone its primary signs publishes, as ``check`` compares it.

``push`` publishes to a primary that signs the zone itself (inline signing) with its own
keys and serials: the serial to expect at every name server is the primary's, and the
DS the parent should serve is that of the secure entry points the primary serves, not
``sign``'s state and ``build/<zone>.ds``. The alter1 records and the ``_alter-log``
checkpoint record (push sends both) are still ``sign``'s.
"""

from __future__ import annotations

import dataclasses

import dns.dnssec
import dns.name
import dns.rdatatype
from dns.dnssectypes import DSDigest
from dns.rdtypes.ANY.DNSKEY import DNSKEY
from dns.rdtypes.dnskeybase import Flag

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.iterate import ask_server
from alter_publish.errors import ResolveError
from alter_publish.verify.world import Expected, answer_of, ds_text

#: The DS digest type expected when ``build/<zone>.ds`` names none.
DEFAULT_DIGEST_TYPE = DSDigest.SHA256


def primary_expected(
    expected: Expected, origin: str, primary: tuple[str, int], *, timeout: float
) -> Expected:
    """``expected`` with the serial and the DS of what ``primary`` serves for ``origin``.

    Args:
        expected: what ``sign`` wrote (its alter1 records and log checkpoint are kept).
        origin: the zone apex, absolute.
        primary: the primary's ``(address, port)``.
        timeout: seconds to wait for each answer.

    Returns:
        The expectations for a zone the primary signs.

    Raises:
        ResolveError: the primary gives no answer, or serves no SOA or DNSKEY.
    """
    host, port = primary
    where = f"primary {host}:{port}"
    apex = dns.name.from_text(origin)
    soa = answer_of(
        ask_server(primary, apex, dns.rdatatype.SOA, timeout=timeout), apex, dns.rdatatype.SOA
    )
    if soa is None:
        raise ResolveError(f"serves no SOA for {origin}", where=where)
    served = answer_of(
        ask_server(primary, apex, dns.rdatatype.DNSKEY, timeout=timeout), apex, dns.rdatatype.DNSKEY
    )
    keys = [key for key in served or () if isinstance(key, DNSKEY)]
    if not keys:
        raise ResolveError(f"serves no DNSKEY for {origin}", where=where)
    sep = tuple(key for key in keys if key.flags & Flag.SEP) or tuple(keys)
    digests = sorted(
        {DSDigest(ds.digest_type) for anchor in expected.anchors for ds in anchor.ds}
        or {DEFAULT_DIGEST_TYPE}
    )
    ds = tuple(dns.dnssec.make_ds(apex, key, digest) for key in sep for digest in digests)
    return dataclasses.replace(
        expected,
        serial=next(iter(soa)).serial,
        ds=frozenset(ds_text(rdata) for rdata in ds),
        ksks=sep,
        retired=(),
        anchors=(TrustAnchor(apex, ds, ()),),
    )
