"""The daemon's maintenance: `consolidate` (which syncs recall/ too) every ``maintenance.consolidate_every_h``,
and the idle flush of `memtree ingest`'s conversations every minute (:class:`IngestFlush`).

Backend.AI GO's headless server runs its memory upkeep this way. One run at a time: a tick while a
run is under way does nothing, and consolidation's own single-flight lock (``.memtree/
consolidate.lock``) keeps a `memtree --no-daemon consolidate` and a tick apart, the second saying
so. Each run leaves its record for `memtree status` (time, merges, error: lifecycle.consolidate).

The interval is measured on a monotonic clock the daemon passes in, so a test moves time by hand.
The first run is one interval after the last recorded one (at once when that is longer ago); a
root never consolidated waits one whole interval of the daemon's life — a first `memtree serve`
does not rewrite notes the moment it starts.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from memtree.errors import MemtreeError
from memtree.lifecycle.consolidate import last_run

if TYPE_CHECKING:
    from memtree.api import MemTree

HOUR_S = 3600.0


class Maintenance:
    """Schedules and runs consolidation for one daemon; ``tick()`` starts a run when one is due."""

    def __init__(
        self,
        mt: MemTree,
        log: Callable[[str], None],
        every_h: float,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.mt = mt
        self.log = log
        self.every_s = every_h * HOUR_S
        self.clock = clock
        self._lock = threading.Lock()
        self._running = False
        self.next_due = math.inf
        if self.every_s > 0:
            last = last_run(mt.root) or {}
            started = last.get("started")
            since = wall() - started if isinstance(started, (int, float)) else 0.0
            self.next_due = clock() + max(0.0, self.every_s - since)

    @property
    def running(self) -> bool:
        """Whether a run is under way."""
        return self._running

    def due(self) -> bool:
        """Whether a run should start now."""
        return not self._running and self.clock() >= self.next_due

    def tick(self) -> threading.Thread | None:
        """Start a run in its own thread when one is due (the daemon's loop calls this); the thread, or None."""
        with self._lock:
            if not self.due():
                return None
            self._running = True
            self.next_due = self.clock() + self.every_s
        thread = threading.Thread(target=self._run, name="memtree-maintenance", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        try:
            report = self.mt.consolidate()
            merged = sum(len(m.drop) for m in report.merges)
            self.log(
                f"maintenance: consolidated ({merged} entries merged, {len(report.candidates)} archive candidates, "
                f"{report.seconds:.2f} s)"
            )
        except MemtreeError as exc:  # another consolidate holds the lock, a read-only root: said, tried next time
            self.log(f"warning: maintenance: consolidate did not run: {exc}")
        except Exception as exc:  # never let upkeep take the daemon down; the record holds the error
            self.log(f"error: maintenance: consolidate failed: {type(exc).__name__}: {exc}")
        finally:
            self._running = False


FLUSH_EVERY_S = 60.0
"""How often the daemon looks for conversations quiet past ``extract.idle_flush_min`` (minutes: a minute is fine)."""


class IngestFlush:
    """Runs `memtree ingest`'s idle flush on a cadence while the daemon is up (``extract.idle_flush_min`` > 0)."""

    def __init__(self, mt: MemTree, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.mt, self.log, self.clock = mt, log, clock
        self.every_s = FLUSH_EVERY_S if mt.settings.extract.idle_flush_min > 0 else 0.0
        self.next_due = clock() + self.every_s if self.every_s else math.inf
        self._running = False

    def tick(self) -> threading.Thread | None:
        """Start a flush in its own thread when one is due; the thread, or None."""
        if self._running or self.clock() < self.next_due:
            return None
        self._running = True
        self.next_due = self.clock() + self.every_s
        thread = threading.Thread(target=self._run, name="memtree-ingest-flush", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        try:
            report = self.mt.ingest_flush()
            if report.written:
                self.log(f"ingest: idle conversations flushed ({report.written} entries written)")
        except MemtreeError as exc:
            self.log(f"warning: ingest flush did not run: {exc}")
        except Exception as exc:  # never let upkeep take the daemon down
            self.log(f"error: ingest flush failed: {type(exc).__name__}: {exc}")
        finally:
            self._running = False


class GitSync:
    """Runs `memtree sync` every ``git.sync_every_min`` minutes while the daemon is up (0: never)."""

    def __init__(self, mt: MemTree, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.mt, self.log, self.clock = mt, log, clock
        self.every_s = max(0.0, mt.settings.git.sync_every_min) * 60.0
        self.next_due = clock() + self.every_s if self.every_s else math.inf
        self._running = False

    def tick(self) -> threading.Thread | None:
        """Start a sync in its own thread when one is due; the thread, or None."""
        if self._running or self.clock() < self.next_due:
            return None
        self._running = True
        self.next_due = self.clock() + self.every_s
        thread = threading.Thread(target=self._run, name="memtree-git-sync", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        try:
            done = self.mt.sync()
            level = "" if done.outcome in ("ok", "local") else "warning: "
            self.log(f"{level}git sync: {done.outcome}: {done.message}")
        except MemtreeError as exc:
            self.log(f"warning: git sync did not run: {exc}")
        except Exception as exc:  # never let upkeep take the daemon down
            self.log(f"error: git sync failed: {type(exc).__name__}: {exc}")
        finally:
            self._running = False
