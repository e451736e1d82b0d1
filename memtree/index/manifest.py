"""The chunk index's manifest on disk: the live segments and every note's row, kept as a small journal.

The newest ``manifest-<n>.json`` is the one commit point. Each change writes the next one whole
(a temp file renamed to a name no file has), then deletes the one before. It names the live
segments, the notes skipped, a *rows file*, and the rows changed since that file was written (a
row, or null for a note gone). A rows file, ``rows-<version>-<digest>.json``, holds every note's
row as of one version; named after its content, it is never changed, and a manifest names it only
once it is whole. A file the newest manifest no longer names is deleted only after that manifest
is in place.

So a reader that reads the newest manifest and then what it names gets one committed version
whole, or, when a writer deleted a file it names in between, an error (:func:`read` then tries
again; the caller, after that, under the index lock); never a mix. A crash leaves the last
committed manifest, and what it names, untouched.

Why a new name each time: on ext4 (auto_da_alloc), renaming a file over one that exists flushes
the new file's data first, which took 2-8 ms on a busy machine: most of a one-note refresh.
Renaming to a fresh name and deleting the old file takes 0.4 ms.

A writer writes on top of the disk only while the newest manifest is, byte for byte, the one it
last read or wrote (:func:`committed`); otherwise it reads the index again first. Why bytes and
not the version: two histories can reach the same version (an index deleted and rebuilt while
another process kept the old one in memory), and a version is all a touched note's new mtime leaves
unchanged. The bytes are a few KB: the rows are in the rows file.

Why a journal: written whole, the rows of 5,000 notes (0.6 MB of JSON) took about half the time of
picking up one changed note. Now a refresh writes only the rows changed since the last rows file;
when they pass :func:`fold_limit`, the next write starts a new rows file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from memtree.notes import store

MANIFEST_NAME = re.compile(r"manifest-([0-9]+)\.json")
LEGACY = ("manifest.json", "version")
"""The former layout's manifest (every row, replaced in place) and version file: swept, never read."""
LAYOUT = 2
"""2: numbered manifests holding a journal over a rows file, each segment one file (1: one
manifest.json holding every row, each segment a folder)."""
READ_TRIES = 3
"""A reader that finds the manifest (or its rows file) gone, replaced meanwhile, looks this many times."""
ROWS_PREFIX = "rows-"
ROWS_NAME = re.compile(r"rows-[0-9]+-[0-9a-f]+\.json")
SEGMENT_NAME = re.compile(r"seg-[0-9]+")
FOLD_MIN_ROWS = 64
"""A journal of up to this many rows (or a sixteenth of the notes, if more) is written as it is."""


class FileEntry(NamedTuple):
    """A note known to the index: its row in the manifest."""

    tier: str
    mtime_ns: int
    size: int
    hash: str
    segment: str
    chunks: int


_entry = functools.partial(tuple.__new__, FileEntry)
"""A FileEntry from a manifest row without NamedTuple's Python-level ``__new__`` (5,000 of them per
load); rows are checked for their length where they are read."""


class FileTable(dict[str, FileEntry]):
    """Path → FileEntry, remembering what changed since the rows file (the journal) and which paths
    were set lately (those that may be "racily clean", see ``survey.RACY_NS``).

    Entries are immutable; a change is a new entry set here, so nothing escapes the journal.
    """

    def __init__(
        self, rows: Mapping[str, FileEntry] | None = None, changed: Mapping[str, FileEntry | None] | None = None
    ) -> None:
        super().__init__(rows or {})
        self.changed: dict[str, FileEntry | None] = dict(changed or {})
        self.recent: set[str] = set(self)  # every path set since the racy ones were last picked out
        self._stats: set[tuple[str, str, int, int]] | None = None  # see stats(); None until asked

    def __setitem__(self, path: str, entry: FileEntry) -> None:
        if self._stats is not None:
            self._forget_stat(path)
            self._stats.add((path, entry.tier, entry.mtime_ns, entry.size))
        super().__setitem__(path, entry)
        self.changed[path] = entry
        self.recent.add(path)

    def __delitem__(self, path: str) -> None:
        self._forget_stat(path)
        super().__delitem__(path)
        self.changed[path] = None

    def pop(self, path: str, *default: Any) -> Any:  # type: ignore[override]
        """Remove ``path`` (journaled) and return its entry, or ``default``."""
        if path in self:
            self._forget_stat(path)
            entry = super().pop(path)
            self.changed[path] = None
            return entry
        return super().pop(path, *default)

    def stats(self) -> set[tuple[str, str, int, int]]:
        """Every note as indexed, as a walk states it (``store.FileStat``: path, tier, mtime, size),
        kept in step with the table. Why: a refresh asks for each of 5,000 notes whether it is as
        indexed; one set lookup per note answers it (memtree.index.survey.changes)."""
        if self._stats is None:
            self._stats = {(p, e.tier, e.mtime_ns, e.size) for p, e in self.items()}
        return self._stats

    def _forget_stat(self, path: str) -> None:
        if self._stats is not None and (old := self.get(path)) is not None:
            self._stats.discard((path, old.tier, old.mtime_ns, old.size))

    def _refused(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("FileTable changes go through [] =, del and pop, so that the journal sees them")

    update = setdefault = popitem = clear = __ior__ = _refused  # type: ignore[assignment]

    def racy(self, after_ns: int) -> list[str]:
        """Paths whose entry's mtime is at or after ``after_ns``; the others leave :attr:`recent`
        (a racy entry only grows older, and a changed one is set, so recent, again)."""
        found = [p for p in self.recent if (e := self.get(p)) is not None and e.mtime_ns >= after_ns]
        self.recent = set(found)
        return found


@dataclass
class Manifest:
    """One committed version of the index."""

    version: int = 0
    base: str | None = None
    deltas: list[str] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)
    skipped: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    files: FileTable = field(default_factory=FileTable)
    rows: str = ""  # the rows file ``files.changed`` is relative to ("": none yet)
    seq: int = 0  # the number of the manifest read or written (0: none)
    committed: bytes = b""  # its bytes


def newest(folder: Path) -> tuple[int, str]:
    """The number and name of the newest manifest in ``folder`` ((0, ""): none, or no folder)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0, ""
    found = (0, "")
    for name in names:
        m = MANIFEST_NAME.fullmatch(name)
        if m is not None and int(m[1]) > found[0]:
            found = (int(m[1]), name)
    return found


def committed(folder: Path) -> tuple[int, bytes]:
    """The number and bytes of the newest manifest in ``folder`` ((0, b""): none, or unreadable)."""
    for _ in range(READ_TRIES):
        try:
            seq, name = newest(folder)
            return (seq, (folder / name).read_bytes()) if seq else (0, b"")
        except FileNotFoundError:
            continue  # replaced just now
        except OSError:
            break
    return 0, b""


def read(folder: Path, stamp: Mapping[str, Any]) -> Manifest:
    """The newest manifest in ``folder``, its rows file applied. Raises OSError, ValueError,
    KeyError or TypeError when there is none, it is torn or foreign, or ``stamp``'s keys (what the
    segments were made with) differ."""
    for attempt in range(READ_TRIES):
        try:
            return _read(folder, stamp)
        except FileNotFoundError:
            if attempt + 1 == READ_TRIES:
                raise
    raise AssertionError("unreachable")


def _read(folder: Path, stamp: Mapping[str, Any]) -> Manifest:
    seq, name = newest(folder)
    if not seq:
        raise FileNotFoundError(f"no index manifest in {folder}")
    raw = (folder / name).read_bytes()
    doc = orjson.loads(raw)
    if any(doc.get(k) != v for k, v in stamp.items()):
        raise ValueError("the index was made by another format, byte order or tokenizer")
    segments = [_named(SEGMENT_NAME, name) for name in doc["segments"]]
    rows_doc = orjson.loads((folder / _named(ROWS_NAME, doc["rows"])).read_bytes())
    if rows_doc["name"] != doc["rows"]:
        raise ValueError("the rows file is not the one the manifest names")
    rows: dict[str, list[Any]] = rows_doc["files"]
    changed: dict[str, list[Any] | None] = doc["changed"]
    lengths = set(map(len, rows.values())) | {len(r) for r in changed.values() if r is not None}
    if lengths - {len(FileEntry._fields)}:
        raise ValueError("a manifest row has the wrong number of fields")
    entries = dict(zip(rows, map(_entry, rows.values())))
    journal = {p: None if r is None else _entry(r) for p, r in changed.items()}
    for p, e in journal.items():
        if e is None:
            entries.pop(p, None)
        else:
            entries[p] = e
    return Manifest(
        version=int(doc["version"]),
        base=doc["base"],
        deltas=list(doc["deltas"]),
        segments=segments,
        skipped={p: (int(m), int(n), str(why)) for p, (m, n, why) in doc["skipped"].items()},
        files=FileTable(entries, journal),
        rows=doc["rows"],
        seq=seq,
        committed=raw,
    )


def fold_limit(n_files: int) -> int:
    """Journal rows past which the next write starts a new rows file."""
    return max(FOLD_MIN_ROWS, n_files // 16)


def write(folder: Path, m: Manifest, stamp: Mapping[str, Any], fold: bool = False) -> bool:
    """Commit ``m`` as the manifest after ``m.seq`` (which must be the newest in ``folder``): its
    journal alone, or (``fold``, no rows file yet, or a journal past :func:`fold_limit`) a new rows
    file first; True when it wrote one (older ones are then the caller's to delete). Raises OSError;
    the previous commit then stands."""
    files = m.files
    fold = fold or not m.rows or len(files.changed) > fold_limit(len(files))
    old_rows = m.rows
    if fold:
        import hashlib  # lazy: most commits write a journal alone, and a search that changes nothing none

        paths = sorted(files)
        rows = orjson.dumps(dict(zip(paths, map(tuple, map(files.__getitem__, paths)))))
        name = f"{ROWS_PREFIX}{m.version}-{hashlib.blake2b(rows, digest_size=8).hexdigest()}.json"
        store.atomic_write(folder / name, b'{"name":' + orjson.dumps(name) + b',"files":' + rows + b"}", durable=False)
        m.rows = name
        journal: dict[str, Any] = {}
    else:
        journal = {p: None if e is None else tuple(e) for p, e in sorted(files.changed.items())}
    head = {
        **stamp,
        "version": m.version,
        "base": m.base,
        "deltas": m.deltas,
        "segments": m.segments,
        "skipped": m.skipped,
        "rows": m.rows,
        "changed": journal,
    }
    raw = orjson.dumps(head)
    try:
        store.atomic_write(folder / f"manifest-{m.seq + 1}.json", raw, durable=False)
    except BaseException:
        m.rows = old_rows
        raise
    if m.seq:
        with contextlib.suppress(OSError):
            os.unlink(folder / f"manifest-{m.seq}.json")
    m.seq, m.committed = m.seq + 1, raw
    if fold:
        files.changed.clear()
    return fold


def _named(pattern: re.Pattern[str], name: str) -> str:
    """A file name from a manifest, refused unless it is one of the index's own (no path, no link out)."""
    if not isinstance(name, str) or pattern.fullmatch(name) is None:
        raise ValueError(f"not an index file name: {name!r}")
    return name
