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


class _Periodic:
    """Upkeep the daemon runs every ``every_s`` seconds (0: never), in a thread of its own, one at a time."""

    name = ""  # what the log and the thread call it

    def __init__(self, mt: MemTree, log: Callable[[str], None], every_s: float, clock: Callable[[], float]) -> None:
        self.mt, self.log, self.clock, self.every_s = mt, log, clock, every_s
        self.next_due = clock() + every_s if every_s else math.inf
        self._running = False

    def tick(self) -> threading.Thread | None:
        """Start a run in its own thread when one is due; the thread, or None."""
        if self._running or self.clock() < self.next_due:
            return None
        self._running = True
        self.next_due = self.clock() + self.every_s
        thread = threading.Thread(target=self._run, name=f"memtree-{self.name.replace(' ', '-')}", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        try:
            self.work()
        except MemtreeError as exc:
            self.log(f"warning: {self.name} did not run: {exc}")
        except Exception as exc:  # never let upkeep take the daemon down
            self.log(f"error: {self.name} failed: {type(exc).__name__}: {exc}")
        finally:
            self._running = False

    def work(self) -> None:
        """One run, its outcome logged."""
        raise NotImplementedError


class IngestFlush(_Periodic):
    """Runs `memtree ingest`'s idle flush on a cadence while the daemon is up (``extract.idle_flush_min`` > 0)."""

    name = "ingest flush"

    def __init__(self, mt: MemTree, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(mt, log, FLUSH_EVERY_S if mt.settings.extract.idle_flush_min > 0 else 0.0, clock)

    def work(self) -> None:
        report = self.mt.ingest_flush()
        if report.written:
            self.log(f"ingest: idle conversations flushed ({report.written} entries written)")


class GitSync(_Periodic):
    """Runs `memtree sync` every ``git.sync_every_min`` minutes while the daemon is up (0: never)."""

    name = "git sync"

    def __init__(self, mt: MemTree, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(mt, log, max(0.0, mt.settings.git.sync_every_min) * 60.0, clock)

    def work(self) -> None:
        done = self.mt.sync()
        level = "" if done.outcome in ("ok", "local") else "warning: "
        self.log(f"{level}git sync: {done.outcome}: {done.message}")
