"""`memtree serve`: one long-lived process per memory root, holding one warm MemTree for every caller.

It listens on a Unix socket (memtree.serve.unix: ``.memtree/serve.sock``, the user's alone) and,
with ``--http``, on loopback HTTP (memtree.serve.http); it records itself in ``.memtree/serve.json``
(pid, socket, http address, started_at). While alive it holds an flock on the root's lock in the
user's runtime folder (client.lock_path), not under ``.memtree``, so deleting that folder cannot let
a second daemon start: a second daemon for the root says the first one's pid and leaves, and a
record left by a killed daemon (lock free) is stale and replaced. Nothing a record says is trusted
to name a path (a cloned repository may carry one): the socket's path is computed (client.socket_path)
and only a socket there is removed. A daemon whose socket or record disappears stops (``unreachable``).
Requests (the protocol: memtree.serve.client) are
answered by memtree.serve.dispatch: a program's verbs, and the CLI's command lines, which the CLI
layer runs (``run_cli``, memtree.cli.serve: serve imports no CLI).

It watches the root (memtree.serve.watch), so no query pays a stat walk: its MemTree re-checks the
disk only every ``SAFETY_REFRESH_S`` on its own, and before a request when the watcher saw an
edit; memtree.yaml is re-read when it changes. It exits after ``idle_timeout_s`` without a request
(0: never), and on SIGTERM or SIGINT: it stops accepting, lets requests under way finish, then
removes its socket and record. Maintenance ticks run consolidate (memtree.serve.maintenance).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memtree import schema
from memtree.errors import MemtreeError
from memtree.notes import store
from memtree.serve import client
from memtree.serve.dispatch import Dispatcher, EditWatcher, RunCli
from memtree.serve.maintenance import GitSync, IngestFlush, Maintenance
from memtree.serve.unix import UnixListener, private_folder, socket_path

if TYPE_CHECKING:
    from memtree.api import MemTree

SAFETY_REFRESH_S = 30.0
"""How often the daemon's MemTree compares notes with the disk when no edit was seen; why: a file
system that drops change events (a network mount) still shows an edit within this."""
LOOP_S = 0.1
"""How often the main loop looks for a stop, the idle deadline and due maintenance."""
STOP_GRACE_S = 5.0
"""How long a stop waits for requests under way (typically milliseconds) before closing their connections."""
WARM_QUERY = "zqxjwarmupqzx 뷁쀍뛣뽧 1901-01-01"
"""What the daemon searches while warming up: no note holds it (a rejected search counts no recall)."""
LOCK_TRIES = 20
"""Attempts (10 ms apart) at the serve lock before deciding another daemon holds it; why: a client's
brief shared probe (forward.starting) must not turn a starting daemon away."""


class AlreadyServing(MemtreeError):
    """Another daemon serves this root (``pid``: its process, 0 when not known)."""

    def __init__(self, root: Path, pid: int) -> None:
        super().__init__(f"a daemon already serves {root}" + (f" (pid {pid})" if pid else ""))
        self.pid = pid


class Daemon:
    """Serves one MemTree on a Unix socket (and optionally HTTP) until stopped or idle."""

    def __init__(
        self,
        mt: MemTree,
        log: Callable[[str], None],
        idle_timeout_s: float,
        run_cli: RunCli | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mt, self.root, self.log = mt, mt.root, log
        self.idle_timeout_s = idle_timeout_s
        self.clock = clock
        self.state_dir = self.root / store.STATE_DIR
        self.http: Any = None  # memtree.serve.http.HttpServer when --http
        self.maintenance = Maintenance(mt, log, mt.settings.maintenance.consolidate_every_h, clock)
        self.flushes = IngestFlush(mt, log, clock)
        self.git_sync = GitSync(mt, log, clock)
        self.watcher = EditWatcher(mt, log, split=False)
        self.requests = Dispatcher(mt, log, self.watcher, self.maintenance, run_cli, clock)
        self._stop = threading.Event()
        self._reason = ""
        self._lock_fd: int | None = None
        self.listener: UnixListener | None = None
        self._watching: threading.Thread | None = None

    # --- start and stop -------------------------------------------------------------------------

    def serve(self, http: tuple[str, int] | None = None) -> None:
        """All of it: lock, warm up, listen (and HTTP), record, serve until stopped; cleans up on any failure.

        Raises AlreadyServing (nothing touched) when another daemon has the root, and one MemtreeError
        line when the file system refuses a step (``.memtree`` removed while starting, a read-only root).
        """
        try:
            self.acquire()
        except OSError as exc:
            raise self._start_error(exc) from None
        try:
            _route_library_logs(self.log)
            self.warm()
            if http is not None:
                from memtree.serve import http as http_

                server = http_.HttpServer(*http)
                self.http = server
                secret = http_.token(self.state_dir)
                app = http_.build_app(self.requests.answer_http, self.mt, server.hosts(), secret, self.log)
                server.start(app)
                self.log(f"HTTP on http://{server.address} (/v1/<verb>, /mcp; token in {self.state_dir}/serve.token)")
            self.listen()
            self.write_record()
        except BaseException as exc:
            self.stop("could not start")
            self.shutdown()
            if isinstance(exc, OSError):  # .memtree removed while starting, a full disk: one line, not a traceback
                raise self._start_error(exc) from None
            raise
        self.run()

    def _start_error(self, exc: OSError) -> MemtreeError:
        where = f" ({exc.filename})" if exc.filename else ""
        return MemtreeError(f"memtree serve could not start for {self.root}: {exc.strerror or exc}{where}")

    def acquire(self) -> None:
        """Take the root's serve lock (raises AlreadyServing) and clear what a killed daemon left."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # the socket's folder is the user's alone (BSDs ignore socket modes)
            if self.state_dir.stat().st_uid == os.getuid():
                os.chmod(self.state_dir, 0o700)
        try:
            import fcntl
        except ImportError:  # Windows
            raise MemtreeError("memtree serve needs Unix sockets and flock, which this system lacks") from None
        lock = Path(client.lock_path(str(self.root)))
        private_folder(lock.parent)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        for attempt in range(LOCK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if attempt == LOCK_TRIES - 1:
                    pid = _read_pid(fd)
                    os.close(fd)
                    raise AlreadyServing(self.root, pid) from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        stale = client.record(str(self.root))
        if stale is not None:  # the lock was free: whoever wrote this is gone (listen() clears its socket)
            self.log(f"replacing the stale record of pid {stale.get('pid')} (it stopped without cleaning up)")

    def warm(self) -> None:
        """Load everything a first request would: the index (refreshed), the tree, its keywords, the model,
        and what a process's first searches build (date patterns, the Hangul infix index, the vectorized scorer)."""
        from memtree.search import query

        state = self.mt.state
        with state.lock:
            self.mt.refresh()
            state.keywords(state.parsed_tree())
            for _ in range(2):  # the first search scores in pure Python, the next loads numpy
                # Why this query: it matches nothing, so no recall is counted; a date and a Hangul word build the
                # date patterns and the infix index
                with contextlib.suppress(MemtreeError):
                    self.mt.search(WARM_QUERY, cache=False, semantic=False)
            layer = query.semantic_layer(state)
            if layer is not None and layer.wanted() and layer.embedder() is not None:
                with contextlib.suppress(Exception):  # a failing layer says so at the first search
                    if not layer.served(state.index):  # an engine that searches the vectors needs none here
                        layer.align(state.index, state.read_lines)
                    layer.embedder().embed(["memtree"], kind="query")

    def listen(self) -> None:
        """Bind the Unix socket and start accepting."""
        self.listener = UnixListener(socket_path(self.root), self.requests.answer)
        self.listener.start()

    def write_record(self) -> None:
        """``.memtree/serve.json``: how clients find this daemon."""
        doc = {
            "pid": os.getpid(),
            "root": str(self.root),
            "socket": str(self.listener.path if self.listener else ""),
            "http": self.http.address if self.http is not None else None,
            "started_at": schema.iso(datetime.now().astimezone()),
        }
        store.atomic_write(self.state_dir / client.RECORD_FILE, orjson.dumps(doc) + b"\n", durable=False)

    def run(self) -> None:
        """Serve until ``stop()`` or the idle deadline; then stop cleanly."""
        self._watching = threading.Thread(target=self.watcher.run, name="memtree-watch", daemon=True)
        self._watching.start()
        until = f"; exits after {self.idle_timeout_s:g} s idle" if self.idle_timeout_s else ""
        where = self.listener.path if self.listener else "?"
        self.log(f"serving {self.root} on {where} (pid {os.getpid()}{until})")
        next_flush = self.clock() + 1.0
        while True:
            # Why sleep, not Event.wait(timeout): a timed wait's deadline is absolute, and under a shifted
            # clock (libfaketime, as CI runs the suite) it never came; a signal's stop waits one tick at most
            time.sleep(LOOP_S)
            if self._stop.is_set():
                break
            now = self.clock()
            idle = self.requests.in_flight == 0 and now - self.requests.last >= self.idle_timeout_s
            if self.idle_timeout_s and idle:
                self._reason = f"idle for {self.idle_timeout_s:g} s"
                break
            self.maintenance.tick()
            self.flushes.tick()
            self.git_sync.tick()
            # search recalls reach usage.json within a second, as an in-process MemTree's do; why not
            # after each request: the merge rewrites usage.json whole (~10 ms once it holds many entries)
            if now >= next_flush:
                gone = self.unreachable()
                if gone:
                    self._reason = gone
                    break
                self._flush_usage()
                next_flush = now + 1.0
        self.shutdown()

    def unreachable(self) -> str:
        """Why no client can find this daemon any more ("" while one can): its socket or record is gone or
        replaced (``.memtree`` deleted). Why it then stops: one daemon per root, and a client finds only the
        one its record names; the next command (or autostart) starts a fresh one over the fresh state."""
        if self.listener is not None:
            try:
                st = os.lstat(self.listener.path)
                if (st.st_dev, st.st_ino) != self.listener.identity:
                    return "its socket was replaced"
            except OSError:
                return "its socket was removed (.memtree deleted?)"
        mine = client.record(str(self.root))
        if mine is None or mine.get("pid") != os.getpid():
            return "its record was removed (.memtree deleted?)"
        return ""

    def stop(self, reason: str = "asked to stop") -> None:
        """Ask ``run`` to stop (signal-safe: sets a flag)."""
        self._reason = self._reason or reason
        self._stop.set()

    def shutdown(self) -> None:
        """Stop accepting, let requests under way finish, close connections, remove socket and record."""
        self.log(f"stopping ({self._reason or 'asked to stop'})")
        self._stop.set()
        if self.listener is not None:
            self.listener.close()
        if self.http is not None:
            self.http.stop()
        with self.requests.idle:
            self.requests.idle.wait_for(lambda: self.requests.in_flight == 0, timeout=STOP_GRACE_S)
        if self.listener is not None:
            self.listener.disconnect()
        self.watcher.stop()
        if self._watching is not None:
            self._watching.join(timeout=STOP_GRACE_S)
        self._flush_usage()
        mine = client.record(str(self.root))
        if mine is not None and mine.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                os.unlink(self.state_dir / client.RECORD_FILE)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None
        self.log(f"stopped serving {self.root}")

    def _flush_usage(self) -> None:
        if self.mt.state._usage is not None:
            self.mt.state.usage().flush()


def _route_library_logs(log: Callable[[str], None]) -> None:
    """Warnings libraries log (uvicorn, the MCP SDK) go to the daemon's log, never to a command's captured stderr."""
    import logging

    class Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            level = "error" if record.levelno >= logging.ERROR else "warning"
            log(f"{level}: {record.name}: {record.getMessage()}")

    top = logging.getLogger()
    if not top.handlers:  # so logging.basicConfig (the MCP SDK calls it) adds no stderr handler of its own
        top.addHandler(Forward(logging.WARNING))
        top.setLevel(logging.WARNING)


def _read_pid(fd: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).split()[0])
    return 0
