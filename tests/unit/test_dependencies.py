"""Every third-party module src/ imports comes from a declared dependency, and the lock pins them.

A fresh virtual environment holds only what pyproject.toml declares: an import that some other
package happens to bring along (click came with older typer releases) breaks the README's first
command on a new machine while a well-used development machine stays green.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "requirements.lock"
OWN_PACKAGES = frozenset({"alter_publish"})


def _project() -> dict[str, object]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    project = data["project"]
    assert isinstance(project, dict)
    return project


def _requirements(extra: str | None = None) -> list[Requirement]:
    project = _project()
    if extra is None:
        texts = project["dependencies"]
    else:
        extras = project["optional-dependencies"]
        assert isinstance(extras, dict)
        texts = extras[extra]
    assert isinstance(texts, list)
    return [Requirement(text) for text in texts]


def _imported_modules(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def third_party_imports(root: Path) -> dict[str, list[str]]:
    """Top-level third-party module -> the files under ``root`` that import it."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for module in _imported_modules(tree):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in OWN_PACKAGES or top == "__future__":
                continue
            found.setdefault(top, []).append(str(path.relative_to(root)))
    return found


def undeclared(
    imports: dict[str, list[str]], declared: set[str], providers: dict[str, list[str]]
) -> dict[str, list[str]]:
    """The imported modules that no declared distribution provides."""
    missing = {}
    for module, files in imports.items():
        owners = {canonicalize_name(dist) for dist in providers.get(module, [])}
        if not owners & declared:
            missing[module] = files
    return missing


def test_every_module_src_imports_is_declared() -> None:
    declared: set[str] = {canonicalize_name(req.name) for req in _requirements()}
    providers = {k: list(v) for k, v in importlib.metadata.packages_distributions().items()}
    missing = undeclared(third_party_imports(SRC), declared, providers)
    assert not missing, f"src/ imports modules no declared dependency provides: {missing}"


def test_the_check_catches_an_undeclared_import(tmp_path: Path) -> None:
    """The check itself can fail: click imported while only typer is declared."""
    (tmp_path / "cli.py").write_text(
        "import json\nimport click\nfrom typer import Option\n", encoding="utf-8"
    )
    imports = third_party_imports(tmp_path)
    assert imports == {"click": ["cli.py"], "typer": ["cli.py"]}
    providers = {"click": ["click"], "typer": ["typer"]}
    assert undeclared(imports, {"typer"}, providers) == {"click": ["cli.py"]}
    assert undeclared(imports, {"typer", "click"}, providers) == {}
    assert undeclared(imports, {"typer"}, {"typer": ["typer"]}) == {"click": ["cli.py"]}


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\;]+)", line)
        if match:
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


@pytest.mark.parametrize("extra", [None, "dev"], ids=["runtime", "dev"])
def test_the_lock_pins_every_declared_dependency_within_its_range(extra: str | None) -> None:
    pins = _locked()
    for req in _requirements(extra):
        name = canonicalize_name(req.name)
        assert name in pins, f"requirements.lock does not pin {req.name}: run .ci/lock"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {req.name}=={pins[name]}, outside {req}: run .ci/lock"
        )


def test_every_locked_pin_carries_hashes() -> None:
    text = LOCK.read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text)
    for block in blocks:
        if "==" in block.split("\n", 1)[0]:
            assert "--hash=sha256:" in block, f"no hash for {block.splitlines()[0]}"
