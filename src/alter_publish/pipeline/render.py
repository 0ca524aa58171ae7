"""Envelopes -> TXT rdata (dnspython) -> zone text via jinja2 templates, parsed back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from alter_publish.definition.model import HandleSpec, ZoneSpec
from alter_publish.dns.records import HandleRecord, txt_rdata_text
from alter_publish.errors import RenderError
from alter_publish.format.envelope import Envelope, Revocation
from alter_publish.format.logrecord import checkpoint_record, log_record_owner

__all__ = [
    "ENVELOPES_FORMAT",
    "ZONE_TEMPLATE",
    "SignedHandle",
    "content_digest",
    "envelopes_document",
    "handle_rrsets",
    "log_rrset",
    "render_zone_text",
    "template_context",
    "txt_rdata_text",
]

ZONE_TEMPLATE = "zone.j2"
ENVELOPES_FORMAT = "alter-publish/envelopes/1"


@dataclass(frozen=True, slots=True)
class SignedHandle:
    """A handle of the zone with the envelope published for it."""

    spec: HandleSpec
    envelope: Envelope
    revocations: tuple[Revocation, ...] = ()
    #: The envelope's c2sp.org/tlog-proof (None: no signed checkpoint covers it yet).
    tlog_proof: str | None = None


def _environment(templates: Path) -> jinja2.Environment:
    # Zone files are not HTML: escaping would corrupt them; values are DNS-quoted by dnspython.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # noqa: S701 (zone text, not HTML)
    )


def handle_rrsets(signed: Sequence[SignedHandle]) -> list[HandleRecord]:
    """Each handle's TXT rrset: its envelope, then the revocations it publishes."""
    return [
        HandleRecord.make(
            item.spec.owner,
            item.spec.ttl,
            (item.envelope.to_text(), *(revocation.to_text() for revocation in item.revocations)),
        )
        for item in signed
    ]


def log_rrset(spec: ZoneSpec, note: str | None) -> HandleRecord | None:
    """The zone's checkpoint record at ``_alter-log.<zone>.`` publishing ``note`` (the
    latest signed checkpoint; None: the log has none yet, no record)."""
    if note is None:
        return None
    return HandleRecord.make(log_record_owner(spec.origin), spec.ttl, (checkpoint_record(note),))


def template_context(
    spec: ZoneSpec,
    signed: Sequence[SignedHandle],
    serial: int,
    version: str,
    rrsets: Sequence[HandleRecord] | None = None,
    log: HandleRecord | None = None,
) -> dict[str, Any]:
    """Everything a zone template can use (``rrsets``: each handle's TXT rrset, when
    already made, saves making the rdata texts again; ``log``: the checkpoint record,
    :func:`log_rrset`)."""
    made = rrsets or handle_rrsets(signed)
    hosts = [
        {"owner": owner, "type": "AAAA" if ":" in address else "A", "address": address}
        for owner, addresses in spec.hosts
        for address in addresses
    ]
    records = [
        {
            "handle": item.spec.handle.ref,
            "tier": str(item.spec.handle.tier),
            "owner": item.spec.owner,
            "ttl": item.spec.ttl,
            "epoch": item.envelope.epoch,
            "key_id": item.envelope.key_id,
            "text": rrset.texts[0],
            "rdata": rrset.rdata[0],
            "revocations": [
                {"epoch": revocation.epoch, "text": text, "rdata": rdata}
                for revocation, text, rdata in zip(
                    item.revocations, rrset.texts[1:], rrset.rdata[1:], strict=True
                )
            ],
        }
        for item, rrset in zip(signed, made, strict=True)
    ]
    return {
        "origin": spec.origin + ".",
        "ttl": spec.ttl,
        "serial": serial,
        "soa": spec.soa,
        "ns": spec.ns,
        "hosts": hosts,
        "tlsa": tlsa_context(spec),
        "records": records,
        "log": (
            None
            if log is None
            else {"owner": log.owner, "ttl": log.ttl, "text": log.texts[0], "rdata": log.rdata[0]}
        ),
        "source": spec.path.name,
        "version": version,
    }


def tlsa_context(spec: ZoneSpec) -> list[dict[str, Any]]:
    """The TLSA records the zone publishes (its hosts' ``tls``), for the template."""
    return [
        {"owner": found.owner, "ttl": spec.ttl, "rdata": record.to_text()}
        for found in spec.tlsa_sets()
        if found.inside
        for record in found.records
    ]


def missing_tlsa(spec: ZoneSpec, text: str) -> str | None:
    """The first TLSA line the rendered ``text`` lacks (a template of its own that does
    not render ``tlsa``), or None."""
    for found in spec.tlsa_sets():
        if found.inside:
            for line in found.lines(spec.ttl):
                if line not in text:
                    return line
    return None


def render_zone_text(templates: Path, context: dict[str, Any]) -> str:
    """Render ``zone.j2`` from ``templates`` with ``context``.

    Raises:
        RenderError: a template is missing, has a syntax error, or uses an unknown variable.
    """
    try:
        return _environment(templates).get_template(ZONE_TEMPLATE).render(context)
    except jinja2.TemplateNotFound as exc:
        raise RenderError(f"template {exc.name!r} not found", where=str(templates)) from exc
    except jinja2.TemplateSyntaxError as exc:
        where = f"{exc.filename or templates}:{exc.lineno}"
        raise RenderError(f"template syntax error: {exc.message}", where=where) from exc
    except jinja2.TemplateError as exc:
        raise RenderError(f"template error: {exc}", where=str(templates)) from exc


HANDLES_TEMPLATE = "handles.j2"


def handle_segments(templates: Path, context: dict[str, Any]) -> list[str]:
    """Each record of ``context`` rendered alone through ``handles.j2``: the lines the
    shipped templates give that handle in the zone (for patching them in).

    Raises:
        RenderError: as :func:`render_zone_text`, or the template does not render one
            record after another.
    """
    try:
        template = _environment(templates).get_template(HANDLES_TEMPLATE)
        empty = template.render({**context, "records": []})
        segments = []
        for record in context["records"]:
            text = template.render({**context, "records": [record]})
            if not text.startswith(empty):
                raise RenderError(
                    "does not render one record after another", where=HANDLES_TEMPLATE
                )
            segments.append(text[len(empty) :])
    except jinja2.TemplateError as exc:
        raise RenderError(f"template error: {exc}", where=str(templates)) from exc
    return segments


def content_digest(text: str) -> str:
    """SHA-256 hex of rendered zone text (rendered with serial 0) for change detection."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: One encoder for every line (``json.dumps`` with options builds one per call).
_ENCODE_LINE = json.JSONEncoder(sort_keys=True, separators=(", ", ": ")).encode


def envelope_line(item: SignedHandle, tlog_proof: str | None = None) -> str:
    """One handle's line of ``<zone>.envelopes.json`` (the C encoder, sorted keys), with
    ``item.tlog_proof`` or else ``tlog_proof``."""
    mapping = {
        **item.envelope.to_mapping(),
        "owner": item.spec.owner,
        "text": item.envelope.to_text(),
        "txt_strings": list(item.envelope.txt_strings()),
    } | ({"revocations": [r.to_text() for r in item.revocations]} if item.revocations else {})
    if (proof := item.tlog_proof or tlog_proof) is not None:
        mapping["tlog_proof"] = proof
    return "    " + _ENCODE_LINE(mapping)


def envelopes_document(
    spec: ZoneSpec,
    signed: Sequence[SignedHandle],
    serial: int,
    tlog_proof: Callable[[SignedHandle], str | None] | None = None,
) -> Iterator[str]:
    """``<zone>.envelopes.json``: every published envelope, machine-readable and deterministic,
    as consecutive parts (written one by one: never one 100 MB string). ``tlog_proof``
    makes the proof of an item that holds none, as its line is written.

    One handle per line (diffs stay per handle), each made by :func:`envelope_line`:
    ``json.dumps`` with ``indent=`` runs the pure-Python encoder, 10x slower at 100,000
    handles.
    """
    yield f'{{\n  "format": {json.dumps(ENVELOPES_FORMAT)},\n  "handles": ['
    for index, item in enumerate(signed):
        proof = None if tlog_proof is None or item.tlog_proof else tlog_proof(item)
        yield ("\n" if index == 0 else ",\n") + envelope_line(item, proof)
    yield "\n  " if signed else ""
    yield f'],\n  "serial": {serial},\n  "zone": {json.dumps(spec.origin)}\n}}\n'
