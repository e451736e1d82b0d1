"""The writing half of ``MemTree``: add, log, conflicts, split, check, distill, export/import.

``MemTree`` (memtree.api) inherits these; they live apart only to keep each module readable.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.errors import ChangedOnDisk, QueryError
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.text import terms as text

if TYPE_CHECKING:
    from memtree.config import Settings
    from memtree.index.chunk_index import Index, Report
    from memtree.index.routing import KeywordIndex
    from memtree.lifecycle.aging import Aged
    from memtree.lifecycle.consolidate import Report as ConsolidateReport
    from memtree.lifecycle.recall import Sync
    from memtree.lifecycle.reflect import DistillReport
    from memtree.lifecycle.usage import Usage
    from memtree.write.check import Problem
    from memtree.write.conflicts import Contradiction, OpenConflict
    from memtree.write.exchange import Imported
    from memtree.write.journal import Logged
    from memtree.write.retain import Decision
    from memtree.write.split import SplitResult

SPLIT_MIN_BYTES = 256
BANK_TIER = frozenset({"bank"})
"""Smaller limits would cut notes into shreds of a line or two."""


class Writing:
    """Methods of MemTree that change the memory."""

    if TYPE_CHECKING:  # provided by MemTree
        root: Path
        settings: Settings
        _index: Index
        _keywords: KeywordIndex | None
        _tree: treemod.Tree | None

        def _parsed_tree(self) -> treemod.Tree: ...
        def _fresh(self) -> None: ...
        def _keyword_index(self, tree: treemod.Tree) -> KeywordIndex: ...
        def _relative(self, path: str, must_exist: bool = True) -> str: ...
        def refresh(self, force: bool = False, progress: Any = None) -> Report: ...
        def _usage_counter(self) -> Usage: ...

    def add(
        self,
        text: str,
        *,
        tag: str | None = None,
        to: str | None = None,
        tags: tuple[str, ...] = (),
        kind: str = "fact",
        source: str = "manual",
        scope: str = "global",
        dry_run: bool = False,
        now: datetime | None = None,
        origin: str | None = None,
    ) -> Decision:
        """Remember ``text``: sanitize, route, dedup or flag a conflict, write (DESIGN §4)."""
        from memtree.write import retain

        req = retain.Request(text, tag, to, tuple(tags), kind, source, scope, origin)
        retain.check_request(req, self.settings)
        tree = self._parsed_tree()  # parsed and validated; a missing target file is simply created
        self._fresh()
        routes = {} if req.to is not None or req.tag is not None else self._route_scores(req.text)
        moment = now or datetime.now().astimezone()
        decision = retain.retain(self.root, req, tree, routes, self.settings, moment, dry_run)
        created = retain.choose_target(req, tree, routes, self.settings).new_nodes  # pure: retain's own choice
        if created and not isinstance(decision, retain.Duplicate):
            # Why: a tag or --to naming a note that does not exist yet creates it; the decision says so
            decision = replace(decision, new_nodes=tuple(n.id for n in created))
        if not dry_run and not isinstance(decision, retain.Duplicate):
            note = self.root / decision.path
            if note.stat().st_size > self.settings.split.max_bytes:
                try:
                    self.split(decision.path)  # refreshes the index itself
                except ChangedOnDisk:  # someone keeps editing it: the entry is in; the next write or check splits
                    self._index.refresh(paths=[decision.path])
            else:
                # only the note just written: the next search's check finds anything else
                self._index.refresh(paths=[decision.path])
        return decision

    def _route_scores(self, text_: str) -> dict[str, float]:
        """Route score of every note node for a text (how untagged text is routed; retain.route_blend)."""
        from memtree.write.retain import route_blend

        tree_scores, coverage = self._route_signals(text_)
        cfg = self.settings.search
        return route_blend(tree_scores, coverage, cfg.tree_weight, cfg.bm25_weight)

    def _route_signals(self, text_: str) -> tuple[dict[str, float], dict[str, float]]:
        """Per note node: the tree's keyword route score, and the share of the text its best chunk covers.

        Coverage is a chunk's BM25 evidence (Σ idf × match strength of the text's words it holds)
        over the text's Σ idf, with the statistics of bank/ alone: the text is about to join a note.
        """
        from memtree.index import bm25
        from memtree.index.routing import route

        qterms = text.query_terms(text_)
        if not qterms:
            return {}, {}
        tree = self._parsed_tree()
        if self._keywords is None:
            self._keywords = self._keyword_index(tree)
        segments = [s for _, s in self._index.segment_list()]
        cfg = self.settings.search
        scored = bm25.score(
            segments, qterms, cfg.partial_match, cfg.k1, cfg.b, self._index.term_cache, cfg.infix_match, BANK_TIER
        )
        routes = route(self._keywords, qterms, [st.idf for st in scored.stats], cfg.partial_match, cfg.infix_match)
        tree_scores = {node: r.score for node, r in routes.items() if r.via is None}
        total = sum(st.idf for st in scored.stats) or 1.0
        coverage: dict[str, float] = {}
        for seg, evidence in zip(segments, scored.evidence):
            for doc, ev in evidence.items():
                node = tree.by_path.get(seg.files[seg.doc_file[doc]])
                if node is not None and ev / total > coverage.get(node.id, 0.0):
                    coverage[node.id] = ev / total
        return tree_scores, coverage

    def log(self, text_: str, *, source: str = "manual", now: datetime | None = None) -> Logged:
        """Append a timestamped, sanitized line to today's log in memory/."""
        from memtree.write.journal import append

        return append(self.root, text_, self.settings, now or datetime.now().astimezone(), source)

    def conflicts(self) -> list[OpenConflict]:
        """Open conflicts, oldest first."""
        from memtree.write import conflicts

        return sorted(conflicts.load(self.root), key=lambda c: (c.created, c.id))

    def scan_conflicts(self, record: bool = False) -> list[Contradiction]:
        """Entries that contradict each other (similar, with different numbers or a negation).

        With ``record`` each pair not yet open is added to conflicts.json, to settle with resolve.
        """
        from memtree.write import conflicts

        retain = self.settings.retain
        found = conflicts.scan(self.root, retain.conflict_threshold, retain.merge_threshold)
        if record and found:
            with store.write_lock(self.root):
                open_ = conflicts.load(self.root)
                known = {(c.new.text, c.old.text) for c in open_} | {(c.old.text, c.new.text) for c in open_}
                stamp = datetime.now().astimezone()
                for i, c in enumerate(found):
                    if (c.newer.text, c.older.text) not in known:
                        cid = f"c-{stamp:%Y%m%d}-s{i:03d}{stamp:%H%M%S}"
                        open_.append(
                            conflicts.OpenConflict(
                                cid, stamp.isoformat(timespec="seconds"), c.similarity, c.newer, c.older
                            )
                        )
                conflicts.save(self.root, open_)
        return found

    def resolve_conflict(self, conflict_id: str, keep: str) -> tuple[OpenConflict, str]:
        """Settle a conflict keeping the new entry, the old one, or both; returns it and what was done."""
        from memtree.write import conflicts

        settled = conflicts.resolve(self.root, conflict_id, keep)
        self.refresh()
        return settled

    def distill(
        self, files: list[str] | None = None, since: date | None = None, dry_run: bool = False
    ) -> DistillReport:
        """Find knowledge in memory/ logs with the rule detectors and write it through `add`."""
        from memtree.lifecycle.reflect import run

        cfg = self.settings.distill
        return run(self, files, since, dry_run, cfg.min_score, cfg.max_writes, cfg.llm_command or None)

    def export(self, bank: str | None = None) -> dict[str, Any]:
        """Every bank entry (or one bank's) with its metadata, and the tree's nodes, as one document."""
        from memtree.write.exchange import export

        return export(self.root, bank)

    def import_(self, data: bytes, dry_run: bool = False) -> Imported:
        """Import an export document (bytes, ≤ 10 MB): validated whole, sanitized, deduplicated."""
        from memtree.write.exchange import import_, parse

        result = import_(self.root, parse(data), self.settings.custom_patterns, dry_run)
        if not dry_run and (result.written or result.nodes_added):
            self.refresh()
        return result

    def check(self, files: list[str] | None = None) -> list[Problem]:
        """What `memtree check` refuses (nothing is written): oversized notes, tree problems, secrets."""
        from memtree.write.check import find_problems

        if files is None:
            return find_problems(self.root, self.settings)
        inside = [r for r in (self._relative(f, must_exist=False) for f in files) if r]
        return find_problems(self.root, self.settings, inside)  # [] checks no file, only the tree

    def sweep(self) -> list[str]:
        """Remove the temp files killed writes left in the root's tracked folders; returns their paths."""
        return store.sweep(self.root)

    def split(self, path: str | None = None, max_bytes: int | None = None) -> list[SplitResult]:
        """Split ``path`` (or every bank note over the limit) into child notes and nodes."""

        limit = self.settings.split.max_bytes if max_bytes is None else max_bytes
        if limit < SPLIT_MIN_BYTES:
            raise QueryError(f"--max-bytes must be at least {SPLIT_MIN_BYTES} (got {limit})")
        results: list[SplitResult] = []
        with store.write_lock(self.root):
            tree = treemod.load(self.root, check_files=False)
            if path is not None:
                candidates = [self._relative(path)]
            else:
                disk, _ = store.walk(self.root, ("bank",))
                candidates = [f.path for f in disk if f.size > limit]
            for rel in candidates:
                result = _split_retrying(self.root, rel, tree, limit)
                tree = result.tree
                if result.children or result.warnings or path is not None:
                    results.append(result)
            if any(r.nodes for r in results):
                split_tree = tree
                treemod.update(self.root, lambda _current: split_tree)
        if any(r.children for r in results):
            self._tree = None
            self.refresh()
        return results

    def _bank_notes(self) -> list[str]:
        self._fresh()
        return [p for p, e in self._index.files.items() if e.tier == "bank"]

    def decay(self) -> list[Aged]:
        """Every bank chunk's decay weight today, with why it is an archive candidate (if it is)."""
        from memtree.lifecycle.aging import survey

        return survey(self.root, self._bank_notes(), self._usage_counter().retrievals())

    def archive(self, dry_run: bool = False) -> list[Aged]:
        """Move today's archive candidates to bank/_archive/ (never deleted); returns them."""
        from memtree.lifecycle.aging import archive, survey

        if dry_run:
            return [a for a in self.decay() if a.candidate]
        with store.write_lock(self.root):
            found = survey(self.root, self._bank_notes(), self._usage_counter().retrievals())
            moved = archive(self.root, [a for a in found if a.candidate])
        if moved:
            self.refresh()
        return moved

    def consolidate(self, dry_run: bool = False, now: float | None = None) -> ConsolidateReport:
        """Merge near-duplicates within each bank (dropped text kept in bank/_archive/); list archive candidates."""
        import time

        from memtree.lifecycle import consolidate as con
        from memtree.lifecycle.aging import survey

        started = time.time()
        now = started if now is None else now
        with con.single_flight(self.root, dry_run=dry_run):
            try:
                if dry_run:
                    merges = con.plan(self.root, self._bank_notes())
                else:
                    with store.write_lock(self.root):
                        merges = con.plan(self.root, self._bank_notes())
                        con.apply(self.root, merges, now=now)
                    if merges:
                        self.refresh()
                aged = survey(self.root, self._bank_notes(), self._usage_counter().retrievals(), now)
                if not dry_run:
                    self.recall_sync()
            except Exception as exc:
                if not dry_run:
                    con.record(self.root, started, f"{type(exc).__name__}: {exc}")
                raise
            candidates = tuple(a for a in aged if a.candidate)
            if not dry_run:
                con.record(self.root, started, None, sum(len(m.drop) for m in merges), len(candidates))
        return con.Report(tuple(merges), candidates, dry_run, time.time() - started)

    def recall_sync(self, dry_run: bool = False) -> Sync:
        """Reconcile recall/: drop stale excerpts, promote often-recalled entries, evict past the budget."""
        from memtree.lifecycle import recall
        from memtree.lifecycle.aging import survey

        cfg = self.settings.recall
        if dry_run:
            aged = survey(self.root, self._bank_notes(), self._usage_counter().retrievals())
            return recall.plan(self.root, aged, cfg.promote_after, cfg.budget_tokens, cfg.excerpt_chars)
        self._usage_counter().flush()
        with store.write_lock(self.root):
            aged = survey(self.root, self._bank_notes(), self._usage_counter().retrievals())
            sync = recall.plan(self.root, aged, cfg.promote_after, cfg.budget_tokens, cfg.excerpt_chars)
            recall.write(self.root, sync)
        self.refresh()
        return sync


def _split_retrying(root: Path, rel: str, tree: treemod.Tree, limit: int) -> SplitResult:
    """split_file, planned again on the note as it is now when a hand edit lands mid-split."""
    from memtree.write.split import split_file

    for _ in range(store.REWRITE_ATTEMPTS - 1):
        try:
            return split_file(root, rel, tree, limit)
        except ChangedOnDisk:
            continue
    return split_file(root, rel, tree, limit)
