"""``check``: after publishing, prove what the world sees of a zone against what ``sign``
wrote: the chain of trust from the anchor, the parent's DS and delegation at every
parent name server, every address of every name server of the zone (serial, alter1
records handle by handle, signatures), each recursive resolver given, and DANE at every
https resolver endpoint the records name (see :mod:`alter_publish.verify.world`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.name

from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.definition.state import SerialState, state_path_for
from alter_publish.dns.anchors import TrustAnchor, read_trust_anchors
from alter_publish.dns.hints import RootHints
from alter_publish.dns.zonekeys import ZoneKeyRole, ZoneKeyState
from alter_publish.errors import EXIT_DRIFT, EXIT_OK, EXIT_VERIFICATION, RenderError
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.logverify import published_log_note
from alter_publish.pipeline.paths import current_outputs, ds_path, output_paths
from alter_publish.pipeline.verification import expectations_for
from alter_publish.pipeline.worldprimary import primary_expected
from alter_publish.verify.dane import lookup_from_root
from alter_publish.verify.delegation import check_parent
from alter_publish.verify.world import (
    WORLD_TIMEOUT_SECONDS,
    Expected,
    Finding,
    Located,
    Prober,
    Server,
    check_chain,
    check_resolvers,
    check_servers,
    denial_findings,
    ds_text,
    locate,
)
from alter_publish.verify.worlddane import check_dane
from alter_publish.verify.worldttl import check_ttls

#: A KSK in these states is the zone's no more: a DS of it at the parent should go.
_RETIRED_KSK_STATES = (ZoneKeyState.RETIRED, ZoneKeyState.DS_WITHDRAWN, ZoneKeyState.REMOVED)


@dataclass(frozen=True, slots=True)
class WorldReport:
    """What ``check`` found for one zone."""

    zone: str
    serial: int
    located: Located
    findings: tuple[Finding, ...]

    @property
    def exit_code(self) -> int:
        """0: all is well (warnings at most); 7: only servers not yet converged; 1: else."""
        severities = {finding.severity for finding in self.findings}
        if "error" in severities:
            return EXIT_VERIFICATION
        return EXIT_DRIFT if "converging" in severities else EXIT_OK

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "zone": self.zone,
            "serial": self.serial,
            "parent": self.located.parent,
            "parent_servers": [
                {"name": s.name, "addresses": list(s.addresses)}
                for s in self.located.parent_servers
            ],
            "servers": [
                {"name": s.name, "addresses": list(s.addresses)} for s in self.located.servers
            ],
            "findings": [finding.to_mapping() for finding in self.findings],
            "exit_code": self.exit_code,
        }


def _server(server: Server) -> dict[str, Any]:
    return {"name": server.name, "addresses": list(server.addresses)}


def check_world(
    definition: Path,
    *,
    out: Path,
    keys: KeyStore,
    now: int,
    hints: RootHints,
    anchors: tuple[TrustAnchor, ...],
    resolvers: Sequence[tuple[str, int]] = (),
    port: int = 53,
    timeout: float = WORLD_TIMEOUT_SECONDS,
    primary: tuple[str, int] | None = None,
) -> WorldReport:
    """Check the zone of ``definition`` as the world sees it (see the module): its servers
    found from the root ``hints``, its chain of trust walked from ``anchors``.

    ``port`` is where name servers are asked (53); ``timeout`` bounds each try of each
    question. With ``primary`` (a zone ``push`` publishes, signed by its primary), the
    serial and the DS expected are those the primary serves (:func:`primary_expected`).

    Raises:
        DefinitionError: the definition is wrong.
        RenderError: ``sign`` has not written the zone's outputs and state yet.
        ResolveError: no server on the way from the root answers, or the primary does
            not.
        KeyStoreError: the zone key index is unreadable.
    """
    spec = load_zone(definition)
    expected = _expected(spec, out, keys)
    if primary is not None:
        expected = primary_expected(expected, spec.origin, primary, timeout=timeout)
    prober = Prober(port=port, timeout=timeout)
    located = locate(spec.origin, spec.ns, expected.glue, hints, prober)
    signed = spec.dnssec.enabled
    chain = check_chain(spec.origin, anchors, hints, prober, now=now) if signed else []
    servers = check_servers(spec, located, expected, prober, now=now)
    through = check_resolvers(
        spec, resolvers, expected, now=now, anchors=anchors, hints=hints, timeout=timeout
    )
    lookup = lookup_from_root(hints, anchors, now=now, timeout=timeout, port=port)
    dane = check_dane(spec, lookup, timeout=timeout)
    if any(finding.code == "serial-behind" for finding in servers):
        through = [_stale(finding) for finding in through]
    findings = [
        *denial_findings(spec),
        *chain,
        *check_parent(spec.origin, located, expected, prober, signed=signed),
        *servers,
        *check_ttls(spec, located, prober, now=now, servers=servers),
        *through,
        *dane,
        *prober.findings(),
    ]
    return WorldReport(spec.origin, expected.serial, located, tuple(findings))


def _stale(finding: Finding) -> Finding:
    """A resolver's other records while a name server still serves an older serial: it
    may have asked that server (converging, not an error)."""
    if finding.code != "records-differ":
        return finding
    message = f"{finding.message} (a name server still serves an older serial)"
    return Finding("resolver-stale", message, finding.server)


def _expected(spec: ZoneSpec, out: Path, keys: KeyStore) -> Expected:
    """What ``sign`` wrote for ``spec``: serial, DS, the alter1 records, the log's
    checkpoint; and the KSKs the key store retired.

    Raises:
        RenderError: no state or outputs yet.
    """
    state_path = state_path_for(spec.path)
    state = SerialState.read(state_path)
    if state is None:
        raise RenderError("no serial state: run 'alter-publish sign' first", where=str(state_path))
    _, envelopes_file, ds_file = current_outputs(out, spec.origin)
    anchors: tuple[TrustAnchor, ...] = ()
    if spec.dnssec.enabled:
        anchors = read_trust_anchors(ds_file, where=ds_path(out, spec.origin))
    ds = frozenset(ds_text(rdata) for anchor in anchors for rdata in anchor.ds)
    ksk_entries = [
        entry
        for entry in (keys.zones.entries(spec.origin, removed=True) if spec.dnssec.enabled else ())
        if entry.role is ZoneKeyRole.KSK
    ]
    served_ds = [rdata for anchor in anchors for rdata in anchor.ds]
    apex = dns.name.from_text(spec.origin)
    ksks = tuple(
        entry.dnskey
        for entry in ksk_entries
        if any(dns.dnssec.make_ds(apex, entry.dnskey, ds.digest_type) == ds for ds in served_ds)
    )
    retired = tuple(
        entry.dnskey
        for entry in ksk_entries
        if entry.state in _RETIRED_KSK_STATES and entry.dnskey not in ksks
    )
    glue = {
        name: frozenset(addresses)
        for name, addresses in spec.hosts
        if name in spec.ns and name.endswith(f".{spec.origin}.")
    }
    return Expected(
        serial=state.serial,
        ds=ds,
        ksks=ksks,
        retired=retired,
        ns=spec.ns,
        glue=glue,
        anchors=anchors,
        expectations=expectations_for(
            spec, envelopes_file, where=output_paths(out, spec.origin)[1]
        ),
        log_checkpoint=published_log_note(out, spec.origin),
    )
