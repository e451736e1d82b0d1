"""`memtree consolidate`: merge near-duplicates within each bank; list stale auto entries.

Two entries of one bank whose character bigrams (of their normalized words, spaces removed)
have a Jaccard similarity ≥ ``JACCARD_MIN`` (0.85) are one: the longest content is kept, the
tags are united, and the ids of the entries merged into it are recorded in its ``merged=``
field, so usage counts and provenance follow it. Auto-extracted entries older than 90 days and
rarely recalled become archive candidates (memtree.aging; `memtree decay --archive` moves them).

Candidate pairs come from prefix filtering — two sets with Jaccard ≥ t share one of the
rarest ``|A| − ⌈t·|A|⌉ + 1`` bigrams of each — so a bank of thousands of entries is not compared
pair by pair. Single-flight: a second run while one holds ``.memtree/consolidate.lock`` stops
with a message; each run records its time, counts and error in ``.memtree/consolidate.json``.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from . import entries, store
from .errors import MemtreeError

JACCARD_MIN = 0.85
LOCK_FILE = "consolidate.lock"
STATE_FILE = "consolidate.json"


def bigrams(text: str) -> frozenset[str]:
    """Character bigrams of an entry's normalized words, spaces removed (a one-character text is its own)."""
    flat = entries.normalize(text).replace(" ", "")
    return frozenset(flat[i : i + 2] for i in range(len(flat) - 1)) or frozenset([flat])


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


@dataclass(frozen=True)
class Item:
    """An entry of a bank note, located."""

    path: str
    entry: entries.Entry


@dataclass(frozen=True)
class Merge:
    """One group of near-duplicates: the entry kept and the ones folded into it."""

    keep: Item
    drop: tuple[Item, ...]
    similarity: float  # the lowest pairwise similarity that joined the group


@dataclass(frozen=True)
class Report:
    merges: tuple[Merge, ...]
    candidates: tuple[Any, ...]  # memtree.aging.Aged
    dry_run: bool
    seconds: float


def plan(root: Path, paths: list[str]) -> list[Merge]:
    """The merges consolidation would make among the entries of the bank notes ``paths``."""
    by_bank: dict[str, list[Item]] = {}
    for path in sorted(paths):
        try:
            note = store.read_note(root / path)
        except (OSError, UnicodeDecodeError):
            continue
        parts = path.split("/")
        bank = parts[1] if len(parts) > 2 else ""
        for e in entries.parse_entries(note):
            if e.content:
                by_bank.setdefault(bank, []).append(Item(path, e))
    merges: list[Merge] = []
    for _, items in sorted(by_bank.items()):
        merges += _groups(items)
    return merges


def _groups(items: list[Item]) -> list[Merge]:
    sets = [bigrams(it.entry.content) for it in items]
    freq = Counter(g for s in sets for g in s)
    prefix_index: dict[str, list[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    for i, s in enumerate(sets):
        ordered = sorted(s, key=lambda g: (freq[g], g))
        prefix = ordered[: len(s) - math.ceil(JACCARD_MIN * len(s)) + 1]
        seen: set[int] = set()
        for g in prefix:
            for j in prefix_index.get(g, ()):
                if j in seen:
                    continue
                seen.add(j)
                small, big = sorted((len(s), len(sets[j])))
                if small < JACCARD_MIN * big:
                    continue  # sizes alone rule it out
                sim = jaccard(s, sets[j])
                if sim >= JACCARD_MIN:
                    pairs.append((j, i, sim))
            prefix_index.setdefault(g, []).append(i)
    parent = list(range(len(items)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    lowest: dict[int, float] = {}
    for a, b, sim in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
        r = find(a)
        lowest[r] = min(sim, lowest.get(ra, 1.0), lowest.get(rb, 1.0))
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    out = []
    for r, members in groups.items():
        if len(members) < 2:
            continue
        # the longest content is kept; on a tie, the first in path and line order
        keep = max(members, key=lambda m: (len(items[m].entry.content), -m))
        drop = tuple(items[m] for m in members if m != keep)
        out.append(Merge(items[keep], drop, round(lowest.get(r, JACCARD_MIN), 4)))
    return out


def apply(root: Path, merges: list[Merge]) -> int:
    """Write ``merges`` (caller holds the write lock); returns how many entries were folded in.

    A group whose entries changed since the plan is skipped.
    """
    folded = 0
    notes: dict[str, str] = {}

    def note(path: str) -> str:
        if path not in notes:
            notes[path] = store.read_note(root / path)
        return notes[path]

    edits: dict[str, list[tuple[int, int, str | None]]] = {}
    for m in merges:
        current = [entries.find(note(it.path), it.entry.meta.id, it.entry.content) for it in (m.keep, *m.drop)]
        if any(c is None for c in current):
            continue
        kept, *dropped = current
        assert kept is not None
        tags = tuple(dict.fromkeys(t for c in current if c is not None for t in c.meta.tags))
        merged = tuple(
            dict.fromkeys(
                [*kept.meta.merged, *(i for c in dropped if c is not None for i in (c.meta.id, *c.meta.merged) if i)]
            )
        )
        meta = replace(kept.meta, tags=tags, merged=merged)
        edits.setdefault(m.keep.path, []).append((kept.start, kept.end, entries.with_meta(kept, kept.content, meta)))
        for it, c in zip(m.drop, dropped):
            assert c is not None
            edits.setdefault(it.path, []).append((c.start, c.end, None))
        folded += len(dropped)
    for path, changes in edits.items():
        text = note(path)
        for start, end, new in sorted(changes, key=lambda c: c[0], reverse=True):
            text = (
                entries.remove_lines(text, start, end) if new is None else entries.replace_lines(text, start, end, new)
            )
        store.atomic_write(root / path, text.encode())
    return folded


@contextlib.contextmanager
def single_flight(root: Path) -> Iterator[None]:
    """Hold the consolidation lock, or raise MemtreeError at once when another run holds it."""
    path = root / store.STATE_DIR / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise MemtreeError(
                "another `memtree consolidate` is running on this memory; try again when it ends"
            ) from None
        except ImportError:  # Windows: no advisory locks; one run at a time is then the user's care
            pass
        yield
    finally:
        os.close(fd)


def record(root: Path, started: float, error: str | None, merged: int = 0, candidates: int = 0) -> None:
    """Save this run's time, counts and error for `memtree status`."""
    state = last_run(root) or {}
    state.update(started=started, finished=time.time(), merged=merged, candidates=candidates, error=error)
    if error:
        state["last_error"] = error
        state["last_error_at"] = time.time()
    with contextlib.suppress(OSError):
        store.atomic_write(root / store.STATE_DIR / STATE_FILE, orjson.dumps(state), durable=False)


def last_run(root: Path) -> dict[str, Any] | None:
    """The last consolidation's record, or None when none ran."""
    try:
        data = orjson.loads((root / store.STATE_DIR / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
