"""The ``log:`` of a definition: the zone's transparency log's witnesses.

``log: {policy: witnesses.policy, require_quorum: false}`` names a c2sp.org/tlog-policy
file (relative to the definition) listing the zone's log and witnesses with URLs: after
each committed ``sign`` the checkpoint ``<out>/<zone>/log/checkpoint`` is submitted to
those witnesses and rewritten with their cosignatures (see
:mod:`alter_publish.publish.witnessing`). ``require_quorum`` makes a checkpoint that
falls short of the policy's quorum fail the run (exit 1) instead of a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alter_publish.definition.loader import Mark, Node
from alter_publish.errors import UsageError
from alter_publish.format.policy import Policy

LOG_FIELDS = frozenset({"policy", "require_quorum"})


@dataclass(frozen=True, slots=True)
class LogSpec:
    """The witness policy file (None: no witnesses) and whether its quorum is required."""

    policy: Path | None = None
    require_quorum: bool = False

    def to_mapping(self) -> dict[str, Any]:
        """As written under ``log:`` (empty without a policy); :meth:`from_mapping` reads it."""
        if self.policy is None:
            return {}
        return {"log": {"policy": str(self.policy), "require_quorum": self.require_quorum}}

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> LogSpec:
        """The spec of a :meth:`to_mapping` (an empty mapping: no policy)."""
        found = mapping.get("log")
        if not isinstance(found, dict) or not isinstance(found.get("policy"), str):
            return cls()
        return cls(Path(found["policy"]), bool(found.get("require_quorum", False)))


def read_log_spec(node: Node | None, base: Path, add: Callable[[Mark, str], None]) -> LogSpec:
    """The ``log:`` mapping ``node`` (None: absent), its policy file read and checked
    (relative to ``base``); each problem is passed to ``add``."""
    if node is None:
        return LogSpec()
    if not node.is_mapping:
        add(node.mark, "log must be a mapping")
        return LogSpec()
    fields: dict[str, Node] = node.value
    for key in fields:
        if key not in LOG_FIELDS:
            add(
                node.key_marks[key],
                f"unknown field {key!r} in log (allowed: policy, require_quorum)",
            )
    required = fields.get("require_quorum")
    if required is not None and not isinstance(required.value, bool):
        add(required.mark, "log require_quorum must be true or false")
    policy = fields.get("policy")
    if policy is None:
        if fields:
            add(node.mark, "log needs a policy (a tlog-policy file)")
        return LogSpec()
    if not isinstance(policy.value, str) or not policy.value.strip():
        add(policy.mark, "log policy must be a file name")
        return LogSpec()
    path = (base / policy.value.strip()).absolute()
    try:
        Policy.parse(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        add(policy.mark, f"log policy {policy.value!r}: cannot read: {exc.strerror}")
        return LogSpec()
    except UnicodeDecodeError as exc:
        add(policy.mark, f"log policy {policy.value!r}: not UTF-8: {exc.reason}")
        return LogSpec()
    except UsageError as exc:
        add(policy.mark, f"log policy: {exc}")
        return LogSpec()
    return LogSpec(path, required is not None and required.value is True)
