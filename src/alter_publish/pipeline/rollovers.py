"""Rollover steps gated on the world: ``dnssec step --ds-published`` asks every name
server of the parent zone for the new KSK's DS before it takes the operator's word."""

from __future__ import annotations

from pathlib import Path

from alter_publish.definition.model import load_zone
from alter_publish.dns.hints import RootHints, default_root_hints
from alter_publish.dns.zonekeys import ZoneKeyRole, ZoneKeyState
from alter_publish.errors import RolloverError
from alter_publish.keys import commands as keyops
from alter_publish.keys.rollover import StepResult
from alter_publish.keys.store import KeyStore
from alter_publish.verify.delegation import parent_missing_ds
from alter_publish.verify.world import Prober, locate


def dnssec_step(
    definition: Path,
    *,
    keys: KeyStore,
    now: int,
    ds_published: bool = False,
    hints: RootHints | None = None,
    parent_check: bool = True,
    port: int = 53,
) -> StepResult:
    """Take the running rollover's next step; with ``ds_published`` (and ``parent_check``)
    only once every address of every parent name server (found from the root ``hints``,
    by default IANA's) serves the DS of each KSK waiting for it.

    Raises:
        RolloverError: a parent server does not serve the new DS yet (names them), or the
            step itself is refused (see ``keys.commands.dnssec_step``).
        ResolveError: no server on the way from the root answers.
        KeyStoreError: the key store cannot be read or written.
    """
    if ds_published and parent_check:
        spec = load_zone(definition)
        waiting = [
            entry
            for entry in keys.zones.entries(spec.origin)
            if entry.role is ZoneKeyRole.KSK and entry.state is ZoneKeyState.DS_SUBMITTED
        ]
        if waiting:
            prober = Prober(port=port)
            located = locate(
                spec.origin, (), {}, hints or default_root_hints(), prober, zone_servers=False
            )
            missing = parent_missing_ds(
                spec.origin, located, [entry.dnskey for entry in waiting], prober
            )
            if missing:
                tags = ", ".join(f"ksk-{entry.tag}" for entry in waiting)
                raise RolloverError(
                    f"the parent {located.parent} does not serve the DS of {tags} yet at "
                    f"{', '.join(missing)}; step again once it does",
                    where=spec.origin,
                )
    return keyops.dnssec_step(str(definition), keys=keys, now=now, ds_published=ds_published)
