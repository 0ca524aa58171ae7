"""YAML (SafeLoader only) -> nodes that remember ``file:line:col``.

The model walks these nodes; every value it reads can name where it came from.
Duplicate mapping keys, which PyYAML would silently overwrite, are errors here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from alter_publish.errors import DefinitionError

MAX_DEFINITION_OCTETS = 64 * 1024 * 1024
#: libyaml's parser when PyYAML was built with it (7x faster at 100,000 handles), else
#: the pure-Python one; both are SafeLoader (safe constructors, same marks and errors).
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Mark:
    """A position in a file, 1-based."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Node:
    """A YAML value with its position.

    ``value`` is a scalar (str, int, float, bool, None), a ``dict[str, Node]``
    for mappings or a ``list[Node]`` for sequences; ``key_marks`` holds where
    each mapping key was written.
    """

    value: Any
    mark: Mark
    key_marks: Mapping[str, Mark] = field(default_factory=dict)

    @property
    def is_mapping(self) -> bool:
        """True for a YAML mapping."""
        return isinstance(self.value, dict)

    @property
    def is_sequence(self) -> bool:
        """True for a YAML sequence."""
        return isinstance(self.value, list)

    def plain(self) -> Any:
        """The value with positions dropped, recursively."""
        if isinstance(self.value, dict):
            return {key: child.plain() for key, child in self.value.items()}
        if isinstance(self.value, list):
            return [child.plain() for child in self.value]
        return self.value


def _mark(file: str, mark: yaml.Mark | None) -> Mark:
    if mark is None:
        return Mark(file, 1, 1)
    return Mark(file, mark.line + 1, mark.column + 1)


class _Builder:
    def __init__(self, file: str, loader: yaml.SafeLoader) -> None:
        self.file = file
        self.loader = loader
        self.problems: list[str] = []

    def build(self, node: yaml.Node) -> Node:
        mark = _mark(self.file, node.start_mark)
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)
            values: dict[str, Node] = {}
            key_marks: dict[str, Mark] = {}
            for key_node, value_node in node.value:
                key_mark = _mark(self.file, key_node.start_mark)
                key = self.loader.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    self.problems.append(f"{key_mark}: mapping key {key!r} is not a string")
                    continue
                if key in values:
                    self.problems.append(
                        f"{key_mark}: duplicate key {key!r} (first at {key_marks[key]})"
                    )
                    continue
                key_marks[key] = key_mark
                values[key] = self.build(value_node)
            return Node(values, mark, key_marks)
        if isinstance(node, yaml.SequenceNode):
            return Node([self.build(child) for child in node.value], mark)
        return Node(self.loader.construct_object(node, deep=True), mark)


def load_yaml(path: Path) -> Node:
    """Read one YAML document with positions.

    Raises:
        DefinitionError: the file is unreadable, not YAML, empty, or has duplicate keys;
            ``reasons`` lists every problem.
    """
    return load_yaml_text(read_definition(path), str(path))


def read_definition(path: Path) -> str:
    """A definition file's text (UTF-8, at most :data:`MAX_DEFINITION_OCTETS`).

    Raises:
        DefinitionError: the file is unreadable, too big or not UTF-8.
    """
    file = str(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_DEFINITION_OCTETS + 1)
    except OSError as exc:
        raise DefinitionError(f"cannot read file: {exc.strerror}", where=f"{file}:1:1") from exc
    if len(raw) > MAX_DEFINITION_OCTETS:
        raise DefinitionError(f"file is over {MAX_DEFINITION_OCTETS} bytes", where=f"{file}:1:1")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DefinitionError("file is not UTF-8", where=f"{file}:1:1") from exc
    return text


class Composed:
    """A text's YAML nodes as PyYAML composed them (no value constructed yet), to be
    built into positioned :class:`Node` trees. Close it when done."""

    def __init__(self, loader: yaml.SafeLoader, root: yaml.Node, file: str) -> None:
        self.root = root
        self._loader = loader
        self._builder = _Builder(file, loader)

    @property
    def problems(self) -> list[str]:
        """What building found wrong (duplicate or non-text keys)."""
        return self._builder.problems

    def build(self, node: yaml.Node) -> Node:
        """The positioned tree of ``node``.

        Raises:
            yaml.YAMLError: a value cannot be constructed.
            RecursionError: it nests too deeply.
        """
        return self._builder.build(node)

    def close(self) -> None:
        """Free the parser."""
        self._loader.dispose()


def compose_text(text: str, file: str) -> Composed | None:
    """The YAML nodes of ``text`` (from ``file``); None for a text :func:`load_yaml_text`
    refuses (not YAML, empty), which then says why."""
    loader = _LOADER(text)
    try:
        root = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        loader.dispose()
        return None
    if root is None:
        loader.dispose()
        return None
    return Composed(loader, root, file)


def load_yaml_text(text: str, file: str) -> Node:
    """:func:`load_yaml` for text already read from ``file``.

    Raises:
        DefinitionError: as :func:`load_yaml`.
    """
    loader = _LOADER(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise DefinitionError("file is empty", where=f"{file}:1:1")
        builder = _Builder(file, loader)
        node = builder.build(root)
    except yaml.MarkedYAMLError as exc:
        where = _mark(file, exc.problem_mark or exc.context_mark)
        what = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise DefinitionError(f"invalid YAML: {what}", where=str(where)) from exc
    except yaml.YAMLError as exc:
        raise DefinitionError(f"invalid YAML: {exc}", where=f"{file}:1:1") from exc
    except RecursionError as exc:
        raise DefinitionError("YAML nests too deeply", where=f"{file}:1:1") from exc
    finally:
        loader.dispose()
    if builder.problems:
        raise DefinitionError(
            f"{builder.problems[0]} (+{len(builder.problems) - 1} more)"
            if len(builder.problems) > 1
            else builder.problems[0],
            reasons=tuple(builder.problems),
        )
    return node
