"""Signed ``_alter`` records -> files for other publishers: BIND ``$INCLUDE``, octoDNS, web.

``sign`` proves a zone and writes ``<out>/<zone>.envelopes.json``; an export reads
that document (never the key store or the log), takes owners and TTLs from the
zone definition, and renders the same TXT records for a publisher that is not the
zone file ``sign`` wrote:

- ``bind-include``: master-file lines for ``$INCLUDE`` (absolute names, TTL, class);
- ``octodns``: the records file an octoDNS ``YamlProvider`` reads for the zone;
- ``well-known``: ``https://<zone>/.well-known/alter-envelope.json`` (each record
  with its envelope's c2sp.org/tlog-proof, ``tlog_proof``, when the document has one).

Every format carries exactly the record texts of the envelopes document: per
handle the envelope, then each revocation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import dns.exception
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.zonefile
import yaml

from alter_publish.definition.model import HandleSpec, ZoneSpec
from alter_publish.dns.zonetext import txt_text
from alter_publish.errors import RenderError, VerificationError
from alter_publish.fileio import atomic_write_bytes
from alter_publish.format.envelope import (
    Envelope,
    Revocation,
    parse_record,
    split_txt,
)
from alter_publish.format.tlog import PROOF_HEADER
from alter_publish.pipeline import current_outputs, output_paths
from alter_publish.pipeline.render import ENVELOPES_FORMAT, txt_rdata_text

WELL_KNOWN_FORMAT = "alter-publish/well-known/1"
WELL_KNOWN_PATH = ".well-known/alter-envelope.json"
SERIAL_MAX = 2**32 - 1
#: Wider than any TXT record (at most 65535 octets), so YAML never folds a value.
YAML_WIDTH_CHARS = 1 << 20
_DIGITS = re.compile(r"(\d+)")
_RUN_SIGN = "run 'alter-publish sign' first"


class ExportFormat(StrEnum):
    """What ``export`` renders."""

    BIND_INCLUDE = "bind-include"
    OCTODNS = "octodns"
    WELL_KNOWN = "well-known"


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """The TXT records one handle publishes at its owner name.

    Attributes:
        handle: the handle-ref (``~blake``).
        owner: absolute owner name (``_alter.blake.example.com.``).
        ttl: TTL of every record at ``owner``.
        envelope: the signed envelope's record text.
        revocations: revocation record texts published beside it, in order.
        tlog_proof: the envelope's c2sp.org/tlog-proof in the zone's log (None: none).
    """

    handle: str
    owner: str
    ttl: int
    envelope: str
    revocations: tuple[str, ...] = ()
    tlog_proof: str | None = None

    @property
    def texts(self) -> tuple[str, ...]:
        """Every record text at ``owner``: the envelope, then each revocation."""
        return (self.envelope, *self.revocations)


@dataclass(frozen=True, slots=True)
class ZoneExport:
    """What ``sign`` proved and wrote for one zone, ready to render.

    Attributes:
        zone: the zone name without trailing dot (``example.com``).
        serial: the SOA serial of the zone the records were proven in.
        records: one entry per handle, in the definition's order.
    """

    zone: str
    serial: int
    records: tuple[ExportRecord, ...]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What :func:`export_zone` did."""

    zone: str
    format: ExportFormat
    path: Path
    written: bool
    serial: int
    records: int

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "zone": self.zone,
            "format": str(self.format),
            "path": str(self.path),
            "written": self.written,
            "serial": self.serial,
            "records": self.records,
        }


# --- paths -------------------------------------------------------------------


def default_export_path(out: Path, zone: str, fmt: ExportFormat) -> Path:
    """Where an export goes unless told otherwise.

    - ``bind-include``: ``<out>/<zone>.alter.include``
    - ``octodns``: ``<out>/octodns/<zone>.yaml`` (a ``YamlProvider`` directory)
    - ``well-known``: ``<out>/<zone>/.well-known/alter-envelope.json`` (a web root)
    """
    if fmt is ExportFormat.BIND_INCLUDE:
        return out / f"{zone}.alter.include"
    if fmt is ExportFormat.OCTODNS:
        return out / "octodns" / f"{zone}.yaml"
    return out / zone / WELL_KNOWN_PATH


# --- loading -----------------------------------------------------------------


def load_export(
    spec: ZoneSpec,
    out: Path,
    *,
    logged: Callable[[str], str | None] | None = None,
    proven: bool = False,
) -> ZoneExport:
    """Read ``<out>/<zone>.envelopes.json`` and pair it with the definition's owners and TTLs.

    ``logged`` gives the text last logged at an owner name (see ``parse_export``);
    ``proven``: the document is as the last proven ``sign`` of this definition wrote it
    (see ``parse_export``).

    Raises:
        RenderError: the document is missing, unreadable, not an envelopes document, for
            another zone, or does not match the definition handle for handle (every
            problem is in ``reasons``).
    """
    _, read, _ = current_outputs(out, spec.origin)
    _, path = output_paths(out, spec.origin)
    try:
        text = read.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RenderError(f"not found; {_RUN_SIGN}", where=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"cannot read ({exc}); {_RUN_SIGN}", where=str(path)) from exc
    return parse_export(spec, text, where=str(path), logged=logged, proven=proven)


def parse_export(
    spec: ZoneSpec,
    text: str,
    *,
    where: str,
    logged: Callable[[str], str | None] | None = None,
    proven: bool = False,
) -> ZoneExport:
    """Build the export of ``spec`` from the text of its envelopes document.

    An envelope text equal to the one ``logged`` gives for its owner (the last entry
    the zone's log holds there: ``sign`` appends only envelopes it signed for that
    owner's handle) is not parsed again; every other text is (``plan`` at 100,000
    handles spent most of its time here). With ``proven`` (the record of the last
    proven ``sign`` holds: that run proved these very texts for this definition) no
    text is parsed; only the document's shape is checked.

    Raises:
        RenderError: not an envelopes document of this zone, or it does not match the
            definition: a handle missing or extra, a wrong owner, a text that is not
            the handle's alter1 envelope or revocation (every problem in ``reasons``).
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise RenderError(f"not an envelopes document ({exc}); {_RUN_SIGN}", where=where) from exc
    items = _document_items(doc, spec.origin, where)
    problems: list[str] = []
    by_ref: dict[str, Mapping[str, Any]] = {}
    for index, item in enumerate(items):
        ref = item.get("handle")
        if not isinstance(ref, str):
            problems.append(f"handles[{index}]: no handle")
        elif ref in by_ref:
            problems.append(f"{ref}: listed twice")
        else:
            by_ref[ref] = item
    records: list[ExportRecord] = []
    for handle_spec in spec.handles:
        ref = handle_spec.handle.ref
        found = by_ref.pop(ref, None)
        if found is None:
            problems.append(f"{ref}: not in the document; {_RUN_SIGN}")
            continue
        if proven:
            record = _proven_record(handle_spec, found, problems)
        else:
            known = logged(handle_spec.owner) if logged is not None else None
            record = _record(handle_spec, found, problems, known)
        if record is not None:
            records.append(record)
    problems.extend(f"{ref}: not in the definition {spec.path.name}; {_RUN_SIGN}" for ref in by_ref)
    if problems:
        more = len(problems) - 1
        what = problems[0] + (f" (+{more} more problem{'s' if more > 1 else ''})" if more else "")
        raise RenderError(what, where=where, reasons=tuple(f"{where}: {p}" for p in problems))
    return ZoneExport(zone=spec.origin, serial=int(doc["serial"]), records=tuple(records))


def _document_items(doc: Any, zone: str, where: str) -> list[Mapping[str, Any]]:
    """The ``handles`` of an envelopes document for ``zone``.

    Raises:
        RenderError: not an envelopes document, or one for another zone.
    """
    if not isinstance(doc, dict) or doc.get("format") != ENVELOPES_FORMAT:
        raise RenderError(f"not an {ENVELOPES_FORMAT} document; {_RUN_SIGN}", where=where)
    if doc.get("zone") != zone:
        raise RenderError(f"is for zone {doc.get('zone')!r}, not {zone!r}", where=where)
    serial = doc.get("serial")
    if isinstance(serial, bool) or not isinstance(serial, int) or not 0 <= serial <= SERIAL_MAX:
        raise RenderError(f"bad serial {serial!r}; {_RUN_SIGN}", where=where)
    items = doc.get("handles")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise RenderError(f"handles is not a list of objects; {_RUN_SIGN}", where=where)
    return items


def _proven_record(
    handle_spec: HandleSpec, item: Mapping[str, Any], problems: list[str]
) -> ExportRecord | None:
    """The export record of one handle from a proven document: its fields' types checked,
    none of its texts parsed; None after adding what is wrong to ``problems``."""
    ref = handle_spec.handle.ref
    text, revocations, proof = item.get("text"), item.get("revocations", []), item.get("tlog_proof")
    if (
        item.get("owner") != handle_spec.owner
        or not isinstance(text, str)
        or not isinstance(revocations, list)
        or not all(isinstance(revocation, str) for revocation in revocations)
        or not (proof is None or isinstance(proof, str))
    ):
        problems.append(f"{ref}: not the record the last sign proved; {_RUN_SIGN}")
        return None
    return ExportRecord(ref, handle_spec.owner, handle_spec.ttl, text, tuple(revocations), proof)


def _record(
    handle_spec: HandleSpec, item: Mapping[str, Any], problems: list[str], known: str | None
) -> ExportRecord | None:
    """The export record of one handle, or None after adding what is wrong to ``problems``."""
    ref = handle_spec.handle.ref
    before = len(problems)
    if item.get("owner") != handle_spec.owner:
        problems.append(f"{ref}: owner {item.get('owner')!r} is not {handle_spec.owner!r}")
    text = item.get("text")
    if not isinstance(text, str):
        problems.append(f"{ref}: no record text")
        return None
    if text != known:
        try:
            record = parse_record(text)
        except VerificationError as exc:
            problems.append(f"{ref}: text is not an alter1 envelope ({exc})")
            return None
        if not isinstance(record, Envelope) or record.handle != handle_spec.handle:
            problems.append(f"{ref}: text is not an envelope for {ref}")
    if item.get("txt_strings") != list(split_txt(text)):
        problems.append(f"{ref}: txt_strings do not match text")
    revocations = item.get("revocations", [])
    if not isinstance(revocations, list) or not all(isinstance(r, str) for r in revocations):
        problems.append(f"{ref}: revocations is not a list of texts")
        return None
    for position, revocation_text in enumerate(revocations):
        try:
            revocation = parse_record(revocation_text)
        except VerificationError as exc:
            problems.append(f"{ref}: revocations[{position}] is malformed ({exc})")
            continue
        if not isinstance(revocation, Revocation) or revocation.handle != handle_spec.handle:
            problems.append(f"{ref}: revocations[{position}] is not a revocation for {ref}")
    proof = item.get("tlog_proof")
    if proof is not None and not (isinstance(proof, str) and proof.startswith(PROOF_HEADER)):
        problems.append(f"{ref}: tlog_proof is not a c2sp.org/tlog-proof")
    if len(problems) > before:
        return None
    return ExportRecord(
        handle=ref,
        owner=handle_spec.owner,
        ttl=handle_spec.ttl,
        envelope=text,
        revocations=tuple(revocations),
        tlog_proof=proof,
    )


# --- rendering ---------------------------------------------------------------


def render_export(export: ZoneExport, spec: ZoneSpec, fmt: ExportFormat) -> str:
    """Render ``export`` (of ``spec``'s zone) in format ``fmt``, checked by parsing it back.

    Raises:
        RenderError: ``export`` is for another zone, a record cannot be expressed in
            ``fmt``, or the rendered text does not parse back to the same records.
    """
    if export.zone != spec.origin:
        raise RenderError(
            f"records of zone {export.zone!r}, not {spec.origin!r}", where=spec.origin
        )
    if fmt is ExportFormat.BIND_INCLUDE:
        return render_bind_include(export, source=spec.path.name)
    if fmt is ExportFormat.OCTODNS:
        return render_octodns(export, source=spec.path.name)
    return render_well_known(export)


def render_bind_include(export: ZoneExport, *, source: str = "") -> str:
    """Master-file lines for ``$INCLUDE``: one TXT record a line, absolute names, TTL, class.

    Raises:
        RenderError: the lines do not parse back (dnspython) to the records' texts.
    """
    origin = export.zone + "."
    from_source = f" (definition {source})" if source else ""
    lines = [
        f"; alter1 records of {origin} serial {export.serial}, exported by alter-publish",
        f"; from {export.zone}.envelopes.json{from_source}; do not edit by hand.",
        f"; Use with $INCLUDE in the master file of {origin} (names are absolute).",
    ]
    for record in export.records:
        lines.append(f"; {record.handle}")
        lines.append(_txt_line(record, record.envelope))
        for text in record.revocations:
            lines.append(f"; {record.handle} revocation")
            lines.append(_txt_line(record, text))
    text = "\n".join(lines) + "\n"
    _check_bind_include(text, export)
    return text


def _txt_line(record: ExportRecord, text: str) -> str:
    return f"{record.owner} {record.ttl} IN TXT {txt_rdata_text(split_txt(text))}"


def _check_bind_include(text: str, export: ZoneExport) -> None:
    """Parse the lines back with dnspython and compare them with the records.

    Raises:
        RenderError: they do not parse, or say something else.
    """
    where = f"{export.zone}.alter.include"
    try:
        rrsets = dns.zonefile.read_rrsets(text, rdclass=None, relativize=False)
    except dns.exception.DNSException as exc:
        raise RenderError(f"rendered lines do not parse ({exc})", where=where) from exc
    parsed = {
        rrset.name.to_text(): (
            rrset.ttl,
            int(rrset.rdclass),
            int(rrset.rdtype),
            sorted(txt_text(rdata.strings) for rdata in rrset),
        )
        for rrset in rrsets
    }
    wanted = {
        record.owner: (
            record.ttl,
            int(dns.rdataclass.IN),
            int(dns.rdatatype.TXT),
            sorted(record.texts),
        )
        for record in export.records
    }
    if parsed != wanted or len(rrsets) != len(export.records):
        raise RenderError("rendered lines do not parse back to the records", where=where)


def octodns_escape(text: str) -> str:
    r"""A TXT record text as an octoDNS value: every ``;`` escaped as ``\;``."""
    return text.replace(";", "\\;")


def octodns_unescape(value: str) -> str:
    r"""The record text of an octoDNS TXT value (``\;`` -> ``;``)."""
    return value.replace("\\;", ";")


def natural_key(name: str) -> tuple[str | int, ...]:
    """Natural sort key (``a2`` before ``a10``), the order octoDNS's YAML loader enforces."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


def relative_name(owner: str, zone: str) -> str:
    """``_alter.blake.example.com.`` in ``example.com`` -> ``_alter.blake``.

    Raises:
        RenderError: ``owner`` is not below ``zone``.
    """
    origin = dns.name.from_text(zone)
    name = dns.name.from_text(owner)
    if name == origin or not name.is_subdomain(origin):
        raise RenderError(f"not below zone {zone}", where=owner)
    return str(name.relativize(origin).to_text())


def octodns_records(export: ZoneExport) -> dict[str, dict[str, Any]]:
    """``{name relative to the zone: {type, ttl, values}}`` in octoDNS's key order.

    Raises:
        RenderError: a text cannot be an octoDNS value, or two owners share a name.
    """
    for record in export.records:
        if any("\\" in text for text in record.texts):
            # octoDNS escapes only ';': providers would read a backslash as a zone-file escape.
            raise RenderError(
                "a record text has a backslash, which an octoDNS TXT value cannot carry "
                "unambiguously; use the bind-include or well-known export",
                where=record.owner,
            )
    named = [(relative_name(record.owner, export.zone), record) for record in export.records]
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        raise RenderError("two handles share an owner name", where=export.zone)
    return {
        name: {
            "ttl": record.ttl,
            "type": "TXT",
            "values": [octodns_escape(text) for text in record.texts],
        }
        for name, record in sorted(named, key=lambda pair: natural_key(pair[0]))
    }


def render_octodns(export: ZoneExport, *, source: str = "") -> str:
    r"""The octoDNS ``YamlProvider`` records file of the zone's ``_alter`` records.

    Keys are names relative to the zone in natural order (octoDNS rejects others); each
    value is ``{type: TXT, ttl, values}`` with whole record texts, ``;`` escaped as
    ``\;`` (octoDNS splits long values into character-strings itself).

    Raises:
        RenderError: a text cannot be an octoDNS value, or the YAML does not load back.
    """
    data = octodns_records(export)
    from_source = f" (definition {source})" if source else ""
    header = (
        f"# alter1 records of {export.zone}. serial {export.serial}, exported by alter-publish\n"
        f"# from {export.zone}.envelopes.json{from_source}; do not edit by hand.\n"
    )
    body = yaml.safe_dump(
        data,
        default_flow_style=False,
        sort_keys=False,  # already in octoDNS's natural order; sort_keys would not be
        width=YAML_WIDTH_CHARS,
        allow_unicode=False,
    )
    text = header + body
    loaded = yaml.safe_load(text)
    if loaded != data or list(loaded) != list(data):
        raise RenderError("rendered YAML does not load back", where=f"{export.zone}.yaml")
    return text


def well_known_document(export: ZoneExport) -> dict[str, Any]:
    """The JSON-ready well-known document."""
    return {
        "format": WELL_KNOWN_FORMAT,
        "zone": export.zone,
        "serial": export.serial,
        "records": [
            {
                "handle": record.handle,
                "owner": record.owner,
                "ttl": record.ttl,
                "texts": list(record.texts),
            }
            | ({"tlog_proof": record.tlog_proof} if record.tlog_proof is not None else {})
            for record in export.records
        ],
    }


def render_well_known(export: ZoneExport) -> str:
    """``/.well-known/alter-envelope.json``: deterministic (sorted keys, indent 2, newline)."""
    return json.dumps(well_known_document(export), indent=2, sort_keys=True) + "\n"


# --- writing -----------------------------------------------------------------


def write_export(path: Path, text: str) -> bool:
    """Write an export atomically (mode 0644); unchanged files are left alone.

    Returns:
        True when the file was (re)written, False when it already held ``text``.

    Raises:
        RenderError: the file could not be written.
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def export_zone(
    spec: ZoneSpec,
    fmt: ExportFormat,
    *,
    out: Path,
    output: Path | None = None,
) -> ExportResult:
    """Load what ``sign`` wrote to ``out``, render it as ``fmt`` and write it.

    ``output`` defaults to :func:`default_export_path`.

    Raises:
        RenderError: the envelopes document is missing or does not match the
            definition, rendering failed, or the file could not be written.
    """
    export = load_export(spec, out)
    text = render_export(export, spec, fmt)
    path = output if output is not None else default_export_path(out, spec.origin, fmt)
    written = write_export(path, text)
    return ExportResult(
        zone=spec.origin,
        format=fmt,
        path=path,
        written=written,
        serial=export.serial,
        records=sum(len(record.texts) for record in export.records),
    )
