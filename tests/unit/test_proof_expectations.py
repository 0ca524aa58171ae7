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
from alter_publish.pipeline.verification import expectations_for
from alter_publish.pipeline.zonefiles import read_zone_file
from alter_publish.verify import proof
from tests.conftest import NOW, Workspace


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_proof_holds_each_handle_to_its_expectation_on_either_path(
    workspace: Workspace, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers' fast path takes each handle's expectation as plain values (they cross
    # the process boundary). One handle is expected to hold another envelope text than
    # the one served, another to serve a revocation it does not: both fail there and
    # again in the full path, as they must; every other handle passes the fast path.
    report = sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW, create_keys=True
    )
    assert report.ok
    spec = load_zone(workspace.zone_file)
    zone_path, envelopes_path = output_paths(workspace.out, spec.origin)
    expected = expectations_for(spec, envelopes_path)
    other_text, unserved_revocation = spec.handles[1].handle.ref, spec.handles[2].handle.ref
    signed = expected[other_text].text
    assert "; t=" in signed
    expected[other_text] = dataclasses.replace(
        expected[other_text], text=signed.replace("; t=", "; t=1", 1)
    )
    revocation = "v=alter1; h=~nobody; e=1; k=ed25519; r=revoked"
    expected[unserved_revocation] = dataclasses.replace(
        expected[unserved_revocation], revocations=(revocation,)
    )
    monkeypatch.setattr(parallel, "PARALLEL_MIN_ITEMS", 1)  # workers even for a few handles
    pools: list[bool] = []

    class Recorded(parallel.Workers):
        def __init__(self, *args: Any, **options: Any) -> None:
            super().__init__(*args, **options)
            pools.append(self._pool is not None)

    monkeypatch.setattr(proof, "Workers", Recorded)
    judged_again: list[str] = []
    full_path = proof._prove_handle

    def spied(handle_spec: HandleSpec, *args: Any, **options: Any) -> proof.HandleProof:
        judged_again.append(handle_spec.handle.ref)
        return full_path(handle_spec, *args, **options)

    monkeypatch.setattr(proof, "_prove_handle", spied)
    zone = read_zone_file(zone_path, spec.origin)
    anchors = read_trust_anchors(ds_path(workspace.out, spec.origin))
    checked = proof.prove_zone(zone, spec, expected, now=NOW + 60, anchors=anchors, jobs=jobs)
    assert pools == [jobs > 1]  # with 2 jobs, the fast path ran in worker processes
    failed = {result.handle for result in checked.results if not result.ok}
    assert failed == {other_text, unserved_revocation}, [
        (r.handle, r.detail) for r in checked.results if not r.ok
    ]
    assert len(checked.results) == len(spec.handles)
    assert judged_again == [other_text, unserved_revocation]  # the others passed the fast path
