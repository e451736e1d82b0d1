"""`memtree watch`: keep the index (and note sizes) in step with edits made in any editor.

watchdog reports file events; they are collected and, once they have been quiet for
``DEBOUNCE_S``, one refresh re-indexes what changed and bank notes that grew past the size limit
are split. When every event named a note, the refresh is told those notes and stats just them
(13-46 ms at 100k chunks on a loaded 2-core machine, where a check of every note and folder took
33-92 ms); an event on a folder (created, deleted, moved) has every note checked, so moved folders
need nothing special. Events under ``.git/`` and ``.memtree/``, hidden, swap and temp files, and the
watcher's own writes are ignored. Every action is one log line; a heartbeat in
``.memtree/watch.json`` lets `memtree status` tell a live watcher from a dead one.

SIGINT and SIGTERM stop it cleanly (``stopping_on_signals``), even when a shell started it with
SIGINT ignored. When ``.memtree/`` cannot be written (a read-only checkout or mount, a full disk)
the watcher says so once and keeps watching rather than stopping: edits are still reported and
bank notes still split, only the heartbeat and the index are not saved (the index is kept in this
process). The heartbeat is tried again at every beat, and warned about again only after it has
worked in between, so a folder that comes and goes does not fill the log.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.notes.heartbeat import HEARTBEAT_FILE, HEARTBEAT_S

if TYPE_CHECKING:
    from memtree.api import MemTree

DEBOUNCE_S = 0.2
"""Quiet time before acting; why: editors write a file in bursts (temp, rename, chmod)."""
MAX_DELAY_S = 0.6
"""Act at the latest this long after the first event of a burst, so edits show within a second."""
TICK_S = 0.05
"""How often the loop looks for due work and for a stop request."""


READ_EVENTS = frozenset({"opened", "closed_no_write"})
"""watchdog's events for a file only read; why ignored: every search reads the notes of its hits, and each
read was taken for an edit — a refresh (the stat of every note: ~35 ms at 100k chunks) per search."""


def relevant(root: Path, path: str) -> bool:
    """Whether an event on ``path`` concerns memtree (a note in a tier, or tree-index.json)."""
    try:
        rel = Path(path).resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    parts = rel.parts
    if not parts or parts[0] in (".git", store.STATE_DIR):
        return False
    if any(store.ignored(p) for p in parts):
        return False
    if parts == ("tree-index.json",):
        return True
    return parts[0] in store.TIERS and (
        len(parts) == 1 or "." not in parts[-1] or parts[-1].endswith(store.NOTE_SUFFIXES)
    )


class Watcher:
    """Watches one memory root until ``stop()``; every action goes to ``log`` as one line."""

    def __init__(self, mt: MemTree, log: Callable[[str], None], split: bool = True) -> None:
        self.mt = mt
        self.root = mt.root
        self.log = log
        self.split = split
        self.actions = 0
        self._pending: set[str] = set()  # paths named by the events since the last action
        self._notes: set[str] = set()  # … the notes among them, root-relative
        self._everything = False  # … an event named a folder: every note is checked
        self._first = 0.0
        self._last = 0.0
        self._lock = threading.Lock()
        self._stopping = False  # a plain flag, not an Event: stop() must be safe in a signal handler
        self._beat_failing = False
        self._started = time.time()

    # watchdog calls this from its thread
    def dispatch(self, event: Any) -> bool:
        """Collect a file event (moves count for both ends); whether it concerns memtree (a read never does)."""
        if getattr(event, "event_type", "") in READ_EVENTS:
            return False
        paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
        hits = [str(p) for p in paths if p and relevant(self.root, str(p))]
        if not hits:
            return False
        notes, everything = self._named(event, hits)
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._first = now
            self._pending.update(hits)
            self._noted(notes, everything)
            self._last = now
        return True

    def _named(self, event: Any, hits: list[str]) -> tuple[list[str], bool]:
        """The notes an event names (root-relative), and whether every note must be checked instead:
        a folder was created, deleted or moved, or a path is not plainly under the root."""
        if getattr(event, "is_directory", False):  # a folder "modified" only says a file in it changed
            return [], getattr(event, "event_type", "") != "modified"
        notes = []
        for path in hits:
            try:
                rel = Path(path).relative_to(self.root).as_posix()
            except ValueError:  # reached through a symlink: the walk knows it by another name
                return [], True
            if rel.endswith(store.NOTE_SUFFIXES) and "/" in rel:
                notes.append(rel)
        return notes, False

    def _noted(self, notes: list[str], everything: bool) -> None:
        """Keep what an event named, for the next action (called under ``_lock``)."""
        self._notes.update(notes)
        self._everything = self._everything or everything

    def run(self) -> None:
        """Observe until ``stop()`` (see ``stopping_on_signals``); a dead observer is restarted, and said so."""
        observer = self._observe()
        self.log(f"watching {self.root} (debounce {DEBOUNCE_S:g} s)")
        self._beat(running=True)
        next_beat = time.monotonic() + HEARTBEAT_S
        try:
            while True:
                time.sleep(TICK_S)
                if self._stopping:
                    break
                if not observer.is_alive():
                    # Why: a watcher that dies without a word is what users of other tools hit most
                    self.log("error: the file observer stopped; restarting it and re-indexing")
                    observer = self._observe()
                    self.act()
                self._maybe_act()
                if time.monotonic() >= next_beat:
                    self._beat(running=True)
                    next_beat = time.monotonic() + HEARTBEAT_S
        finally:
            observer.stop()
            observer.join(timeout=5)
            if observer.is_alive():
                self.log("warning: the file observer did not stop within 5 s")
            self._beat(running=False)
            self.log("stopped")

    def _observe(self) -> Any:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                try:
                    watcher.dispatch(event)
                except Exception as exc:  # never let one odd event kill the observer thread
                    watcher.log(f"error: {type(exc).__name__}: {exc} (event on {event.src_path!r})")

        observer = Observer()
        observer.schedule(Handler(), str(self.root), recursive=True)
        observer.start()
        return observer

    def stop(self) -> None:
        """Ask ``run`` to return (within ``TICK_S``, or once a refresh under way ends); signal-safe."""
        self._stopping = True

    @property
    def stopping(self) -> bool:
        """Whether ``stop()`` was called."""
        return self._stopping

    def _maybe_act(self) -> None:
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                return
            quiet = now - self._last >= DEBOUNCE_S
            overdue = now - self._first >= MAX_DELAY_S
            if not (quiet or overdue):
                return
            paths = None if self._everything else sorted(self._notes)
            self._pending.clear()
            self._notes.clear()
            self._everything = False
        self.act(paths)

    def act(self, paths: list[str] | None = None) -> None:
        """Re-index what changed (of ``paths`` alone when given); split bank notes that grew past the
        limit. Never raises."""
        try:
            report = self.mt.refresh(paths=paths)
            for kind, paths in (("indexed", report.added), ("re-indexed", report.changed), ("dropped", report.removed)):
                for p in paths:
                    self._action(f"{kind} {p}")
            for warning in report.warnings:
                self.log(f"warning: {warning}")
            # a search may have refreshed first, so the tree itself is asked which nodes lost their note
            if report.removed or report.added or treemod.dangling(self.mt.state.parsed_tree(), self.mt.root):
                # a note deleted or renamed in an editor: its node goes (and a renamed one's comes)
                synced = self.mt.index()
                for old, new in synced.renamed:
                    self._action(f"renamed {old} to {new} (its node follows it)")
                for node in synced.nodes_added:
                    self._action(f"added node {node}")
                for node, path in synced.nodes_dropped:
                    self._action(f"dropped node {node} ({path} is gone)")
            if self.split:
                for result in self.mt.split():
                    self._action(f"split {result.path} into {len(result.children)} notes")
        except Exception as exc:  # a watcher that dies silently is the bug users complain about most
            self.log(f"error: {type(exc).__name__}: {exc}")

    def _action(self, line: str) -> None:
        self.actions += 1
        self.log(line)

    def _beat(self, running: bool) -> None:
        beat = {
            "pid": os.getpid(),
            "started": datetime.fromtimestamp(self._started).astimezone().isoformat(timespec="seconds"),
            "time": time.time(),
            "running": running,
            "actions": self.actions,
        }
        try:
            store.atomic_write(self.root / store.STATE_DIR / HEARTBEAT_FILE, orjson.dumps(beat), durable=False)
        except OSError as exc:
            # Why once: a read-only .memtree/ fails every beat, and a warning every 5 s buries the
            # log lines that matter; the next success re-arms it.
            if not self._beat_failing:
                self._beat_failing = True
                reason = exc.strerror or type(exc).__name__
                self.log(
                    f"warning: cannot write {self.root / store.STATE_DIR} ({reason}): no heartbeat for "
                    "`memtree status` and no saved index; watching goes on"
                )
        else:
            self._beat_failing = False


@contextmanager
def stopping_on_signals(watcher: Watcher) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM stop ``watcher`` cleanly; a second one interrupts at once.

    Why install SIGINT explicitly: a shell starts background jobs (``&``, CI steps) with SIGINT
    ignored, Python then leaves it ignored, and such a watcher never stopped on Ctrl-C or ``kill
    -INT``; SIGTERM (``kill``, systemd, ``docker stop``) ended it without the final heartbeat.
    Outside the main thread (where signals cannot be handled) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: object) -> None:
        if watcher.stopping:  # asked twice: the clean stop is taking too long for the user
            raise KeyboardInterrupt
        watcher.stop()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
