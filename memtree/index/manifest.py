"""The chunk index's manifest on disk: the live segments and every note's row, kept as a small journal.

``manifest.json`` is the one commit point. Replaced whole (temp file and rename) on every change,
it names the live segments, the notes skipped, a *rows file*, and the rows changed since that file
was written (a row, or null for a note gone). A rows file, ``rows-<version>-<digest>.json``, holds
every note's row as of one version; named after its content, it is never changed, and a manifest
names it only once it is whole. A file a manifest no longer names is deleted only after the
manifest that stopped naming it is in place.

So a reader that reads the manifest and then what it names gets one committed version whole, or,
when a writer deleted a file it names in between, an error (the caller then reads again under the
index lock); never a mix. A crash leaves the previous manifest and what it names untouched.

A writer writes on top of the disk only while the committed manifest is, byte for byte, the one
it last read or wrote (:func:`committed`); otherwise it reads the index again first. Why bytes and
not the version: two histories can reach the same version (an index deleted and rebuilt while
another process kept the old one in memory), and a version is all a touched note's new mtime leaves
unchanged. The bytes are a few KB: the rows are in the rows file.

Why a journal: written whole, the rows of 5,000 notes (0.6 MB of JSON) took about half the time of
picking up one changed note. Now a refresh writes only the rows changed since the last rows file;
when they pass :func:`fold_limit`, the next write starts a new rows file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from memtree.notes import store

MANIFEST = "manifest.json"
LAYOUT = 2
"""2: a journal over a rows file, each segment one file (1: one manifest holding every row, each
segment a folder)."""
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


row_of = tuple.__new__
"""``row_of(FileEntry, row)``: a FileEntry from a manifest row without NamedTuple's Python-level
``__new__`` (5,000 of them per load); rows are checked for their length where they are read."""


class FileTable(dict[str, FileEntry]):
    """Path → FileEntry, remembering what changed since the rows file (the journal) and which paths
    were set lately (those that may be "racily clean", see ``chunk_index.RACY_NS``).

    Entries are immutable; a change is a new entry set here, so nothing escapes the journal.
    """

    def __init__(
        self, rows: Mapping[str, FileEntry] | None = None, changed: Mapping[str, FileEntry | None] | None = None
    ) -> None:
        super().__init__(rows or {})
        self.changed: dict[str, FileEntry | None] = dict(changed or {})
        self.recent: set[str] = set(self)  # every path set since the racy ones were last picked out

    def __setitem__(self, path: str, entry: FileEntry) -> None:
        super().__setitem__(path, entry)
        self.changed[path] = entry
        self.recent.add(path)

    def __delitem__(self, path: str) -> None:
        super().__delitem__(path)
        self.changed[path] = None

    def pop(self, path: str, *default: Any) -> Any:  # type: ignore[override]
        """Remove ``path`` (journaled) and return its entry, or ``default``."""
        if path in self:
            entry = super().pop(path)
            self.changed[path] = None
            return entry
        return super().pop(path, *default)

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
    committed: bytes = b""  # the manifest's bytes, as read or written


def committed(folder: Path) -> bytes:
    """The bytes of the manifest in ``folder`` (b"": none, or unreadable)."""
    try:
        return (folder / MANIFEST).read_bytes()
    except OSError:
        return b""


def read(folder: Path, stamp: Mapping[str, Any]) -> Manifest:
    """The committed manifest in ``folder``, its rows file applied. Raises OSError, ValueError,
    KeyError or TypeError when there is none, it is torn or foreign, or ``stamp``'s keys (what the
    segments were made with) differ."""
    raw = (folder / MANIFEST).read_bytes()
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
    entries = {p: row_of(FileEntry, r) for p, r in rows.items()}
    journal = {p: None if r is None else row_of(FileEntry, r) for p, r in changed.items()}
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
        committed=raw,
    )


def fold_limit(n_files: int) -> int:
    """Journal rows past which the next write starts a new rows file."""
    return max(FOLD_MIN_ROWS, n_files // 16)


def write(folder: Path, m: Manifest, stamp: Mapping[str, Any], fold: bool = False) -> bool:
    """Commit ``m``: its journal alone, or (``fold``, no rows file yet, or a journal past
    :func:`fold_limit`) a new rows file first; True when it wrote one (older ones are then the
    caller's to delete). Raises OSError; the previous commit then stands."""
    files = m.files
    fold = fold or not m.rows or len(files.changed) > fold_limit(len(files))
    old_rows = m.rows
    if fold:
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
        store.atomic_write(folder / MANIFEST, raw, durable=False)
    except BaseException:
        m.rows = old_rows
        raise
    m.committed = raw
    if fold:
        files.changed.clear()
    return fold


def _named(pattern: re.Pattern[str], name: str) -> str:
    """A file name from a manifest, refused unless it is one of the index's own (no path, no link out)."""
    if not isinstance(name, str) or pattern.fullmatch(name) is None:
        raise ValueError(f"not an index file name: {name!r}")
    return name
