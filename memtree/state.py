"""``RootState``: one memory root's state — root, settings, chunk index, tree, caches — behind one lock.

Every verb of ``MemTree`` (memtree.api) runs under ``state.lock``, a re-entrant lock, so several
threads of one process can search and write through one ``MemTree``: a search never sees an index
half refreshed by a write, and two writes never interleave (across processes, notes.store's
write lock does that). The verbs themselves live with their layer (memtree.search.query,
memtree.write.verbs, memtree.lifecycle.verbs) and take the state as their first argument.

Layer: above memtree.index and memtree.notes, below search, write and lifecycle.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.config import Settings, load_settings
from memtree.errors import QueryError, TreeError
from memtree.index.chunk_index import Index, Report
from memtree.index.routing import KeywordIndex
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.notes.root import find_root

if TYPE_CHECKING:
    from cachetools import TTLCache

    from memtree.notes.usage import Usage

QUERY_CACHE_SIZE = 512
LINE_CACHE_NOTES = 256
"""Notes whose lines a state keeps to cut hit texts from (re-read when their stat changes)."""


def _engine(root: Path, settings: Settings) -> Index:
    """The chunk index ``index.backend`` chooses: memtree's own (the default), or one searched through
    Milvus (memtree.index.milvus), which is an Index too, so every verb works on either."""
    if settings.index.backend == "milvus":
        from memtree.index.milvus.index import make_index

        return make_index(root, settings)
    return Index(root, settings.index.max_note_bytes, settings.index.parallel)


class RootState:
    """What a memory root holds in memory between calls, and the lock that guards it."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        settings: Settings | None = None,
        refresh_interval: float | None = None,
    ) -> None:
        self.root: Path = find_root(root)
        self.settings: Settings = settings or load_settings(self.root)
        self.refresh_interval = (
            self.settings.search.refresh_interval_s if refresh_interval is None else refresh_interval
        )
        self.lock = threading.RLock()
        self.actor: str | None = None  # who writes through it (memtree.notes.recorder.who); None: the default
        self.index = _engine(self.root, self.settings)
        self.warnings: list[str] = []  # the last refresh's: notes skipped, segments rebuilt
        self.dangling: tuple[str, ...] = ()  # nodes whose note is gone, said with every search
        self.files_checked: tuple[float, tuple[int, int] | None] | None = None
        self.searches = 0
        self.semantic: Any = None  # memtree.search.semantic.Layer once asked for (it loads nothing until used)
        self.semantic_noticed = False
        self.note_facts: dict[str, tuple[tuple[int, int], Any]] = {}  # path → (stat, decay.NoteFacts)
        self.retired: tuple[object, Any] | None = None  # (index stamp, what hand-written supersedes links retire)
        self._tree_file = os.path.join(self.root, treemod.TREE_FILE)  # stat'ed by every search: joined once
        self._tree: treemod.Tree | None = None
        self._tree_stamp: tuple[int, int] | None = None
        self._keywords: KeywordIndex | None = None
        self._checked = float("-inf")
        self._usage: Usage | None = None
        self._lines: dict[str, tuple[tuple[int, int] | None, list[str]]] = {}
        # Why a hook: what a changed note means for its entries (a value edited by hand in place) is the
        # write layer's to judge (memtree.write.handedits); MemTree sets it, this layer only calls it
        self.on_notes_changed: Callable[[list[str], list[str]], None] | None = None
        self._settling = False
        from cachetools import TTLCache

        self.cache: TTLCache[tuple[object, ...], Any] = TTLCache(QUERY_CACHE_SIZE, self.settings.search.cache_ttl_s)

    def reload_settings(self) -> None:
        """Read memtree.yaml again (after a verb changed it); cached results made under the old settings go."""
        self.settings = load_settings(self.root)
        self.cache.clear()

    # --- the tree -------------------------------------------------------------------------

    def tree(self) -> treemod.Tree:
        """The validated tree (re-read when tree-index.json changes on disk)."""
        tree = self.parsed_tree()
        treemod.check_files(tree, self.root, source=str(self.root / treemod.TREE_FILE))
        return tree

    def parsed_tree(self) -> treemod.Tree:
        """The tree, parsed and checked except for node files (re-read when the file changes)."""
        try:
            st = os.stat(self._tree_file)
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, 0)
        if self._tree is None or stamp != self._tree_stamp:
            self._tree = treemod.load(self.root, check_files=False)
            self._tree_stamp = stamp
            self._keywords = None
        return self._tree

    def routing_tree(self) -> tuple[treemod.Tree, str | None]:
        """The tree search routes by, and None; while tree-index.json is unreadable (conflict markers
        a merge left, a bad hand edit) an empty tree and the warning to say once: search then answers
        from the notes alone instead of stopping an agent that has just pulled."""
        try:
            return self.parsed_tree(), None
        except TreeError as exc:
            why = "searching the notes without routing until it is repaired (memtree check --fix)"
            return treemod.Tree(), f"{exc}; {why}"

    @property
    def tree_stamp(self) -> tuple[int, int] | None:
        """The stat of tree-index.json when it was last read."""
        return self._tree_stamp

    def forget_tree(self) -> None:
        """Read tree-index.json again at the next use (after a write changed it)."""
        self._tree = None

    def keywords(self, tree: treemod.Tree) -> KeywordIndex:
        """The tree's keyword index, from .memtree/ when made from this very tree file."""
        if self._keywords is not None:
            return self._keywords
        import orjson

        cache = self.root / store.STATE_DIR / "keywords.json"
        try:
            found = KeywordIndex.from_json(tree, orjson.loads(cache.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            found = None
        if found is None:
            found = KeywordIndex(tree)
            if tree.digest and self.index.persist:
                # a read-only root still searches; it just rebuilds this each time
                with contextlib.suppress(OSError):
                    store.atomic_write(cache, orjson.dumps(found.to_json()), durable=False)
        self._keywords = found
        return found

    # --- the index ------------------------------------------------------------------------

    def refresh(
        self,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        paths: list[str] | None = None,
    ) -> Report:
        """Re-index notes changed on disk since the last call (all of them with ``force``; of
        ``paths`` alone when given: a watcher's events name them)."""
        report = self.index.refresh(force=force, progress=progress, paths=paths)
        self.warnings = report.warnings + self.index.warnings
        self._changed(report)
        if paths is None:  # a check of some notes is no check of the disk
            # Why monotonic: this only throttles stat walks; it is no moment any result depends on
            self._checked = time.monotonic()
        return report

    def refresh_paths(self, paths: list[str]) -> None:
        """Re-index just these notes (a write knows what it changed)."""
        self._changed(self.index.refresh(paths=paths))

    def _changed(self, report: Report) -> None:
        """Hand the notes a refresh found changed (or gone) to ``on_notes_changed``, once at a time."""
        hook = self.on_notes_changed
        if hook is None or self._settling or not (report.changed or report.added or report.removed):
            return
        self._settling = True  # its own write is refreshed too: that refresh needs no second look
        try:
            hook([*report.changed, *report.added], list(report.removed))
        finally:
            self._settling = False

    def fresh(self) -> None:
        """Refresh when the last check is older than ``search.refresh_interval_s``."""
        if time.monotonic() - self._checked >= self.refresh_interval or not self.index.segments:
            self.refresh()

    @property
    def checked(self) -> float:
        """When the notes were last compared with the disk (monotonic s)."""
        return self._checked

    def bank_notes(self) -> list[str]:
        """Root-relative paths of every bank note, as of a fresh check."""
        self.fresh()
        return [p for p, e in self.index.files.items() if e.tier == "bank"]

    def read_lines(self, path: str) -> list[str]:
        """A note's lines; notes read often are kept, keyed by the stat the index holds for them."""
        entry = self.index.files.get(path)
        stamp = (entry.mtime_ns, entry.size) if entry else None
        cached = self._lines.get(path)
        if cached is not None and cached[0] == stamp and stamp is not None:
            return cached[1]
        try:
            lines = store.read_note(os.path.join(self.root, path)).split("\n")
        except (OSError, UnicodeDecodeError):
            lines = []
        if len(self._lines) >= LINE_CACHE_NOTES:
            self._lines.pop(next(iter(self._lines)))
        self._lines[path] = (stamp, lines)
        return lines

    # --- usage ----------------------------------------------------------------------------

    def usage(self) -> Usage:
        """The recall counters of this root (buffered; flushed at least once a second and at exit)."""
        if self._usage is None:
            from memtree.notes.usage import Usage

            self._usage = Usage(self.root)
        return self._usage

    # --- paths ----------------------------------------------------------------------------

    def relative(self, path: str, must_exist: bool = True) -> str:
        """A note path given on the command line (relative to here or the root) → root-relative."""
        try:
            store.check_name(path, "path", absolute=True)
        except QueryError:
            if not must_exist:
                return ""  # no note of this memory has such a name (a pre-commit hook passes every file)
            raise
        given = Path(path).expanduser()
        for candidate in (given, self.root / path):
            full = candidate.resolve()
            if (full.is_file() or not must_exist) and full.is_relative_to(self.root):
                return full.relative_to(self.root).as_posix()
        if not must_exist:
            return ""  # a file outside this memory root (pre-commit passes every changed file)
        raise QueryError(f"{path}: no such note in {self.root}")
