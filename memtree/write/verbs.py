"""The write verbs over a root's state: index, add, log, conflicts, split, check, export and import.

Each takes the ``RootState`` (and, where time matters, the moment ``now`` the caller read at the
edge) and keeps the state's index and tree in step with what it wrote.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memtree.errors import ChangedOnDisk, MemtreeError, QueryError
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.text import terms as text

if TYPE_CHECKING:
    from pathlib import Path

    from memtree.index.chunk_index import Report
    from memtree.notes.recorder import Recording
    from memtree.state import RootState
    from memtree.write.check import Problem
    from memtree.write.conflicts import Contradiction, OpenConflict
    from memtree.write.exchange import Imported
    from memtree.write.journal import Logged
    from memtree.write.retain import Decision
    from memtree.write.split import SplitResult

SPLIT_MIN_BYTES = 256
"""Smaller limits would cut notes into shreds of a line or two."""
BANK_TIER = frozenset({"bank"})


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
    renamed: tuple[tuple[str, str], ...] = ()  # notes moved by hand whose node followed: (old path, new path)
    relinked: tuple[str, ...] = ()  # notes whose links to a renamed note were rewritten


def recording(
    state: RootState, command: str, now: datetime | None, summary: str = "", undoes: tuple[str, ...] = ()
) -> AbstractContextManager[Recording]:
    """Journal the writes inside as one change of ``command`` (memtree.notes.changes), committed to git
    when the root's ``git.autocommit`` is on."""
    autocommit = state.settings.git.autocommit
    return store.recording(
        state.root, command, now, summary=summary, undoes=undoes, autocommit=autocommit, actor=state.actor
    )


def index(
    state: RootState,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    now: datetime | None = None,
) -> IndexResult:
    """Refresh the chunk index, then add nodes for new bank notes and drop nodes of gone ones."""
    from memtree.write import catalog, renames

    t0 = time.perf_counter()
    idx = state.index
    known = renames.indexed_hashes(idx)  # before the refresh forgets notes moved by hand
    idx.collect = {}
    try:
        report = state.refresh(force=force, progress=progress)
        bank = sorted(p for p, e in idx.files.items() if e.tier == "bank")
        segments = [s for _, s in idx.segment_list()]
        collected = idx.collect
        changes: list[catalog.CatalogChange] = []
        moved: list[tuple[dict[str, str], treemod.Tree]] = []

        def synced(current: treemod.Tree) -> treemod.Tree | None:
            # an agent's `add` may be adding a node right now: the catalog works on the file as it is
            moves = renames.detect(state.root, current, bank, known)
            moved[:] = [(moves, current)]
            after = catalog.moved(current, moves) if moves else current
            changes[:] = [catalog.update(state.root, after, bank, segments, collected)]
            missing = not (state.root / treemod.TREE_FILE).exists()
            return changes[0].tree if changes[0].added or changes[0].dropped or missing or moves else None

        with recording(state, "index", now):
            treemod.update(state.root, synced)
            moves, before = moved[0]
            with store.write_lock(state.root):
                relinked = renames.relink(state.root, moves, before, changes[0].tree) if moves else []
        if relinked:
            state.refresh_paths(relinked)
        change = changes[0]
    finally:
        idx.collect = None
    state.forget_tree()
    seconds = time.perf_counter() - t0
    result = IndexResult(report, change.added, change.dropped, idx.n_chunks, len(idx.files), seconds)
    return replace(result, renamed=tuple(moves.items()), relinked=tuple(relinked))


def add(
    state: RootState,
    text_: str,
    now: datetime,
    *,
    tag: str | None = None,
    to: str | None = None,
    tags: tuple[str, ...] = (),
    kind: str = "fact",
    source: str = "manual",
    scope: str = "global",
    dry_run: bool = False,
    origin: str | None = None,
    until: str = "",
) -> Decision:
    """Remember ``text_``: sanitize, route, dedup or flag a conflict, write (DESIGN §4); ``until``: its last day."""
    from memtree.write import retain

    req = retain.Request(text_, tag, to, tuple(tags), kind, source, scope, origin, until)
    retain.check_request(req, state.settings)
    tree = state.parsed_tree()  # parsed and validated; a missing target file is simply created
    state.fresh()
    routes = {} if req.to is not None or req.tag is not None else route_scores(state, req.text)
    split_ = False
    with contextlib.nullcontext() if dry_run else recording(state, "add", now):
        decision = retain.retain(state.root, req, tree, routes, state.settings, now, dry_run)
        if not dry_run and not isinstance(decision, retain.Duplicate):
            split_ = (state.root / decision.path).stat().st_size > state.settings.split.max_bytes
            if split_:
                try:
                    split(state, decision.path, now=now)  # refreshes the index itself
                except ChangedOnDisk:  # someone keeps editing it: the entry is in; the next write or check splits
                    split_ = False
    created = retain.choose_target(req, tree, routes, state.settings).new_nodes  # pure: retain's own choice
    if created and not isinstance(decision, retain.Duplicate):
        # Why: a tag or --to naming a note that does not exist yet creates it; the decision says so
        decision = replace(decision, new_nodes=tuple(n.id for n in created))
    if not dry_run and not isinstance(decision, retain.Duplicate) and not split_:
        # only the note just written: the next search's check finds anything else
        state.refresh_paths([decision.path])
    return decision


def route_scores(state: RootState, text_: str) -> dict[str, float]:
    """Route score of every note node for a text (how untagged text is routed; retain.route_blend)."""
    from memtree.write.retain import route_blend

    tree_scores, coverage = route_signals(state, text_)
    cfg = state.settings.search
    return route_blend(tree_scores, coverage, cfg.tree_weight, cfg.bm25_weight)


def route_signals(state: RootState, text_: str) -> tuple[dict[str, float], dict[str, float]]:
    """Per note node: the tree's keyword route score, and the share of the text its best chunk covers.

    Coverage is a chunk's BM25 evidence (Σ idf × match strength of the text's words it holds)
    over the text's Σ idf, with the statistics of bank/ alone: the text is about to join a note.
    """
    from memtree.index.routing import route

    qterms = text.query_terms(text_)
    if not qterms:
        return {}, {}
    tree = state.parsed_tree()
    keywords = state.keywords(tree)
    cfg = state.settings.search
    # the pure scorer (vectorize=False): one text, and no numpy import for it
    scored = state.index.score(qterms, BANK_TIER, cfg, vectorize=False)
    routes = route(keywords, qterms, [st.idf for st in scored.stats], cfg.partial_match, cfg.infix_match)
    tree_scores = {node: r.score for node, r in routes.items() if r.via is None}
    total = sum(st.idf for st in scored.stats) or 1.0
    coverage: dict[str, float] = {}
    matched = list(scored.matched())
    for (_, ev), where in zip(matched, scored.locate([ref for ref, _ in matched])):
        node = tree.by_path.get(where.path)
        if node is not None and ev / total > coverage.get(node.id, 0.0):
            coverage[node.id] = ev / total
    return tree_scores, coverage


def log(state: RootState, text_: str, now: datetime, source: str = "manual") -> Logged:
    """Append a timestamped, sanitized line to the day's log in memory/."""
    from memtree.write.journal import append

    return append(state.root, text_, state.settings, now, source)


def conflicts(state: RootState) -> list[OpenConflict]:
    """Open conflicts, oldest first (one whose entry was forgotten, archived or superseded has closed itself)."""
    from memtree.write import clashes
    from memtree.write import conflicts as store_

    found = {c.id: c for c in store_.load(state.root) if store_.is_open(state.root, c)}
    found.update((c.id, c) for c in clashes.find(state.root) if c.id not in found)
    found.update((c.id, c) for c in clashes.pending(state.root) if c.id not in found)
    return sorted(found.values(), key=lambda c: (c.created, c.id))


def scan_conflicts(state: RootState, now: datetime, record: bool = False) -> list[Contradiction]:
    """Entries that contradict each other (similar, with different numbers or a negation).

    With ``record`` each pair not yet open is added to conflicts.json, to settle with resolve.
    """
    from memtree.write import conflicts as store_

    cfg = state.settings.retain
    found = store_.scan(state.root, cfg.conflict_threshold, cfg.merge_threshold)
    if record and found:
        with recording(state, "conflicts scan", now):
            store_.record_scanned(state.root, found, now)
    return found


def resolve_conflict(state: RootState, conflict_id: str, keep: str, now: datetime) -> tuple[OpenConflict, str]:
    """Settle a conflict keeping the new entry, the old one, or both (the other is marked superseded
    on ``now``'s day); returns it and what was done."""
    from memtree.write import clashes
    from memtree.write import conflicts as store_

    clash = next((c for c in clashes.find(state.root) if c.id == conflict_id), None)
    summary = f"{conflict_id} --keep {keep}"
    with recording(state, "conflicts resolve", now, summary=summary), store.write_lock(state.root):
        clashes.adopt(state.root)  # a node field clash the merge driver left is filed first
        field = next((c for c in store_.load(state.root) if c.id == conflict_id and clashes.is_field(c)), None)
        if field is not None and keep in store_.KEEP:
            settled = field, clashes.settle_field(state.root, field, keep)
        elif clash is not None and keep in store_.KEEP:
            settled = clash, clashes.settle(state.root, clash, keep, now.date())
        else:
            settled = store_.resolve(state.root, conflict_id, keep, now.date())
    state.forget_tree()
    state.refresh()
    return settled


def export(state: RootState, bank: str | None = None) -> dict[str, Any]:
    """Every bank entry (or one bank's) with its metadata, and the tree's nodes, as one document."""
    from memtree.write.exchange import export as export_

    return export_(state.root, bank)


def import_(state: RootState, data: bytes, dry_run: bool = False, now: datetime | None = None) -> Imported:
    """Import an export document (bytes, ≤ 10 MB): validated whole, sanitized, deduplicated."""
    from memtree.write.exchange import import_ as import_doc
    from memtree.write.exchange import parse

    doc = parse(data)
    with contextlib.nullcontext() if dry_run else recording(state, "import", now):
        result = import_doc(state.root, doc, state.settings.custom_patterns, dry_run)
    if not dry_run and (result.written or result.nodes_added):
        state.refresh()
    return result


def check(state: RootState, files: list[str] | None = None) -> list[Problem]:
    """What `memtree check` refuses (nothing is written): oversized notes, tree problems, secrets."""
    from memtree.write.check import find_problems

    if files is None:
        return find_problems(state.root, state.settings)
    inside = [r for r in (state.relative(f, must_exist=False) for f in files) if r]
    return find_problems(state.root, state.settings, inside)  # [] checks no file, only the tree


def prune_categories(state: RootState) -> tuple[str, ...]:
    """Drop the category nodes that hold no note and nothing a person set (`check --fix`); their ids."""
    from memtree.write import catalog

    found: list[str] = []

    def change(current: treemod.Tree) -> treemod.Tree | None:
        found[:] = catalog.empty_categories(current)
        return catalog.without(current, found, state.root) if found else None

    treemod.update(state.root, change)
    state.forget_tree()
    return tuple(found)


def redact_journal(state: RootState) -> int:
    """Redact the secrets (the root's rules too) in the old note text and summaries the change journal keeps."""
    from memtree.notes import changes
    from memtree.write.retain import sanitizer_for

    sanitizer = sanitizer_for(state.settings)
    with store.write_lock(state.root):
        return changes.redact_kept(state.root, lambda text: sanitizer.sanitize(text).text)


def fix_markers(state: RootState, now: datetime) -> list[str]:
    """Merge the git conflict blocks left in tracked files by the merge driver's rules, rebuild an
    unreadable conflicts.json from its complete records (its bytes kept beside it), and file the
    node field clashes the driver left; what was done."""
    from memtree.write import conflicts as store_
    from memtree.write import markers

    done = []
    if markers.find(state.root):
        with store.write_lock(state.root), recording(state, "check", now, summary="merged git conflict blocks"):
            done += markers.fix(state.root)
        state.forget_tree()
    try:
        store_.load(state.root)
    except MemtreeError:
        if not markers.find(state.root, [store_.CONFLICTS_FILE]):  # blocks left as they are stay for a person
            with store.write_lock(state.root), recording(state, "check", now, summary="rebuilt conflicts.json"):
                repaired = store_.repair(state.root, now)
            done += [repaired] if repaired else []
    try:
        filed = file_field_clashes(state, now)
    except MemtreeError as exc:
        return [*done, f"left the node field clashes a git merge recorded unfiled: {exc}"]
    return [*done, *(f"filed {cid} in conflicts.json: a node field a git merge changed both ways" for cid in filed)]


def file_field_clashes(state: RootState, now: datetime | None = None) -> list[str]:
    """File in conflicts.json the node field clashes git's merge driver left in ``.memtree/``; their ids."""
    from memtree.write import clashes

    if not clashes.pending(state.root):
        return []
    with store.write_lock(state.root), recording(state, "merge", now, summary="filed node field clashes"):
        return clashes.adopt(state.root)


def sweep(state: RootState) -> list[str]:
    """Remove the temp files killed writes left in the root's tracked folders; returns their paths."""
    return store.sweep(state.root)


def cut_cycles(state: RootState) -> list[str]:
    """Cut every parent cycle of tree-index.json; returns the ids made top nodes."""
    cut = treemod.cut_cycles(state.root)
    state.forget_tree()
    return cut


def repair_splits(state: RootState, now: datetime | None = None) -> list[str]:
    """Settle a split a killed writer left halfway, and remove the copies one left by older memtree
    (memtree.write.check.split_copies); returns what was done, one line each."""
    from memtree.write.check import split_copies

    done: list[str] = []
    with store.write_lock(state.root), recording(state, "check --fix", now, summary="interrupted split repaired"):
        done += store.recovered()  # taking the lock settled an interrupted split
        disk, _ = store.walk(state.root, ("bank",))
        for copy, source in split_copies(state.root, [f.path for f in disk]):
            with contextlib.suppress(ChangedOnDisk):
                store.remove(state.root, store.read(state.root, copy))
                done.append(f"removed {copy}, a copy left by an interrupted split of {source}")
    if done:
        state.forget_tree()
        state.refresh()
    return done


def split(
    state: RootState, path: str | None = None, max_bytes: int | None = None, now: datetime | None = None
) -> list[SplitResult]:
    """Split ``path`` (or every bank note over the limit) into child notes and nodes."""
    limit = state.settings.split.max_bytes if max_bytes is None else max_bytes
    if limit < SPLIT_MIN_BYTES:
        raise QueryError(f"--max-bytes must be at least {SPLIT_MIN_BYTES} (got {limit})")
    results: list[SplitResult] = []
    with store.write_lock(state.root), recording(state, "split", now):
        tree = treemod.load(state.root, check_files=False)
        if path is not None:
            candidates = [state.relative(path)]
        else:
            disk, _ = store.walk(state.root, ("bank",))
            candidates = [f.path for f in disk if f.size > limit]
        for rel in candidates:
            result = _split_retrying(state.root, rel, tree, limit)
            tree = result.tree
            if result.children or result.warnings or path is not None:
                results.append(result)
        if any(r.nodes for r in results):
            split_tree = tree
            treemod.update(state.root, lambda _current: split_tree)
    if any(r.children for r in results):
        state.forget_tree()
        state.refresh()
    return results


def _split_retrying(root: Path, rel: str, tree: treemod.Tree, limit: int) -> SplitResult:
    """split_file, planned again on the note as it is now when a hand edit lands mid-split."""
    from memtree.write.split import split_file

    for _ in range(store.REWRITE_ATTEMPTS - 1):
        try:
            return split_file(root, rel, tree, limit)
        except ChangedOnDisk:
            continue
    return split_file(root, rel, tree, limit)
