"""Go's golang.org/x/mod/sumdb/{note,tlog} as an oracle for the transparency log: the
program in ``go/tlogcheck`` built once per session (offline, GOPATH mode over Debian's
``golang-golang-x-mod-dev`` sources)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

GOPATH = Path("/usr/share/gocode")
SOURCES = GOPATH / "src/golang.org/x/mod/sumdb"
PROGRAM = Path(__file__).parent / "go" / "tlogcheck" / "main.go"
BUILD_SECONDS = 300


def build_tlogcheck(directory: Path, program: Path = PROGRAM) -> Path:
    """Build ``tlogcheck`` (or another ``program`` of ``go/``) into ``directory``; skip
    when Go or the sources are missing."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("needs Go (Debian package golang-go)")
    if not (SOURCES / "note" / "note.go").exists() or not (SOURCES / "tlog" / "tlog.go").exists():
        pytest.skip("needs golang.org/x/mod sources (Debian package golang-golang-x-mod-dev)")
    binary = directory / program.parent.name
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(GOPATH),
        "GOCACHE": str(directory / "cache"),
        "GOPROXY": "off",
        "CGO_ENABLED": "0",
    }
    subprocess.run(
        [go, "build", "-o", str(binary), str(program)],
        check=True,
        env=env,
        cwd=directory,
        timeout=BUILD_SECONDS,
        capture_output=True,
    )
    return binary


def go_check_dir(binary: Path, directory: Path, vkey: str, *old: Path) -> str:
    """``tlogcheck dir``: the output line (``ok`` or the first problem)."""
    done = subprocess.run(
        [str(binary), "dir", str(directory), vkey, *map(str, old)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip()


def go_check_proofs(binary: Path, vkey: str, request: dict[str, Any]) -> str:
    """``tlogcheck proofs``: the output line (``ok`` or the first problem)."""
    done = subprocess.run(
        [str(binary), "proofs", vkey],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip()
