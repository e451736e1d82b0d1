"""Recall reinforcement: how often each entry was found by search and opened with `get`.

Counts live in ``.memtree/usage.json`` — never in tracked files, so reading memory never dirties
git — keyed by entry: a chunk's memtree entry ids when it has them, else its note's path and a
hash of its normalized text (a hand edit that changes the words starts a new count). Searches
bump ``retrievals``; `get` bumps ``accesses``, kept apart so that browsing does not distort what
decay will reward. Bumps are buffered in memory and written at most once a second, and when the
process exits, so no search waits on the disk.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from memtree.notes import entries, store

USAGE_FILE = "usage.json"
FLUSH_EVERY_S = 1.0
CHUNK_KEYS_KEPT = 4096
"""Chunks whose usage keys are kept (a pure function of path and text); why: search asks them of every
candidate it reads, and parsing entries and hashing their words is a tenth of a warm query."""
_RETRIEVALS, _LAST_RETRIEVED, _ACCESSES, _LAST_ACCESSED = range(4)


def text_key(path: str, words: str) -> str:
    """The usage key of text without an entry id: `path#` and a short hash of the words."""
    return f"{path}#{hashlib.blake2b(words.encode(), digest_size=6).hexdigest()}"


def entry_keys(path: str, entry: entries.Entry) -> tuple[str, ...]:
    """The usage keys of one entry: its id (and the ids merged into it), else `path#hash` of its words."""
    meta = entry.meta
    if meta.id:
        return (meta.id, *meta.merged)
    if meta.extra.get("key"):  # a recall/ excerpt counts for its source entry
        return (meta.extra["key"],)
    return (text_key(path, entry.content.strip()),)


@functools.lru_cache(maxsize=CHUNK_KEYS_KEPT)
def chunk_keys(path: str, chunk_text: str, matched: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The usage keys of a chunk's entries; with ``matched`` query terms, of the entries holding one.

    A chunk may hold several entries (a small section is one chunk): a hit counts for the
    entries that hold a matched term, or for all of them when none does. A chunk with no entry
    (a table, a code block) is keyed by `path#hash` of its text.
    """
    line = chunk_text.strip()
    if "\n" not in line and "memtree:" not in line and line[:1] not in ("#", "|", "`", "~", ""):
        # one line, no metadata: one hand-written entry (a list item or a paragraph); the common case
        content = entries.LIST_MARKER.sub("", line, count=1).strip()
        return (text_key(path, content),)
    found = entries.parse_entries(chunk_text)
    if not found:
        return (text_key(path, chunk_text.strip()),)
    if matched and len(found) > 1:
        holding = [e for e in found if any(t in e.content.casefold() for t in matched)]
        found = holding or found
    return tuple(dict.fromkeys(k for e in found for k in entry_keys(path, e)))


class Usage:
    """Buffered counters for one memory root."""

    def __init__(self, root: Path) -> None:
        self.path = root / store.STATE_DIR / USAGE_FILE
        self._pending: dict[str, list[float]] = {}
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()
        self._saved: dict[str, list[float]] = {}
        self._saved_stamp: tuple[int, int] | None = None

    def retrieved(self, keys: list[str], now: float) -> None:
        """Count a search hit for each key at ``now`` (epoch s)."""
        self._bump(keys, _RETRIEVALS, _LAST_RETRIEVED, now)

    def accessed(self, keys: list[str], now: float) -> None:
        """Count an explicit read (`get`) for each key at ``now`` (epoch s)."""
        self._bump(keys, _ACCESSES, _LAST_ACCESSED, now)

    def _bump(self, keys: list[str], count: int, last: int, stamp: float) -> None:
        with self._lock:
            for key in keys:
                row = self._pending.setdefault(key, [0, 0.0, 0, 0.0])
                row[count] += 1
                row[last] = max(row[last], stamp)
            _dirty.add(self)  # held until flushed: a CLI drops its MemTree before exit
        if time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
            self.flush()

    def flush(self) -> None:
        """Merge the buffered counts into usage.json (under a lock; never raises)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._last_flush = time.monotonic()
            _dirty.discard(self)
        if not pending:
            return
        try:
            with store.locked(self.path.with_suffix(".lock")):
                saved = self.load()
                for key, row in pending.items():
                    old = saved.get(key, [0, 0.0, 0, 0.0])
                    saved[key] = [
                        old[0] + row[0],
                        max(old[1], row[1]),
                        old[2] + row[2],
                        max(old[3], row[3]),
                    ]
                store.atomic_write(self.path, orjson.dumps(saved), durable=False)
        except OSError:
            pass  # derived state: a read-only checkout simply does not learn from use

    def load(self) -> dict[str, list[float]]:
        """The saved counters: key → [retrievals, last retrieved, accesses, last accessed]."""
        try:
            data = orjson.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def retrievals(self) -> Callable[[tuple[str, ...]], int]:
        """A lookup of search recalls for a chunk's keys (the most recalled of its entries)."""
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp != self._saved_stamp:
            self._saved = self.load() if stamp else {}
            self._saved_stamp = stamp
        saved, pending = self._saved, self._pending

        def lookup(keys: tuple[str, ...]) -> int:
            best = 0
            for key in keys:
                n = (saved[key][0] if key in saved else 0) + (pending[key][0] if key in pending else 0)
                best = max(best, int(n))
            return best

        return lookup

    def counts(self) -> dict[str, list[float]]:
        """Saved and buffered counters together."""
        merged = self.load()
        with self._lock:
            for key, row in self._pending.items():
                old = merged.get(key, [0, 0.0, 0, 0.0])
                merged[key] = [old[0] + row[0], max(old[1], row[1]), old[2] + row[2], max(old[3], row[3])]
        return merged


_dirty: set[Usage] = set()
"""Counters with unsaved bumps, kept alive until the atexit flush."""


@atexit.register
def _flush_all() -> None:
    for usage in list(_dirty):
        usage.flush()
