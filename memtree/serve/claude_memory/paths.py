"""Where a path of Claude's memory tool lands in a memtree root, and which paths are refused.

``/memories`` is the root, showing only its tiers: ``/memories/bank/x.md`` is ``<root>/bank/x.md``,
``/memories/memory/`` the daily logs, ``/memories/recall/`` the hot buffer. Nothing else of the
root exists for the model: not tree-index.json, memtree.yaml or conflicts.json (memtree keeps
them), nor any hidden name (``.memtree/``, ``.git/``). Only ``bank/`` may be written; its
``_archive/`` is readable but never changed.

Refused before anything is read or written, with the memory tool's own error strings: a path not
under ``/memories``, a ``..`` segment, a percent-encoded character (``%2e%2e``, ``%2f``: nothing is
decoded, so nothing encoded is accepted), a backslash, a NUL byte or other control character, and
a symlink whose real target leaves the root or its tiers. Writes never go through a symlink at all.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from memtree.errors import BadName, MemtreeError, OutsideRoot
from memtree.notes import store

MEMORIES = "/memories"
"""The folder the memory tool addresses; the tool's own prefix."""
WRITABLE_TIER = "bank"
ARCHIVE = f"{WRITABLE_TIER}/{store.ARCHIVE_DIR}"
_READ_ONLY_WHY = {
    "memory": "memory/ holds the daily logs, which memtree only appends to (`memtree log`)",
    "recall": "recall/ is the hot buffer `memtree recall sync` keeps",
}


class Refused(MemtreeError):
    """A memory-tool request memtree will not carry out; the message is the tool's error text."""


@dataclass(frozen=True)
class Target:
    """A memory-tool path resolved in the root: what the model sees, the root-relative path, the file."""

    shown: str  # /memories/bank/x.md, normalized
    rel: str  # bank/x.md; "" for /memories itself
    full: Path  # the real location (symlinks followed), inside the root

    @property
    def is_root(self) -> bool:
        return self.rel == ""

    @property
    def is_tier(self) -> bool:
        """Whether this is a tier folder itself (/memories/bank)."""
        return self.rel in store.TIERS

    @property
    def tier(self) -> str:
        return self.rel.split("/", 1)[0]

    @property
    def archived(self) -> bool:
        """Whether this lies in bank/_archive/, where deleted notes are kept."""
        return self.rel == ARCHIVE or self.rel.startswith(ARCHIVE + "/")


def shown(rel: str) -> str:
    """The memory-tool path of a root-relative path."""
    return f"{MEMORIES}/{rel}" if rel else MEMORIES


def parse(path: str) -> str:
    """The root-relative path a memory-tool path names; Refused for every form of escape."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        raise Refused(f"Path {path!r} would escape /memories directory: it holds a NUL byte or a control character")
    if unquote(path) != path:
        raise Refused(f"Path {path} would escape /memories directory: percent-encoded characters are not accepted")
    if "\\" in path:
        raise Refused(f"Path {path} would escape /memories directory: a backslash is not accepted")
    if path != MEMORIES and not path.startswith(MEMORIES + "/"):
        raise OutsideRoot(f"Path must start with /memories, got: {path}")
    parts = [p for p in path[len(MEMORIES) :].split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OutsideRoot(f"Path {path} would escape /memories directory")
    rel = "/".join(parts)
    try:
        return store.check_name(rel, "path")  # the one check of a name (a part too long for the file system)
    except BadName as exc:
        raise Refused(f"Path {shown(rel)[:80]} cannot be a memory: {str(exc).rsplit(': ', 1)[-1]}") from None


def resolve(root: Path, path: str) -> Target:
    """A path to read: it must name something inside the tiers (it may not exist yet)."""
    rel = parse(path)
    if rel == "":
        return Target(MEMORIES, "", Path(os.path.realpath(root)))
    if _hidden(rel) or rel.split("/", 1)[0] not in store.TIERS:
        raise Refused(f"The path {path} does not exist. Please provide a valid path.")
    try:
        full = store.inside(root, rel)
    except OutsideRoot:
        raise OutsideRoot("Path would escape /memories directory via symlink") from None
    real = full.relative_to(os.path.realpath(root)).as_posix() if full != Path(os.path.realpath(root)) else ""
    if real != rel and (real == "" or _hidden(real) or real.split("/", 1)[0] not in store.TIERS):
        raise OutsideRoot("Path would escape /memories directory via symlink")  # to tree-index.json, .git, …
    return Target(shown(rel), rel, full)


def writable(root: Path, path: str, *, note: bool = False) -> Target:
    """A path to write: inside bank/ (not its _archive/), reached through no symlink.

    ``note``: it will be a file memtree creates, so it needs a Markdown name memtree indexes.
    """
    rel = parse(path)
    if _hidden(rel):
        raise Refused(f"Cannot write {path}: a hidden name is never memory (memtree does not index it)")
    if rel and rel.split("/", 1)[0] not in store.TIERS:
        raise Refused(
            f"Path {path} is outside memtree's tiers: write notes under /memories/bank/ "
            f"(for example {shown(WRITABLE_TIER + '/' + rel)})"
        )
    target = resolve(root, path)
    if target.is_root:
        return target
    if target.tier != WRITABLE_TIER:
        raise Refused(f"Cannot write {target.shown}: {_READ_ONLY_WHY[target.tier]}; write notes under /memories/bank/")
    if target.archived:
        raise Refused(f"Cannot change {target.shown}: bank/_archive/ keeps deleted notes as they were")
    link = _link_on(root, rel)
    if link:
        raise Refused(f"Cannot write {target.shown}: {shown(link)} is a symlink, and the memory tool writes no link")
    if note:
        name = rel.rsplit("/", 1)[-1]
        if not name.endswith(store.NOTE_SUFFIXES):
            raise Refused(f"Cannot create {target.shown}: memtree keeps memory as Markdown notes; name it *.md")
        if store.ignored(name) or store.is_temp(name):
            raise Refused(f"Cannot create {target.shown}: memtree never indexes a name like {name!r}")
    return target


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))


def _link_on(root: Path, rel: str) -> str:
    """The first component of ``rel`` (below the root) that is a symlink, or ''."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        try:
            if stat.S_ISLNK(os.lstat(root / prefix).st_mode):
                return prefix
        except (FileNotFoundError, NotADirectoryError):
            return ""
    return ""
