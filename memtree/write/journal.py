"""`memtree log`: timestamped lines appended to today's raw log, memory/YYYY-MM-DD.md.

memory/ is append-only: memtree opens a log with O_APPEND under the root's write lock and never
rewrites or truncates one, so a concurrent editor's lines and an agent's lines cannot clobber each
other. The text is sanitized first, like every write.

One day, one zone: a log is the day of ``log.timezone`` (the user's local zone unless set), and every
line memtree writes in it is stamped in that zone, whatever zone the moment came in (:func:`log_zone`);
ingest's turns too (memtree.lifecycle.turnlog). Lines go at the end, in time order within one write;
a log that already holds lines of other zones (written before) is read as it is, never reordered.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from memtree.config import Settings, zone_of
from memtree.errors import QueryError
from memtree.notes import entries, store
from memtree.write import retain

MEMORY_TIER = "memory"
# Why: "14:20 배포 끝" logged at 14:47 tells when it happened; stamping 14:47 in front of it would
# give the line two times. Only a real clock time followed by a space (or nothing) counts.
_LEADING_TIME = re.compile(r"^(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?=\s|$)")


@dataclass(frozen=True)
class Logged:
    """Where a log line went."""

    path: str
    line: int
    text: str
    redacted: tuple[str, ...] = ()


def log_zone(settings: Settings, now: datetime) -> tzinfo | None:
    """The daily logs' zone: log.timezone, else ``now``'s (the caller's local zone: memtree.api.clock)."""
    return zone_of(settings.log.timezone) or now.tzinfo


def log_path(now: datetime) -> str:
    """The day's log file, relative to the root."""
    return f"{MEMORY_TIER}/{now:%Y-%m-%d}.md"


def leading_time(text: str) -> tuple[str | None, str]:
    """``"9:05 배포 끝"`` → ``("09:05", "배포 끝")``; text that does not start with a clock time → ``(None, text)``."""
    m = _LEADING_TIME.match(text)
    if m is None:
        return None, text
    return f"{int(m.group('h')):02d}:{m.group('m')}", text[m.end() :].strip()


def append(root: Path, raw: str, settings: Settings, now: datetime, source: str = "manual") -> Logged:
    """Sanitize ``raw`` and append it to today's log as `- HH:MM text`; returns where it went.

    HH:MM is ``now``'s time in the logs' zone (:func:`log_zone`), or the time the text starts with
    (`"14:20 배포 끝"`): the entry's own.
    """
    now = now.astimezone(log_zone(settings, now))
    stated, body = leading_time(raw.strip())
    if not body:
        raise QueryError(f"nothing to log: the text is {'only a time, ' + stated if stated else 'empty'}")
    limit = retain.MANUAL_MAX_CHARS if source == "manual" else retain.AUTO_MAX_CHARS
    if len(body) > limit:
        raise QueryError(f"the text has {len(body):,} characters; {source} log lines take at most {limit:,}")
    clean = retain.sanitizer_for(settings).sanitize(entries.neutralize(body))
    lines = clean.text.split("\n")
    entry = f"- {stated or format(now, '%H:%M')} " + "\n  ".join(ln.rstrip() for ln in lines) + "\n"
    rel = log_path(now)
    path = store.inside(root, rel)  # memory/ behind a symlink out of the root is refused
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise store.refused(rel, exc) from None
    with store.write_lock(root):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as exc:
            raise store.refused(rel, exc) from None
        try:
            size = os.fstat(fd).st_size
            head = f"# {now:%Y-%m-%d}\n\n" if size == 0 else ""
            if size:
                with open(path, "rb") as f:  # a log someone left without a final newline
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        head = "\n"
            data = (head + entry).encode("utf-8")
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        with open(path, "rb") as f:
            total = f.read().count(b"\n")
    redacted = tuple(sorted({r.kind for r in clean.redactions}))
    return Logged(rel, total - len(lines) + 1, clean.text, redacted)
