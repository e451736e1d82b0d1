"""A split's intent, written ahead: new notes that take over part of one note, all or nothing.

A split writes its new notes first and the note they came from last. Killed in between, the source
still holds everything and the new notes repeat it. So before its first write a split records what
it is about to do in the root (``.memtree-split.json``, not in ``.memtree/``, which a person may
delete at any moment)::

    {"source": "bank/a/x.md", "before": "<sha256>", "before_len": 20480,
     "after": "<sha256>", "after_len": 1200,
     "created": [{"path": "bank/a/x/intro.md", "sha": "<sha256>"}, ...]}

and removes the record once the source is rewritten. A record found by the next writer to take the
root's lock (memtree.notes.store) is settled before anything else is written:

- the source holds its new version (its first ``after_len`` bytes hash to ``after``: lines may have
  been appended since): the split completed; the record goes;
- otherwise the split is rolled back: each new note still exactly as written, and whose bytes the
  source still holds, is removed (so nothing is lost) — the next split or `check --fix` cuts the
  source again.

This module reads and writes the record with plain file calls (never through the journal): a
rolled-back note's journal record, written ahead too, is then dropped because its write is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

INTENT_FILE = ".memtree-split.json"


@dataclass(frozen=True)
class Created:
    """A note the split creates: root-relative path and the SHA-256 of its bytes."""

    path: str
    sha: str


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def intent_path(root: Path | str) -> Path:
    """Where a root's split intent is kept."""
    return Path(root) / INTENT_FILE


def begin(root: Path, source: str, before: bytes, after: bytes, created: list[tuple[str, bytes]]) -> None:
    """Record, durably, that ``created`` are about to be written and ``source`` then replaced by ``after``."""
    doc = {
        "source": source,
        "before": _digest(before),
        "before_len": len(before),
        "after": _digest(after),
        "after_len": len(after),
        "created": [{"path": p, "sha": _digest(data)} for p, data in created],
    }
    path = intent_path(root)
    tmp = path.with_name(f"{INTENT_FILE}.memtree-{os.getpid()}.tmp")  # swept by `check --fix` if left
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, orjson.dumps(doc))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def end(root: Path) -> None:
    """The split is over (done, or failed having removed what it wrote): forget its intent."""
    with contextlib.suppress(OSError):
        os.unlink(intent_path(root))


def pending(root: Path | str) -> bool:
    """Whether a split's intent is waiting to be settled (one stat)."""
    return os.path.lexists(intent_path(root))


def recover(root: Path) -> list[str]:
    """Settle an interrupted split (call it under the write lock); returns what was done, one line each."""
    path = intent_path(root)
    try:
        doc = orjson.loads(path.read_bytes())
        source = str(doc["source"])
        created = [Created(str(c["path"]), str(c["sha"])) for c in doc["created"]]
        after, after_len = str(doc["after"]), int(doc["after_len"])
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError):
        end(root)  # a torn record: the split had not started writing (the record is written first)
        return []
    real = os.path.realpath(root)
    _, current = _read(real, source)
    if current is not None and _digest(current[:after_len]) == after:
        end(root)
        return [f"completed the interrupted split of {source}"]
    removed = []
    for c in created:
        full, data = _read(real, c.path)
        # Why both: a note changed since is someone's, and one whose bytes the source no longer
        # holds would take them with it
        if data is not None and _digest(data) == c.sha and current is not None and data in current:
            with contextlib.suppress(OSError):
                os.unlink(full)
                removed.append(c.path)
                _prune(real, os.path.dirname(full))
    end(root)
    if not removed:
        return [f"the interrupted split of {source} had written nothing"]
    return [f"rolled back the interrupted split of {source}: removed {len(removed)} copied note(s)"]


def _read(real_root: str, rel: str) -> tuple[str, bytes | None]:
    """A file's real path and bytes; None for one missing or outside the root."""
    full = os.path.realpath(os.path.join(real_root, rel))
    if not full.startswith(real_root.rstrip(os.sep) + os.sep):
        return full, None  # never read or remove anything outside the root, whatever the record says
    try:
        with open(full, "rb") as f:
            return full, f.read()
    except OSError:
        return full, None


def _prune(real_root: str, folder: str) -> None:
    """Remove the folder a rolled-back split created, if nothing else is in it."""
    if os.path.dirname(folder) != real_root and folder.startswith(real_root + os.sep):
        with contextlib.suppress(OSError):
            os.rmdir(folder)
