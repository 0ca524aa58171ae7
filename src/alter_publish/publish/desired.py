"""What a push publishes: the records ``sign`` proved and wrote for a zone, read once.

A plan compares them with what the server serves; after a push, the proofs expect the
very envelopes the plan was made of (the document is not read again: at 100,000
handles, reading and parsing it is two seconds).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from alter_publish.definition.model import ZoneSpec
from alter_publish.errors import AlterError, RenderError
from alter_publish.format.envelope import parse_envelope
from alter_publish.format.identitylog import log_path_for, read_log, read_owner_entries
from alter_publish.keys.lifecycle import LogIndex
from alter_publish.pipeline import output_paths
from alter_publish.pipeline.chain import handle_expectation
from alter_publish.publish.export import ZoneExport, load_export
from alter_publish.publish.managed import Records, desired_log_records
from alter_publish.verify.proof import Expectation


@dataclass(frozen=True, slots=True)
class Desired:
    """A zone's records as ``sign`` wrote them, and the export and log they came from."""

    spec: ZoneSpec
    records: dict[str, Records]  # owner name -> the records we publish there
    export: ZoneExport  # one record per handle of ``spec``, in order
    index: LogIndex | None  # None: not read (the outputs were proven); read when expected
    where: str  # the envelopes document, as errors name it
    #: The whole log's index once read for expectations (each name server's proof asks).
    read: dict[str, LogIndex] = field(default_factory=dict, compare=False, repr=False)

    def expectations(self, owners: Collection[str] | None = None) -> dict[str, Expectation]:
        """Handle-ref -> what a proof checks (see :func:`handle_expectation`), for the
        handles at ``owners`` (lower-case, absolute; None: every handle).

        Raises:
            RenderError: an envelope text does not parse (the document was changed by hand).
        """
        wanted = None if owners is None else frozenset(owners)
        index = self.index or self.read.get("all")
        if index is None:  # the log's entries at just these owners (or all of it, once)
            path = log_path_for(self.spec.path)
            if wanted is None:
                index = self.read.setdefault("all", LogIndex(read_log(path)))
            else:
                index = LogIndex(read_owner_entries(path, wanted)[1])
        found: dict[str, Expectation] = {}
        for handle_spec, record in zip(self.spec.handles, self.export.records, strict=True):
            if wanted is not None and handle_spec.owner not in wanted:
                continue
            try:
                envelope = parse_envelope(record.envelope)
            except AlterError as exc:
                raise RenderError(f"not an envelopes document ({exc})", where=self.where) from exc
            found[record.handle] = handle_expectation(
                handle_spec, envelope, record.revocations, index
            )
        return found


def read_desired(spec: ZoneSpec, out: Path, *, proven: bool = False) -> Desired:
    """What ``sign`` proved and wrote for the zone (the alter1 records read as ``export``
    reads them, and the log's checkpoint record).

    ``proven``: the outputs are as the last proven ``sign`` of this definition left
    them (its record holds: :func:`~alter_publish.pipeline.unchanged.outputs_as_proven`).
    That run proved each text against the definition and the log, so neither check is
    made again, and the log is read only when a proof's expectations are asked for
    (at 100,000 handles this saves about a second).

    Raises:
        RenderError: the envelopes document is missing, broken, does not match the
            definition, or is older than the log (run sign); the log's checkpoint file
            is unreadable.
    """
    where = str(output_paths(out, spec.origin)[1])
    if proven:
        export = load_export(spec, out, proven=True)
        found = {r.owner: Records(r.owner, r.ttl, r.texts) for r in export.records}
        found.update(desired_log_records(spec, out))
        return Desired(spec, found, export, None, where)
    index = LogIndex(read_log(log_path_for(spec.path)))
    export = load_export(spec, out, logged=index.newest_text)
    found = {}
    for handle_spec, record in zip(spec.handles, export.records, strict=True):
        if index.newest_text(handle_spec.owner) == record.envelope:
            found[record.owner] = Records(record.owner, record.ttl, record.texts)
            continue  # the newest entry at the owner is this envelope: nothing to parse
        logged = index.latest(handle_spec.owner, handle_spec.handle)
        if logged is not None and logged.to_text() != record.envelope:
            raise RenderError(
                f"{record.handle}: the envelope here is not the one the log last "
                "published; this output is stale: run 'alter-publish sign' first",
                where=where,
            )
        found[record.owner] = Records(record.owner, record.ttl, record.texts)
    found.update(desired_log_records(spec, out))
    return Desired(spec, found, export, index, where)


def desired_records(spec: ZoneSpec, out: Path, *, proven: bool = False) -> dict[str, Records]:
    """The records of :func:`read_desired`, per owner name.

    Raises:
        RenderError: as :func:`read_desired`.
    """
    return read_desired(spec, out, proven=proven).records
