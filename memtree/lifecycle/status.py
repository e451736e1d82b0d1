"""`memtree status`: a memory root at a glance (tiers, sizes, index freshness, watcher, conflicts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtree.config import Settings
from memtree.index.chunk_index import Index
from memtree.notes import store
from memtree.notes import tree as treemod


@dataclass(frozen=True)
class TierStatus:
    """Counts for one tier."""

    files: int
    bytes: int
    nodes: int
    chunks: int


@dataclass(frozen=True)
class Status:
    """A memory root at a glance."""

    root: str
    tiers: dict[str, TierStatus]
    oversized: tuple[tuple[str, int], ...]
    stale: tuple[str, ...]
    index_version: int
    nodes: int
    warnings: tuple[str, ...] = field(default=())
    dangling: tuple[tuple[str, str], ...] = ()  # (node id, path) of nodes whose file is gone
    watcher: dict[str, Any] | None = None  # the last heartbeat of `memtree watch`, with "alive"
    open_conflicts: int = 0
    clashes: int = 0  # edits a git merge kept both ways in notes (``clash=`` marks; `memtree conflicts` lists them)
    marker_files: int = 0  # tracked files holding git conflict markers (`memtree check --fix` merges them)
    archive_candidates: int = 0  # entries `memtree decay --archive` would move today
    consolidation: dict[str, Any] | None = None  # the last `memtree consolidate`: times, counts, error
    banks: tuple[Any, ...] = ()  # memtree.lifecycle.banks.Bank per top-level folder of bank/
    recall: dict[str, Any] | None = None  # the recall/ tier: excerpts, tokens, budget, evictions
    semantic: dict[str, Any] | None = None  # the embedding layer: on or not, model, chunks with vectors
    user_root: str | None = None  # the user's own root searched beside this one (memtree.api.MemTree.user)


def collect(root: Path, index: Index, settings: Settings, now: float) -> Status:
    """Gather the status of ``root`` as of ``now`` (epoch s; reads only)."""
    from memtree.notes.heartbeat import heartbeat
    from memtree.write import clashes, conflicts, markers

    disk, warnings = store.walk(root)
    known = index.files
    stale = [
        f.path
        for f in disk
        if f.path not in known or (known[f.path].mtime_ns, known[f.path].size) != (f.mtime_ns, f.size)
    ]
    on_disk = {f.path for f in disk}  # once: building it per note made status quadratic
    stale += [p for p in known if p not in on_disk]
    tree = treemod.load(root, check_files=False)
    dangling = tuple(
        (n.id, n.path) for n in tree.nodes if n.path and n.path not in on_disk and not (root / n.path).is_file()
    )
    tiers = {}
    for tier in store.TIERS:
        files = [f for f in disk if f.tier == tier]
        tiers[tier] = TierStatus(
            len(files),
            sum(f.size for f in files),
            sum(1 for n in tree.nodes if n.path and n.path.startswith(tier + "/")),
            sum(known[f.path].chunks for f in files if f.path in known),
        )
    limit = settings.split.max_bytes
    oversized = tuple((f.path, f.size) for f in disk if f.tier == "bank" and f.size > limit)
    return Status(
        str(root),
        tiers,
        oversized,
        tuple(sorted(stale)),
        index.version,
        len(tree.nodes),
        (*settings.warnings, *warnings),
        dangling,
        heartbeat(root, now),
        len({c.id for c in [*conflicts.load(root), *clashes.pending(root)]}),  # as `memtree conflicts` lists them
        clashes=len(clashes.find(root)),
        marker_files=len(markers.find(root)),
    )
