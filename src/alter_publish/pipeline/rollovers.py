"""Rollover steps gated on the world: ``dnssec step --ds-published`` asks every name
server of the parent zone for the DS set before it takes the operator's word: the new
KSK's DS must be served by all of them, and at the end of a KSK rollover the withdrawn
KSK's DS by none."""

from __future__ import annotations

from pathlib import Path

from alter_publish.definition.model import load_zone
from alter_publish.dns.hints import RootHints, default_root_hints
from alter_publish.dns.zonekeys import ZoneKeyEntry, ZoneKeyRole, ZoneKeyState
from alter_publish.errors import RolloverError
from alter_publish.keys import commands as keyops
from alter_publish.keys.rollover import StepResult
from alter_publish.keys.store import KeyStore
from alter_publish.verify.delegation import parent_missing_ds, parent_serving_ds
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
    by default IANA's) serves the DS of each KSK waiting for it (``ds-submitted``) and
    none serves the DS of a KSK whose DS was withdrawn (``ds-withdrawn``).

    Raises:
        RolloverError: a parent server does not serve the new DS yet, or still serves
            the withdrawn one (names them and the key tags), or the step itself is
            refused (see ``keys.commands.dnssec_step``).
        ResolveError: no server on the way from the root answers.
        KeyStoreError: the key store cannot be read or written.
    """
    if ds_published and parent_check:
        spec = load_zone(definition)
        entries = keys.zones.entries(spec.origin)
        adding = _ksks_in(entries, ZoneKeyState.DS_SUBMITTED)
        dropping = _ksks_in(entries, ZoneKeyState.DS_WITHDRAWN)
        if adding or dropping:
            prober = Prober(port=port)
            located = locate(
                spec.origin, (), {}, hints or default_root_hints(), prober, zone_servers=False
            )
            if adding:
                dnskeys = [entry.dnskey for entry in adding]
                missing = parent_missing_ds(spec.origin, located, dnskeys, prober)
                if missing:
                    raise RolloverError(
                        f"the parent {located.parent} does not serve the DS of "
                        f"{_tags(adding)} yet at {', '.join(missing)}; step again once it does",
                        where=spec.origin,
                    )
            if dropping:
                dnskeys = [entry.dnskey for entry in dropping]
                serving = parent_serving_ds(spec.origin, located, dnskeys, prober)
                if serving:
                    raise RolloverError(
                        f"the parent {located.parent} still serves the DS of "
                        f"{_tags(dropping)} at {', '.join(serving)}; withdraw it there and "
                        "step again once no parent server serves it",
                        where=spec.origin,
                    )
    return keyops.dnssec_step(str(definition), keys=keys, now=now, ds_published=ds_published)


def _ksks_in(entries: tuple[ZoneKeyEntry, ...], state: ZoneKeyState) -> list[ZoneKeyEntry]:
    return [entry for entry in entries if entry.role is ZoneKeyRole.KSK and entry.state is state]


def _tags(entries: list[ZoneKeyEntry]) -> str:
    return ", ".join(f"ksk-{entry.tag}" for entry in entries)
