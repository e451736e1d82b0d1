"""How the daemon answers a request, whichever way it came (Unix socket line, ``POST /v1/<verb>``).

A program's verb goes to memtree.serve.verbs; a forwarded command line goes to ``run_cli``, the CLI
layer's runner (memtree.cli.serve: serve imports no CLI), one at a time. Before either, the
MemTree is brought up to date cheaply: memtree.yaml is re-read when its stat changed, and the
index refreshed when the watcher saw a note change since the last request (of the notes its
events named, or of every note when one named a folder). Every request is
counted as activity (the idle deadline moves) and as under way (a stop waits for it).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from memtree import schema
from memtree.config import CONFIG_FILE
from memtree.errors import ConfigError, MemtreeError
from memtree.serve import verbs
from memtree.serve.watch import Watcher

if TYPE_CHECKING:
    from memtree.api import MemTree
    from memtree.serve.maintenance import Maintenance

Json = dict[str, Any]
RunCli = Callable[["MemTree", Json], Json]
"""(the daemon's MemTree, a CLI request) → ``{"output", "code"}`` or ``{"fallback": true}``."""


class EditWatcher(Watcher):
    """The watcher, also keeping which notes changed since the last request, which refreshes them first."""

    edited = False
    _edits: frozenset[str] | None = frozenset()  # None: every note is to be checked

    def _noted(self, notes: list[str], everything: bool) -> None:
        super()._noted(notes, everything)
        self._edits = None if everything or self._edits is None else self._edits.union(notes)
        self.edited = True

    def edits(self) -> list[str] | None:
        """The notes edited since the last call, root-relative (None: check every note); clears ``edited``."""
        with self._lock:
            edits, self._edits, self.edited = self._edits, frozenset(), False
        return None if edits is None else sorted(edits)


class Dispatcher:
    """Answers requests on one MemTree; keeps the count of requests and when the last one was."""

    def __init__(
        self,
        mt: MemTree,
        log: Callable[[str], None],
        watcher: EditWatcher,
        maintenance: Maintenance,
        run_cli: RunCli | None,
        clock: Callable[[], float],
    ) -> None:
        self.mt, self.log, self.watcher, self.maintenance = mt, log, watcher, maintenance
        self.run_cli, self.clock = run_cli, clock
        self.count = 0  # requests answered or under way (ping says it)
        self.in_flight = 0
        self.last = clock()  # when the last request started or ended
        self.idle = threading.Condition()
        self._cli_lock = threading.Lock()
        self._config_stamp = self._stat_config()

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Count a request under way (a stop waits for it) and as activity (the idle deadline moves)."""
        with self.idle:
            self.in_flight += 1
            self.count += 1
            self.last = self.clock()
        try:
            yield
        finally:
            with self.idle:
                self.in_flight -= 1
                self.last = self.clock()
                self.idle.notify_all()

    def answer(self, line: bytes) -> bytes:
        """One request line → one answer line (never raises)."""
        with self.request():
            try:
                try:
                    request = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise verbs.BadRequest(f"bad JSON: {exc}") from None
                if not isinstance(request, dict):
                    raise verbs.BadRequest('a request is a JSON object: {"verb": …, "args": {…}}')
                is_command = "argv" in request
                doc = self.command(request) if is_command else self.call(request.get("verb"), request.get("args"))
            except MemtreeError as exc:
                doc = verbs.error(exc)
            except Exception as exc:  # a bug must cost one answer, not the daemon
                self.log(f"error: {type(exc).__name__}: {exc}")
                doc = verbs.error(exc)
            return schema.dumps(doc, indent=False)

    def answer_http(self, verb: str, body: bytes) -> tuple[int, bytes]:
        """``POST /v1/<verb>`` with its JSON body of arguments → (HTTP status, answer line)."""
        with self.request():
            status = 200
            try:
                try:
                    args = orjson.loads(body) if body.strip() else {}
                except orjson.JSONDecodeError as exc:
                    raise verbs.BadRequest(f"bad JSON: {exc}") from None
                doc = self.call(verb, args)
            except Exception as exc:
                status, doc = verbs.status_of(exc), verbs.error(exc)
                if status == 500:  # a bug: logged; the caller's input is not
                    self.log(f"error: {type(exc).__name__}: {exc}")
            return status, schema.dumps(doc, indent=False)

    def call(self, verb: object, args: object) -> Json:
        """One verb of the JSON API (raises BadRequest or the memtree error)."""
        if verb == "ping":  # the daemon's own state: no settings or index needed
            return verbs.call(self.mt, verb, args) | {"request_count": self.count}
        self.fresh()
        return verbs.call(self.mt, verb, args)

    def command(self, request: Json) -> Json:
        """A forwarded command line, run by the CLI layer with its output captured; or ``{"fallback": true}``."""
        argv = request.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise verbs.BadRequest("argv must be a non-empty list of strings")
        # Why fall back: local times must come out in the caller's zone; the caller's user root must be the
        # one searched beside this root; and a consolidate while a tick runs gets consolidation's own
        # "another one is running" in the caller's process
        if self.run_cli is None or request.get("tz") != os.environ.get("TZ") or not self._same_home(request):
            return {"fallback": True}
        if argv[0] == "consolidate" and self.maintenance.running:
            return {"fallback": True}
        try:
            self.fresh()
        except ConfigError:  # memtree.yaml broken: the in-process run says so, as it always did
            return {"fallback": True}
        with self._cli_lock:
            return self.run_cli(self.mt, request)

    def _same_home(self, request: Json) -> bool:
        """Whether the caller's variables place its user root where this daemon's is (memtree.notes.root.user_home)."""
        from memtree.notes.root import HOME_ENV, user_home

        given = request.get("home")
        if not isinstance(given, dict) or set(given) != set(HOME_ENV):
            return False
        if not all(v is None or isinstance(v, str) for v in given.values()):
            return False
        return user_home(given) == self.mt.home

    def fresh(self) -> None:
        """Re-read memtree.yaml if it changed; refresh the index if the watcher saw an edit."""
        state = self.mt.state
        stamp = self._stat_config()
        if stamp == self._config_stamp and not self.watcher.edited:
            return
        with state.lock:
            if stamp != self._config_stamp:
                embed = state.settings.embed
                state.reload_settings()
                self._config_stamp = stamp
                if state.settings.embed != embed:
                    state.semantic = None  # the layer is made again under the new settings
            if self.watcher.edited:
                self.mt.refresh(paths=self.watcher.edits())

    def _stat_config(self) -> tuple[int, int] | None:
        try:
            st = (self.mt.root / CONFIG_FILE).stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)
