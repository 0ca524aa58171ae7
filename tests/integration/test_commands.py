"""The README's main command and the other happy paths, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG
from tests.conftest import NOW, Workspace


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_readme_main_command_then_resolve_and_verify_record(workspace: Workspace) -> None:
    signed = _run(
        workspace.root,
        "sign",
        "zones/example.com.yaml",
        "--create-keys",
        "--now",
        str(NOW),
        SIMULATED_TIME_FLAG,
    )
    assert signed.returncode == 0, signed.stderr
    assert "5/5 proven" in signed.stdout
    doc = json.loads(workspace.envelopes.read_text())
    blake = next(h for h in doc["handles"] if h["handle"] == "~blake")
    quoted = " ".join(f'"{part}"' for part in blake["txt_strings"])
    checked = _run(
        workspace.root,
        "verify-record",
        quoted,
        "--owner",
        blake["owner"],
        "--now",
        str(NOW),
        "--json",
    )
    assert checked.returncode == 0, checked.stderr
    result = json.loads(checked.stdout)
    assert (result["ok"], result["handle"], result["epoch"]) == (True, "~blake", 1)
    verified = _run(workspace.root, "verify", "--now", str(NOW), "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["ok"] is True


def test_resolve_against_the_embedded_server(workspace: Workspace) -> None:
    assert (
        _run(
            workspace.root, "sign", "--create-keys", "--now", str(NOW), SIMULATED_TIME_FLAG
        ).returncode
        == 0
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "alter_publish", "serve", str(workspace.rendered)],
        cwd=workspace.root,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        address = line.split(" on ")[1].split(" ")[0]
        uri = "alter:~cc-opus-4-7/sessions/last"
        # An anchor for another zone only: no anchor covers example.com (without one,
        # resolve validates from the shipped root anchors, out of reach of a loopback
        # server that serves example.com alone).
        other = workspace.root / "other.ds"
        other.write_text(f"other.test. IN DS 1 15 2 {'00' * 32}\n", encoding="ascii")
        base = [
            "resolve",
            uri,
            "--server",
            address,
            "--trust-anchor",
            str(other),
            "--substrate",
            "example.com",
            "--now",
            str(NOW),
        ]
        insecure = _run(workspace.root, *base)
        assert insecure.returncode == 1
        assert "insecure" in insecure.stderr
        allowed = _run(workspace.root, *base, "--allow-insecure", "--json")
        assert allowed.returncode == 0, allowed.stderr
        assert "--allow-insecure" in allowed.stderr
        result = json.loads(allowed.stdout)
        assert (result["handle"], result["tier"], result["path"]) == (
            "~cc-opus-4-7",
            "instrument",
            "sessions/last",
        )
        assert result["dnssec"] == "insecure"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_init_scaffolds_a_workspace_that_signs(tmp_path: Path) -> None:
    created = _run(tmp_path, "init", "--zone", "example.org")
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "templates" / "zone.j2").is_file()
    assert (tmp_path / "keys" / ".gitignore").is_file()
    signed = _run(
        tmp_path,
        "sign",
        "--create-keys",
        "--templates",
        "templates",
        "--now",
        str(NOW),
        SIMULATED_TIME_FLAG,
    )
    assert signed.returncode == 0, signed.stderr
    assert (tmp_path / "build" / "example.org.zone").is_file()
    again = _run(tmp_path, "init", "--zone", "example.org")
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1


def test_keygen_then_sign_without_create_keys(workspace: Workspace) -> None:
    for handle in ("~example.com", "~blake", "~drew", "~deploy.bot", "~cc-opus-4-7"):
        made = _run(workspace.root, "keygen", handle, "--zone", "example.com")
        assert made.returncode == 0, made.stderr
        assert "PRIVATE" not in made.stdout
    missing = _run(workspace.root, "sign", "--now", str(NOW), SIMULATED_TIME_FLAG)
    assert missing.returncode == 4, missing.stderr
    assert "dnssec keygen example.com" in missing.stderr
    zone_keys = _run(
        workspace.root, "dnssec", "keygen", "example.com", "--now", str(NOW), SIMULATED_TIME_FLAG
    )
    assert zone_keys.returncode == 0, zone_keys.stderr
    assert "PRIVATE" not in zone_keys.stdout
    (ds_line,) = [line for line in zone_keys.stdout.splitlines() if " IN DS " in line]
    signed = _run(workspace.root, "sign", "--now", str(NOW), SIMULATED_TIME_FLAG)
    assert signed.returncode == 0, signed.stderr
    assert ds_line.split(": ")[-1] in signed.stdout
    assert "(secure)" in signed.stdout
