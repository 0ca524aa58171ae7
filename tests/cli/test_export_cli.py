"""``alter-publish export``: the signed records for BIND, octoDNS and HTTPS, from the CLI."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from alter_publish.errors import EXIT_OK, EXIT_OUTPUT, EXIT_USAGE
from tests.cli.workspace import ZONE, Workspace, assert_one_error_line, assert_unchanged

DEFAULT_PATHS = {
    "bind-include": f"build/{ZONE}.alter.include",
    "octodns": f"build/octodns/{ZONE}.yaml",
    "well-known": f"build/{ZONE}/.well-known/alter-envelope.json",
}


def _signed_texts(ws: Workspace) -> set[str]:
    doc = json.loads(ws.envelopes_file.read_text(encoding="utf-8"))
    return {item["text"] for item in doc["handles"]}


@pytest.mark.parametrize("fmt", sorted(DEFAULT_PATHS))
def test_export_writes_the_signed_records(workspace: Workspace, fmt: str) -> None:
    result = workspace.run("export", ZONE, "--format", fmt)
    assert result.returncode == EXIT_OK, result.describe()
    path = workspace.root / DEFAULT_PATHS[fmt]
    assert f"wrote {DEFAULT_PATHS[fmt]}" in result.stdout
    text = path.read_text(encoding="utf-8")
    if fmt == "well-known":
        found = {t for record in json.loads(text)["records"] for t in record["texts"]}
    elif fmt == "octodns":
        doc = yaml.safe_load(text)
        found = {v.replace("\\;", ";") for record in doc.values() for v in record["values"]}
    else:
        found = {
            "".join(part.strip('"') for part in line.split(" IN TXT ", 1)[1].split('" "'))
            for line in text.splitlines()
            if " IN TXT " in line
        }
    assert found == _signed_texts(workspace)
    again = workspace.run("export", ZONE, "--format", fmt)
    assert "unchanged" in again.stdout


def test_export_to_stdout(workspace: Workspace) -> None:
    result = workspace.run("export", ZONE, "--format", "well-known", "--output", "-")
    assert result.returncode == EXIT_OK, result.describe()
    doc = json.loads(result.stdout)
    assert doc["zone"] == ZONE
    assert not (workspace.root / DEFAULT_PATHS["well-known"]).exists()


def test_unknown_format_and_unsigned_workspace(workspace: Workspace) -> None:
    before = workspace.snapshot()
    bad = workspace.run("export", ZONE, "--format", "tinydns")
    assert "bind-include" in assert_one_error_line(bad, EXIT_USAGE)
    assert_unchanged(before, workspace.snapshot())
    shutil.rmtree(workspace.root / "build")
    before = workspace.snapshot()
    unsigned = workspace.run("export", ZONE, "--format", "octodns")
    assert "run 'alter-publish sign' first" in assert_one_error_line(unsigned, EXIT_OUTPUT)
    assert_unchanged(before, workspace.snapshot())
