"""A refresh's look at the disk, and what it decides from it: which notes to read, which are gone.

The chunk index (memtree.index.chunk_index) asks here first on every check. :func:`look_at` sees the
notes on disk: every one, by a walk of the tiers (memtree.notes.store.walk, reusing the folders'
listings), or only the paths a writer or a watcher names, stat'ed afresh. :func:`changes` compares
that look with the index's rows (memtree.index.manifest.FileTable) by stat alone: no note is read
here, and nothing is written. What to read, install and commit is the chunk index's business.

The racy rule lives here: a note modified in the last ``RACY_NS`` can change again without its
mtime or size moving, so it is read again (and its content hash compared) until it is older.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

from memtree.index.manifest import FileEntry, FileTable
from memtree.notes import store

RACY_NS = 2_000_000_000
"""A note modified this recently can change again without its mtime or size moving (coarse
timestamps), so it is re-hashed on every check until it is older (git's "racily clean" case)."""
Skipped = Mapping[str, tuple[int, int, str]]
"""Notes the index could not take (too big, not UTF-8): their mtime, size and the reason."""
_SIZE = itemgetter(FileEntry._fields.index("size"))


@dataclass
class Look:
    """The notes as one refresh sees them: every note (a walk), or the notes asked, stat'ed afresh."""

    stats: list[store.FileStat]  # sorted by path
    complete: bool  # True: a note not in stats is gone; False: it is as last indexed
    warnings: list[str]
    asked: frozenset[str] = frozenset()  # the paths asked (found or not), when not complete


@dataclass
class Changes:
    """What a refresh must do, from a :class:`Look` against the index as it is."""

    suspects: list[store.FileStat]  # to read: new, changed, racily clean, or skipped with a new stat
    removed: list[str]  # known notes gone
    skipped_gone: list[str]  # skipped notes gone
    still_skipped: list[str]  # skipped notes as they were skipped (each warned of once a refresh)

    @property
    def none(self) -> bool:
        """True when nothing changed: nothing to read, nothing gone."""
        return not self.suspects and not self.removed and not self.skipped_gone


def look_at(root: Path, listings: store.Listings, paths: list[str] | None) -> Look:
    """The notes on disk: by a walk of every note and folder, or only ``paths`` stat'ed afresh."""
    if paths is not None:
        found = told(root, paths)
        if found is not None:
            return found
    listings.quiet_before = time.time_ns() - RACY_NS
    stats, warnings = store.walk(root, listings=listings)
    return Look(stats, True, warnings)


def told(root: Path, paths: list[str]) -> Look | None:
    """``paths`` stat'ed afresh: a writer's own notes, or those a watcher's events named; one that
    is gone, or no regular file, is left out. None when a path is not plainly a note (absolute,
    outside the tiers, hidden, a folder's) or leads through a symlink: only the walk knows which
    notes such a path stands for, and where a link may lead."""
    asked = frozenset(paths)
    if not all(map(store.note_path, asked)):
        return None
    stat_of, note = store.stat_of, store.FileStat
    found = []
    real_root = os.path.realpath(root)
    for rel in asked:
        full = os.path.join(root, rel)
        if os.path.realpath(full) != os.path.join(real_root, rel):
            return None
        try:
            st = os.stat(full)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append(stat_of(note, (rel, rel.split("/", 1)[0], st.st_mtime_ns, st.st_size)))
    found.sort(key=itemgetter(0))
    return Look(found, False, [], asked)


def changes(look: Look, files: FileTable, skipped: Skipped, force: bool) -> Changes:
    """Which notes to read, which are gone and which stay skipped, by stat against the index.

    A note changed in the last ``RACY_NS`` is read again whatever its stat (its content hash
    tells); with a look at some notes only, so are those of the others indexed that recently."""
    racy_after = time.time_ns() - RACY_NS
    stats = look.stats
    walked = look.complete and not force
    if walked:  # why: one set lookup (FileTable.stats) passes over each note as indexed, 5,000 on every check
        known = files.stats()
        stats = [f for f in stats if f not in known]  # new, changed or skipped notes
    suspects: list[store.FileStat] = []
    still: list[str] = []
    seen = len(look.stats) - len(stats)  # notes the index holds, passed over as indexed
    seen_skipped = 0
    for f in stats:
        path, _, mtime_ns, size = f
        e = files.get(path)
        if e is None:
            skip = skipped.get(path)
            if skip is not None:
                seen_skipped += 1
                if not force and skip[0] == mtime_ns and skip[1] == size:
                    still.append(path)
                    continue
            suspects.append(f)
        else:
            seen += 1
            if force or e.mtime_ns != mtime_ns or e.size != size or mtime_ns >= racy_after:
                suspects.append(f)
    removed: list[str] = []
    skipped_gone: list[str] = []
    if look.complete:
        if seen != len(files) or seen_skipped != len(skipped):
            on_disk = set(map(itemgetter(0), look.stats))
            removed = [p for p in files if p not in on_disk]
            skipped_gone = [p for p in skipped if p not in on_disk]
        racy = files.racy(racy_after) if walked else []
        if racy:  # passed over as indexed, but modified too lately for the stat to tell
            looked = {f[0] for f in stats}.union(removed)
            suspects += as_indexed(files, [p for p in racy if p not in looked])
            suspects.sort(key=itemgetter(0))
    else:
        here = set(map(itemgetter(0), look.stats))
        gone = sorted(look.asked - here)
        removed = [p for p in gone if p in files]
        skipped_gone = [p for p in gone if p in skipped]
        still += [p for p in skipped if p not in look.asked]
        still.sort()
        racy = [p for p in files.racy(racy_after) if p not in look.asked]
        if racy:
            suspects += as_indexed(files, racy)
            suspects.sort(key=itemgetter(0))
    return Changes(suspects, removed, skipped_gone, still)


def total_bytes(look: Look, files: FileTable, skipped: Skipped) -> int:
    """The bytes of every note on disk (those not looked at as last indexed or skipped)."""
    total = sum(map(itemgetter(3), look.stats))
    if not look.complete:
        asked = look.asked
        total += sum(map(_SIZE, files.values())) - sum(files[p].size for p in asked if p in files)
        total += sum(v[1] for p, v in skipped.items() if p not in asked)
    return total


def on_disk(look: Look, files: FileTable, skipped: Skipped) -> dict[str, store.FileStat]:
    """Every note on disk by path, in path order (those not looked at as last indexed or skipped)."""
    stats = look.stats
    if not look.complete:
        asked, stat_of, note = look.asked, store.stat_of, store.FileStat
        stats = stats + as_indexed(files, (p for p in files if p not in asked))
        stats += [stat_of(note, (p, p.split("/", 1)[0], m, n)) for p, (m, n, _) in skipped.items() if p not in asked]
        stats.sort(key=itemgetter(0))
    return dict(zip(map(itemgetter(0), stats), stats))


def as_indexed(files: FileTable, paths: Iterable[str]) -> list[store.FileStat]:
    """Known notes' stats as last indexed, for the notes a told refresh did not stat."""
    stat_of, note = store.stat_of, store.FileStat
    return [stat_of(note, (p, (e := files[p]).tier, e.mtime_ns, e.size)) for p in paths]
