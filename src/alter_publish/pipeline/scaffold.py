"""Setting a workspace up: the scaffold of ``init``, a handle's first key, a zone's keys."""

from __future__ import annotations

from pathlib import Path

from alter_publish.definition.model import (
    ZoneSpec,
)
from alter_publish.definition.workspace import OFFLINE_DIR, OFFLINE_GITIGNORE_TEXT, zone_origin
from alter_publish.dns.zonekeys import ZoneKey
from alter_publish.errors import (
    KeyStoreError,
    UsageError,
)
from alter_publish.fileio import (
    atomic_write_bytes,
)
from alter_publish.format.handles import Handle
from alter_publish.keys.store import HandleKey, KeyStore
from alter_publish.pipeline.paths import default_templates_dir


def dnssec_keygen(zone: str, *, keys: KeyStore, now: int) -> tuple[ZoneKey, ...]:
    """Create a zone's KSK and ZSK (Ed25519).

    Returns:
        The new keys; their DS comes from :func:`alter_publish.dns.dnssec.ds_records`.

    Raises:
        UsageError: ``zone`` is not a domain name.
        KeyStoreError: the zone has DNSSEC keys already, or writing failed.
    """
    return keys.zones.generate(zone_origin(zone), now=now)


def keygen(
    handle: Handle, *, spec: ZoneSpec, keys: KeyStore, secret_out: Path | None = None
) -> HandleKey:
    """Create the first key (epoch 1) of a handle that ``spec`` lists.

    With ``secret_out`` the revocation secret goes there (to be kept offline) and the
    store keeps only its commitment.

    Raises:
        UsageError: the handle's record would lie outside the zone, or the definition
            does not list the handle.
        KeyStoreError: the handle has a key already, or writing failed.
    """
    origin = spec.origin
    owner = handle.owner(origin)
    if not (owner == f"_alter.{origin}." or owner.endswith(f".{origin}.")):
        raise UsageError(f"owner {owner} is outside zone {origin}", where=handle.ref)
    if spec.find(handle.ref) is None:
        raise UsageError(
            f"{spec.path} does not list it; add it to the definition first", where=handle.ref
        )
    epochs = keys.epochs(origin, handle)
    if epochs:
        raise KeyStoreError(
            f"already has a key (epoch {epochs[-1]}); keys are never overwritten",
            where=str(keys.handle_dir(origin, handle)),
        )
    return keys.generate(origin, handle, 1, secret_out=secret_out)


ZONE_SCAFFOLD = """\
# alter-publish zone definition (schema: docs/zones.md in alter-publish).
# Sign, render and prove it (from any directory of the workspace) with:
#   alter-publish sign {zone} --create-keys
zone: {zone}
ttl: 1h                       # default TTL (seconds, or 30m / 1h / 1d / 1w)

soa:
  mname: ns1.{zone}.          # primary name server
  rname: hostmaster.{zone}.   # contact mailbox, '@' written as '.'
  refresh: 2h
  retry: 1h
  expire: 2w
  minimum: 5m                 # negative-caching TTL

ns:                           # the zone's name servers
  - ns1.{zone}.

hosts:                        # address records (glue for in-zone name servers)
  ns1: [192.0.2.53]

envelopes:
  lifetime: 30d               # x= = signing time + lifetime ('never': no expiry)
  renew_before: 7d            # re-sign when an envelope is this close to expiry

dnssec:                       # Ed25519 (algorithm 15); hand <out>/{zone}.ds to your registrar
  enabled: true
  denial: nsec3               # nsec3 hides handle names; nsec lets anyone list them
  nsec3:                      # RFC 9276: no extra iterations, no salt
    iterations: 0
    salt: "-"
  signature_validity: 14d     # RRSIG expiration = signing time + this
  refresh: 5d                 # re-sign when signatures are this close to expiring

handles:
  - handle: ~{zone}           # the domain's own handle: _alter.{zone}.
  - handle: ~alice            # a person: _alter.alice.{zone}.
    resolver: https://{zone}/alter/alice
  - ~deploy.bot               # a bot: _alter.deploy.bot.{zone}.
"""


def init_workspace(directory: Path, zone: str, keys_dir: Path | None = None) -> tuple[Path, ...]:
    """Scaffold a zone owner's workspace: ``zones/<zone>.yaml``, ``templates/``, ``keys/``
    and ``offline/`` (both git-ignored).

    Existing files are left alone; the zone definition must not exist yet.

    Returns:
        The files created.

    Raises:
        UsageError: the zone name is not a domain, or its definition exists already.
        RenderError: a file cannot be written.
    """
    origin = zone_origin(zone)
    created: list[Path] = []
    definition = directory / "zones" / f"{origin}.yaml"
    if definition.exists():
        raise UsageError("exists already; edit it instead", where=str(definition))
    atomic_write_bytes(definition, ZONE_SCAFFOLD.format(zone=origin).encode())
    created.append(definition)
    for template in sorted(default_templates_dir().glob("*.j2")):
        target = directory / "templates" / template.name
        if not target.exists():
            atomic_write_bytes(target, template.read_bytes())
            created.append(target)
    store = KeyStore(keys_dir or directory / "keys")
    gitignore = store.root / ".gitignore"
    if not gitignore.exists():
        store.ensure_gitignore()
        created.append(gitignore)
    offline = directory / OFFLINE_DIR / ".gitignore"
    if not offline.exists():
        atomic_write_bytes(offline, OFFLINE_GITIGNORE_TEXT.encode())
        created.append(offline)
    return tuple(created)
