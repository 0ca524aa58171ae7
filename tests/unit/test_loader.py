"""definition.loader: YAML nodes that remember file:line:col, and file-level errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.definition import loader
from alter_publish.definition.loader import Mark, Node, load_yaml
from alter_publish.errors import EXIT_DEFINITION, DefinitionError


def write(tmp_path: Path, content: bytes | str, name: str = "zone.yaml") -> Path:
    """Write ``content`` to ``tmp_path/name`` and return the path."""
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def positions(error: DefinitionError, path: Path) -> list[tuple[int, int]]:
    """(line, column) of every reason, checking each names ``path``."""
    found: list[tuple[int, int]] = []
    for reason in error.reasons:
        assert reason.startswith(f"{path}:"), reason
        line, column, _ = reason[len(str(path)) + 1 :].split(":", 2)
        found.append((int(line), int(column)))
    return found


# --- positions -------------------------------------------------------------------


def test_marks_are_one_based_and_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "zone: example.com\nsoa:\n  mname: ns1\nns:\n  - ns1\n  - ns2\n")

    node = load_yaml(path)

    assert node.is_mapping
    assert not node.is_sequence
    assert node.mark == Mark(str(path), 1, 1)
    assert str(node.mark) == f"{path}:1:1"
    assert {key: (m.line, m.column) for key, m in node.key_marks.items()} == {
        "zone": (1, 1),
        "soa": (2, 1),
        "ns": (4, 1),
    }
    zone = node.value["zone"]
    assert (zone.value, zone.mark.line, zone.mark.column) == ("example.com", 1, 7)
    soa = node.value["soa"]
    assert (soa.mark.line, soa.mark.column) == (3, 3)
    assert (soa.key_marks["mname"].line, soa.key_marks["mname"].column) == (3, 3)
    ns = node.value["ns"]
    assert ns.is_sequence
    assert [(child.mark.line, child.mark.column) for child in ns.value] == [(5, 5), (6, 5)]


def test_plain_drops_positions(tmp_path: Path) -> None:
    path = write(tmp_path, "a: 1\nb: [x, {c: true}]\nd: null\ne: 1.5\n")

    assert load_yaml(path).plain() == {"a": 1, "b": ["x", {"c": True}], "d": None, "e": 1.5}


def test_scalar_document_is_a_scalar_node(tmp_path: Path) -> None:
    node = load_yaml(write(tmp_path, "hello\n"))

    assert node == Node("hello", Mark(str(tmp_path / "zone.yaml"), 1, 1))
    assert not node.is_mapping
    assert not node.is_sequence


def test_aliases_and_merge_keys_are_expanded(tmp_path: Path) -> None:
    path = write(tmp_path, "base: &b {x: 1}\nc:\n  <<: *b\n  y: 3\nd: *b\n")

    node = load_yaml(path)

    assert node.plain() == {"base": {"x": 1}, "c": {"x": 1, "y": 3}, "d": {"x": 1}}
    assert (node.value["c"].key_marks["y"].line, node.value["c"].key_marks["y"].column) == (4, 3)


@pytest.mark.xfail(
    strict=True,
    raises=DefinitionError,
    reason=(
        "loader._Builder flags a key that overrides a merged '<<' key as a duplicate key; "
        "YAML merge semantics let explicit keys override merged ones"
    ),
)
def test_merge_key_override_is_not_a_duplicate(tmp_path: Path) -> None:
    path = write(tmp_path, "base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n")

    assert load_yaml(path).plain()["c"] == {"x": 1, "y": 3}


# --- problems collected while building ------------------------------------------------


def test_duplicate_keys_are_all_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "a: 1\na: 2\nb:\n  c: 1\n  c: 2\n")

    with pytest.raises(DefinitionError) as info:
        load_yaml(path)

    assert positions(info.value, path) == [(2, 1), (5, 3)]
    assert f"(first at {path}:1:1)" in info.value.reasons[0]
    assert f"(first at {path}:4:3)" in info.value.reasons[1]
    assert str(info.value).startswith(info.value.reasons[0])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("a: 1\n1: 2\n", [(2, 1)], id="integer-key"),
        pytest.param("a: 1\nyes: 2\nnull: 3\n", [(2, 1), (3, 1)], id="boolean-and-null-keys"),
        pytest.param("? [a]\n: 1\n", [(1, 3)], id="sequence-key"),
    ],
)
def test_non_string_keys_are_reported(
    tmp_path: Path, content: str, expected: list[tuple[int, int]]
) -> None:
    path = write(tmp_path, content)

    with pytest.raises(DefinitionError) as info:
        load_yaml(path)

    assert positions(info.value, path) == expected


# --- file-level errors ---------------------------------------------------------------

FILE_ERRORS = [
    pytest.param(b"zone: example.com\nfoo: bar: baz\n", 2, 9, id="yaml-syntax"),
    pytest.param(b"ns: [ns1\n", 2, 1, id="unclosed-flow-sequence"),
    pytest.param(b"a:\n\tb: 1\n", 2, 1, id="tab-indent"),
    pytest.param(b"a: 1\n---\nb: 2\n", 2, 1, id="two-documents"),
    pytest.param(b"", 1, 1, id="empty"),
    pytest.param(b"# nothing here\n", 1, 1, id="comment-only"),
    pytest.param(b"zone: \xff\n", 1, 1, id="non-utf8"),
    # PyYAML 6.0.4 stops at its own nesting limit and names the position.
    pytest.param(b"a: " + b"[" * 3000 + b"]" * 3000 + b"\n", 1, 1003, id="too-deep"),
    pytest.param(None, 1, 1, id="missing-file"),
]


def file_error(tmp_path: Path, content: bytes | None) -> tuple[Path, DefinitionError]:
    """Load a file with ``content`` (None: no file) and return the error it raises."""
    path = tmp_path / "zone.yaml" if content is None else write(tmp_path, content)
    with pytest.raises(DefinitionError) as info:
        load_yaml(path)
    return path, info.value


@pytest.mark.parametrize(("content", "line", "column"), FILE_ERRORS)
def test_file_level_error_names_its_position(
    tmp_path: Path, content: bytes | None, line: int, column: int
) -> None:
    path, error = file_error(tmp_path, content)

    assert error.where == f"{path}:{line}:{column}"
    assert str(error).startswith(f"{path}:{line}:{column}: ")
    assert "\n" not in str(error)
    assert error.category == "definition"
    assert error.exit_code == EXIT_DEFINITION


@pytest.mark.parametrize(("content", "line", "column"), FILE_ERRORS)
def test_file_level_error_lists_its_reason(
    tmp_path: Path, content: bytes | None, line: int, column: int
) -> None:
    path, error = file_error(tmp_path, content)

    assert positions(error, path) == [(line, column)]


def test_directory_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "zone.yaml"
    path.mkdir()

    with pytest.raises(DefinitionError) as info:
        load_yaml(path)

    assert info.value.where == f"{path}:1:1"


def test_oversized_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "MAX_DEFINITION_OCTETS", 16)
    path = write(tmp_path, "zone: example.com\n")

    with pytest.raises(DefinitionError) as info:
        load_yaml(path)

    assert info.value.where == f"{path}:1:1"


def test_file_at_the_size_limit_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content = "zone: example.com\n"
    monkeypatch.setattr(loader, "MAX_DEFINITION_OCTETS", len(content))

    assert load_yaml(write(tmp_path, content)).plain() == {"zone": "example.com"}
