"""Cosigning after ``sign``: each committed zone whose definition has ``log: {policy:
FILE}`` submits its published checkpoint (``<out>/<zone>/log/checkpoint``) to the
policy's witnesses and keeps their cosignatures in that file.

Why a step after the pipeline, here in ``publish/``: the witness client
(:mod:`alter_publish.publish.cosign`) talks to the network and its answers are not
part of what the run signs and proves. The pipeline commits the zone first (the
``_alter-log`` record in DNS is the log-signed checkpoint: cosignatures come later than
signing the zone), then the ``sign`` command calls :func:`cosign_signed`. Imports keep
pointing one way (publish -> pipeline).

A checkpoint that already holds a valid cosignature from every witness with a URL is not
submitted again (an unchanged run stays offline). A witness that is down or refuses is
a warning; a quorum not met is a warning too, unless the definition says
``require_quorum: true`` (then ``sign`` exits 1, ``quorum-not-met``, with the zone
already written: the next ``sign`` submits again).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alter_publish.errors import UsageError, VerificationError
from alter_publish.format.note import Note
from alter_publish.pipeline.paths import CHECKPOINT_FILE, log_dir
from alter_publish.pipeline.reports import SignReport
from alter_publish.publish.cosign import WITNESS_TIMEOUT_SECONDS, WitnessOutcome, cosign_checkpoint
from alter_publish.verify.logaudit import load_policy


@dataclass(frozen=True, slots=True)
class ZoneCosign:
    """One zone's cosigning: the checkpoint file, each witness asked (none: it was
    cosigned already), the valid cosigners, whether they meet the quorum, whether the
    definition requires it, and the problem that stopped cosigning (if any)."""

    zone: str
    checkpoint: Path
    outcomes: tuple[WitnessOutcome, ...]
    cosigners: tuple[str, ...]
    ok: bool
    required: bool
    problem: str | None = None

    def to_mapping(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "zone": self.zone,
            "checkpoint": str(self.checkpoint),
            "witnesses": {o.name: o.problem or "cosigned" for o in self.outcomes},
            "cosigners": list(self.cosigners),
            "quorum_met": self.ok,
            "required": self.required,
            "problem": self.problem,
        }


def cosign_signed(
    report: SignReport, out: Path, *, timeout: float = WITNESS_TIMEOUT_SECONDS
) -> tuple[ZoneCosign, ...]:
    """Submit the checkpoint of each committed zone of ``report`` with a witness policy
    (under ``out``) to its witnesses (see the module).

    Raises:
        RenderError: a checkpoint cannot be rewritten.
    """
    if not report.committed or report.check:
        return ()
    found: list[ZoneCosign] = []
    for zone in report.zones:
        if zone.log.policy is None:
            continue
        path = log_dir(out, zone.zone) / CHECKPOINT_FILE
        if path.exists():
            found.append(
                _cosign_zone(zone.zone, path, zone.log.policy, zone.log.require_quorum, timeout)
            )
    return tuple(found)


def _cosign_zone(
    zone: str, path: Path, policy_path: Path, required: bool, timeout: float
) -> ZoneCosign:
    try:
        policy = load_policy(policy_path)
        note = Note.parse(path.read_text(encoding="utf-8"))
        cosigners = policy.cosigners(note)
        asked = {witness.name for witness in policy.witnesses if witness.url is not None}
        if asked <= set(cosigners):
            return ZoneCosign(zone, path, (), cosigners, policy.satisfied_by(cosigners), required)
        done = cosign_checkpoint(path.parent, policy, timeout=timeout)
    except (UsageError, VerificationError) as exc:
        return ZoneCosign(zone, path, (), (), False, required, str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        return ZoneCosign(zone, path, (), (), False, required, f"{path}: cannot read: {exc}")
    return ZoneCosign(zone, path, done.outcomes, done.cosigners, done.ok, required)
