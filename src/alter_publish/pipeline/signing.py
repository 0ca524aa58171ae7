"""``sign`` runs the whole pipeline for each zone: load the definition, load keys,
reuse or sign envelopes (appending new ones to the IdentityLog), render the zone
through the templates, parse it back, DNSSEC-sign it, prove it on a loopback
server (every handle resolved, validated to the zone's DS and verified), and
only then write the log, the serial state and the outputs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from alter_publish.definition.loader import read_definition
from alter_publish.definition.model import (
    load_zone_text,
)
from alter_publish.errors import (
    UsageError,
)
from alter_publish.keys.store import KeyStore
from alter_publish.parallel import NoProgress, Progress
from alter_publish.pipeline.build import ZonePlan, _dnssec_summary, _published_handles
from alter_publish.pipeline.chain import plan_zone
from alter_publish.pipeline.clock import serial_warning
from alter_publish.pipeline.commit import _commit, _commit_patch
from alter_publish.pipeline.fingerprint import (
    Fingerprint,
    fingerprint_path,
    forget,
    handle_key_lines,
    remembering_digests,
)
from alter_publish.pipeline.incremental import (
    memo_path,
)
from alter_publish.pipeline.memory import _record_fingerprint, _record_memo
from alter_publish.pipeline.patch import _Patch, _patch_result, _try_patch
from alter_publish.pipeline.paths import default_templates_dir, ds_path, output_paths
from alter_publish.pipeline.reports import SignReport, ZoneResult, _explained, _Stopwatch
from alter_publish.pipeline.unchanged import _unchanged
from alter_publish.verify.proof import (
    ProofReport,
    prove_records,
)


@remembering_digests()
def sign(
    zone_files: Sequence[Path],
    *,
    out: Path,
    keys: KeyStore,
    now: int,
    create_keys: bool = False,
    templates: Path | None = None,
    verify: bool = True,
    check: bool = False,
    jobs: int = 1,
    progress: Progress | None = None,
    incremental: bool = True,
) -> SignReport:
    """Sign, render and prove every zone; write outputs only if every proof passes.

    With ``check`` nothing is written, not even keys: each zone's ``written`` lists
    the files a real run would change (``SignReport.drift``). ``jobs`` processes sign
    and verify (the outputs are the same bytes for any ``jobs``); long stages report
    to ``progress``. When a few handles changed since the last proven run, only they
    are signed, proven and patched into its outputs (see :mod:`incremental`; the same
    bytes as a full run). ``incremental=False`` does the whole job whatever changed.

    Returns:
        The report; ``ok`` is False (and nothing was written) when a proof failed.

    Raises:
        DefinitionError: a zone definition is wrong.
        KeyStoreError: keys are missing or unusable.
        RenderError: templates, rendering or writing failed.
        ServeError: the loopback server could not start.
    """
    if check and create_keys:
        raise UsageError("--check changes nothing, so it cannot --create-keys")
    template_dir = templates or default_templates_dir()
    progress = progress or NoProgress()
    options = f"{out.resolve()} {template_dir.resolve()} verify={verify}"
    specs = []
    loading: dict[str, float] = {}
    unchanged: list[ZoneResult] = []
    early_warnings: list[str] = []
    patches: list[_Patch] = []
    sources: dict[str, str] = {}
    for path in zone_files:
        started = time.perf_counter()
        record = Fingerprint.read(fingerprint_path(out, path)) if incremental else None
        if record is not None and record.zone_keys_dir == str(keys.zone_keys_dir(record.zone)):
            handle_lines = handle_key_lines(record.handle_keys, jobs=jobs)
            same = _unchanged(
                path, out, keys, template_dir, options, now, started, record, handle_lines
            )
            if same is not None:
                unchanged.append(same[0])
                early_warnings.extend(same[1])
                continue
            patch = (
                _try_patch(
                    path,
                    out,
                    keys,
                    template_dir,
                    options,
                    now,
                    record,
                    handle_lines,
                    create_keys=create_keys,
                    started=started,
                )
                if verify
                else None
            )
            if patch is not None:
                patches.append(patch)
                continue
        # Read once: the fingerprint and memo record the text parsed, not an edit that
        # lands while the run goes on.
        source = read_definition(path)
        specs.append(load_zone_text(source, path))
        sources[specs[-1].origin] = source
        loading[specs[-1].origin] = time.perf_counter() - started
    names = [spec.origin for spec in specs] + [patch.spec.origin for patch in patches]
    if len(set(names)) != len(names):
        raise UsageError(f"a zone is named twice: {', '.join(names)}")
    plans: list[tuple[ZonePlan, ProofReport | None, _Stopwatch]] = []
    for spec in specs:
        watch = _Stopwatch()
        watch.stages.append(("load", loading[spec.origin]))
        plan = plan_zone(
            spec,
            keys=keys,
            now=now,
            create_keys=create_keys,
            templates=template_dir,
            watch=watch,
            jobs=jobs,
            progress=progress,
            published=_published_handles(output_paths(out, spec.origin)[1]),
        )
        proof = None
        if verify:
            with watch.stage("proof"):
                proof = prove_records(
                    plan.served,
                    spec,
                    plan.expectations,
                    now=now,
                    zone_text=plan.zone_text,
                    anchors=plan.anchors,
                    jobs=jobs,
                    progress=progress,
                )
        # The served rrsets were for the proof: ~300 MB at 100,000 handles, not needed to write.
        plans.append((dataclasses.replace(plan, served=()), proof, watch))
    committed = all(proof is None or proof.ok for _, proof, _ in plans) and all(
        patch.proof.ok for patch in patches
    )
    results: list[ZoneResult] = []
    for patch in patches:
        written: list[str] = []
        if committed:
            with patch.watch.stage("write"):
                written = _commit_patch(patch, out, keys, template_dir, options, dry_run=check)
        results.append(_patch_result(patch, out, written))
    for plan, proof, watch in plans:
        zone_file, envelopes_file = output_paths(out, plan.spec.origin)
        ds_file = ds_path(out, plan.spec.origin)
        written = []
        if committed:
            with watch.stage("write"):
                written, envelope_starts = _commit(
                    plan, zone_file, envelopes_file, ds_file, dry_run=check
                )
                if not check:
                    source = sources[plan.spec.origin]
                    handle_lines = _record_fingerprint(
                        plan, source, out, keys, template_dir, options, proven=verify, jobs=jobs
                    )
                    if verify:
                        _record_memo(
                            plan,
                            source,
                            out,
                            keys,
                            template_dir,
                            options,
                            handle_lines,
                            envelope_starts,
                        )
                    else:
                        forget(memo_path(out, plan.spec.path))
        signed_zone = plan.signed_zone
        results.append(
            ZoneResult(
                zone=plan.spec.origin,
                zone_file=zone_file,
                envelopes_file=envelopes_file,
                serial=plan.state.serial,
                handles=len(plan.signed),
                signed=len(plan.new_entries),
                reused=len(plan.signed) - len(plan.new_entries),
                written=tuple(written),
                proof=proof,
                timings=tuple(watch.stages),
                ds_file=ds_file if signed_zone else None,
                ds=tuple(signed_zone.ds_text.splitlines()) if signed_zone else (),
                dnssec=_dnssec_summary(plan),
                changes=_explained(plan.changes, written),
            )
        )
    warnings = (
        *early_warnings,
        *(warning for patch in patches for warning in patch.spec.warnings()),
        *(warning for spec in specs for warning in spec.warnings()),
        *(
            warning
            for zone in (*unchanged, *results)
            if (warning := serial_warning(zone.zone, zone.serial, now))
        ),
    )
    return SignReport(
        zones=(*unchanged, *results),
        committed=committed and not check,
        warnings=warnings,
        check=check,
        proven=committed,
    )
