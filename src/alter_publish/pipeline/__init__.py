"""The library calls the CLI makes: sign, verify, keygen, init and friends.

The pipeline by job: :mod:`.signing` (the flow of ``sign``) gives each zone to the
first strategy that applies, :mod:`.unchanged`, :mod:`.patch` or :mod:`.full` (which
plans with :mod:`.plan`: :mod:`.chain` and :mod:`.build`), all under one
:class:`RunContext`; :mod:`.commit` writes, and :mod:`.memory` records what the next
run may reuse. :mod:`.verification` proves written outputs; :mod:`.scaffold` sets a
workspace up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
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
    from alter_publish.pipeline.verification import read_expected, verify
    from alter_publish.pipeline.worldcheck import WorldReport, check_world
    from alter_publish.pipeline.zonefiles import read_zone_file

#: Where each public name lives: imported on first use (PEP 562), so importing one
#: module of the pipeline does not import them all (the CLI starts faster).
_WHERE: Final = {
    "Change": "alter_publish.pipeline.reports",
    "HANDLE_CHANGE_REASONS": "alter_publish.pipeline.reports",
    "RunContext": "alter_publish.pipeline.context",
    "ServedZones": "alter_publish.pipeline.serving",
    "SignReport": "alter_publish.pipeline.reports",
    "VerifyReport": "alter_publish.pipeline.reports",
    "WorldReport": "alter_publish.pipeline.worldcheck",
    "ZONE_CHANGE_REASONS": "alter_publish.pipeline.reports",
    "ZONE_SCAFFOLD": "alter_publish.pipeline.scaffold",
    "ZonePlan": "alter_publish.pipeline.build",
    "ZoneResult": "alter_publish.pipeline.reports",
    "check_world": "alter_publish.pipeline.worldcheck",
    "current_outputs": "alter_publish.pipeline.paths",
    "default_templates_dir": "alter_publish.pipeline.paths",
    "dnssec_keygen": "alter_publish.pipeline.scaffold",
    "dnssec_step": "alter_publish.pipeline.rollovers",
    "ds_path": "alter_publish.pipeline.paths",
    "init_workspace": "alter_publish.pipeline.scaffold",
    "keygen": "alter_publish.pipeline.scaffold",
    "load_served_zones": "alter_publish.pipeline.serving",
    "output_paths": "alter_publish.pipeline.paths",
    "plan_zone": "alter_publish.pipeline.plan",
    "read_expected": "alter_publish.pipeline.verification",
    "read_zone_file": "alter_publish.pipeline.zonefiles",
    "sign": "alter_publish.pipeline.signing",
    "verify": "alter_publish.pipeline.verification",
}


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


def __getattr__(name: str) -> object:
    """The public name ``name``, imported from its module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted(__all__)
