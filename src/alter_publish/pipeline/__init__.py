"""The library calls the CLI makes: sign, verify, keygen, init and friends.

The pipeline by job: :mod:`.signing` (the flow of ``sign``) gives each zone to the
first strategy that applies, :mod:`.unchanged`, :mod:`.patch` or :mod:`.full` (which
plans with :mod:`.plan`: :mod:`.chain` and :mod:`.build`), all under one
:class:`RunContext`; :mod:`.commit` writes, and :mod:`.memory` records what the next
run may reuse. :mod:`.verification` proves written outputs; :mod:`.scaffold` sets a
workspace up.
"""

from __future__ import annotations

from alter_publish.pipeline.build import ZonePlan
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.paths import (
    current_outputs,
    default_templates_dir,
    ds_path,
    output_paths,
)
from alter_publish.pipeline.plan import plan_zone
from alter_publish.pipeline.reports import (
    HANDLE_CHANGE_REASONS,
    ZONE_CHANGE_REASONS,
    Change,
    SignReport,
    VerifyReport,
    ZoneResult,
)
from alter_publish.pipeline.rollovers import dnssec_step
from alter_publish.pipeline.scaffold import ZONE_SCAFFOLD, dnssec_keygen, init_workspace, keygen
from alter_publish.pipeline.serving import ServedZones, load_served_zones
from alter_publish.pipeline.signing import sign
from alter_publish.pipeline.verification import read_expected, read_zone_file, verify
from alter_publish.pipeline.worldcheck import WorldReport, check_world

__all__ = [
    "HANDLE_CHANGE_REASONS",
    "ZONE_CHANGE_REASONS",
    "ZONE_SCAFFOLD",
    "Change",
    "RunContext",
    "ServedZones",
    "SignReport",
    "VerifyReport",
    "WorldReport",
    "ZonePlan",
    "ZoneResult",
    "check_world",
    "current_outputs",
    "default_templates_dir",
    "dnssec_keygen",
    "dnssec_step",
    "ds_path",
    "init_workspace",
    "keygen",
    "load_served_zones",
    "output_paths",
    "plan_zone",
    "read_expected",
    "read_zone_file",
    "sign",
    "verify",
]
