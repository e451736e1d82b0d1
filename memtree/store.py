"""The only file I/O for notes: tier walking with ignore rules, safe reads, atomic writes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

TIERS = ("recall", "bank", "memory")
"""Search order: the hot buffer first, curated knowledge next, raw logs only when asked."""
NOTE_SUFFIXES = (".md", ".markdown")
STATE_DIR = ".memtree"
ARCHIVE_DIR = "_archive"
WRITE_LOCK = "write.lock"


class FileStat(NamedTuple):
    """A note on disk: its root-relative POSIX path, tier, mtime in ns and size in bytes."""

    path: str
    tier: str
    mtime_ns: int
    size: int


_IGNORED_PREFIXES = (".", "~", "#")
_IGNORED_SUFFIXES = ("~", ".swp", ".swo", ".tmp", ".bak", ".part")


def ignored(name: str) -> bool:
    """Hidden files, editor swap/backup/temp files and the archive are never indexed."""
    return name.startswith(_IGNORED_PREFIXES) or name.endswith(_IGNORED_SUFFIXES) or name == ARCHIVE_DIR


def walk(root: Path, tiers: tuple[str, ...] = TIERS) -> tuple[list[FileStat], list[str]]:
    """All notes under the given tiers, sorted by path, and warnings for what was skipped.

    Symlinks are followed, but a directory already visited (a symlink loop) is skipped with a
    warning naming it rather than recursed into forever.
    """
    found: list[FileStat] = []
    warnings: list[str] = []
    for tier in tiers:
        top = os.path.join(root, tier)
        if not os.path.isdir(top):
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
                entries = list(os.scandir(folder))
            except OSError as exc:
                warnings.append(f"{rel}: skipped ({exc.strerror or exc})")
                continue
            for entry in entries:
                name = entry.name
                if name.startswith(_IGNORED_PREFIXES) or name.endswith(_IGNORED_SUFFIXES) or name == ARCHIVE_DIR:
                    continue
                child = f"{rel}/{name}"
                try:
                    if entry.is_dir():
                        stack.append((entry.path, child))
                    elif name.endswith(NOTE_SUFFIXES) and entry.is_file():
                        est = entry.stat()
                        found.append(FileStat(child, tier, est.st_mtime_ns, est.st_size))
                except OSError as exc:
                    warnings.append(f"{child}: skipped ({exc.strerror or exc})")
    found.sort(key=lambda f: f.path)
    return found, warnings


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
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes 0600 files: keep the replaced file's mode, or the usual one for a new file
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
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


@contextlib.contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """The root's write lock: every change to notes, tree-index.json or conflicts.json takes it."""
    from .errors import MemtreeError

    path = root / STATE_DIR / WRITE_LOCK
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(path))
        except OSError as exc:
            raise MemtreeError(
                f"cannot take the write lock {path} ({exc.strerror or exc}); nothing was written"
            ) from None
        yield
