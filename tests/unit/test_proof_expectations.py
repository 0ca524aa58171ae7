"""The proof holds each handle to what was signed for it, whichever path judges it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from alter_publish import parallel
from alter_publish.definition.model import HandleSpec, load_zone
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.pipeline import output_paths, sign
from alter_publish.pipeline.paths import ds_path
from alter_publish.pipeline.verification import expectations_for, read_zone_file
from alter_publish.verify import proof
from tests.conftest import NOW, Workspace


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_served_envelope_other_than_the_one_signed_fails_the_proof(
    workspace: Workspace, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers' fast path takes each handle's expectation as plain values (they cross
    # the process boundary): an envelope served that is valid but not the one signed
    # fails there and again in the full path, as it must.
    report = sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW, create_keys=True
    )
    assert report.ok
    spec = load_zone(workspace.zone_file)
    zone_path, envelopes_path = output_paths(workspace.out, spec.origin)
    expected = expectations_for(spec, envelopes_path)
    ref = spec.handles[1].handle.ref
    signed = expected[ref].text
    assert "; t=" in signed
    expected[ref] = dataclasses.replace(expected[ref], text=signed.replace("; t=", "; t=1", 1))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_ITEMS", 1)  # workers even for a few handles
    judged_again: list[str] = []
    full_path = proof._prove_handle

    def spied(handle_spec: HandleSpec, *args: Any, **options: Any) -> proof.HandleProof:
        judged_again.append(handle_spec.handle.ref)
        return full_path(handle_spec, *args, **options)

    monkeypatch.setattr(proof, "_prove_handle", spied)
    zone = read_zone_file(zone_path, spec.origin)
    anchors = read_trust_anchors(ds_path(workspace.out, spec.origin))
    checked = proof.prove_zone(zone, spec, expected, now=NOW + 60, anchors=anchors, jobs=jobs)
    failed = {result.handle for result in checked.results if not result.ok}
    assert failed == {ref}, [(r.handle, r.detail) for r in checked.results if not r.ok][:3]
    assert len(checked.results) == len(spec.handles)
    assert judged_again == [ref]  # the fast path passed every other handle
