"""The only file I/O for notes: tier walking, containment, safe reads, guarded atomic writes, the lock.

Four promises live here, and every module that touches a tracked file keeps them by calling in:

- **Nothing outside the root.** :func:`inside` resolves a path's real location (symlinks followed)
  and refuses one that leaves the root; :func:`walk` skips, with a warning, a symlink leading out.
- **Never replace bytes memtree did not see.** A file is read into a :class:`Snapshot`;
  :func:`save` writes the new bytes to a temp file, compares the file on disk with the snapshot
  right before the rename and raises :class:`ChangedOnDisk` when a person or a script changed it
  meanwhile (:func:`rewrite` then retries on the new content). After the rename the replaced file
  is checked once more through a descriptor opened before it, so an append that landed in the
  instant between the compare and the rename is put back and retried too.
- **One writer at a time, whatever is deleted.** The write lock is an flock on the root folder
  itself, not a file in ``.memtree/``, so ``rm -rf .memtree`` while writers run cannot split them.
- **Crash leftovers are swept.** Temp files are ``.NAME.memtree-XXXX.tmp``; each write sweeps its
  folder's stale ones under the lock, and `memtree check` sweeps the whole root.
- **Every write is journaled.** :func:`save` and :func:`remove` report the bytes a file had and has
  to memtree.notes.recorder, into the command's :func:`recording` (or alone), so it can be undone.

Why one module over 300 lines: the five promises share the lock, the containment check and the
snapshot compare; split apart, a caller could take one path without the others.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from memtree.errors import BadName, ChangedOnDisk, MemtreeError, OutsideRoot, ReadOnlyRoot
from memtree.notes import changes, intent, recorder

TIERS = ("recall", "bank", "memory")
"""Search order: the hot buffer first, curated knowledge next, raw logs only when asked."""
NOTE_SUFFIXES = (".md", ".markdown")
STATE_DIR = ".memtree"
ARCHIVE_DIR = "_archive"
TEMP_MARK = ".memtree-"
"""Every temp file memtree writes is named ``.NAME.memtree-XXXX.tmp`` (crash leftovers are swept)."""
REWRITE_ATTEMPTS = 20
"""How often :func:`rewrite` re-reads a note that keeps changing under it before it gives up."""


class FileStat(NamedTuple):
    """A note on disk: its root-relative POSIX path, tier, mtime in ns and size in bytes."""

    path: str
    tier: str
    mtime_ns: int
    size: int


stat_of = tuple.__new__
"""``stat_of(FileStat, (path, tier, mtime_ns, size))``: a FileStat without the NamedTuple's Python-level
``__new__`` (a quarter of the cost, for the 5,000 notes every refresh walks)."""

_IGNORED_PREFIXES = (".", "~", "#")
_IGNORED_SUFFIXES = ("~", ".swp", ".swo", ".tmp", ".bak", ".part")


def ignored(name: str) -> bool:
    """Hidden files, editor swap/backup/temp files and the archive are never indexed."""
    return name.startswith(_IGNORED_PREFIXES) or name.endswith(_IGNORED_SUFFIXES) or name == ARCHIVE_DIR


def note_path(rel: str) -> bool:
    """Whether ``rel`` (root-relative, POSIX) has the shape of a note :func:`walk` lists: in a tier,
    with a note suffix, no part empty, ``.``, ``..``, hidden or otherwise ignored. Only the name is
    looked at: where a symlink on the way leads is the caller's to check."""
    parts = rel.split("/")
    return (
        len(parts) > 1
        and parts[0] in TIERS
        and rel.endswith(NOTE_SUFFIXES)
        and not any(p in ("", ".", "..") or ignored(p) for p in parts)
    )


TRACKED_FILES = ("tree-index.json", "conflicts.json", "memtree.yaml")
"""The root's files memtree writes besides notes (memtree.notes.tree, memtree.write.conflicts, memtree.config)."""


def memtree_writes(rel: str) -> bool:
    """Whether memtree ever writes the root-relative ``rel``: a tier note (bank/_archive/'s too) or one of
    TRACKED_FILES. Why: a path read from ``.memtree/`` (the change journal undo follows) may be planted,
    and must not make memtree rewrite ``.git/hooks/pre-commit`` or a dotfile."""
    return rel in TRACKED_FILES or _served_name(rel)


def served(root: Path, rel: str) -> Path | None:
    """The real file of the tier note ``rel`` names, or None: the one rule of what memtree serves.

    Every read verb (get, the MCP resources, the viewer's API, Claude's memory tool) and
    :func:`walk` (so search, context and export) serve a file only when its name is a note's
    (:func:`note_path`, or a note of bank/_archive/) and its real location, symlinks followed, is
    a Markdown file of the root with nothing hidden on its way. Why the real location:
    ``bank/x.md → ../.memtree/serve.token`` would otherwise serve the daemon's token; never
    ``.git/config``, ``memtree.yaml``, ``.memtree/``, a hidden file, or a file that is not Markdown.
    """
    if not _served_name(rel):
        return None
    base = os.path.realpath(root)
    try:
        real = os.path.realpath(os.path.join(base, rel), strict=True)
    except (OSError, ValueError):  # missing, a loop, a NUL byte, a name too long
        return None
    if not _served_real(base, real) or not os.path.isfile(real):
        return None
    return Path(real)


def _served_name(rel: str) -> bool:
    """Whether ``rel`` names a note of the tiers or of bank/_archive/ (forgotten entries, kept)."""
    archive = f"bank/{ARCHIVE_DIR}/"
    return note_path(f"bank/{rel[len(archive) :]}" if rel.startswith(archive) else rel)


def _served_real(base: str, real: str, folder: bool = False) -> bool:
    """Whether ``real``, where a symlink of a tier leads, may be served: inside the real root ``base``,
    nothing hidden or ignored on its way (``.memtree/``, ``.git/``), and a note's suffix unless a folder.

    Why not only the tiers: a folder of notes elsewhere in the root linked into bank/ is the user's own
    choice (``bank/shared → ../shared``); the daemon's token, git's config and the settings never are.
    """
    if not _within(base, real) or real == base:
        return False
    parts = os.path.relpath(real, base).split(os.sep)
    if any(p.startswith(_IGNORED_PREFIXES) or p.endswith(_IGNORED_SUFFIXES) for p in parts):
        return False
    return folder or parts[-1].endswith(NOTE_SUFFIXES)


class Listings:
    """Folders' notes and subfolders as :func:`walk` last listed them, reused while a folder is unchanged.

    Why: a refresh stats every note to see edits, but listing every folder again as well cost as
    much (1,000 folders of 5,000 notes). Each folder is stat'ed anyway; one whose ctime, mtime, inode
    and device are those it had when listed is not listed again. Only a listing taken once the folder
    had been still since ``quiet_before`` is kept (git's "racily clean" rule): any later change to it
    then moves its ctime, which no tool can set back (rsync restores mtimes, not ctimes). A folder
    holding a symlink, or one whose listing met an error, is always listed afresh.
    """

    def __init__(self) -> None:
        self.quiet_before = 0
        """ns since the epoch: set by the caller before each walk (``now - RACY_NS``)."""
        self._folders: dict[str, tuple[tuple[int, int, int, int], list[tuple[str, str, bool]]]] = {}

    def get(self, folder: str, st: os.stat_result) -> list[tuple[str, str, bool]] | None:
        """``folder``'s entries (relative name, path, is a folder), if it is unchanged since listed."""
        known = self._folders.get(folder)
        if known is None or known[0] != (st.st_ctime_ns, st.st_mtime_ns, st.st_ino, st.st_dev):
            return None
        return known[1]

    def put(self, folder: str, st: os.stat_result, entries: list[tuple[str, str, bool]] | None) -> None:
        """Keep ``folder``'s entries, listed after ``st`` was taken, if it had been still long enough
        (None: forget it, it is listed afresh each time)."""
        if entries is not None and st.st_ctime_ns < self.quiet_before and st.st_mtime_ns < self.quiet_before:
            self._folders[folder] = ((st.st_ctime_ns, st.st_mtime_ns, st.st_ino, st.st_dev), entries)
        else:
            self._folders.pop(folder, None)


def walk(
    root: Path, tiers: tuple[str, ...] = TIERS, listings: Listings | None = None
) -> tuple[list[FileStat], list[str]]:
    """All notes under the given tiers, sorted by path, and warnings for what was skipped.

    Symlinks are followed, but a directory already visited (a symlink loop) is skipped with a
    warning naming it rather than recursed into forever. ``listings`` spares listing the folders
    that have not changed since the last walk given the same :class:`Listings` (every note is
    still stat'ed).
    """
    found: list[FileStat] = []
    warnings: list[str] = []
    base = os.path.realpath(root)
    for tier in tiers:
        top = os.path.join(root, tier)
        if not os.path.isdir(top):
            continue
        real_top = os.path.realpath(top)
        if not _within(base, real_top):
            warnings.append(f"{tier}: skipped, a symlink leading outside the memory root")
            continue
        if real_top != os.path.join(base, tier) and not _served_real(base, real_top, folder=True):
            warnings.append(f"{tier}: skipped, a symlink to a hidden folder")
            continue
        seen: set[tuple[int, int]] = set()
        stack = [(top, tier)]
        while stack:
            folder, rel = stack.pop()
            try:
                st = os.stat(folder)
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    warnings.append(f"{rel}: skipped, a symlink loop leads back to a folder already indexed")
                    continue
                seen.add(key)
                known = None if listings is None else listings.get(folder, st)
                entries = list(os.scandir(folder)) if known is None else []
            except OSError as exc:
                warnings.append(f"{rel}: skipped ({exc.strerror or exc})")
                continue
            if known is not None:
                for child, path, is_dir in known:
                    if is_dir:
                        stack.append((path, child))
                        continue
                    try:
                        est = os.stat(path)
                    except OSError as exc:
                        warnings.append(f"{child}: skipped ({exc.strerror or exc})")
                        continue
                    found.append(stat_of(FileStat, (child, tier, est.st_mtime_ns, est.st_size)))
                continue
            listed: list[tuple[str, str, bool]] | None = []  # None: this folder is listed afresh each time
            for entry in entries:
                name = entry.name
                if name.startswith(_IGNORED_PREFIXES) or name.endswith(_IGNORED_SUFFIXES) or name == ARCHIVE_DIR:
                    continue
                child = f"{rel}/{name}"
                try:
                    if entry.is_symlink():
                        listed = None
                        # Why: a link to /etc/passwd or /usr must never be read, listed or written through
                        real = os.path.realpath(entry.path)
                        if not _within(base, real):
                            warnings.append(f"{child}: skipped, a symlink leading outside the memory root")
                            continue
                        # nor one to .memtree/serve.token, .git/config or memtree.yaml (:func:`served`)
                        if not _served_real(base, real, os.path.isdir(real)):
                            warnings.append(f"{child}: skipped, a symlink to a hidden file or one that is not a note")
                            continue
                    if entry.is_dir():
                        stack.append((entry.path, child))
                        if listed is not None:
                            listed.append((child, entry.path, True))
                    elif name.endswith(NOTE_SUFFIXES) and entry.is_file():
                        est = entry.stat()
                        found.append(stat_of(FileStat, (child, tier, est.st_mtime_ns, est.st_size)))
                        if listed is not None:
                            listed.append((child, entry.path, False))
                except OSError as exc:
                    listed = None
                    warnings.append(f"{child}: skipped ({exc.strerror or exc})")
            if listings is not None:
                listings.put(folder, st, listed)
    found.sort(key=itemgetter(0))  # by path
    return found, warnings


def read_upto(path: str | os.PathLike[str], limit: int, expect: int) -> bytes:
    """The first ``limit`` bytes of a file (all of it when shorter); ``expect``, its size when last
    stat'ed, sizes the first read.

    Why not ``open(path, "rb").read(limit)``: read(n) allocates n bytes before reading (~20 µs a note
    with the 5 MB ``index.max_note_bytes``) and the buffered file object costs about as much again,
    for each of the 5,000 notes an index build reads.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        pieces: list[bytes] = []
        got, want = 0, min(limit, expect + 1)
        while got < limit:
            piece = os.read(fd, want)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
            want = limit - got
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
    finally:
        os.close(fd)


def read_note(path: str | os.PathLike[str]) -> str:
    """A note's text; raises UnicodeDecodeError for binary or non-UTF-8 content."""
    with open(path, "rb") as f:
        return decode_note(f.read())


def decode_note(data: bytes) -> str:
    """A note's bytes as text (a leading BOM dropped); UnicodeDecodeError for binary or non-UTF-8."""
    if b"\x00" in data[:8192]:
        raise UnicodeDecodeError("utf-8", data[:1], 0, 1, "binary content (NUL bytes)")
    text = data.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file in the same folder, fsync, rename.

    ``durable=False`` skips the fsyncs: readers still never see a partial file (rename is
    atomic), only a power cut may lose the write — right for rebuildable state in .memtree/.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _temp_beside(path: Path) -> tuple[int, str]:
    """A temp file next to ``path`` (``.NAME.memtree-XXXX.tmp``) with the mode ``path`` has, or a new file's."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes 0600 files: keep the replaced file's mode, or the usual one for a new file
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fd, tmp


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if needed) for the duration."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # Windows: no flock; atomic replace still keeps files whole
            pass
        yield
    finally:
        os.close(fd)


_held = threading.local()


def _depth(root: Path) -> dict[str, int]:
    if not hasattr(_held, "roots"):
        _held.roots = {}
        _held.fds = {}
    return _held.roots


def holding(root: Path) -> bool:
    """Whether this thread holds ``root``'s write lock."""
    return _depth(root).get(os.path.realpath(root), 0) > 0


def _acquire(root: Path) -> None:
    """Take (or take once more, in this thread) the root's write lock."""
    key = os.path.realpath(root)
    depth = _depth(root)
    if depth.get(key, 0):
        depth[key] += 1
        return
    try:
        fd = os.open(key, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise MemtreeError(
            f"cannot take the write lock on {root} ({exc.strerror or exc}); nothing was written"
        ) from None
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)
    except ImportError:  # Windows: no flock; atomic replace and the snapshot check still keep files whole
        pass
    except BaseException:
        os.close(fd)
        raise
    depth[key] = 1
    _held.fds[key] = fd
    if intent.pending(key):  # a writer was killed mid-split: settle it before anything else is written
        with _recovered_lock:
            _recovered.extend(intent.recover(Path(key)))
    if changes.has_pending(key):  # … or before its journal line: journal what it wrote
        recorder.recover(key)


_recovered: list[str] = []
_recovered_lock = threading.Lock()


def recovered() -> list[str]:
    """What the write lock's holders settled of writes killed halfway (interrupted splits) since last asked."""
    with _recovered_lock:
        out = list(_recovered)
        _recovered.clear()
    return out


def _release(root: Path) -> None:
    """Give back one hold of the root's write lock; the last one unlocks it."""
    key = os.path.realpath(root)
    depth = _depth(root)
    depth[key] -= 1
    if depth[key] <= 0:
        depth[key] = 0
        os.close(_held.fds.pop(key))


@contextlib.contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """The root's write lock: every change to a tracked file (notes, tree-index.json, conflicts.json) takes it.

    An flock on the root folder itself: ``.memtree/`` stays deletable at any moment, and a lock
    cannot be lost with it. Re-entrant within a thread (holds are counted, and need not be given
    back in the order taken: :func:`recording` keeps one from a command's first write to its end);
    other threads and processes wait.
    """
    _acquire(root)
    try:
        yield
    finally:
        _release(root)


@contextlib.contextmanager
def recording(
    root: Path,
    command: str,
    now: datetime | None,
    *,
    summary: str = "",
    undoes: tuple[str, ...] = (),
    autocommit: bool = False,
    actor: str | None = None,
) -> Iterator[recorder.Recording]:
    """Journal every tracked-file write inside as one change of ``command`` (memtree.notes.recorder).

    From the first write on, the write lock is held until the change is journaled (and committed,
    with ``autocommit``), so the journal lists changes in the order they landed; work done before
    the first write (routing, an LLM call) does not hold it. Nested recordings join the outer one.
    """
    pinned: list[bool] = []

    def pin() -> None:
        _acquire(root)
        pinned.append(True)

    try:
        with recorder.recording(
            root, command, now, summary=summary, undoes=undoes, autocommit=autocommit, on_first_write=pin, actor=actor
        ) as rec:
            yield rec
    finally:
        if pinned:
            _release(root)


def _within(base: str, real: str) -> bool:
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def inside(root: Path, path: str | os.PathLike[str]) -> Path:
    """The real location of ``path`` (relative to ``root``, or absolute), refused when it leaves the root.

    Symlinks are followed, for the file and every folder on its way (a missing file resolves
    through its existing folders), so `bank/ext → /elsewhere` cannot be written or read through.
    """
    full = Path(path) if os.path.isabs(path) else Path(root) / path
    real = os.path.realpath(full)
    if not _within(os.path.realpath(root), real):
        shown = os.fspath(path)
        raise OutsideRoot(f"{shown} leads outside the memory root (to {real}); memtree reads and writes only inside it")
    return Path(real)


NAME_MAX_BYTES = 255
"""Bytes one part of a path may have on the usual file systems (NAME_MAX on Linux and macOS)."""
PATH_MAX_BYTES = 4096
"""Bytes a whole path may have (PATH_MAX on Linux); a longer name can name nothing."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_name(given: str, what: str, *, absolute: bool = False) -> str:
    """The one check of a node id, note path or ref a user gives (CLI, Python API, HTTP, MCP); returns it.

    BadName (one line naming ``what``) when it holds a NUL or another control character, a part
    longer than a file name may be, or — unless ``absolute`` (a command-line path, which
    :func:`inside` contains later) — starts with ``/`` or ``~`` or has a ``..`` part. Why one check
    before any file call: the file system's own refusals (ENAMETOOLONG, a NUL's ValueError) surfaced
    as tracebacks and HTTP 500s, each entry point meeting them at a different call.
    """
    shown = given if len(given) <= 80 else given[:60] + "…"
    if _CONTROL.search(given):
        raise BadName(f"{what} {shown!r}: a name may not hold a NUL or another control character")
    parts = given.split("/")
    if _size(given) > PATH_MAX_BYTES or any(_size(p) > NAME_MAX_BYTES for p in parts):
        raise BadName(f"{what} {shown!r}: too long (a part of a name may have at most {NAME_MAX_BYTES} bytes)")
    if not absolute and (given.startswith(("/", "~")) or ".." in parts):
        raise BadName(f"{what} {shown!r}: give a name relative to the memory root (no leading '/' or '~', no '..')")
    return given


def _size(name: str) -> int:
    return len(name.encode("utf-8", "surrogatepass"))


def check_state_dir(root: Path) -> None:
    """Refuse a root whose ``.memtree`` is a symbolic link, or holds one among its entries.

    Why refuse, not follow or replace: every derived file (index, journal, undo copies, usage, the
    daemon's socket and record) lives there and some are pruned by name, so a link would send memtree's
    writes and deletions out of the root; a link is not memtree's to remove either. One lstat and one
    listing of a dozen names per command.
    """
    state = Path(root) / STATE_DIR
    try:
        st = os.lstat(state)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MemtreeError(f"cannot read {state}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutsideRoot(
            f"{state} is a symbolic link (to {os.readlink(state)}): memtree keeps its derived state only in a real "
            f"folder inside the root; remove the link (rm {state}: its target is left alone) and memtree rebuilds it"
        )
    if not stat.S_ISDIR(st.st_mode):
        return  # a file in the way: nothing can be written through it (the index stays in memory, with a warning)
    with contextlib.suppress(OSError), os.scandir(state) as found:
        for entry in found:
            if entry.is_symlink():
                raise OutsideRoot(
                    f"{state / entry.name} is a symbolic link: memtree keeps its derived state only in real files "
                    f"inside the root; remove the link (its target is left alone) and memtree rebuilds it"
                )


@dataclass(frozen=True)
class Snapshot:
    """A tracked file as memtree read it: where it is and the exact bytes seen (None: it did not exist)."""

    rel: str
    path: Path
    data: bytes | None

    @property
    def text(self) -> str:
        """The bytes as note text ("" for a missing file); UnicodeDecodeError for non-UTF-8."""
        return "" if self.data is None else decode_note(self.data)

    @property
    def exists(self) -> bool:
        return self.data is not None


def read(root: Path, rel: str) -> Snapshot:
    """Read a tracked file inside ``root`` for a later :func:`save` (a missing file reads as None)."""
    path = inside(root, rel)
    try:
        with open(path, "rb") as f:
            data: bytes | None = f.read()
    except FileNotFoundError:
        data = None
    except IsADirectoryError:
        raise MemtreeError(f"{rel} is a folder, not a note; nothing was written") from None
    except NotADirectoryError:
        raise MemtreeError(f"{rel}: a file stands where a folder is needed; nothing was written") from None
    return Snapshot(rel, path, data)


_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)


def refused(rel: str, exc: OSError) -> MemtreeError:
    """The one-line error for a write the file system refused (read-only, a file as a folder, a long name)."""
    if exc.errno in _REFUSED:
        return ReadOnlyRoot(f"cannot write {rel}: {exc.strerror} (a read-only memory root?); nothing was written")
    if exc.errno == errno.ENOTDIR:
        return MemtreeError(f"cannot write {rel}: a file stands where a folder is needed; nothing was written")
    if exc.errno == errno.ENAMETOOLONG:
        return MemtreeError(f"cannot write {rel}: the name is too long for the file system; nothing was written")
    return MemtreeError(f"cannot write {rel}: {exc.strerror or exc}; nothing was written")


def save(root: Path, snap: Snapshot, data: bytes, durable: bool = True) -> Snapshot:
    """Replace the file of ``snap`` with ``data`` — only if it still holds the bytes ``snap`` saw.

    A Markdown note that only grew at its end meanwhile (a person's or a script's append) keeps
    the appended bytes after ``data``; any other change raises :class:`ChangedOnDisk` and nothing
    is written. :class:`ReadOnlyRoot` when the file system refuses. Call it under :func:`write_lock`.
    Returns the snapshot of what memtree wrote.
    """
    path = snap.path
    # Why only notes: they are line-oriented, so lines appended by hand stay whole after memtree's;
    # an append to a JSON or YAML file is not a change memtree can carry forward.
    carry = snap.rel.endswith(NOTE_SUFFIXES) and snap.data is not None
    if carry and snap.data and data.startswith(snap.data) and snap.data.endswith(b"\n"):
        appended = _append_if_grown(root, snap, data[len(snap.data) :], durable)
        if appended is not None:
            return appended
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        inside(root, path)  # a folder just created through a link that leads out is still refused
        _sweep(path.parent)
        fd, tmp = _temp_beside(path)
    except OSError as exc:
        raise refused(snap.rel, exc) from None
    old_fd = -1
    before: os.stat_result | None = None
    current: bytes | None = None
    try:
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
        # Why: compare right before the rename, through a descriptor kept open across it, so a
        # change in between is seen either here or by the fstat after it — never silently replaced.
        try:
            old_fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            old_fd = -1
        if old_fd >= 0:
            before = os.fstat(old_fd)
            current = _read_fd(old_fd)
        written = data
        if current != snap.data:
            if not (carry and current is not None and current.startswith(snap.data or b"")):
                raise ChangedOnDisk(f"{snap.rel} changed on disk after memtree read it; nothing was written")
            carried = current[len(snap.data or b"") :]
            _write_all(fd, carried)
            written = data + carried
            if durable:
                os.fsync(fd)
        os.close(fd)
        fd = -1
        recorder.saving(root, path, current, written)  # the journal is written ahead
        os.replace(tmp, path)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        if old_fd >= 0:
            os.close(old_fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise refused(snap.rel, exc) from None
        raise
    try:
        late = None
        if before is not None:
            after = os.fstat(old_fd)
            if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                late = _read_fd(old_fd)
    finally:
        if old_fd >= 0:
            os.close(old_fd)
    if late is not None and current is not None:
        # someone wrote to the old file in the instant between the compare and the rename
        if carry and late.startswith(current):
            _append(path, late[len(current) :], durable)
        else:
            atomic_write(path, late, durable)  # theirs goes back; the caller's change is made again on it
            raise ChangedOnDisk(f"{snap.rel} changed on disk while memtree wrote it; their version was put back")
    if durable:
        _fsync_dir(path.parent)
    # Why what memtree wrote, not a late append carried over after it: that is another writer's
    # change, and an undo must then find the file changed since and refuse, not drop their line
    recorder.saved(root, path, current, written)
    _seen(root, snap.rel, current, written)
    return Snapshot(snap.rel, path, data)


def _seen(root: Path, rel: str, before: bytes | None, after: bytes | None) -> None:
    """Tell memtree.notes.seen what memtree itself wrote to a bank note (so it is never read as a hand edit)."""
    from memtree.notes import seen  # lazy: only a write loads it

    if not seen.tracked(rel):
        return
    if after is None:
        seen.drop(root, rel)
        return
    try:
        seen.wrote(root, rel, decode_note(before) if before is not None else None, decode_note(after))
    except UnicodeDecodeError:
        return


def _append_if_grown(root: Path, snap: Snapshot, tail: bytes, durable: bool) -> Snapshot | None:
    """memtree's change only adds ``tail`` at the end: append it in place (None when the file was edited).

    Why: a rename swaps the file under a writer that opened it a moment before, and its next
    write lands in the replaced copy; an O_APPEND write shares the file with every other appender.
    """
    inside(root, snap.path)
    _sweep(snap.path.parent)
    try:
        fd = os.open(snap.path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise refused(snap.rel, exc) from None
    try:
        with open(snap.path, "rb") as f:
            before = f.read()
        if not before.startswith(snap.data or b""):
            return None  # not a pure growth of what memtree read: the rename path decides
        recorder.saving(root, snap.path, before, before + tail)
        try:
            _write_all(fd, tail)
            if durable:
                os.fsync(fd)
        except OSError as exc:
            raise refused(snap.rel, exc) from None
    finally:
        os.close(fd)
    recorder.saved(root, snap.path, before, before + tail)
    _seen(root, snap.rel, before, before + tail)
    return Snapshot(snap.rel, snap.path, (snap.data or b"") + tail)


def remove(root: Path, snap: Snapshot) -> bool:
    """Delete the file of ``snap`` — only if it still holds the bytes ``snap`` saw (else ChangedOnDisk).

    Journaled like a save (an undo puts the file back). Returns whether a file was removed. Call it
    under :func:`write_lock`.
    """
    inside(root, snap.path)
    try:
        with open(snap.path, "rb") as f:
            current = f.read()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise refused(snap.rel, exc) from None
    if current != snap.data:
        raise ChangedOnDisk(f"{snap.rel} changed on disk after memtree read it; nothing was removed")
    recorder.saving(root, snap.path, current, None)
    try:
        os.unlink(snap.path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise refused(snap.rel, exc) from None
    recorder.saved(root, snap.path, current, None)
    _seen(root, snap.rel, current, None)
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _append(path: Path, data: bytes, durable: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def rewrite(root: Path, rel: str, change: Callable[[str], str | None], durable: bool = True) -> bool:
    """Read ``rel``, apply ``change`` to its text and save it; on a concurrent change, read again and retry.

    ``change`` returns the new text, or None to leave the file as it is. Returns whether it wrote.
    Call it under :func:`write_lock`.
    """
    for _ in range(REWRITE_ATTEMPTS):
        snap = read(root, rel)
        new = change(snap.text)
        if new is None or (snap.data is not None and new.encode("utf-8") == snap.data):
            return False
        try:
            save(root, snap, new.encode("utf-8"), durable)
            return True
        except ChangedOnDisk:
            continue
    raise ChangedOnDisk(
        f"{rel} kept changing while memtree tried to write it ({REWRITE_ATTEMPTS} tries); nothing was written"
    )


def _read_fd(fd: int) -> bytes:
    """The whole file behind ``fd``, from its start (lseek + read: Windows has no pread)."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(chunks)
        chunks.append(block)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# `.NAME.memtree-XXXX.tmp`, and the older `.NAME.XXXXXXXX.tmp` of a tracked file (mkstemp's 8 characters)
_TEMP = re.compile(r"^\..+(?:\.memtree-[a-z0-9_]+|\.(?:md|markdown|json|yaml)\.[a-z0-9_]{8})\.tmp$")


def is_temp(name: str) -> bool:
    """Whether ``name`` is one of memtree's own temp files."""
    return _TEMP.match(name) is not None


def _sweep(folder: Path) -> int:
    """Remove memtree's temp files left in ``folder`` by a killed writer (under the write lock)."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if is_temp(name):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
                removed += 1
    return removed


def leftovers(root: Path) -> list[str]:
    """memtree's temp files left in the root's tracked folders by a killed writer (root-relative paths)."""
    found: list[str] = []
    base = os.path.realpath(root)
    folders = [Path(root)]
    for tier in TIERS:
        top = Path(root) / tier
        if top.is_dir() and _within(base, os.path.realpath(top)):
            folders.extend(p for p in [top, *top.rglob("*")] if p.is_dir() and not p.is_symlink())
    for folder in folders:
        with contextlib.suppress(OSError):
            found.extend((folder / n).relative_to(root).as_posix() for n in sorted(os.listdir(folder)) if is_temp(n))
    return found


def sweep(root: Path) -> list[str]:
    """Remove every temp file a killed writer left in the root's tracked folders; returns their paths."""
    gone: list[str] = []
    with write_lock(root):  # under the lock, no memtree writer of this root has a temp file open
        for rel in leftovers(root):
            with contextlib.suppress(OSError):
                os.unlink(Path(root) / rel)
                gone.append(rel)
    return gone
