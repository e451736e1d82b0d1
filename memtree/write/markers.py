"""Git conflict markers in memory's tracked files: found by `check`, repaired by `check --fix`.

A merge made without memtree's driver (a clone where `memtree git setup` never ran) leaves
``<<<<<<<`` / ``=======`` / ``>>>>>>>`` blocks in notes, logs and JSON. They are never memory:
`check` names each file, and `check --fix` rebuilds the two sides (and the ancestor, when git
wrote it with ``merge.conflictStyle=diff3``) from the blocks and merges them by the driver's own
rules (memtree.write.merge). Without the ancestor's lines both blocks count as added, so both are
kept — what the driver does with two additions at one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memtree.notes import store
from memtree.write import merge

_OPEN = re.compile(r"^<{7}(?:[ \t]|$)")
_BASE = re.compile(r"^\|{7}(?:[ \t]|$)")
_SPLIT = re.compile(r"^={7}[ \t]*$")
_CLOSE = re.compile(r"^>{7}(?:[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})")
"""A Markdown code fence: markers shown inside one (a note about git) are text, not a merge's."""
TRACKED = ("tree-index.json", "conflicts.json")
"""The root's tracked files outside the tiers (the tiers' .md files are the rest)."""


@dataclass(frozen=True)
class Sides:
    """A file with conflict markers taken apart: the ancestor (as far as known), ours and theirs."""

    base: str
    ours: str
    theirs: str
    regions: int
    has_base: bool


def first_marker(text: str) -> int | None:
    """The 1-based line of the first complete conflict block (``<<<<<<<`` … ``=======`` … ``>>>>>>>``), or None."""
    if "<<<<<<<" not in text:
        return None
    state, start, fenced = 0, 0, False
    for n, line in enumerate(text.split("\n"), 1):
        if state == 0 and _FENCE.match(line):
            fenced = not fenced
        elif fenced:
            continue
        elif state == 0 and _OPEN.match(line):
            state, start = 1, n
        elif state == 1 and _SPLIT.match(line):
            state = 2
        elif state == 2 and _CLOSE.match(line):
            return start
    return None


def split(text: str) -> Sides:
    """The sides of a text with conflict blocks; lines outside the blocks belong to all three."""
    base: list[str] = []
    ours: list[str] = []
    theirs: list[str] = []
    regions, has_base = 0, False
    state, fenced = "out", False
    for line in text.split("\n"):
        if state == "out" and _FENCE.match(line):
            fenced = not fenced
        if state == "out" and not fenced and _OPEN.match(line):
            state, regions = "ours", regions + 1
        elif state == "ours" and _BASE.match(line):
            state, has_base = "base", True
        elif state in ("ours", "base") and _SPLIT.match(line):
            state = "theirs"
        elif state == "theirs" and _CLOSE.match(line):
            state = "out"
        elif state == "out":
            base.append(line)
            ours.append(line)
            theirs.append(line)
        elif state == "ours":
            ours.append(line)
        elif state == "base":
            base.append(line)
        else:
            theirs.append(line)
    return Sides("\n".join(base), "\n".join(ours), "\n".join(theirs), regions, has_base)


def repair(path: str, text: str) -> merge.Merged:
    """The text merged as the driver would merge its two sides; ValueError when a JSON side is not JSON."""
    sides = split(text)
    try:
        return merge.merge(path, sides.base, sides.ours, sides.theirs)
    except ValueError:
        if merge.kind_of(path) not in ("tree", "conflicts"):
            raise
        # the ancestor rebuilt without its lines in the blocks may not be JSON: both sides then added
        return merge.merge(path, "", sides.ours, sides.theirs)


@dataclass(frozen=True)
class Marked:
    """A tracked file holding conflict markers."""

    path: str
    line: int


def tracked_files(root: Path) -> list[str]:
    """Root-relative paths of memory's tracked files: the tiers' notes, tree-index.json, conflicts.json."""
    disk, _ = store.walk(root)
    return [*(name for name in TRACKED if (root / name).is_file()), *(f.path for f in disk)]


def find(root: Path, files: list[str] | None = None) -> list[Marked]:
    """Every tracked file (or those of ``files``) holding a conflict block, with the block's first line."""
    out = []
    for rel in tracked_files(root) if files is None else files:
        try:
            text = (root / rel).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        line = first_marker(text)
        if line is not None:
            out.append(Marked(rel, line))
    return out


def fix(root: Path) -> list[str]:
    """Repair every tracked file holding conflict blocks (caller holds the write lock); what was done.

    A file whose sides cannot be read (a JSON side that is not JSON) is left as it is and named.
    A node field of tree-index.json both blocks changed keeps ours (the ``<<<<<<<`` block) and
    files theirs in conflicts.json, as the driver's merge does (memtree.write.clashes).
    """
    from memtree.write import clashes

    done = []
    for m in find(root):
        path = m.path
        merged: list[merge.Merged] = []

        def repaired(text: str, path: str = path, merged: list[merge.Merged] = merged) -> str | None:
            if first_marker(text) is None:
                return None
            merged[:] = [repair(path, text)]
            return merged[0].text

        try:
            store.rewrite(root, path, repaired)
        except ValueError as exc:
            done.append(f"left {path} as it is: its sides cannot be read ({exc}); edit it by hand")
            continue
        fields = merged[0].fields if merged else ()
        clashes.file(root, [clashes.as_conflict(c) for c in fields])
        kept = len(merged[0].clashes) - len(fields) if merged else 0
        more = f", {kept} clash(es) kept both ways (memtree conflicts)" if kept else ""
        more += (
            f", {len(fields)} node field(s) changed both ways: ours kept, theirs recorded (memtree conflicts)"
            if fields
            else ""
        )
        done.append(f"merged the conflict blocks of {path} by memtree's rules{more}")
    return done
