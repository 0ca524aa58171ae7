"""A record as a person pastes it: dig's quoted TXT form, its owner name, its substrate.

``verify-record`` checks one record by hand (spec section 6); these functions turn
what was pasted into what :func:`~alter_publish.format.envelope.verify_record` takes.
"""

from __future__ import annotations

import dns.exception
import dns.rdata
import dns.rdataclass
import dns.rdatatype

from alter_publish.errors import UsageError
from alter_publish.format.envelope import Envelope, parse_record_or_none, verify_record


def join_txt(text: str) -> str:
    """The record text of dig's form (``"v=alter1; ..." "...rest"``) or of plain text.

    Quoted text is parsed as TXT rdata by dnspython and its strings joined (bytes kept
    1:1); anything else is the record text itself, stripped.

    Raises:
        UsageError: quoted text that is not TXT rdata.
    """
    stripped = text.strip()
    if not stripped.startswith('"'):
        return stripped
    try:
        rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.TXT, stripped)
    except (dns.exception.DNSException, ValueError) as exc:
        raise UsageError(f"not TXT rdata: {exc}") from exc
    strings: tuple[bytes, ...] = rdata.strings  # type: ignore[attr-defined]  # TXT rdata
    return b"".join(strings).decode("latin-1")


def record_owner(owner: str) -> str:
    """``owner`` as an absolute, lower-case name (``_alter.blake.example.com.``)."""
    owner = owner.lower()
    return owner if owner.endswith(".") else owner + "."


def infer_substrate(record: str, owner: str) -> str | None:
    """The substrate the owner name implies for the record's own handle, if any.

    A bare, bot or instrument handle ``~name`` found at ``_alter.name.<zone>.`` has
    ``<zone>.`` as its substrate; a domain handle, a record that is not an envelope, or
    an owner of another shape implies none.
    """
    envelope = parse_record_or_none(record)
    if not isinstance(envelope, Envelope) or envelope.handle.is_domain:
        return None
    prefix = f"_alter.{envelope.handle.name}."
    if owner.startswith(prefix) and len(owner) > len(prefix):
        return owner[len(prefix) :]
    return None


def verify_pasted(text: str, *, owner: str, substrate: str | None, now: int) -> Envelope:
    """Verify one pasted record found at ``owner`` (an absolute name, :func:`record_owner`).

    Args:
        text: the record as pasted (:func:`join_txt`).
        owner: the owner name it was found at.
        substrate: the substrate zone; None infers it from ``owner`` (:func:`infer_substrate`).
        now: the current Unix time.

    Returns:
        The verified envelope.

    Raises:
        UsageError: quoted text that is not TXT rdata.
        VerificationError: with the spec category of the first failing step.
    """
    record = join_txt(text)
    if substrate is None:
        substrate = infer_substrate(record, owner)
    return verify_record(record, owner=owner, substrate=substrate, now=now)
