"""`memtree consolidate`: merge near-duplicates within each note; list stale auto entries.

Two entries of one note whose character bigrams (of their normalized words, spaces removed)
have a Jaccard similarity ≥ ``consolidate.jaccard`` (0.85, memtree.yaml) are one — unless they state different facts
(:func:`memtree.write.similarity.distinct_facts`, the guard retain's add path uses too: another number,
negation, date or name), and no group ever holds two such entries. The longest content is kept,
the tags are united, and the ids of the entries merged into it are recorded in its ``merged=``
field, so usage counts and provenance follow it; each merged-away entry's lines go, word for word,
to the same path under ``bank/_archive/`` (which search never reads), after an HTML comment saying
where they came from and into what they were merged — the format `memtree decay --archive` writes.

Only within a note: the same fact in two notes is left in both, untouched. A note is a topic
(`add` routed each entry there), so folding `배포는 금요일에 하지 않는다` of ``work/deploy.md`` into
its longer copy in ``work/meetings.md`` would leave the deploy note without its rule; which note
a fact belongs in is routing's call, not a merge's.

Auto-extracted entries older than ``consolidate.prune_days`` (90) and recalled fewer than
``consolidate.prune_min_recalls`` times (3) become archive candidates (memtree.lifecycle.aging;
`memtree decay --archive` moves them).

Candidate pairs come from prefix filtering — two sets with Jaccard ≥ t share one of the
rarest ``|A| − ⌈t·|A|⌉ + 1`` bigrams of each — so a note of thousands of entries is not compared
pair by pair. Single-flight: a second run while one holds ``.memtree/consolidate.lock`` stops
with a message; each run records its time, counts and error in ``.memtree/consolidate.json``.
On a read-only root a dry run goes without the lock and the record; a real run stops with
:class:`ReadOnlyRoot` before it writes anything.

Why one module over 300 lines: planning, applying and the single-flight record are one run's steps,
kept together so that a plan is always applied under the rules it was made with.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from memtree.errors import ChangedOnDisk, MemtreeError, ReadOnlyRoot
from memtree.lifecycle.aging import archive_block, copy_to_archive
from memtree.notes import entries, store
from memtree.write.similarity import distinct_facts

LOCK_FILE = "consolidate.lock"
STATE_FILE = "consolidate.json"
_READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


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
    candidates: tuple[Any, ...]  # memtree.lifecycle.aging.Aged
    dry_run: bool
    seconds: float


def plan(root: Path, paths: list[str], threshold: float) -> list[Merge]:
    """The merges consolidation would make within each of the bank notes ``paths`` (never across two).

    ``threshold`` is the least Jaccard similarity of two entries merged (``consolidate.jaccard``).
    """
    merges: list[Merge] = []
    for path in sorted(paths):
        try:
            note = store.read_note(root / path)
        except (OSError, UnicodeDecodeError):
            continue
        merges += _groups([Item(path, e) for e in entries.parse_entries(note) if e.content], threshold)
    return merges


def candidate_pairs(sets: list[frozenset[str]], threshold: float) -> list[tuple[int, int, float]]:
    """Every pair ``(j, i, jaccard)``, j < i, of ``sets`` with Jaccard ≥ ``threshold``, found by prefix filtering."""
    freq = Counter(g for s in sets for g in s)
    prefix_index: dict[str, list[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    for i, s in enumerate(sets):
        ordered = sorted(s, key=lambda g: (freq[g], g))
        prefix = ordered[: len(s) - math.ceil(threshold * len(s)) + 1]
        seen: set[int] = set()
        for g in prefix:
            for j in prefix_index.get(g, ()):
                if j in seen:
                    continue
                seen.add(j)
                small, big = sorted((len(s), len(sets[j])))
                if small < threshold * big:
                    continue  # sizes alone rule it out
                sim = jaccard(s, sets[j])
                if sim >= threshold:
                    pairs.append((j, i, sim))
            prefix_index.setdefault(g, []).append(i)
    return pairs


def _groups(items: list[Item], threshold: float) -> list[Merge]:
    texts = [it.entry.content for it in items]
    pairs = candidate_pairs([bigrams(t) for t in texts], threshold)
    parent = list(range(len(items)))
    members = {i: [i] for i in range(len(items))}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    lowest: dict[int, float] = {}
    # the most alike first, so a chain never joins through a weaker link what a stronger one split
    for a, b, sim in sorted(pairs, key=lambda p: (-p[2], p[0], p[1])):
        ra, rb = find(a), find(b)
        if ra == rb:
            lowest[ra] = min(sim, lowest.get(ra, 1.0))
            continue
        # Why every cross pair: `limit 100` ~ `limit 100!` ~ `limit 1000` must not chain into one group
        if any(distinct_facts(texts[x], texts[y]) for x in members[ra] for y in members[rb]):
            continue
        parent[rb] = ra
        members[ra] += members.pop(rb)
        lowest[ra] = min(sim, lowest.get(ra, 1.0), lowest.pop(rb, 1.0))
    out = []
    for r, group in sorted(members.items()):
        if len(group) < 2:
            continue
        # the longest content is kept; on a tie, the first in path and line order
        keep = max(group, key=lambda m: (len(texts[m]), -m))
        drop = tuple(items[m] for m in sorted(group) if m != keep)
        out.append(Merge(items[keep], drop, round(lowest.get(r, threshold), 4)))
    return out


def apply(root: Path, merges: list[Merge], now: float) -> int:
    """Write ``merges`` (caller holds the write lock); returns how many entries were folded in.

    Each merged-away entry's lines are first appended to its note's bank/_archive/ copy, then
    removed. A group whose entries changed since the plan is skipped. ReadOnlyRoot when the
    notes cannot be written.
    """
    stamp = time.strftime("%Y-%m-%d", time.localtime(now))
    folded = 0
    snaps: dict[str, store.Snapshot] = {}

    def note(path: str) -> str:
        if path not in snaps:
            snaps[path] = store.read(root, path)
        return snaps[path].text

    edits: dict[str, list[tuple[int, int, str | None]]] = {}
    archived: dict[str, list[str]] = {}
    for m in merges:
        current = [_locate(note(it.path), it) for it in (m.keep, *m.drop)]
        places = {(it.path, c.start) for it, c in zip((m.keep, *m.drop), current) if c is not None}
        if len(places) < len(current):  # gone, or two of them now one entry
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
        into = " ".join(x for x in (kept.meta.id, f"{m.keep.path}:{kept.start}") if x)
        for it, c in zip(m.drop, dropped):
            assert c is not None
            edits.setdefault(it.path, []).append((c.start, c.end, None))
            why = f"merged into {into} (similarity {m.similarity:.2f})"
            archived.setdefault(it.path, []).append(archive_block(stamp, it.path, c, why, note(it.path).split("\n")))
        folded += len(dropped)
    try:
        for path, blocks in sorted(archived.items()):  # first the copies, then the removals
            copy_to_archive(root, path, blocks)
        for path, changes in edits.items():
            text = note(path)
            for start, end, new in sorted(changes, key=lambda c: c[0], reverse=True):
                text = (
                    entries.remove_lines(text, start, end)
                    if new is None
                    else entries.replace_lines(text, start, end, new)
                )
            try:
                store.save(root, snaps[path], text.encode())
            except ChangedOnDisk:
                # edited by hand since the plan: its merges wait for the next run (their copies in
                # _archive/ are harmless duplicates; nothing is removed from the note)
                folded -= sum(1 for _, _, new in changes if new is None)
    except OSError as exc:
        if exc.errno in _READ_ONLY:
            raise ReadOnlyRoot(_read_only_message(root, exc)) from None
        raise
    return folded


def _locate(note: str, it: Item) -> entries.Entry | None:
    """``it`` in the current ``note``: by id, else by its exact words — at the line planned, if still there.

    Why not entries.find alone: it matches normalized words, so of `X` and `X.` (hand-written, no
    ids) both would be found as the first, and the kept one would be removed.
    """
    if it.entry.meta.id:
        return entries.find(note, it.entry.meta.id, it.entry.content)
    same = [e for e in entries.parse_entries(note) if e.content == it.entry.content]
    return next((e for e in same if e.start == it.entry.start), same[0] if same else None)


def _read_only_message(root: Path, exc: OSError) -> str:
    where = exc.filename or root
    return (
        f"cannot write {where} ({exc.strerror or exc}): the memory root {root} is read-only here, "
        "so consolidate cannot merge; `memtree consolidate --dry-run` shows what it would do"
    )


def _open_lock(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


@contextlib.contextmanager
def single_flight(root: Path, dry_run: bool = False) -> Iterator[None]:
    """Hold the consolidation lock, or raise MemtreeError at once when another run holds it.

    When the lock cannot be created (a read-only root), a dry run goes on without it — it writes
    nothing — and a real run raises ReadOnlyRoot.
    """
    path = root / store.STATE_DIR / LOCK_FILE
    try:
        fd = _open_lock(path)
    except OSError as exc:
        if not dry_run:
            raise ReadOnlyRoot(_read_only_message(root, exc)) from None
        yield
        return
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


def record(
    root: Path, started: float, finished: float, error: str | None, merged: int = 0, candidates: int = 0
) -> None:
    """Save this run's times (epoch s), counts and error for `memtree status`."""
    state = last_run(root) or {}
    state.update(started=started, finished=finished, merged=merged, candidates=candidates, error=error)
    if error:
        state["last_error"] = error
        state["last_error_at"] = finished
    with contextlib.suppress(OSError):
        store.atomic_write(root / store.STATE_DIR / STATE_FILE, orjson.dumps(state), durable=False)


def last_run(root: Path) -> dict[str, Any] | None:
    """The last consolidation's record, or None when none ran."""
    try:
        data = orjson.loads((root / store.STATE_DIR / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
