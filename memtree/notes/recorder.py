"""Recording a command's writes: what memtree.notes.store reports, grouped into one journaled change.

memtree.notes.store calls :func:`saving` right before every save and removal of a tracked file and
:func:`saved` right after, with the file's bytes before and after: the first records the write
ahead (memtree.notes.changes.write_ahead), so that a writer killed before its journal line leaves
what :func:`recover` needs to journal the writes that landed. A command opens :func:`recording`
(store.recording takes the write lock with it) and all its writes become one
:class:`memtree.notes.changes.Change` when it closes;
a write made outside any recording is journaled on its own, as ``write``. With ``autocommit`` the
change is committed to git (memtree.notes.git) before its line is appended.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from memtree.notes import changes
from memtree.notes.changes import Change, FileChange, append, digest

ACTOR_ENV = "MEMTREE_ACTOR"
"""Who is writing, when the program does not say (MemTree(actor=...)): an agent session's name, say."""
ACTOR_MAX_CHARS = 80
SUMMARY_CHARS = 60
"""A change's summary (and its git commit's message) gives this many characters of what it wrote."""
_META_ID = re.compile(r"<!--[ \t]*memtree:[^\n]*?(?:^|[:;\s])id=([^;\s>]+)")
_META = re.compile(r"[ \t]*<!--[ \t]*memtree:[^\n]*?-->")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")


@dataclass
class Recording:
    """The writes of one command, as they happen: each file's versions in order."""

    root: str  # real path
    command: str
    now: datetime | None
    summary: str = ""
    undoes: tuple[str, ...] = ()
    autocommit: bool = False
    ids: list[str] = field(default_factory=list)  # entry ids the command names itself (added to those found)
    steps: dict[str, list[list[bytes | None]]] = field(default_factory=dict)  # path → [[before, after], …]
    on_first_write: Callable[[], None] | None = None
    change: Change | None = None  # what was journaled, once the recording closed
    actor: str = ""
    wal: str = field(default_factory=lambda: secrets.token_hex(8))  # ties its pending records to its line
    ahead: bool = False  # whether it recorded a write ahead

    def saving(self, rel: str, before: bytes | None, after: bytes | None) -> None:
        """A file is about to go from ``before`` to ``after``: record it ahead (the lock is taken first)."""
        if self.on_first_write is not None:
            pin, self.on_first_write = self.on_first_write, None
            pin()
        self.ahead = True
        moment = None if self.now is None else self.now.isoformat(timespec="seconds")
        f = _file_change(rel, before, after)
        changes.write_ahead(Path(self.root), self.wal, self.command, moment, f, self.actor)

    def saved(self, rel: str, before: bytes | None, after: bytes | None) -> None:
        """A file went from ``before`` to ``after`` (None: absent)."""
        if self.on_first_write is not None:
            pin, self.on_first_write = self.on_first_write, None
            pin()
        steps = self.steps.setdefault(rel, [])
        if steps and steps[-1][1] == before:
            steps[-1][1] = after  # the same command writing the file again: one step
        else:
            # someone else changed it between two of this command's writes: kept apart, so an undo
            # finds their change in the way and refuses rather than drops it
            steps.append([before, after])

    def finish(self) -> Change | None:
        """The change to journal (None when nothing ended up different)."""
        files: list[FileChange] = []
        ids: list[str] = list(self.ids)
        texts: list[bytes] = []
        for rel, steps in self.steps.items():
            for before, after in steps:
                if before == after:
                    continue
                f = _file_change(rel, before, after)
                files.append(f)
                if rel.endswith((".md", ".markdown")):
                    new = b"" if after is None else after[f.head : len(after) - f.tail]
                    ids += _ids(f.was) + _ids(new)
                    texts += [new, f.was]
        if not files:
            return None
        moment = self.now or _written_at(self.root, files)
        summary = _one_line(self.summary or _first_line(texts))
        for redact in _redactors:
            summary = redact(summary)
        return Change(
            new_id(moment),
            moment.isoformat(timespec="seconds"),
            self.command,
            summary[:SUMMARY_CHARS].rstrip(),
            tuple(files),
            tuple(dict.fromkeys(ids)),
            self.undoes,
            actor=self.actor,
        )


def _file_change(rel: str, before: bytes | None, after: bytes | None) -> FileChange:
    head, tail = _span(before or b"", after or b"") if before is not None and after is not None else (0, 0)
    was = b"" if before is None else before[head : len(before) - tail]
    was, old = _kept(rel, before, head, tail, was)
    return FileChange(rel, old, _hash(after), head, tail, was)


_redactors: list[Callable[[str], str]] = []


def redact_with(redact: Callable[[str], str]) -> None:
    """Redact the note text the journal keeps (old lines for undo, the summary) with ``redact``.

    Why a hook: the sanitizer is the write layer's (memtree.write.sanitize registers it), and the
    journal must never hold a secret a person wrote by hand and memtree moved (a split copies a whole
    note's old text): `check` tells them to remove it from the note, and the journal would keep it.
    """
    if redact not in _redactors:
        _redactors.append(redact)


def _kept(rel: str, before: bytes | None, head: int, tail: int, was: bytes) -> tuple[bytes, str | None]:
    """The old lines a note's change keeps, redacted, and the hash of the old version they rebuild.

    Undo then restores the note with ``[REDACTED:kind]`` where the secret was, and checks that by hash.
    """
    if before is None or not was or not _redactors or not rel.endswith((".md", ".markdown")):
        return was, _hash(before)
    try:
        text = was.decode("utf-8")
    except UnicodeDecodeError:
        return was, _hash(before)
    for redact in _redactors:
        text = redact(text)
    clean = text.encode("utf-8")
    if clean == was:
        return was, _hash(before)
    return clean, digest(before[:head] + clean + before[len(before) - tail :])


_local = threading.local()


def _open_recordings() -> dict[str, Recording]:
    if not hasattr(_local, "open"):
        _local.open = {}
    return _local.open  # type: ignore[no-any-return]


@contextlib.contextmanager
def recording(
    root: Path | str,
    command: str,
    now: datetime | None,
    *,
    summary: str = "",
    undoes: tuple[str, ...] = (),
    autocommit: bool = False,
    on_first_write: Callable[[], None] | None = None,
    actor: str | None = None,
) -> Iterator[Recording]:
    """Group every tracked-file write made inside (in this thread) into one journaled change.

    A recording opened inside another for the same root joins it: `consolidate`'s recall sync is
    part of the consolidate. When it closes, the change is appended to the journal and, with
    ``autocommit``, committed to git (memtree.notes.git). Writes made before an exception are
    journaled too: they are on disk. ``on_first_write`` runs at the first write (store.recording
    takes the write lock there and holds it until the journal line is written).
    """
    key = os.path.realpath(root)
    open_ = _open_recordings()
    outer = open_.get(key)
    if outer is not None:
        if summary and not outer.summary:
            outer.summary = summary
        yield outer
        return
    rec = Recording(key, command, now, summary, undoes, autocommit, on_first_write=on_first_write, actor=actor or who())
    open_[key] = rec
    try:
        yield rec
    finally:
        del open_[key]
        rec.change = rec.finish()
        if rec.change is not None:
            if autocommit:
                from memtree.notes import git

                made = git.autocommit(Path(key), rec.change.command, rec.change.summary, rec.change.paths)
                rec.change = replace(rec.change, commit=made)
            append(Path(key), rec.change, rec.wal)
        elif rec.ahead:
            changes.settled(key)  # its writes netted out to nothing


def saving(root: Path | str, path: Path | str, before: bytes | None, after: bytes | None) -> None:
    """memtree.notes.store is about to write ``path``: record it ahead, in the open recording or alone."""
    key = os.path.realpath(root)
    rel = Path(os.path.relpath(path, key)).as_posix()
    rec = _open_recordings().get(key)
    if rec is None:
        rec = Recording(key, "write", None, actor=who())
        _alone()[key] = rec
    rec.saving(rel, before, after)


def saved(root: Path | str, path: Path | str, before: bytes | None, after: bytes | None) -> None:
    """memtree.notes.store wrote ``path`` (a real path inside ``root``): into the open recording, or journaled alone."""
    key = os.path.realpath(root)
    rel = Path(os.path.relpath(path, key)).as_posix()
    rec = _open_recordings().get(key)
    if rec is not None:
        rec.saved(rel, before, after)
        return
    alone = _alone().pop(key, None) or Recording(key, "write", None, actor=who())
    alone.saved(rel, before, after)
    change = alone.finish()
    if change is not None:
        append(Path(key), change, alone.wal)
    elif alone.ahead:
        changes.settled(key)


def _alone() -> dict[str, Recording]:
    """The write made outside any recording, between its :func:`saving` and its :func:`saved`."""
    if not hasattr(_local, "alone"):
        _local.alone = {}
    return _local.alone  # type: ignore[no-any-return]


def recover(root: Path | str) -> Change | None:
    """Journal the writes a killed writer recorded ahead and made, drop those it did not make (call it
    under the write lock, before anything is written); returns the change journaled, if any.

    A file's pending writes are kept up to the last one whose result is the file as it is now; none
    is: its write did not land (or a person changed the file since: an undo then refuses by hash).
    """
    key = os.path.realpath(root)
    pending, done = changes.load_pending(Path(key))
    pending = [p for p in pending if p.wal not in done]
    if not pending:
        changes.settled(key)
        return None
    first = pending[0]
    pending = [p for p in pending if p.wal == first.wal]  # the lock is held by one command at a time
    kept: list[FileChange] = []
    ids: list[str] = []
    for rel in dict.fromkeys(p.file.path for p in pending):
        steps = [p.file for p in pending if p.file.path == rel]
        try:
            with open(os.path.join(key, rel), "rb") as fh:
                current: bytes | None = fh.read()
        except OSError:
            current = None
        now_hash = _hash(current)
        last = max((i for i, f in enumerate(steps) if f.after == now_hash), default=-1)
        kept += steps[: last + 1]
        if last >= 0 and current is not None and rel.endswith((".md", ".markdown")):
            f = steps[last]
            ids += _ids(current[f.head : len(current) - f.tail]) + [i for s in steps[: last + 1] for i in _ids(s.was)]
    if not kept:
        changes.settled(key)
        return None
    try:
        moment = datetime.fromisoformat(first.time) if first.time else _written_at(key, kept)
    except ValueError:
        moment = _written_at(key, kept)
    change = Change(
        new_id(moment),
        moment.isoformat(timespec="seconds"),
        first.command,
        "recovered: the writer was killed before journaling it",
        tuple(kept),
        tuple(dict.fromkeys(ids)),
        actor=first.actor,
    )
    append(Path(key), change, first.wal)
    return change


def who(actor: str | None = None) -> str:
    """The actor a change is recorded under: ``actor`` when the program names one, else $MEMTREE_ACTOR,
    else ``user@host``. `undo` takes the caller's own changes by it."""
    named = (actor or os.environ.get(ACTOR_ENV, "")).strip()
    if not named:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "someone"
        named = f"{user}@{socket.gethostname()}"
    return _one_line(named)[:ACTOR_MAX_CHARS]


def new_id(now: datetime) -> str:
    """A change id: the moment to the second and 6 random hex digits (``ch-20261129142701-3fa9c2``)."""
    return f"ch-{now:%Y%m%d%H%M%S}-{secrets.token_hex(3)}"


def _hash(data: bytes | None) -> str | None:
    return None if data is None else digest(data)


_BLOCK = 512


def _span(before: bytes, after: bytes) -> tuple[int, int]:
    """(head, tail): the bytes both versions share at the start and at the end, cut back to whole lines."""
    n = min(len(before), len(after))
    head = _common_prefix(before, after, n)
    head = before.rfind(b"\n", 0, head) + 1  # the start of the line the first difference is on
    tail = _common_suffix(before, after, n - head)
    if tail:
        start = len(before) - tail
        if start > 0 and before[start - 1 : start] != b"\n":
            nl = before.find(b"\n", start)
            tail = 0 if nl < 0 else len(before) - (nl + 1)
    return head, tail


def _common_prefix(a: bytes, b: bytes, n: int) -> int:
    i = 0
    while i < n:
        j = min(i + _BLOCK, n)
        if a[i:j] != b[i:j]:
            while a[i] == b[i]:
                i += 1
            return i
        i = j
    return n


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    la, lb = len(a), len(b)
    k = 0
    while k < limit:
        m = min(k + _BLOCK, limit)
        if a[la - m : la - k] != b[lb - m : lb - k]:
            while a[la - k - 1] == b[lb - k - 1]:
                k += 1
            return k
        k = m
    return limit


def _ids(data: bytes) -> list[str]:
    if b"memtree:" not in data:
        return []
    return _META_ID.findall(data.decode("utf-8", "replace"))


def _first_line(texts: list[bytes]) -> str:
    """The first line of entry text among the changed lines (metadata, list marker and headings left out)."""
    for data in texts:
        for line in data.decode("utf-8", "replace").split("\n"):
            words = _MARKER.sub("", _META.sub("", line)).strip()
            if words and not words.startswith(("#", "<!--", "|", "```")):
                return words
    return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _written_at(root: str, files: list[FileChange]) -> datetime:
    """When a write made outside any command happened: its file's modification time (no clock read here)."""
    for f in files:
        full = os.path.join(root, f.path)
        for where in (full, os.path.dirname(full), root):
            with contextlib.suppress(OSError):
                return datetime.fromtimestamp(os.stat(where).st_mtime).astimezone()
    return datetime.fromtimestamp(0).astimezone()
