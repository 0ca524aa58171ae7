"""The ``log:`` of a zone definition (definition/logspec.py): the witness policy file is
read and checked at load time, problems carry file:line:col, and the mapping
round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from alter_publish.definition.logspec import LogSpec
from alter_publish.definition.model import load_zone
from alter_publish.errors import DefinitionError
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Signer

LOG = Signer("example.com/alter-log", bytes(range(32)))
HEADER = "zone: example.com\nns: [ns1]\nhandles: [~blake]\n"


def _policy(directory: Path) -> Path:
    witness = Signer("witness.example/w1", bytes(32), COSIGNATURE_V1_TYPE).verifier.to_text()
    path = directory / "w.policy"
    path.write_text(
        f"log {LOG.verifier.to_text()}\nwitness w1 {witness} http://127.0.0.1:1\nquorum w1\n",
        encoding="utf-8",
    )
    return path


def _load(directory: Path, text: str) -> Path:
    path = directory / "example.com.yaml"
    path.write_text(HEADER + text, encoding="utf-8")
    return path


def test_a_policy_is_read_relative_to_the_definition_and_round_trips(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    spec = load_zone(_load(tmp_path, "log:\n  policy: w.policy\n  require_quorum: true\n"))
    assert spec.log == LogSpec(policy.absolute(), require_quorum=True)
    assert LogSpec.from_mapping(spec.log.to_mapping()) == spec.log
    again = tmp_path / "again" / "example.com.yaml"
    again.parent.mkdir()
    again.write_text(yaml.safe_dump(spec.to_mapping(), sort_keys=False), encoding="utf-8")
    assert load_zone(again).log == spec.log
    assert load_zone(_load(tmp_path, "")).log == LogSpec()
    assert LogSpec.from_mapping({}) == LogSpec()


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("log: w.policy\n", "log must be a mapping"),
        ("log:\n  policy: missing.policy\n", "cannot read"),
        ("log:\n  policy: bad.policy\n", "bad.policy:1: unknown keyword 'nonsense'"),
        ("log:\n  policy: w.policy\n  require_quorum: maybe\n", "true or false"),
        ("log:\n  policy: w.policy\n  quorum: 2\n", "unknown field 'quorum' in log"),
        ("log:\n  require_quorum: true\n", "log needs a policy"),
    ],
)
def test_log_problems_name_the_line(tmp_path: Path, text: str, what: str) -> None:
    _policy(tmp_path)
    (tmp_path / "bad.policy").write_text("nonsense\n", encoding="utf-8")
    path = _load(tmp_path, text)
    with pytest.raises(DefinitionError) as info:
        load_zone(path)
    lines = {int(reason[len(str(path)) + 1 :].split(":")[0]) for reason in info.value.reasons}
    assert lines <= {4, 5, 6}, info.value.reasons  # the log: lines, file:line:col
    assert what in str(info.value.reasons)
