"""The only file I/O for notes: tier walking with ignore rules, safe reads, atomic writes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TIERS = ("recall", "bank", "memory")
"""Search order: the hot buffer first, curated knowledge next, raw logs only when asked."""
NOTE_SUFFIXES = (".md", ".markdown")
STATE_DIR = ".memtree"
ARCHIVE_DIR = "_archive"


@dataclass(frozen=True)
class FileStat:
    """A note on disk: its root-relative POSIX path, tier, mtime in ns and size in bytes."""

    path: str
    tier: str
    mtime_ns: int
    size: int


def _ignored(name: str) -> bool:
    """Hidden files, editor swap/backup/temp files and the archive are never indexed."""
    return (
        name.startswith((".", "~", "#"))
        or name.endswith(("~", ".swp", ".swo", ".tmp", ".bak", ".part"))
        or name == ARCHIVE_DIR
    )


def walk(root: Path, tiers: tuple[str, ...] = TIERS) -> tuple[list[FileStat], list[str]]:
    """All notes under the given tiers, sorted by path, and warnings for what was skipped.

    Symlinks are followed, but a directory already visited (a symlink loop) is skipped with a
    warning naming it rather than recursed into forever.
    """
    found: list[FileStat] = []
    warnings: list[str] = []
    for tier in tiers:
        top = root / tier
        if not top.is_dir():
            continue
        seen: set[tuple[int, int]] = set()
        for stat in _walk_dir(top, f"{tier}", seen, warnings):
            found.append(FileStat(stat[0], tier, stat[1], stat[2]))
    found.sort(key=lambda f: f.path)
    return found, warnings


def _walk_dir(path: Path, rel: str, seen: set[tuple[int, int]], warnings: list[str]) -> Iterator[tuple[str, int, int]]:
    try:
        st = path.stat()
    except OSError as exc:
        warnings.append(f"{rel}: skipped ({exc.strerror})")
        return
    key = (st.st_dev, st.st_ino)
    if key in seen:
        warnings.append(f"{rel}: skipped, a symlink loop leads back to a folder already indexed")
        return
    seen.add(key)
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        warnings.append(f"{rel}: skipped ({exc.strerror})")
        return
    for entry in entries:
        if _ignored(entry.name):
            continue
        child = f"{rel}/{entry.name}"
        try:
            is_dir = entry.is_dir()
            if is_dir:
                yield from _walk_dir(Path(entry.path), child, seen, warnings)
                continue
            if not entry.name.endswith(NOTE_SUFFIXES) or not entry.is_file():
                continue
            st = entry.stat()
        except OSError as exc:
            warnings.append(f"{child}: skipped ({exc.strerror or exc})")
            continue
        yield child, st.st_mtime_ns, st.st_size


def read_note(path: Path) -> str:
    """A note's text; raises UnicodeDecodeError for binary or non-UTF-8 content."""
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise UnicodeDecodeError("utf-8", data[:1], 0, 1, "binary content (NUL bytes)")
    text = data.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file in the same folder, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


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
