"""Conversation turns in memory/ logs, and the watermarks ingest keeps: the truth, and its cache.

A turn is appended to the log of its day in the logs' zone (memtree.write.journal: log.timezone, else
the user's local zone), stamped HH:MM in that zone, as a log line
whose metadata comment says which turn it is::

    - 14:20 user: the deploy failed again <!-- memtree: conversation=c1; turn=7; role=user;
      ts=2026-11-29T14:20:05+09:00; key=3f2a… -->    (one line in the log)

and every examined cycle appends a marker after its turns (in the log of its last turn)::

    <!-- memtree: conversation=c1; extracted=12 -->

So the logs alone say, for every conversation, which turns were ingested and up to which turn
they were examined. ``.memtree/ingest.json`` (:class:`Book`) caches that, with the size of every
log it read: a log whose size changed (another writer, a crash between two writes, a deleted
``.memtree/``) is read again and merged in — merging keeps the highest turn and watermark, so it is
idempotent. Deleting ``.memtree/`` therefore re-extracts nothing and re-logs nothing.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

import orjson

from memtree.lifecycle.cadence import Logged
from memtree.notes import entries, store
from memtree.write.journal import log_path

STATE_FILE = "ingest.json"
STATE_VERSION = 1


@dataclass
class Thread:
    """What ingest knows of one conversation."""

    turns: int = 0  # the last turn number logged
    last_ts: str = ""  # that turn's ts (ISO 8601)
    last_keys: list[str] = field(default_factory=list)  # keys of the turns logged at last_ts
    extracted: int = 0  # the watermark: turns up to this one were examined
    pending: list[Logged] = field(default_factory=list)  # logged turns after the watermark, oldest first

    def take(self, found: Logged) -> None:
        """Merge one logged turn (idempotent: a turn already known changes nothing)."""
        if found.turn > self.turns:
            ts = found.ts.isoformat()
            same = self.last_ts and datetime.fromisoformat(self.last_ts) == found.ts
            self.last_keys = [*self.last_keys, found.key] if same else [found.key]
            self.turns, self.last_ts = found.turn, ts
        if found.turn <= self.extracted:
            return
        if not self.pending or found.turn > self.pending[-1].turn:  # the usual case: turns come in order
            self.pending.append(found)
        elif all(p.turn != found.turn for p in self.pending):
            self.pending = sorted([*self.pending, found], key=lambda p: p.turn)

    def mark(self, through: int) -> None:
        """Move the watermark to ``through`` (never back)."""
        self.extracted = max(self.extracted, through)
        self.pending = [p for p in self.pending if p.turn > self.extracted]


@dataclass
class Book:
    """Every conversation's thread, and the size of each log when ingest last read or wrote it."""

    threads: dict[str, Thread] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    read_again: bool = False  # a log was read again on load: the cache is worth saving

    def thread(self, conversation: str) -> Thread:
        """The conversation's thread (a new one when it was never ingested)."""
        return self.threads.setdefault(conversation, Thread())


def turn_block(turn: Logged, zone: tzinfo | None = None) -> str:
    """The log entry of a turn: ``- HH:MM role: text`` (continuation lines indented), metadata last.

    HH:MM is in ``zone`` (the log's; None: the system's local zone); ``ts=`` keeps the turn's own offset.
    """
    # Why: a turn quoting `<!-- memtree: … -->` must not pass for memtree's own metadata
    lines = [ln.rstrip() for ln in turn.text.replace("<!--", "&lt;!--").splitlines()] or [""]
    meta = f"conversation={turn.conversation}; turn={turn.turn}; role={turn.role}; ts={turn.ts.isoformat()}"
    body = "\n  ".join(lines)
    return f"- {turn.ts.astimezone(zone):%H:%M} {turn.role}: {body} <!-- memtree: {meta}; key={turn.key} -->\n"


def mark_line(conversation: str, through: int) -> str:
    """The marker a cycle leaves: the conversation's turns up to ``through`` were examined."""
    return f"<!-- memtree: conversation={conversation}; extracted={through} -->\n"


def planned_lines(root: Path, rel: str, blocks: list[str]) -> tuple[str, list[int]]:
    """What appending ``blocks`` to the log ``rel`` writes (a new log gets its day heading), and each block's line."""
    path = store.inside(root, rel)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    head = f"# {Path(rel).stem}\n\n" if not data else "\n" if not data.endswith(b"\n") else ""
    line = data.count(b"\n") + 1 + head.count("\n")
    starts = []
    for block in blocks:
        starts.append(line)
        line += block.count("\n")
    return head + "".join(blocks), starts


def append(root: Path, rel: str, text: str) -> int:
    """Append ``text`` to the log ``rel`` (O_APPEND, fsync; memory/ is never rewritten); its size after."""
    path = store.inside(root, rel)  # memory/ behind a symlink out of the root is refused
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as exc:
        raise store.refused(rel, exc) from None
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def day_log(ts: datetime, zone: tzinfo | None = None) -> str:
    """The log a turn goes to: its day in ``zone``, the logs' zone (None: the system's local zone)."""
    return log_path(ts.astimezone(zone))


def scan(rel: str, text: str) -> tuple[list[Logged], dict[str, int]]:
    """The turns and the watermarks (conversation → highest ``extracted``) a log holds."""
    turns: list[Logged] = []
    marks: dict[str, int] = {}
    start = 0
    lines = text.split("\n")
    for number, raw in enumerate(lines, start=1):
        if raw.startswith("- "):
            start = number
        if "memtree:" not in raw:
            continue
        found = entries.META_RE.search(raw)
        if found is None:
            continue
        meta = entries.parse_meta(found.group("body")).extra
        conversation = meta.get("conversation", "")
        with contextlib.suppress(ValueError, KeyError):
            if "extracted" in meta:
                marks[conversation] = max(marks.get(conversation, 0), int(meta["extracted"]))
            elif "turn" in meta and start:
                body = lines[start - 1 : number]
                body[-1] = body[-1][: found.start()]
                turns.append(_logged(rel, start, conversation, meta, body))
    return turns, marks


def _logged(rel: str, start: int, conversation: str, meta: dict[str, str], body: list[str]) -> Logged:
    role = meta["role"]
    first = body[0].partition(f" {role}: ")[2]
    text = "\n".join([first, *(ln.removeprefix("  ") for ln in body[1:])]).replace("&lt;!--", "<!--")
    ts = datetime.fromisoformat(meta["ts"])
    if ts.tzinfo is None:
        raise ValueError("a turn's ts without an offset")
    return Logged(conversation, int(meta["turn"]), role, text.strip(), ts, meta["key"], rel, start)


def load(root: Path) -> Book:
    """The book: ``.memtree/ingest.json``, with every memory/ log whose size changed since read again."""
    book = _read_state(root)
    disk, _ = store.walk(root, ("memory",))
    for f in disk:
        if book.files.get(f.path) == f.size:
            continue
        try:
            text = store.read_note(root / f.path)
        except (OSError, UnicodeDecodeError):
            continue  # not a log ingest could have written
        turns, marks = scan(f.path, text)
        for turn in turns:
            book.thread(turn.conversation).take(turn)
        for conversation, through in marks.items():
            book.thread(conversation).mark(through)
        book.files[f.path] = f.size
        book.read_again = True
    return book


def save(root: Path, book: Book) -> None:
    """Write the book to ``.memtree/ingest.json`` (derived state: failing to write it loses nothing)."""
    doc = {
        "version": STATE_VERSION,
        "files": book.files,
        "threads": {
            name: {
                "turns": t.turns,
                "last_ts": t.last_ts,
                "last_keys": t.last_keys,
                "extracted": t.extracted,
                "pending": [_pending_json(p) for p in t.pending],
            }
            for name, t in book.threads.items()
        },
    }
    with contextlib.suppress(OSError):
        (root / store.STATE_DIR).mkdir(exist_ok=True)
        store.atomic_write(root / store.STATE_DIR / STATE_FILE, orjson.dumps(doc), durable=False)


def _pending_json(p: Logged) -> dict[str, object]:
    return {"turn": p.turn, "role": p.role, "text": p.text, "ts": p.ts.isoformat(), "key": p.key} | {
        "path": p.path,
        "line": p.line,
    }


def _pending(conversation: str, p: dict[str, Any]) -> Logged:
    # Why: a marker is appended to this path, naming this conversation; the state file may be planted
    # (a cloned .memtree/), so it must name a daily log and a name with no line break
    if not (isinstance(p["path"], str) and p["path"].startswith("memory/") and store.note_path(p["path"])):
        raise ValueError(f"not a daily log: {p['path']!r}")
    if any(ord(c) < 32 or ord(c) == 127 for c in conversation):
        raise ValueError(f"a conversation name with a control character: {conversation!r}")
    ts = datetime.fromisoformat(p["ts"])
    return Logged(conversation, int(p["turn"]), p["role"], p["text"], ts, p["key"], p["path"], int(p["line"]))


def _read_state(root: Path) -> Book:
    try:
        doc = orjson.loads((root / store.STATE_DIR / STATE_FILE).read_bytes())
        if doc.get("version") != STATE_VERSION:
            return Book()
        book = Book(files={str(k): int(v) for k, v in doc["files"].items()})
        for name, t in doc["threads"].items():
            pending = [_pending(name, p) for p in t["pending"]]
            extracted = int(t["extracted"])
            book.threads[name] = Thread(int(t["turns"]), t["last_ts"], list(t["last_keys"]), extracted, pending)
        return book
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Book()  # no cache, or a broken one: every log is read again
