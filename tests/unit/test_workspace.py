"""The workspace rule: roots from definitions, defaults, and finding zones upwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.definition.workspace import (
    find_definition,
    find_definition_if_any,
    find_zone_files,
    workspace_for,
    workspace_root,
)
from alter_publish.errors import UsageError


def _layout(root: Path) -> Path:
    definition = root / "zones" / "example.com.yaml"
    definition.parent.mkdir(parents=True)
    definition.write_text("zone: example.com\n", encoding="utf-8")
    return definition


@pytest.mark.parametrize(
    ("definition", "root"),
    [
        pytest.param("zones/example.com.yaml", ".", id="zones-relative"),
        pytest.param("site/zones/example.com.yaml", "site", id="zones-nested"),
        pytest.param("site/example.com.yaml", "site", id="no-zones-dir"),
        pytest.param("example.com.yaml", ".", id="bare-file"),
    ],
)
def test_root_is_the_parent_of_zones_else_the_definitions_directory(
    definition: str, root: str
) -> None:
    assert workspace_root(Path(definition)) == Path(root)


def test_root_from_inside_zones_is_found_by_the_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _layout(tmp_path)
    monkeypatch.chdir(tmp_path / "zones")
    assert workspace_root(Path("example.com.yaml")).resolve() == tmp_path.resolve()


def test_defaults_and_explicit_directories(tmp_path: Path) -> None:
    definition = _layout(tmp_path)
    where = workspace_for([definition])
    assert where.keys() == tmp_path / "keys"
    assert where.out() == tmp_path / "build"
    assert where.templates() is None  # no templates/ here: the built-in ones
    (tmp_path / "templates").mkdir()
    assert where.templates() == tmp_path / "templates"
    assert where.keys(Path("elsewhere")) == Path("elsewhere")


def test_two_workspaces_need_the_directory_given(tmp_path: Path) -> None:
    where = workspace_for([_layout(tmp_path / "a"), _layout(tmp_path / "b")])
    with pytest.raises(UsageError, match="--out"):
        where.out()
    assert where.out(Path("build")) == Path("build")


@pytest.mark.parametrize("zone", ["example.com", "example.com.", "EXAMPLE.com"])
def test_zone_names_are_found_upwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    _layout(tmp_path)
    (tmp_path / "build" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "build" / "deep")
    found = find_definition(zone)
    assert found == Path("../../zones/example.com.yaml")
    assert workspace_for([found]).keys() == Path("../../keys")
    assert find_zone_files([]) == (found,)


def test_unknown_zone_is_refused_and_optional_lookup_says_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"zones/example\.net\.yaml"):
        find_definition("example.net")
    assert find_definition_if_any("example.net") is None
    assert find_definition_if_any("zones/example.com.yaml") == Path("zones/example.com.yaml")
    with pytest.raises(UsageError, match="no such zone definition"):
        find_definition("zones/missing.yaml")
