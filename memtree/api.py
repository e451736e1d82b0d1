"""``MemTree``: the facade agents and the CLI use. Every command is one call in here."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.config import Settings, load_settings
from memtree.errors import EmptyMemory, MemtreeError, QueryError
from memtree.index.chunk_index import Index, Report
from memtree.index.routing import KeywordIndex
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.notes.root import find_root
from memtree.search import decay
from memtree.search.pipeline import SearchResult, quote_query, run
from memtree.text import dates
from memtree.text import terms as text
from memtree.writing import Writing

if TYPE_CHECKING:
    from memtree.lifecycle.status import Status
    from memtree.lifecycle.usage import Usage
    from memtree.search.context import Context
    from memtree.search.semantic import Layer

TIER_CHOICES = {
    "default": ("recall", "bank"),
    "recall": ("recall",),
    "bank": ("bank",),
    "memory": ("memory",),
    "all": ("recall", "bank", "memory"),
}
QUERY_CACHE_SIZE = 512
LINE_CACHE_NOTES = 256
"""Notes whose lines a MemTree keeps to cut hit texts from (re-read when their stat changes)."""


@dataclass(frozen=True)
class IndexResult:
    """What ``memtree index`` did to the chunk index and to tree-index.json."""

    report: Report
    nodes_added: tuple[str, ...]
    nodes_dropped: tuple[tuple[str, str], ...]
    chunks: int
    files: int
    seconds: float
    embedded: dict[str, Any] | None = None  # with --embed: model, chunks, newly embedded, seconds


@dataclass(frozen=True)
class Note:
    """A note fetched by node id or path."""

    path: str
    node: str | None
    text: str
    keywords: tuple[str, ...] = ()


class MemTree(Writing):
    """A memory root: search it, fetch notes, keep its index and tree in step."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        settings: Settings | None = None,
        refresh_interval: float | None = None,
    ) -> None:
        self.root = find_root(root)
        self.settings = settings or load_settings(self.root)
        self.refresh_interval = (
            self.settings.search.refresh_interval_s if refresh_interval is None else refresh_interval
        )
        self._index = Index(self.root)
        self._tree: treemod.Tree | None = None
        self._tree_stamp: tuple[int, int] | None = None
        self._keywords: KeywordIndex | None = None
        self._checked = float("-inf")
        self._searches = 0
        self._usage: Usage | None = None
        self._lines: dict[str, tuple[tuple[int, int] | None, list[str]]] = {}
        self._note_facts: dict[str, tuple[tuple[int, int], decay.NoteFacts]] = {}
        self._semantic: Layer | None = None
        self._semantic_noticed = False
        self._files_checked: tuple[float, tuple[int, int] | None] | None = None
        self._warnings: list[str] = []
        self._dangling: tuple[str, ...] = ()  # nodes whose note is gone, said with every search
        from cachetools import TTLCache

        self._cache: TTLCache[tuple[object, ...], SearchResult] = TTLCache(
            QUERY_CACHE_SIZE, self.settings.search.cache_ttl_s
        )

    # --- state ---------------------------------------------------------------------------

    @property
    def tree(self) -> treemod.Tree:
        """The validated tree (re-read when tree-index.json changes on disk)."""
        tree = self._parsed_tree()
        treemod.check_files(tree, self.root, source=str(self.root / treemod.TREE_FILE))
        return tree

    def _parsed_tree(self) -> treemod.Tree:
        """The tree, parsed and checked except for node files (re-read when the file changes)."""
        path = self.root / treemod.TREE_FILE
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, 0)
        if self._tree is None or stamp != self._tree_stamp:
            self._tree = treemod.load(self.root, check_files=False)
            self._tree_stamp = stamp
            self._keywords = None
        return self._tree

    def refresh(self, force: bool = False, progress: Callable[[int, int], None] | None = None) -> Report:
        """Re-index notes changed on disk since the last call (all of them with ``force``)."""
        report = self._index.refresh(force=force, progress=progress)
        self._warnings = report.warnings + self._index.warnings
        self._checked = time.monotonic()
        return report

    def _fresh(self) -> None:
        if time.monotonic() - self._checked >= self.refresh_interval or not self._index.segments:
            self.refresh()

    # --- commands ------------------------------------------------------------------------

    def index(
        self,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        embed: bool = False,
        embed_progress: Callable[[int, int], None] | None = None,
    ) -> IndexResult:
        """Refresh the chunk index, then add nodes for new bank notes and drop nodes of gone ones.

        ``embed`` also embeds every chunk without a vector (the semantic layer; raises
        EmbedUnavailable when it cannot load).
        """
        from memtree.write import catalog

        t0 = time.perf_counter()
        self._index.collect = {}
        try:
            report = self.refresh(force=force, progress=progress)
            bank = sorted(p for p, e in self._index.files.items() if e.tier == "bank")
            segments = [s for _, s in self._index.segment_list()]
            collected = self._index.collect
            changes: list[catalog.CatalogChange] = []

            def synced(current: treemod.Tree) -> treemod.Tree | None:
                # an agent's `add` may be adding a node right now: the catalog works on the file as it is
                changes[:] = [catalog.update(self.root, current, bank, segments, collected)]
                missing = not (self.root / treemod.TREE_FILE).exists()
                return changes[0].tree if changes[0].added or changes[0].dropped or missing else None

            treemod.update(self.root, synced)
            change = changes[0]
        finally:
            self._index.collect = None
        self._tree = None
        embedded = None
        if embed:
            embedded = self._embed_all(embed_progress)
        return IndexResult(
            report,
            change.added,
            change.dropped,
            self._index.n_chunks,
            len(self._index.files),
            time.perf_counter() - t0,
            embedded,
        )

    def _embed_all(self, progress: Callable[[int, int], None] | None) -> dict[str, Any]:
        from memtree.errors import MemtreeError
        from memtree.search.semantic import Layer, _read_lines

        layer = self._semantic_layer() or Layer(self.root, self.settings.embed, 0.6, 0.4)
        if layer.embedder() is None:
            raise MemtreeError(layer.notice or "the embedding model is unavailable")
        t0 = time.perf_counter()
        aligned = layer.align(self._index, lambda path: _read_lines(self.root, path), True, progress)
        return {
            "model": layer.embedder().model_id,
            "chunks": len(aligned.rows),
            "embedded": layer.embedded,
            "seconds": round(time.perf_counter() - t0, 3),
        }

    def search(
        self,
        query: str,
        k: int | None = None,
        tier: str = "default",
        budget: int | None = None,
        cache: bool = True,
        scope: str | None = None,
        semantic: bool | None = None,
        now: datetime | None = None,
    ) -> SearchResult:
        """Search the memory; returns hits best first, or none with the reason (``rejected``).

        ``now`` (default: the clock, read here and nowhere below) is the moment decay and recency
        are judged at, so a result is reproducible on any date.

        ``scope`` (default: ``search.scope`` in memtree.yaml) is the current scope: only entries
        of it and of the scopes above it are found, and its own get the scope boost. ``semantic``
        forces the embedding layer on or off (default: ``embed.enabled``; see memtree.search.semantic).
        """
        if tier not in TIER_CHOICES:
            raise QueryError(f"unknown tier {tier!r}: choose one of {', '.join(TIER_CHOICES)}")
        k = self.settings.search.max_results if k is None else k
        if k < 1:
            raise QueryError("k must be at least 1")
        if budget is not None and budget < 1:
            raise QueryError("the token budget must be at least 1")
        if not query.strip():
            raise QueryError("the query is empty")
        scope = self.settings.search.scope if scope is None else scope
        chain = decay.parse_scope(scope) if scope else None
        moment = time.time() if now is None else now.timestamp()
        # a day the query names is a term of its own (chunks carry their days: memtree.text.dates)
        today = datetime.fromtimestamp(moment).date()
        words, days, _ = dates.query_dates(query, today)
        qterms = list(dict.fromkeys([*text.query_terms(words), *days]))
        if not qterms:
            raise QueryError(
                f"the query {quote_query(query)} has no searchable term (only punctuation or very common "
                f"words such as the/what/뭐야, which memtree does not index); add a content word"
            )
        tree = self._parsed_tree()
        self._fresh()
        stamp = (self._checked, self._tree_stamp)
        if stamp != self._files_checked:
            # the refresh has just seen every note on disk: only node files outside the tiers need a stat.
            # Why not an error: a note deleted or renamed in an editor must never stop search
            self._dangling = tuple(
                f"node '{n.id}' points to {n.path}, which is gone: search skips it "
                "(`memtree index` or a running `memtree watch` drops it)"
                for n in treemod.dangling(tree, self.root, self._index.files)
            )
            self._files_checked = stamp
        tiers = TIER_CHOICES[tier]
        if not any(e.tier in tiers for e in self._index.files.values()):
            raise EmptyMemory(
                f"{self.root} has no notes in {', '.join(t + '/' for t in tiers)}"
                + ("" if tier == "all" else " (try --tier all)")
            )
        # Why: a skipped note (not UTF-8, a symlink loop) does not bump the index version, yet its
        # warning must reach the caller, so the warnings are part of the key.
        # Why: an explicit `now` is part of the question; the clock's own moves are the TTL's business.
        key = (
            query,
            k,
            tier,
            budget,
            chain,
            semantic,
            now,
            today,
            self._index.version,
            self._tree_stamp,
            tuple(self._warnings),
            self._dangling,
        )
        if cache and key in self._cache:
            cached = self._cache[key]
            self._reinforce(cached)  # a repeated question is still a recall
            return cached
        if self._keywords is None:
            self._keywords = self._keyword_index(tree)

        def read_lines(path: str) -> list[str]:
            # notes recalled often are read once: keyed by the stat the index holds for them
            entry = self._index.files.get(path)
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

        # Why: importing numpy costs ~50 ms, more than one pure-Python query on a large index, so a
        # process's first query is scored in Python and the vectorized scorer takes over after it.
        vectorize = self._searches > 0 or "numpy" in sys.modules
        self._searches += 1
        from memtree.lifecycle.banks import skipped

        skip = skipped(self.settings.disabled_banks)
        sem = None
        layer = self._semantic_layer() if semantic is not False else None
        if layer is not None and (semantic or layer.wanted()):
            sem = layer.scores(self._index, query, lambda seg: seg.files_in(frozenset(tiers), skip), read_lines)
        result = run(
            self._index,
            tree,
            self._keywords,
            query,
            qterms,
            k,
            tiers,
            self.settings.search,
            read_lines,
            budget,
            vectorize,
            skip,
            self.settings.search.reinforce,
            self._adjuster(chain, read_lines, moment),
            sem,
            today,
        )
        notices = [*self._warnings, *self._dangling]
        if layer is not None and layer.notice and not self._semantic_noticed:
            notices.append(layer.notice)  # said once per MemTree: the downgrade is news only once
            self._semantic_noticed = True
        if notices or sem is not None:
            from dataclasses import replace

            from memtree.search.semantic import RRF_K

            weights = dict(result.weights)
            if sem is not None:
                weights.update(keyword=sem.kw, semantic=sem.sw)
                if sem.fusion == "rrf":
                    weights["rrf_k"] = RRF_K
            result = replace(result, warnings=tuple(notices), weights=weights)
        if cache:
            self._cache[key] = result
        self._reinforce(result)
        return result

    def _adjuster(
        self, chain: tuple[str, ...] | None, read_lines: Callable[[str], list[str]], now: float
    ) -> decay.Adjuster | None:
        """Decay, recency and scope for this search (None when all three are off)."""
        settings = self.settings.search
        if not settings.decay and chain is None:
            return None
        facts = self._note_facts

        def note(path: str) -> decay.NoteFacts:
            entry = self._index.files.get(path)
            stamp = (entry.mtime_ns, entry.size) if entry else (0, 0)
            known = facts.get(path)
            if known is not None and known[0] == stamp:
                return known[1]
            found = decay.note_facts(path, read_lines(path), stamp[0] / 1e9)
            if len(facts) >= LINE_CACHE_NOTES * 4:
                facts.pop(next(iter(facts)))
            facts[path] = (stamp, found)
            return found

        recalls = self._usage_counter().retrievals() if settings.decay else (lambda keys: 0)
        return decay.Adjuster(now, chain, recalls, note, settings.recency_boost, settings.scope_boost, settings.decay)

    def _semantic_layer(self) -> Layer | None:
        """The embedding layer (None when embed.enabled is off); nothing heavy is loaded until used."""
        if self.settings.embed.enabled == "off":
            return None
        if self._semantic is None:
            from memtree.search.semantic import Layer

            s = self.settings.search
            self._semantic = Layer(self.root, self.settings.embed, s.keyword_weight, s.semantic_weight)
        return self._semantic

    def _reinforce(self, result: SearchResult) -> None:
        if self.settings.search.reinforce and result.hits:
            self._usage_counter().retrieved([k for h in result.hits for k in h.keys])

    def _usage_counter(self) -> Usage:
        if self._usage is None:
            from memtree.lifecycle.usage import Usage

            self._usage = Usage(self.root)
        return self._usage

    def usage(self) -> dict[str, list[float]]:
        """Recall counts: entry key → [retrievals, last retrieved, accesses, last accessed] (epoch s)."""
        return self._usage_counter().counts()

    def _keyword_index(self, tree: treemod.Tree) -> KeywordIndex:
        """The tree's keyword index, from .memtree/ when made from this very tree file."""
        import orjson

        cache = self.root / store.STATE_DIR / "keywords.json"
        try:
            found = KeywordIndex.from_json(tree, orjson.loads(cache.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            found = None
        if found is not None:
            return found
        built = KeywordIndex(tree)
        if tree.digest and self._index.persist:
            # a read-only root still searches; it just rebuilds this each time
            with contextlib.suppress(OSError):
                store.atomic_write(cache, orjson.dumps(built.to_json()), durable=False)
        return built

    def context(
        self,
        query: str,
        budget: int = 2000,
        k: int = 10,
        tier: str = "default",
        scope: str | None = None,
        now: datetime | None = None,
    ) -> Context:
        """A prompt-ready Markdown block of the best chunks for ``query`` within ``budget`` tokens."""
        from memtree.search.context import render

        if budget < 1:
            raise QueryError("the token budget must be at least 1")
        return render(self.search(query, k=k, tier=tier, scope=scope, now=now), budget)

    def get(self, ref: str) -> Note:
        """A note by node id or root-relative path."""
        tree = self.tree
        node = tree.by_id.get(ref.strip("/"))
        if node is not None and node.path is None:
            children = ", ".join(node.children) or "none"
            raise QueryError(f"node '{node.id}' is a category with no file; its children: {children}")
        path = node.path if node is not None and node.path else ref
        treemod.check_path(path, "get")
        full = (self.root / path).resolve()
        if not full.is_relative_to(self.root) or not full.is_file():
            raise QueryError(f"no node or note named {ref!r} in {self.root}")
        node = node or tree.by_path.get(path)
        try:
            body = store.read_note(full)
        except UnicodeDecodeError:
            raise MemtreeError(f"{path}: not UTF-8 text") from None
        if self.settings.search.reinforce:
            self._usage_counter().accessed([path])
        return Note(path, node.id if node else None, body, node.keywords if node else ())

    def status(self) -> Status:
        """Files, bytes, nodes and chunks per tier; oversized notes; stale index; dangling nodes; watcher."""
        from dataclasses import replace

        from memtree.lifecycle.banks import list_banks
        from memtree.lifecycle.consolidate import last_run
        from memtree.lifecycle.recall import status as recall_status
        from memtree.lifecycle.status import collect

        if not self._index.segments:
            self._index.load()
        found = collect(self.root, self._index, self.settings)
        return replace(
            found,
            archive_candidates=sum(1 for a in self.decay() if a.candidate),
            consolidation=last_run(self.root),
            banks=tuple(list_banks(self.root)),
            recall=recall_status(self.root, self.settings.recall.budget_tokens),
            semantic=self._semantic_status(),
        )

    def _semantic_status(self) -> dict[str, Any]:
        layer = self._semantic_layer()
        if layer is None:
            return {"enabled": "off", "active": False}
        from memtree.search.semantic import coverage

        return coverage(self.root, self._index, layer)

    def _relative(self, path: str, must_exist: bool = True) -> str:
        """A note path given on the command line (relative to here or the root) → root-relative."""
        given = Path(path).expanduser()
        for candidate in (given, self.root / path):
            full = candidate.resolve()
            if (full.is_file() or not must_exist) and full.is_relative_to(self.root):
                return full.relative_to(self.root).as_posix()
        if not must_exist:
            return ""  # a file outside this memory root (pre-commit passes every changed file)
        raise QueryError(f"{path}: no such note in {self.root}")
