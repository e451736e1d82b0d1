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

Candidate pairs come from hashing (identical bigram sets) and prefix filtering — two sets with
Jaccard ≥ t share one of the rarest ``|A| − ⌈t·|A|⌉ + 1`` bigrams of each — with at most
POSTING_SCAN entries looked at per bigram, so a note of thousands of entries is not compared pair by
pair; and a candidate's bigram set is compared only when a bit mask of each set lets it reach t,
so the work grows with the note's size (bench/consolidate_scale.py). Each note is planned without
the root's write lock, then applied under it to the note as it is then (planned again when it
changed): writes to other notes go on while a big note is planned.
Each note's merges are one change in the journal. Single-flight: a second run while one holds
``.memtree/consolidate.lock`` stops with a message; each run records its time, counts and error in
``.memtree/consolidate.json``.
On a read-only root a dry run goes without the lock and the record; a real run stops with
:class:`ReadOnlyRoot` before it writes anything.

Why one module over 300 lines: planning, applying and the single-flight record are one run's steps,
kept together so that a plan is always applied under the rules it was made with.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import math
import os
import time
from collections import Counter, deque
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


def bigrams(text: str, normalized: str | None = None) -> frozenset[str]:
    """Character bigrams of an entry's normalized words, spaces removed (a one-character text is its own)."""
    flat = (entries.normalize(text) if normalized is None else normalized).replace(" ", "")
    return frozenset(flat[i : i + 2] for i in range(len(flat) - 1)) or frozenset([flat])


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|A∩B| / |A∪B| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    shared = len(a & b)  # Why not len(a | b): the union is a second set built per pair
    return shared / (len(a) + len(b) - shared)


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
        note = read_text(root, path)
        if note is not None:
            merges += plan_note(path, note, threshold)
    return merges


def read_text(root: Path, path: str) -> str | None:
    """A bank note's text, or None when it cannot be read as UTF-8 (it is then left alone)."""
    try:
        return store.read_note(root / path)
    except (OSError, UnicodeDecodeError):
        return None


def plan_note(path: str, note: str, threshold: float) -> list[Merge]:
    """The merges within one note's text (see :func:`plan`)."""
    return _groups([Item(path, e) for e in entries.parse_entries(note) if e.content], threshold)


POSTING_SCAN = 32
"""How many entries sharing one blocking bigram a new entry is compared with, the nearest in size first.
Why: ten digits make only a hundred bigrams, so in a note of numbers every bigram is shared by
thousands of entries and prefix filtering alone compares all pairs (4,000 such lines took 26 s,
100,000 lines did not end in 600 s). A near-duplicate that shares only bigrams this common with its
twin may be missed: consolidation then merges less, it never merges wrongly."""


def candidate_pairs(
    sets: list[frozenset[str]], threshold: float, keys: list[str] | None = None, counts: Counter[str] | None = None
) -> list[tuple[int, int, float]]:
    """Pairs ``(j, i, jaccard)``, j < i, of ``sets`` with Jaccard ≥ ``threshold``, found without comparing all.

    Identical sets are found by hash, the rest by prefix filtering on the rarest bigrams, in order of
    size (each bigram's list of entries cut to those large enough), at most POSTING_SCAN entries per
    bigram or identical set. With ``keys`` (the entries' normalized texts), an entry whose key and set
    an earlier one has is paired with that one only: a thousand copies of a line make a thousand pairs.
    A candidate is first bounded by its bit mask (:func:`bit_mask`), and its set compared only when
    the bound reaches ``threshold``. ``counts``, when given, adds up the work: ``candidates`` looked
    at, and sets ``compared`` (tests hold both under a bound per entry, so quadratic work shows).
    """
    freq = Counter(g for s in sets for g in s)
    # each bigram's place in the order rarest first (ties by the bigram): a prefix is sorted by it
    rank = {g: k for k, g in enumerate(sorted(freq, key=lambda g: (freq[g], g)))}
    # Why: a set of fewer than t/(1-t) bigrams reaches t only with an identical set (one bigram
    # more or fewer already gives n/(n+1) < t), so it is found by hash, not by a scan
    smallest = threshold / (1 - threshold) if threshold < 1 else math.inf
    same: dict[frozenset[str], list[int]] = {}
    twins: dict[tuple[frozenset[str], str], int] = {}
    postings: dict[str, deque[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    sizes = [len(s) for s in sets]
    width = mask_width(sizes)
    masks = [bit_mask(s, width) for s in sets]
    for i in sorted(range(len(sets)), key=lambda k: (sizes[k], k)):
        s = sets[i]
        if keys is not None:
            twin = twins.setdefault((s, keys[i]), i)
            if twin != i:
                pairs.append((min(twin, i), max(twin, i), 1.0))
                continue
        bucket = same.setdefault(s, [])
        pairs += [(min(i, j), max(i, j), 1.0) for j in bucket[-POSTING_SCAN:]]
        bucket.append(i)
        if len(s) < smallest:
            continue
        ordered = sorted(s, key=rank.__getitem__)
        prefix = ordered[: len(s) - math.ceil(threshold * len(s)) + 1]
        size, mask = len(s), masks[i]
        least = threshold * size
        seen: set[int] = set()
        for g in prefix:
            posting = postings.get(g)
            if posting is None:
                posting = postings[g] = deque()
            while posting and sizes[posting[0]] < least:
                posting.popleft()  # sizes only grow from here: too small for every later set too
            seen.update(itertools.islice(reversed(posting), POSTING_SCAN))
            posting.append(i)
        # the bits set in either mask are at most |A∪B|, so (|A|+|B|-bits)/bits bounds the Jaccard from
        # above: most candidates are refused here, in a few integer steps, before any set is built
        near = [j for j in seen if size + sizes[j] - (bits := (mask | masks[j]).bit_count()) >= threshold * bits - 1e-9]
        near = [j for j in near if sets[j] != s]  # an identical set is paired above
        if counts is not None:
            counts["candidates"] += len(seen)
            counts["compared"] += len(near)
        for j in sorted(near):
            sim = jaccard(s, sets[j])
            if sim >= threshold:
                pairs.append((min(i, j), max(i, j), sim))
    return pairs


def mask_width(sizes: list[int]) -> int:
    """Bits of the masks for sets of these sizes: a power of two of at least 4 × the median size, at least 128.

    Why: two unrelated sets of n bigrams then set about 0.79 × 2n of the 4n bits or more, a bound
    near 0.27, far under 0.85; wider masks refuse little more and cost more per candidate (a
    1,024-bit OR is twice a 128-bit one)."""
    median = sorted(sizes)[len(sizes) // 2] if sizes else 0
    return max(128, 1 << (4 * median).bit_length())


def bit_mask(s: frozenset[str], width: int) -> int:
    """One bit per bigram (by its hash, ``width`` a power of two): ``popcount(a | b)`` is at most ``|A∪B|``."""
    mask = 0
    for g in s:
        mask |= 1 << (hash(g) & (width - 1))
    return mask


def _groups(items: list[Item], threshold: float) -> list[Merge]:
    texts = [it.entry.content for it in items]
    words = [entries.normalize(t) for t in texts]
    pairs = candidate_pairs([bigrams(t, w) for t, w in zip(texts, words, strict=True)], threshold, words)
    parent = list(range(len(items)))
    members = {i: [i] for i in range(len(items))}
    # each group's distinct texts (normalized): the guard is asked once per pair of them, so a
    # thousand copies of one line do not make a million questions
    kinds = {i: {w: i} for i, w in enumerate(words)}

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
        xs, ys = kinds[ra], kinds[rb]
        if any(distinct_facts(texts[x], texts[y]) for x in xs.values() for y in ys.values() if x != y):
            continue
        if len(members[ra]) < len(members[rb]):
            ra, rb = rb, ra
            xs, ys = ys, xs
        parent[rb] = ra
        members[ra] += members.pop(rb)
        for k, v in kinds.pop(rb).items():
            xs.setdefault(k, v)
        lowest[ra] = min(sim, lowest.get(ra, 1.0), lowest.pop(rb, 1.0))
    out = []
    for r, group in sorted(members.items(), key=lambda kv: min(kv[1])):
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
    by_path: dict[str, list[Merge]] = {}
    for m in merges:
        by_path.setdefault(m.keep.path, []).append(m)
    folded = 0
    for path, planned in sorted(by_path.items()):
        folded += sum(len(m.drop) for m in _apply_note(root, store.read(root, path), planned, now))
    return folded


def apply_note(
    root: Path, path: str, planned_on: str, merges: list[Merge], threshold: float, now: float
) -> list[Merge]:
    """Write one note's ``merges`` (planned on the text ``planned_on``; caller holds the write lock).

    The note is read again: when it changed since the plan (an add, a hand edit), its merges are
    planned again on what is there now. Returns the merges written.
    """
    for _ in range(store.REWRITE_ATTEMPTS):
        snap = store.read(root, path)
        try:
            text = snap.text
        except UnicodeDecodeError:
            return []
        if text != planned_on:
            merges, planned_on = plan_note(path, text, threshold), text
        try:
            return _apply_note(root, snap, merges, now, strict=True)
        except ChangedOnDisk:
            continue
    return []


def _apply_note(root: Path, snap: store.Snapshot, merges: list[Merge], now: float, strict: bool = False) -> list[Merge]:
    """Archive copies, then the note rewritten once; ChangedOnDisk (strict) or nothing removed when it moved."""
    stamp = time.strftime("%Y-%m-%d", time.localtime(now))
    path = snap.rel
    text = snap.text
    lines = text.split("\n")
    parsed = entries.parse_entries(text)
    by_id: dict[str, entries.Entry] = {}
    by_content: dict[str, list[entries.Entry]] = {}
    by_words: dict[str, entries.Entry] = {}  # made when first needed: normalizing every entry is slow
    for e in parsed:
        if e.meta.id:
            by_id.setdefault(e.meta.id, e)
        by_content.setdefault(e.content, []).append(e)

    def words_of(it: Item) -> entries.Entry | None:
        if not by_words:
            for e in parsed:
                by_words.setdefault(entries.normalize(e.content), e)
        return by_words.get(entries.normalize(it.entry.content))

    def locate(it: Item) -> entries.Entry | None:
        """``it`` in the note now: by id, else by its exact words — at the line planned, if still there.

        Why not normalized words: of `X` and `X.` (hand-written, no ids) both would be found as the
        first, and the kept one would be removed."""
        if it.entry.meta.id:  # entries.find's rule: by id, else by normalized words
            return by_id.get(it.entry.meta.id) or words_of(it)
        same = by_content.get(it.entry.content, [])
        return next((e for e in same if e.start == it.entry.start), same[0] if same else None)

    edits: dict[int, tuple[int, str | None]] = {}
    blocks: list[str] = []
    done: list[Merge] = []
    for m in merges:
        current = [locate(it) for it in (m.keep, *m.drop)]
        places = {c.start for c in current if c is not None}
        if len(places) < len(current) or places & edits.keys():  # gone, two of them now one, or taken
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
        edits[kept.start] = (kept.end, entries.with_meta(kept, kept.content, meta))
        into = " ".join(x for x in (kept.meta.id, f"{path}:{kept.start}") if x)
        for c in dropped:
            assert c is not None
            edits[c.start] = (c.end, None)
            why = f"merged into {into} (similarity {m.similarity:.2f})"
            blocks.append(archive_block(stamp, path, c, why, lines))
        done.append(m)
    if not done:
        return []
    try:
        copy_to_archive(root, path, blocks)  # first the copies, then the removals
        try:
            store.save(root, snap, _edited(lines, edits).encode())
        except ChangedOnDisk:
            if strict:
                raise
            # edited by hand since the plan: its merges wait for the next run (their copies in
            # _archive/ are harmless duplicates; nothing is removed from the note)
            return []
    except OSError as exc:
        if exc.errno in _READ_ONLY:
            raise ReadOnlyRoot(_read_only_message(root, exc)) from None
        raise
    return done


def _edited(lines: list[str], edits: dict[int, tuple[int, str | None]]) -> str:
    """The note's lines with each edit (1-based start → (end, new text or None to remove)) made, in one pass.

    A removal leaves no blank line doubled (entries.remove_lines' rule)."""
    out: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        edit = edits.get(i + 1)
        if edit is None:
            out.append(lines[i])
            i += 1
            continue
        end, new = edit
        i = end
        if new is not None:
            out.extend(new.split("\n"))
        elif out and not out[-1].strip() and i < n and not lines[i].strip() and (i + 1) not in edits:
            i += 1  # the blank line after it would double the one before
    return "\n".join(out)


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
