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
        store.rewrite(root, CONFLICTS_FILE, lambda _old: dumps(conflicts).decode())
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
            removed: list[str] = []

            def without(note: str) -> str | None:
                entry = entries.find(note, side.id, side.text)
                if entry is None:
                    return None
                removed[:] = [f"removed {side.path}:{entry.start}-{entry.end}"]
                return entries.remove_lines(note, entry.start, entry.end)

            if store.rewrite(root, side.path, without):
                outcome = removed[0]
            else:
                outcome = f"the {('old', 'new')[keep == 'old']} entry was already changed or removed in {side.path}"
        save(root, [c for c in open_ if c.id != conflict_id])
    return found, outcome


NEGATIONS = frozenset("안 않 못 없 아니 말 not no never don't doesn't isn't aren't won't cannot can't without".split())
"""Words that turn a statement around (Korean roots match as prefixes: 않는다, 없음, 못했다)."""
SCAN_MAX_DF = 50
"""Entries are paired through their rarer shared words; a word in more entries than this pairs nothing."""


@dataclass(frozen=True)
class Contradiction:
    """Two entries that look like the same fact stated two ways, and which one to keep."""

    similarity: float
    reason: str  # "different numbers: 10 vs 50" or "one is negated"
    newer: Side
    older: Side
    newer_created: str
    older_created: str

    @property
    def suggestion(self) -> str:
        """What to do about it."""
        return f"keep the newer one ({self.newer.path}) unless the older is better supported"


def _numbers(text_: str) -> list[str]:
    from .text import terms

    return [t for t in terms(text_) if t[:1].isdigit()]


def _negated(text_: str) -> bool:
    from .text import normalize

    words = normalize(text_).replace(".", " ").replace(",", " ").split()
    return any(w in NEGATIONS or w.startswith(("않", "없", "못", "안 ")) for w in words)


def _stamp(created: str, mtime: float) -> float:
    """When an entry was written: its metadata, else its note's modification time."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(created).timestamp() if created else mtime
    except ValueError:
        return mtime


def _iso(stamp: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="seconds")


def scan(root: Path, conflict_at: float = 0.5, merge_at: float = 0.8) -> list[Contradiction]:
    """Entries of the same bank that are similar yet differ in their numbers or in a negation."""
    from . import entries as entry_mod
    from .similarity import similarity, term_set

    found: list[tuple[str, entry_mod.Entry, float]] = []  # (path, entry, created as a sortable stamp)
    disk, _ = store.walk(root, ("bank",))
    for f in disk:
        try:
            note = store.read_note(root / f.path)
        except (OSError, UnicodeDecodeError):
            continue
        for e in entry_mod.parse_entries(note):
            found.append((f.path, e, f.mtime_ns / 1e9))
    by_term: dict[str, list[int]] = {}
    for i, (_, e, _) in enumerate(found):
        for t in term_set(e.content):
            by_term.setdefault(t, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for members in by_term.values():
        if 1 < len(members) <= SCAN_MAX_DF:
            pairs.update((a, b) for i, a in enumerate(members) for b in members[i + 1 :])
    out: list[Contradiction] = []
    for a, b in sorted(pairs):
        (pa, ea, ta), (pb, eb, tb) = found[a], found[b]
        if pa.split("/")[1:2] != pb.split("/")[1:2] and "/" in pa[5:] and "/" in pb[5:]:
            continue  # different banks (top-level folders of bank/)
        s = similarity(ea.content, eb.content)
        if not conflict_at <= s < 1.0:
            continue
        na, nb = _numbers(ea.content), _numbers(eb.content)
        if na and nb and na != nb:
            one, two = sorted((", ".join(na), ", ".join(nb)))
            reason = f"different numbers: {one} vs {two}"
        elif _negated(ea.content) != _negated(eb.content) and s >= conflict_at:
            reason = "one is negated"
        else:
            continue
        ka, kb = _stamp(ea.meta.created, ta), _stamp(eb.meta.created, tb)
        sa, sb = Side(pa, ea.meta.id, ea.content), Side(pb, eb.meta.id, eb.content)
        newer, older, nc, oc = (sa, sb, ka, kb) if (ka, ea.start) >= (kb, eb.start) else (sb, sa, kb, ka)
        out.append(Contradiction(round(s, 4), reason, newer, older, _iso(nc), _iso(oc)))
    return sorted(out, key=lambda c: -c.similarity)
