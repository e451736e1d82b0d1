"""The change journal: every write memtree makes to a tracked file, kept so that it can be undone.

``.memtree/changes.jsonl`` holds one JSON object a line, one for each memtree command that wrote
(appended under the root's write lock, so its order is the order the writes landed)::

    {"id": "ch-20261129142701-3fa9c2", "time": "2026-11-29T14:27:01+09:00", "command": "add", "actor": "kim@laptop",
     "summary": "Redis pool은 50으로 올렸다", "ids": ["e-20261129-6f65aaae"], "undoes": [], "commit": null,
     "files": [{"path": "bank/infra/ops.md", "before": "<sha256>", "after": "<sha256>",
                "head": 412, "tail": 0, "was": ""}]}

A file's ``before`` and ``after`` are the SHA-256 of its whole bytes (null: the file did not exist).
What undoing needs is kept small: the bytes the two versions share at the start (``head``) and at
the end (``tail``), cut back to whole lines, and the lines of the old version between them
(``was``: text, ``was_b64`` for bytes that are not UTF-8, or ``was_blob`` naming a copy in
``.memtree/undo/`` when they pass :data:`INLINE_MAX`). Given the file exactly as the write left it
(its hash is ``after``), ``after[:head] + was + after[len - tail:]`` is the old file, byte for byte;
an `add` that appended one line records ``was: ""``.

The journal is written ahead: before each file write, its part (a ``FileChange``, with the
command's ``wal`` token) is appended to ``.memtree/pending.jsonl``; the command's line in
``changes.jsonl`` carries the same ``wal`` and, once it is written, the pending file goes. A writer
killed in between leaves the pending file for the next one to take the write lock
(memtree.notes.recorder.recover): a write that is on disk is journaled, one that is not is dropped.

This module is the journal's format: :class:`Change`, :func:`append`, :func:`load`,
:func:`write_ahead`, :func:`load_pending`. What goes into it is memtree.notes.recorder's (the writes
of one command, grouped as they happen). Deleting ``.memtree/`` loses the undo history, never memory.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from memtree.errors import MemtreeError

STATE_DIR = ".memtree"  # memtree.notes.store.STATE_DIR (store imports the recorder, which imports this)
JOURNAL_FILE = "changes.jsonl"
PENDING_FILE = "pending.jsonl"
UNDO_DIR = "undo"
INLINE_MAX = 16_384
"""Bytes of an old version's changed lines kept in the journal line itself; more go to .memtree/undo/.
Why: one `add` is a few hundred bytes of journal, and a split or a big import does not bloat every
later read of the journal."""
JOURNAL_MAX_BYTES = 8 * 1024 * 1024
"""Past this the journal keeps its newest half (and the undo copies they name): about 12,000 adds."""
UNDO_MAX_BYTES = 64 * 1024 * 1024
"""Past this in .memtree/undo/ the journal keeps its newest changes whose copies fit in half of it. Why:
a new node rewrites tree-index.json from its parent's line to its end, and on a tree of 1,000 notes
(1.3 MB) that old text is hundreds of KB; the copies must not grow without bound."""


@dataclass(frozen=True)
class FileChange:
    """One file's part in a change: its hashes before and after, and what undoing it needs."""

    path: str  # root-relative, POSIX
    before: str | None  # SHA-256 of the old bytes; None: the file did not exist
    after: str | None  # SHA-256 of the new bytes; None: the write removed it
    head: int = 0  # bytes the versions share at the start (whole lines)
    tail: int = 0  # … and at the end
    was: bytes = b""  # the old version's bytes between them (loaded from .memtree/undo/ when kept there)

    def before_bytes(self, current: bytes | None) -> bytes | None:
        """The old version, rebuilt from ``current`` — the file as this write left it (hash ``after``)."""
        if self.before is None:
            return None
        if current is None:
            old = self.was
        else:
            end = len(current) - self.tail
            old = current[: self.head] + self.was + current[end:]
        if digest(old) != self.before:
            raise MemtreeError(
                f"the journal's copy of {self.path} does not rebuild the old version (its undo data is damaged); "
                "nothing was written"
            )
        return old


@dataclass(frozen=True)
class Change:
    """One journaled command: what it touched, when, and which entries."""

    id: str
    time: str  # ISO 8601 with offset
    command: str
    summary: str
    files: tuple[FileChange, ...]
    ids: tuple[str, ...] = ()  # entry ids on the lines it changed
    undoes: tuple[str, ...] = ()  # for an undo: the changes it reverted
    commit: str | None = None  # the git commit made for it (git.autocommit)
    actor: str = ""  # who made it (memtree.notes.recorder.actor); "" in journals older than actors

    @property
    def paths(self) -> tuple[str, ...]:
        """The files it touched, in order, each once."""
        return tuple(dict.fromkeys(f.path for f in self.files))


def digest(data: bytes) -> str:
    """The hash a journal keeps of a file's whole bytes."""
    return hashlib.sha256(data).hexdigest()


def journal_path(root: Path) -> Path:
    """Where a root's journal is."""
    return Path(root) / STATE_DIR / JOURNAL_FILE


def append(root: Path, change: Change, wal: str | None = None) -> None:
    """Append one change (the caller holds the write lock), then drop the pending records it confirms
    (``wal``: their token). A journal that cannot be written is skipped: the write it records has
    happened, and an undo that needs the missing line refuses by hash."""
    with contextlib.suppress(OSError):
        state = Path(root) / STATE_DIR
        state.mkdir(exist_ok=True)
        doc = _to_json(change, state)
        if wal is not None:
            doc["wal"] = wal
        line = orjson.dumps(doc) + b"\n"
        fd = os.open(state / JOURNAL_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _write_all(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if wal is not None:
            settled(root)
        copies = _copies(state) if any("was_blob" in f for f in doc["files"]) else {}
        if size > JOURNAL_MAX_BYTES or sum(copies.values()) > UNDO_MAX_BYTES:
            _trim(Path(root))


def write_ahead(root: Path, wal: str, command: str, time: str | None, f: FileChange, actor: str = "") -> None:
    """Record, before the write, one file write a command is about to make (the caller holds the lock)."""
    with contextlib.suppress(OSError):
        state = Path(root) / STATE_DIR
        state.mkdir(exist_ok=True)
        doc = {"wal": wal, "command": command, "time": time, "actor": actor, "file": _file_json(f, state)}
        fd = os.open(state / PENDING_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _write_all(fd, orjson.dumps(doc) + b"\n")
        finally:
            os.close(fd)


def settled(root: Path | str) -> None:
    """The pending records are journaled (or dropped): remove them."""
    with contextlib.suppress(OSError):
        os.unlink(Path(root) / STATE_DIR / PENDING_FILE)


def has_pending(root: Path | str) -> bool:
    """Whether a killed writer left pending records (one stat)."""
    return os.path.exists(os.path.join(root, STATE_DIR, PENDING_FILE))


@dataclass(frozen=True)
class Pending:
    """One file write recorded ahead: the command's token, name and moment (ISO, or None), and the write."""

    wal: str
    command: str
    time: str | None
    file: FileChange
    actor: str = ""


def load_pending(root: Path) -> tuple[list[Pending], set[str]]:
    """The pending records, in order, and the ``wal`` tokens the journal already confirms."""
    state = Path(root) / STATE_DIR
    try:
        data = (state / PENDING_FILE).read_bytes()
    except OSError:
        return [], set()
    out = []
    for line in data.splitlines():
        try:
            doc = orjson.loads(line)
            f = _file_from_json(doc["file"], state)
            out.append(Pending(str(doc["wal"]), str(doc["command"]), doc.get("time"), f, str(doc.get("actor") or "")))
        except (ValueError, KeyError, TypeError):
            continue  # torn: killed while writing it, before the write it announces
    try:
        journal = journal_path(root).read_bytes()
    except OSError:
        journal = b""
    done = {p.wal for p in out if f'"wal":"{p.wal}"'.encode() in journal}
    return out, done


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def load(root: Path) -> list[Change]:
    """Every journaled change, oldest first (a torn or unreadable line is skipped)."""
    try:
        data = journal_path(root).read_bytes()
    except OSError:
        return []
    out = []
    state = Path(root) / STATE_DIR
    for line in data.splitlines():
        try:
            out.append(_from_json(orjson.loads(line), state))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _to_json(change: Change, state: Path) -> dict[str, Any]:
    return {
        "id": change.id,
        "time": change.time,
        "command": change.command,
        "summary": change.summary,
        "ids": list(change.ids),
        "undoes": list(change.undoes),
        "commit": change.commit,
        "actor": change.actor,
        "files": [_file_json(f, state) for f in change.files],
    }


def _file_json(f: FileChange, state: Path) -> dict[str, Any]:
    doc: dict[str, Any] = {"path": f.path, "before": f.before, "after": f.after, "head": f.head, "tail": f.tail}
    if f.before is None:
        return doc
    if len(f.was) > INLINE_MAX:
        name = digest(f.was)
        blob = state / UNDO_DIR / name
        if not blob.exists():
            blob.parent.mkdir(exist_ok=True)
            tmp = blob.with_name(f".{name}.tmp")
            tmp.write_bytes(f.was)
            os.replace(tmp, blob)
        doc["was_blob"] = name
        return doc
    try:
        doc["was"] = f.was.decode("utf-8")
    except UnicodeDecodeError:
        doc["was_b64"] = base64.b64encode(f.was).decode("ascii")
    return doc


def _from_json(doc: dict[str, Any], state: Path) -> Change:
    files = [_file_from_json(f, state) for f in doc["files"]]
    return Change(
        str(doc["id"]),
        str(doc["time"]),
        str(doc["command"]),
        str(doc.get("summary", "")),
        tuple(files),
        tuple(doc.get("ids", ())),
        tuple(doc.get("undoes", ())),
        doc.get("commit"),
        str(doc.get("actor") or ""),
    )


def _file_from_json(f: dict[str, Any], state: Path) -> FileChange:
    if "was_blob" in f:
        was = _blob(state, str(f["was_blob"]), str(f["path"]))
    elif "was_b64" in f:
        was = base64.b64decode(f["was_b64"])
    else:
        was = str(f.get("was", "")).encode("utf-8")
    return FileChange(str(f["path"]), f["before"], f["after"], int(f["head"]), int(f["tail"]), was)


def _blob(state: Path, name: str, path: str) -> bytes:
    if not re.fullmatch(r"[0-9a-f]{64}", name):
        raise ValueError(f"bad undo copy name for {path}")
    try:
        return (state / UNDO_DIR / name).read_bytes()
    except OSError:
        return b""  # gone: FileChange.before_bytes then says the undo data is damaged


def _copies(state: Path) -> dict[str, int]:
    """The undo copies in .memtree/undo/: name → bytes."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError), os.scandir(state / UNDO_DIR) as found:
        for entry in found:
            with contextlib.suppress(OSError):
                out[entry.name] = entry.stat().st_size
    return out


def _trim(root: Path) -> None:
    """Keep the newest changes that fit in half the journal's limit and half the copies' limit, and
    only the undo copies they still name."""
    path = journal_path(root)
    lines = path.read_bytes().splitlines(keepends=True)
    copies = _copies(Path(root) / STATE_DIR)
    kept: list[bytes] = []
    size = copied = 0
    for line in reversed(lines):
        size += len(line)
        copied += sum(copies.get(n.decode(), 0) for n in re.findall(rb'"was_blob":"([0-9a-f]{64})"', line))
        if size > JOURNAL_MAX_BYTES // 2 or copied > UNDO_MAX_BYTES // 2:
            break
        kept.append(line)
    kept.reverse()
    tmp = path.with_name(f".{JOURNAL_FILE}.tmp")
    tmp.write_bytes(b"".join(kept))
    os.replace(tmp, path)
    named = set(re.findall(rb'"was_blob":"([0-9a-f]{64})"', b"".join(kept)))
    undo = root / STATE_DIR / UNDO_DIR
    with contextlib.suppress(OSError):
        for blob in undo.iterdir():
            if blob.name.encode() not in named:
                blob.unlink()


def kept_texts(root: Path) -> Iterator[tuple[str, str]]:
    """(change id, text) for every summary and old note text the journal keeps (for ``memtree check``)."""
    for change in load(root):
        yield change.id, change.summary
        for f in change.files:
            if f.path.endswith(_NOTE_SUFFIXES) and f.was:
                yield change.id, f.was.decode("utf-8", "replace")


def redact_kept(root: Path, redact: Callable[[str], str]) -> int:
    """Rewrite the journal with ``redact`` applied to each summary and old note text; the changes rewritten.

    For a secret a person removed from a note after memtree journaled a copy (a split before
    memtree redacted what it keeps). The caller holds the write lock. A rewritten change whose note
    is still as it left it undoes to the redacted text; an older one is refused by hash, as a hand
    edit would make it anyway.
    """
    path = journal_path(root)
    state = Path(root) / STATE_DIR
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except OSError:
        return 0
    out, rewritten = [], 0
    for line in lines:
        try:
            doc = orjson.loads(line)
            changed = _redact_doc(Path(root), state, doc, redact)
        except (ValueError, KeyError, TypeError):
            out.append(line)
            continue
        rewritten += changed
        out.append(orjson.dumps(doc) + b"\n" if changed else line)
    if rewritten:
        tmp = path.with_name(f".{JOURNAL_FILE}.tmp")
        tmp.write_bytes(b"".join(out))
        os.replace(tmp, path)
        named = set(re.findall(rb'"was_blob":"([0-9a-f]{64})"', b"".join(out)))
        for name in _copies(state):
            if name.encode() not in named:
                with contextlib.suppress(OSError):
                    (state / UNDO_DIR / name).unlink()
    return rewritten


_NOTE_SUFFIXES = (".md", ".markdown")


def _redact_doc(root: Path, state: Path, doc: dict[str, Any], redact: Callable[[str], str]) -> bool:
    """Redact one journal line's kept texts in place; whether anything changed."""
    changed = False
    summary = redact(str(doc.get("summary", "")))
    if summary != doc.get("summary", ""):
        doc["summary"], changed = summary, True
    for f in doc["files"]:
        if not str(f["path"]).endswith(_NOTE_SUFFIXES) or f.get("before") is None:
            continue
        if "was" in f:
            old = str(f["was"]).encode("utf-8")
        elif "was_blob" in f:
            old = _blob(state, str(f["was_blob"]), str(f["path"]))
        else:
            continue
        try:
            clean = redact(old.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            continue
        if clean == old:
            continue
        changed = True
        try:
            current: bytes | None = (root / str(f["path"])).read_bytes()
        except OSError:
            current = None
        if current is not None and digest(current) == f["after"]:
            f["before"] = digest(current[: f["head"]] + clean + current[len(current) - f["tail"] :])
        head, tail = int(f["head"]), int(f["tail"])
        f.pop("was", None)
        f.pop("was_blob", None)
        f.update(_file_json(FileChange(str(f["path"]), f["before"], f["after"], head, tail, clean), state))
    return changed
