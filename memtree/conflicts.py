"""Open conflicts: pairs of entries that may contradict each other, kept in tracked ``conflicts.json``.

`add` records one when a new entry is similar to an existing one but not enough to merge
(0.5 ≤ similarity < 0.8 by default): both are kept and every agent sees the pair until someone
settles it with `memtree conflicts resolve ID --keep new|old|both`. The file is written
deterministically (sorted, 2-space indent) so concurrent agents' changes merge cleanly in git.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from . import store
from .errors import MemtreeError, QueryError

CONFLICTS_FILE = "conflicts.json"
FORMAT = 1


@dataclass(frozen=True)
class Side:
    """One entry of a conflict: where it is and what it says."""

    path: str
    id: str
    text: str


@dataclass(frozen=True)
class OpenConflict:
    """Two entries that may contradict each other."""

    id: str
    created: str
    similarity: float
    new: Side
    old: Side


def load(root: Path) -> list[OpenConflict]:
    """The open conflicts (none when the file is absent)."""
    path = root / CONFLICTS_FILE
    try:
        doc = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, orjson.JSONDecodeError) as exc:
        raise MemtreeError(f"{path}: unreadable ({exc}); fix or delete it") from None
    try:
        return [
            OpenConflict(c["id"], c["created"], float(c["similarity"]), Side(**c["new"]), Side(**c["old"]))
            for c in doc.get("conflicts", [])
        ]
    except (KeyError, TypeError, AttributeError) as exc:
        raise MemtreeError(f"{path}: not a memtree conflicts file ({exc})") from None


def dumps(conflicts: list[OpenConflict]) -> bytes:
    """Deterministic bytes of the conflicts file."""
    items: list[dict[str, Any]] = [asdict(c) for c in sorted(conflicts, key=lambda c: (c.created, c.id))]
    return orjson.dumps({"version": FORMAT, "conflicts": items}, option=orjson.OPT_INDENT_2) + b"\n"


def save(root: Path, conflicts: list[OpenConflict]) -> None:
    """Write the conflicts file (removed when nothing is open)."""
    path = root / CONFLICTS_FILE
    if conflicts:
        store.atomic_write(path, dumps(conflicts))
    elif path.exists():
        path.unlink()


KEEP = ("new", "old", "both")


def resolve(root: Path, conflict_id: str, keep: str) -> tuple[OpenConflict, str]:
    """Settle one conflict: delete the entry not kept (``both`` deletes none); returns it and a note."""
    from . import entries

    if keep not in KEEP:
        raise QueryError(f"--keep must be one of {', '.join(KEEP)}, got {keep!r}")
    with store.write_lock(root):
        open_ = load(root)
        found = next((c for c in open_ if c.id == conflict_id), None)
        if found is None:
            ids = ", ".join(c.id for c in open_) or "none are open"
            raise QueryError(f"no open conflict {conflict_id!r} (open: {ids})")
        outcome = "both entries kept"
        if keep != "both":
            side = found.old if keep == "new" else found.new
            path = root / side.path
            note = store.read_note(path) if path.exists() else ""
            entry = entries.find(note, side.id, side.text)
            if entry is None:
                outcome = f"the {('old', 'new')[keep == 'old']} entry was already changed or removed in {side.path}"
            else:
                store.atomic_write(path, entries.remove_lines(note, entry.start, entry.end).encode("utf-8"))
                outcome = f"removed {side.path}:{entry.start}-{entry.end}"
        save(root, [c for c in open_ if c.id != conflict_id])
    return found, outcome
