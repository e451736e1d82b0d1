"""A second process that reads and parses notes for a large index build, so a build uses two cores.

Why a process: tokenizing and finding dates are Python bytecode, which one interpreter runs on one
core at a time. Why a plain child interpreter (``python -c``) and not multiprocessing: spawning
re-imports the caller's ``__main__`` (every script calling ``MemTree.index()`` would need a main
guard), and forking a process that may hold threads (the daemon's watcher) can deadlock.

The work is shared without any planning: the build goes through the notes front to back, the
helper back to front, and they stop where they meet. Whatever the other core is busy with, neither
waits for the other: if the helper starts late, is slow or dies, the build parses more notes itself.

The helper parses with the very code the build does (``Index._read`` and ``Index._parse``) into its
own Vocabulary, and sends each note's outcome — its chunks with term ids, the warnings, the skipped
entry, the keyword counts — with the terms its ids name. The build numbers those terms in its own
Vocabulary and takes the outcomes in note order after its own, so the index, the manifest and the
warnings are those a build in one process makes, byte for byte (a segment stores its terms sorted by
name, never by id).

Protocol: the build writes one pickle to the helper's stdin — its ``sys.path`` (so the same memtree
is imported), then the root, the note size limit, whether keyword counts are wanted, and the notes;
the helper writes frames to stdout, each an 8-byte little-endian length and a pickle of
``(outcomes, new terms)``. Both ends are memtree's own, started just now: pickle is safe here. The
helper's own side is memtree.index.helper_process, so the build's index module and this one do not
import each other.
"""

from __future__ import annotations

import os
import pickle
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from memtree import config

if TYPE_CHECKING:
    from memtree.index.vocab import Vocabulary
    from memtree.notes.store import FileStat

BATCH = 8
"""Notes per frame: the build may parse up to this many notes the helper is parsing too; fewer frames
cost less to pickle and read."""
_BOOT = "import pickle, sys; job = pickle.load(sys.stdin.buffer); sys.path[:] = job[0]; " + (
    "from memtree.index.helper_process import serve; serve(job[1:])"
)

Outcome = tuple[list[str], "tuple[int, int, str] | None", Any, Any]
"""One note as parsed: its warnings, its skipped entry (None: read fine, or unreadable for a
moment), its ``chunk_index._Parsed`` with the helper's term ids (None: not indexed) and what it adds
to ``Index.collect`` (None: nothing)."""


def start(root: Path, max_note_bytes: int, collect: bool, notes: list[FileStat]) -> Helper | None:
    """A helper parsing ``notes`` from the last; None where none would help or can run (no core idle,
    not POSIX, no Python executable, no process to be had): the build then parses alone."""
    if os.name != "posix" or not sys.executable or _idle() < config.INDEX_PARALLEL_MIN_IDLE:
        return None
    try:
        return Helper(root, max_note_bytes, collect, notes)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


IDLE_SAMPLE_S = 0.05
"""How long the build watches the cores before it starts a helper; why: the 1-minute load average lags
— it still counts the work of a minute ago, and the calling process's own (a benchmark, a daemon) —
while a moment of /proc/stat says what the other processes use now."""


def _idle() -> float:
    """Cores idle beside this process's own: measured over a moment where the kernel tells it
    (/proc/stat), else by the 1-minute load average (0 with one core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return 0.0
    idle = _idle_now(cores)
    if idle is not None:
        return idle - 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average to be had: a second core is taken as idle
        load = 0.0
    return cores - 1 - load


def _idle_now(cores: int) -> float | None:
    """Cores idle over the next ``IDLE_SAMPLE_S`` while this process waits (None without /proc/stat)."""

    def ticks() -> tuple[int, int]:
        with open("/proc/stat", "rb") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
        return fields[3] + fields[4], sum(fields)

    try:
        idle0, total0 = ticks()
        time.sleep(IDLE_SAMPLE_S)
        idle1, total1 = ticks()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:  # the clock ticks too coarsely to tell: say nothing
        return None
    # /proc/stat counts every CPU of the machine; the share idle is what this process may use of its own
    return cores * (idle1 - idle0) / (total1 - total0)


class Helper:
    """The build's end of one helper process: start it, see how far it has come, take its outcomes."""

    def __init__(self, root: Path, max_note_bytes: int, collect: bool, notes: list[FileStat]) -> None:
        """Start the helper on ``notes`` (it parses them from the last); raises OSError when it cannot start."""
        self.n = len(notes)
        self.low = self.n  # the helper has parsed every note from here to the end
        self.outcomes: dict[int, Outcome] = {}
        self.terms: list[str] = []  # the helper's Vocabulary, as far as it has sent it
        self._buffer = bytearray()
        self._alive = True
        job = pickle.dumps((sys.path, str(root), max_note_bytes, collect, [tuple(f) for f in notes]), protocol=5)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._fd = self.proc.stdout.fileno()
        # Why a thread: the job is larger than a pipe holds, and the build should not wait while
        # the helper's interpreter starts
        threading.Thread(target=_feed, args=(self.proc.stdin, job), daemon=True).start()

    def reached(self) -> int:
        """The first note from which the helper has parsed every one (``n``: none yet); never blocks."""
        while self._alive and select.select([self._fd], [], [], 0)[0]:
            data = os.read(self._fd, 1 << 20)
            if not data:
                self._alive = False
                break
            self._buffer += data
            self._take_frames()
        return self.low

    def _take_frames(self) -> None:
        buf = self._buffer
        while len(buf) >= 8:
            size = int.from_bytes(buf[:8], "little")
            if len(buf) < 8 + size:
                return
            try:
                outcomes, terms = pickle.loads(buf[8 : 8 + size])
            except Exception:  # a torn or foreign frame: trust nothing after it
                self._alive = False
                return
            del buf[: 8 + size]
            self.terms += terms
            for i, outcome in outcomes:
                self.outcomes[i] = outcome
                self.low = min(self.low, i)

    def results(self, start: int, vocab: Vocabulary) -> Iterator[Outcome]:
        """The outcomes of notes ``start`` to the end, in order, their term ids made ``vocab``'s."""
        ids = [vocab.id(t) for t in self.terms]
        for i in range(start, self.n):
            warnings, skip, parsed, collected = self.outcomes[i]
            if parsed is not None:
                parsed.chunks = [(s, e, _mapped(ids, local)) for s, e, local in parsed.chunks]
            yield warnings, skip, parsed, collected

    def close(self) -> None:
        """Stop the helper (it may still be parsing notes the build has done) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _mapped(ids: list[int], local: tuple[int, ...]) -> tuple[int, ...]:
    if len(local) > 1:
        return itemgetter(*local)(ids)  # type: ignore[no-any-return]
    return tuple([ids[i] for i in local])


def _feed(stdin: BinaryIO, job: bytes) -> None:
    try:
        stdin.write(job)
        stdin.close()
    except OSError:  # the helper is gone: the build parses alone
        pass
