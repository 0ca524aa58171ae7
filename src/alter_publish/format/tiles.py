"""The log as C2SP tiles (c2sp.org/tlog-tiles), on no I/O: tile paths, hash tiles of
height 8, entry bundles, and :class:`TreeHashes`, the tree's hashes kept tile by tile
(resumed from stored tiles through a ``load`` function, then appended to).

A tile at level *L* and index *N* holds up to 256 hashes: at level 0 leaf hashes, above
the hash of each full tile of the level below. ``tile/<L>/<N>`` is a full tile,
``tile/<L>/<N>.p/<W>`` a partial one of *W* hashes; *N* is written in 3-digit path
elements, every one but the last starting with ``x`` (1234067: ``x001/x234/067``).
Entry bundles ``tile/entries/<N>[.p/<W>]`` hold the level-0 tile's entries, each
after its length as a big-endian 16-bit number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from alter_publish.format.identitylog import EMPTY_ROOT, leaf_hash, node_hash
from alter_publish.format.tlog import HASH_OCTETS, range_hash
from alter_publish.format.tlog import inclusion_proof as path_of

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
FULL_TILE_OCTETS = TILE_WIDTH * HASH_OCTETS
#: The level of an entry bundle in :class:`Tile` (its path says ``entries``).
ENTRIES = -1
ENTRY_MAX_OCTETS = 0xFFFF
_TILE_PATH = re.compile(r"tile/(entries|0|[1-9][0-9]?)/((?:x[0-9]{3}/)*[0-9]{3})(?:\.p/([0-9]+))?")


@dataclass(frozen=True, slots=True)
class Tile:
    """A tile's coordinates: level (:data:`ENTRIES` for an entry bundle), index, width."""

    level: int
    index: int
    width: int = TILE_WIDTH

    @property
    def path(self) -> str:
        """The path below the log's prefix."""
        level = "entries" if self.level == ENTRIES else str(self.level)
        suffix = "" if self.width == TILE_WIDTH else f".p/{self.width}"
        return f"tile/{level}/{encode_index(self.index)}{suffix}"

    @property
    def octets_max(self) -> int:
        """The most a stored tile can hold: ``width`` hashes, or ``width`` entries of up
        to 65,535 octets each with their two-octet length."""
        if self.level == ENTRIES:
            return self.width * (2 + 0xFFFF)
        return self.width * HASH_OCTETS

    @classmethod
    def parse(cls, path: str) -> Tile:
        """The tile at ``path`` (as :attr:`path` writes it).

        Raises:
            ValueError: not a tile path.
        """
        match = _TILE_PATH.fullmatch(path)
        if match is None:
            raise ValueError(f"not a tile path: {path}")
        level = ENTRIES if match[1] == "entries" else int(match[1])
        index = int(match[2].replace("x", "").replace("/", ""))
        width = TILE_WIDTH
        if match[3] is not None:
            width = int(match[3])
            if not 0 < width < TILE_WIDTH or str(width) != match[3]:
                raise ValueError(f"not a tile width: {path}")
        return cls(level, index, width)


def encode_index(index: int) -> str:
    """``index`` in 3-digit path elements, all but the last prefixed ``x``."""
    digits = str(index)
    digits = "0" * (-len(digits) % 3) + digits
    groups = [digits[at : at + 3] for at in range(0, len(digits), 3)]
    return "/".join([*(f"x{group}" for group in groups[:-1]), groups[-1]])


def tiles_for_size(size: int) -> list[Tile]:
    """Every hash tile of a tree of ``size`` (full ones, then the partial one, level by
    level); the entry bundles are the level-0 tiles' coordinates."""
    found: list[Tile] = []
    level = 0
    while size >> (TILE_HEIGHT * level):
        count = size >> (TILE_HEIGHT * level)
        found += (Tile(level, index) for index in range(count // TILE_WIDTH))
        if count % TILE_WIDTH:
            found.append(Tile(level, count // TILE_WIDTH, count % TILE_WIDTH))
        level += 1
    return found


def bundle_tiles(size: int) -> list[Tile]:
    """The entry bundles of a tree of ``size``."""
    return [
        Tile(ENTRIES, tile.index, tile.width) for tile in tiles_for_size(size) if tile.level == 0
    ]


def encode_entries(entries: Iterable[bytes]) -> bytes:
    """Entries as a bundle: each after its 16-bit big-endian length.

    Raises:
        ValueError: an entry is longer than 65,535 octets.
    """
    parts: list[bytes] = []
    for entry in entries:
        if len(entry) > ENTRY_MAX_OCTETS:
            raise ValueError("a log entry is longer than 65,535 octets")
        parts += (len(entry).to_bytes(2, "big"), entry)
    return b"".join(parts)


def decode_entries(bundle: bytes) -> list[bytes]:
    """The entries of a bundle.

    Raises:
        ValueError: the bundle ends inside an entry.
    """
    entries: list[bytes] = []
    at = 0
    while at < len(bundle):
        if at + 2 > len(bundle):
            raise ValueError("bundle ends inside a length")
        end = at + 2 + int.from_bytes(bundle[at : at + 2], "big")
        if end > len(bundle):
            raise ValueError("bundle ends inside an entry")
        entries.append(bundle[at + 2 : end])
        at = end
    return entries


def tile_root(hashes: bytes) -> bytes:
    """The Merkle tree hash over a full tile's 256 hashes."""
    level = [hashes[at : at + HASH_OCTETS] for at in range(0, len(hashes), HASH_OCTETS)]
    while len(level) > 1:
        level = [node_hash(level[at], level[at + 1]) for at in range(0, len(level), 2)]
    return level[0]


#: ``load(tile)``: a stored tile's bytes (raises ``ValueError`` or ``OSError`` when it
#: is missing or unreadable).
Loader = Callable[[Tile], bytes]


#: Up to this many inclusion proofs a tree makes from its tiles, then from every level.
FEW_PROOFS = 64
#: Or, if more, up to one such proof per this many entries of the tree: a day's renewals
#: (4,525 new entries at the end of a tree of 105,000) share their paths, three times
#: faster than every level of the tree. (A full run, which proves every entry, makes
#: its first sixteenth this way too before building the levels: about 0.1 s more at
#: 100,000 entries.)
ENTRIES_PER_TILE_PROOF = 16


class TreeHashes:
    """A tree's hashes tile by tile: the stored tree of ``size`` (tiles read through
    ``load`` when first needed), then whatever :meth:`append` adds. :meth:`changed`
    gives the tiles the appends made or widened, ready to store."""

    def __init__(self, size: int = 0, load: Loader | None = None) -> None:
        self._base = size
        self.size = size
        self._load = load
        self._tiles: dict[tuple[int, int], bytearray] = {}
        self._bundles: dict[int, bytearray] = {}
        self._touched: set[tuple[int, int]] = set()
        self._subtrees: dict[tuple[int, int], bytes] = {}
        self._levels: list[list[bytes]] | None = None
        #: Proofs made without :meth:`levels` (see :meth:`inclusion_proof`).
        self._proofs = 0
        #: Hashes of ranges that are not perfect subtrees (see :func:`range_hash`).
        self.ranges: dict[tuple[int, int], bytes] = {}

    @classmethod
    def of_entries(cls, entries: Iterable[bytes]) -> TreeHashes:
        """A tree built from its entries (every tile and bundle then changed)."""
        tree = cls()
        tree.extend(entries)
        return tree

    def _width_at_base(self, level: int, index: int) -> int:
        count = self._base >> (TILE_HEIGHT * level)
        return max(0, min(TILE_WIDTH, count - index * TILE_WIDTH))

    def _tile(self, level: int, index: int) -> bytearray:
        key = (level, index)
        found = self._tiles.get(key)
        if found is None:
            width = self._width_at_base(level, index)
            found = bytearray()
            if width:
                if self._load is None:
                    raise ValueError(f"no stored tile {Tile(level, index, width).path}")
                found += self._load(Tile(level, index, width))
                if len(found) != width * HASH_OCTETS:
                    raise ValueError(f"stored tile {Tile(level, index, width).path} is cut short")
            self._tiles[key] = found
        return found

    def _bundle(self, index: int) -> bytearray:
        found = self._bundles.get(index)
        if found is None:
            width = self._width_at_base(0, index)
            found = bytearray()
            if width:
                if self._load is None:
                    raise ValueError(f"no stored bundle {Tile(ENTRIES, index, width).path}")
                found += self._load(Tile(ENTRIES, index, width))
                if len(decode_entries(bytes(found))) != width:
                    raise ValueError(f"stored bundle {Tile(ENTRIES, index, width).path} is wrong")
            self._bundles[index] = found
        return found

    def append(self, entry: bytes) -> None:
        """Append one entry (hashed here).

        Raises:
            ValueError: a stored tile needed is missing or wrong, or the entry is too long.
        """
        index = self.size
        self._bundle(index >> TILE_HEIGHT).extend(encode_entries((entry,)))
        digest, level = leaf_hash(entry), 0
        while True:
            key = (level, index >> TILE_HEIGHT)
            tile = self._tile(*key)
            tile += digest
            self._touched.add(key)
            if len(tile) != FULL_TILE_OCTETS:
                break
            digest, index, level = tile_root(bytes(tile)), index >> TILE_HEIGHT, level + 1
        self.size += 1

    def extend(self, entries: Iterable[bytes]) -> None:
        """Append each of ``entries``.

        Raises:
            ValueError: as :meth:`append`.
        """
        for entry in entries:
            self.append(entry)

    def hash_at(self, level: int, index: int) -> bytes:
        """The ``index``-th hash of tile level ``level`` (a full subtree of 256**level).

        Raises:
            ValueError: a stored tile needed is missing or wrong.
        """
        tile = self._tile(level, index >> TILE_HEIGHT)
        at = (index % TILE_WIDTH) * HASH_OCTETS
        if at + HASH_OCTETS > len(tile):
            raise ValueError(f"no hash {index} at tile level {level}")
        return bytes(tile[at : at + HASH_OCTETS])

    def subtree(self, height: int, index: int) -> bytes:
        """The hash of the perfect subtree of ``2**height`` leaves number ``index``.

        Raises:
            ValueError: a stored tile needed is missing or wrong.
        """
        level, rest = divmod(height, TILE_HEIGHT)
        if rest == 0:
            return self.hash_at(level, index)
        key = (height, index)
        found = self._subtrees.get(key)
        if found is None:
            left = self.subtree(height - 1, 2 * index)
            found = self._subtrees[key] = node_hash(left, self.subtree(height - 1, 2 * index + 1))
        return found

    def levels(self) -> list[list[bytes]]:
        """Every perfect subtree's hash, height by height (made once per size: for many
        proofs at once).

        Raises:
            ValueError: a stored tile needed is missing or wrong.
        """
        if self._levels is None or len(self._levels[0]) != self.size:
            levels = [[self.hash_at(0, index) for index in range(self.size)]]
            while len(levels[-1]) > 1:
                below = levels[-1]
                levels.append(
                    [node_hash(below[at], below[at + 1]) for at in range(0, len(below) - 1, 2)]
                )
            self._levels = levels
        return self._levels

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """RFC 9162 PATH(index, D[0:size]): the first :data:`FEW_PROOFS` (or one per
        :data:`ENTRIES_PER_TILE_PROOF` entries of the tree) from the stored tiles (a few
        hundred hashes each, fewer where paths are shared: what a run that signs a few
        envelopes, or a day's renewals, needs), the rest from :meth:`levels` (every hash
        of the tree once, then a lookup per level: many times faster for many proofs);
        the same hashes as :func:`alter_publish.format.tlog.inclusion_proof` either way.

        Raises:
            ValueError: ``index`` is not below ``size``, ``size`` beyond the tree, or a
                stored tile needed is missing or wrong.
        """
        if not 0 <= index < size <= self.size:
            raise ValueError("index outside the tree")
        if self._levels is None and self._proofs < max(
            FEW_PROOFS, self.size // ENTRIES_PER_TILE_PROOF
        ):
            self._proofs += 1
            return path_of(self.subtree, index, size, self.ranges)
        levels, proof, height = self.levels(), [], 0
        while (1 << height) < size:
            node = index >> height
            sibling = node ^ 1
            if sibling < node:
                proof.append(levels[height][sibling])
            elif sibling << height < size:
                if (sibling + 1) << height <= size:
                    proof.append(levels[height][sibling])
                else:
                    proof.append(range_hash(self.subtree, sibling << height, size, self.ranges))
            height += 1
        return proof

    def root(self, size: int | None = None) -> bytes:
        """The tree hash at ``size`` (default: now).

        Raises:
            ValueError: a stored tile needed is missing or wrong.
        """
        size = self.size if size is None else size
        return EMPTY_ROOT if size == 0 else range_hash(self.subtree, 0, size, self.ranges)

    def edge_tiles(self) -> tuple[Tile, ...]:
        """The partial tiles of the stored tree, one per level that has one: every hash
        of its root comes from them (the rest of each level is summed up a level above).
        """
        found: list[Tile] = []
        level = 0
        while count := self._base >> (TILE_HEIGHT * level):
            if count % TILE_WIDTH:
                found.append(Tile(level, count // TILE_WIDTH, count % TILE_WIDTH))
            level += 1
        return tuple(found)

    def misfits(self, root: bytes) -> tuple[Tile, ...]:
        """The stored hash tiles that do not agree with ``root``, the signed root of the
        stored tree (read from an untrusted mirror, never appended to): the
        :meth:`edge_tiles` when they give another root, else the first full tile read
        so far whose hash is not the one in the tile above it (itself checked first, up
        to an edge tile). Empty: every tile read agrees with ``root``, so a proof made
        from them that fails is not the tiles' doing.

        Raises:
            ValueError: a stored tile needed is missing or wrong.
        """
        if self.root(self._base) != root:
            return self.edge_tiles()
        checked: dict[tuple[int, int], Tile | None] = {}

        def misfit(level: int, index: int) -> Tile | None:
            key = (level, index)
            if key not in checked:
                parent = index >> TILE_HEIGHT
                found = None
                if self._width_at_base(level + 1, parent) == TILE_WIDTH:
                    found = misfit(level + 1, parent)
                if found is None and tile_root(bytes(self._tile(*key))) != self.hash_at(
                    level + 1, index
                ):
                    found = Tile(level, index)
                checked[key] = found
            return checked[key]

        for level, index in sorted(self._tiles, reverse=True):
            if self._width_at_base(level, index) == TILE_WIDTH:
                found = misfit(level, index)
                if found is not None:
                    return (found,)
        return ()

    def tile_data(self, tile: Tile) -> bytes:
        """The bytes of ``tile`` (of this tree or an earlier size of it: a prefix).

        Raises:
            ValueError: the tile is wider than the tree holds, or a stored one is wrong.
        """
        if tile.level == ENTRIES:
            bundle = bytes(self._bundle(tile.index))
            entries = decode_entries(bundle)
            if len(entries) < tile.width:
                raise ValueError(f"no bundle {tile.path} in this tree")
            return encode_entries(entries[: tile.width])
        data = bytes(self._tile(tile.level, tile.index)[: tile.width * HASH_OCTETS])
        if len(data) != tile.width * HASH_OCTETS:
            raise ValueError(f"no tile {tile.path} in this tree")
        return data

    def changed(self) -> Iterator[tuple[Tile, bytes]]:
        """Each tile and bundle the appends made or widened, with its bytes."""
        for level, index in sorted(self._touched):
            data = bytes(self._tiles[(level, index)])
            yield Tile(level, index, len(data) // HASH_OCTETS), data
            if level == 0:
                bundle = bytes(self._bundles[index])
                yield Tile(ENTRIES, index, len(data) // HASH_OCTETS), bundle
