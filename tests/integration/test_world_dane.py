"""DANE at resolver endpoints on the loopback hierarchy (issue 18 part 4): ``sign``
publishes the TLSA of two endpoints, ns1 and ns2 serve the zone, unbound validates the
TLSA (AD), and ``check`` connects to both loopback TLS endpoints: the one presenting the
published key is ``dane-match``, the one presenting another certificate
``dane-mismatch`` (exit 1). ``check_endpoint`` and ``open --launch`` (its guard) agree:
the first is dispatched to, the second refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dns.flags
import dns.rdatatype

from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.hints import read_root_hints
from alter_publish.errors import EXIT_VERIFICATION
from alter_publish.verify.dane import check_endpoint, lookup_from_root
from tests.integration.hierarchy import Hierarchy, HierarchyLab, Scenario, resolver_query
from tests.tlsfixtures import make_certificate, tls_server

_RUN_CLI = "from alter_publish.cli import main; main()"


#: A surface path that must never appear in an error.
SURFACE = "private-inbox-7f3a"


def _cli(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _RUN_CLI, *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


def _launch(
    workspace: Path, hierarchy: Hierarchy, anchor: Path, handle: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``open --launch alter:~HANDLE/SURFACE``, validating from the lab's root (``anchor``)."""
    return _cli(
        workspace,
        "open",
        "--launch",
        "--substrate",
        "example.com",
        "--now",
        str(hierarchy.now),
        "--root-hints",
        str(hierarchy.root_hints),
        "--trust-anchor",
        str(anchor),
        "--",
        f"alter:~{handle}/{SURFACE}",
        env=env,
    )


def _stub_opener(directory: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose ``xdg-open`` records the URL it is given, and where it records it."""
    record = directory / "opened.txt"
    stub = directory / "bin" / "xdg-open"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{record}"\n', encoding="utf-8")
    stub.chmod(0o755)
    return {"PATH": f"{stub.parent}:{os.environ['PATH']}"}, record


def test_check_reports_the_matching_and_the_mismatching_endpoint(
    hierarchy_lab: HierarchyLab, tmp_path: Path
) -> None:
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    workspace = tmp_path / "ws"
    shutil.copytree(hierarchy.workspace, workspace, symlinks=True)
    certs = workspace / "zones" / "certs"
    published = make_certificate(certs, "published", "good.example.com")
    other = make_certificate(certs, "other", "bad.example.com")
    definition = workspace / "zones" / "example.com.yaml"
    with tls_server(published) as good, tls_server(other) as bad:
        text = definition.read_text()
        text = text.replace("hosts: {", "hosts: {good: [127.0.0.1], bad: [127.0.0.1], ", 1).replace(
            "  - ~drew\n",
            f"  - handle: ~drew\n"
            f"    resolver: https://good.example.com:{good.port}/drew\n"
            f"    tls: {{cert: certs/published.pem}}\n"
            f"  - handle: ~erin\n"
            f"    resolver: https://bad.example.com:{bad.port}/erin\n"
            f"    tls: {{public_key: certs/published.pub}}\n",
        )
        definition.write_text(text)
        at = ("--now", str(hierarchy.now), "--allow-simulated-time")
        signed = _cli(workspace, "sign", "--create-keys", *at)
        assert signed.returncode == 0, signed.stderr
        try:
            hierarchy_lab.publish(workspace / "build" / "example.com.zone")
            # unbound, validating from the root, finds the TLSA secure
            answer = resolver_query(hierarchy, f"_{good.port}._tcp.good.example.com.", "TLSA")
            assert answer.flags & dns.flags.AD
            assert any(r.rdtype == dns.rdatatype.TLSA for r in answer.answer)
            checked = _cli(
                workspace,
                "check",
                "example.com",
                "--json",
                "--now",
                str(hierarchy.now),
                "--root-hints",
                str(hierarchy.root_hints),
                "--trust-anchor",
                str(hierarchy.anchor_file),
            )
            # the open command's guard, through the same lookup
            lookup = lookup_from_root(
                read_root_hints(hierarchy.root_hints),
                read_trust_anchors(hierarchy.anchor_file),
                now=hierarchy.now,
                timeout=2.0,
                port=hierarchy.port,
            )
            good_verdict = check_endpoint(f"https://good.example.com:{good.port}/drew", lookup)
            bad_verdict = check_endpoint(f"https://bad.example.com:{bad.port}/erin", lookup)
            # open --launch: the matching endpoint is dispatched to, the other refused
            stub, record = _stub_opener(tmp_path)
            opened = {
                handle: _launch(workspace, hierarchy, hierarchy.anchor_file, handle, stub)
                for handle in ("drew", "erin")
            }
            # A record that does not verify (a wrong trust anchor: bogus) makes no
            # connection to the endpoint at all: the guard runs only after verification.
            handshakes = len(bad.names)
            wrong = tmp_path / "wrong-anchor.ds"
            ds = (workspace / "build" / "example.com.ds").read_text().strip()
            wrong.write_text(ds[:-1] + ("0" if ds[-1] != "0" else "1") + "\n")
            bogus = _launch(workspace, hierarchy, wrong, "erin", stub)
            after_bogus = len(bad.names)
        finally:
            hierarchy_lab.publish()
    assert checked.returncode == EXIT_VERIFICATION, checked.stdout + checked.stderr
    findings = json.loads(checked.stdout)["findings"]
    dane = {(f["code"], f["server"]) for f in findings if f["code"].startswith("dane-")}
    assert dane == {
        ("dane-match", f"https://good.example.com:{good.port}"),
        ("dane-mismatch", f"https://bad.example.com:{bad.port}"),
    }, findings
    assert {f["severity"] for f in findings if f["code"] == "dane-match"} == {"info"}
    errors = [f["code"] for f in findings if f["severity"] == "error"]
    assert errors == ["dane-mismatch"], findings
    assert "Traceback" not in checked.stderr
    assert len(checked.stderr.strip().splitlines()) == 1
    assert good_verdict.category == "match", good_verdict.detail
    assert not good_verdict.blocks_dispatch
    assert bad_verdict.category == "mismatch", bad_verdict.detail
    assert bad_verdict.blocks_dispatch
    assert "erin" not in bad_verdict.detail
    assert good.names
    assert set(good.names) == {"good.example.com"}
    drew, erin = opened["drew"], opened["erin"]
    assert drew.returncode == 0, drew.stderr
    assert erin.returncode == EXIT_VERIFICATION, erin.stderr
    assert "refused" in erin.stderr, erin.stderr
    assert "DANE mismatch" in erin.stderr, erin.stderr
    assert SURFACE not in erin.stderr
    assert bogus.returncode != 0, bogus.stdout
    assert SURFACE not in bogus.stderr
    assert after_bogus == handshakes, "the endpoint was contacted before verification"
    assert record.read_text().splitlines() == [
        f"https://good.example.com:{good.port}/drew/{SURFACE}"
    ]
