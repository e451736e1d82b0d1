"""The read verbs over a root's state: search, context, get, and the semantic layer's upkeep.

Each takes the ``RootState`` and the moment ``now`` the caller (memtree.api, at the edge) read
from the clock; nothing here reads it. The pipeline itself is memtree.search.pipeline.
"""

from __future__ import annotations

import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime
from datetime import time as dtime
from typing import TYPE_CHECKING, Any

from memtree.errors import EmptyMemory, MemtreeError, QueryError
from memtree.notes import scopes, store
from memtree.notes import tree as treemod
from memtree.notes.layout import skipped
from memtree.search import decay, message
from memtree.search.pipeline import run
from memtree.search.result import Hit, SearchResult, quote_query
from memtree.text import terms as text

if TYPE_CHECKING:
    from memtree.notes.links import Retirements
    from memtree.search.context import Context
    from memtree.search.fusion import Fused
    from memtree.search.semantic import Layer
    from memtree.state import RootState

NOTE_FACTS_KEPT = 1024
"""Notes whose decay facts (frontmatter date, scope) a state keeps (re-read when their stat changes)."""
TIER_CHOICES = {
    "default": ("recall", "bank"),
    "recall": ("recall",),
    "bank": ("bank",),
    "memory": ("memory",),
    "all": ("recall", "bank", "memory"),
}


def as_of_day(value: str | None) -> date | None:
    """An ``--as-of`` value (YYYY-MM-DD, or a date-time whose day is taken) → its day; None when not given.

    The one reading of it for the CLI, the HTTP API and the MCP tools; QueryError when it is no date.
    """
    if value is None or not str(value).strip():
        return None
    raw = str(value).strip()
    try:
        return date.fromisoformat(raw[:10])
    except ValueError:
        raise QueryError(f"--as-of wants a day as YYYY-MM-DD (e.g. 2026-03-01), got {raw[:40]!r}") from None


@dataclass(frozen=True)
class Note:
    """A note fetched by node id or path."""

    path: str
    node: str | None
    text: str
    keywords: tuple[str, ...] = ()
    line: int | None = None  # where the entry or heading the ref named starts (``note#anchor``)


def search(
    state: RootState,
    query: str,
    now: datetime,
    k: int | None = None,
    tier: str = "default",
    budget: int | None = None,
    cache: bool = True,
    scope: str | None = None,
    semantic: bool | None = None,
    fixed_now: bool = False,
    as_of: date | None = None,
    user: RootState | None = None,
) -> SearchResult:
    """Search the memory as of ``now``: hits best first, or none with the reason (``rejected``).

    ``fixed_now``: the caller chose ``now`` (not the clock), so it is part of the cache key.
    Current facts only (memtree.notes.entries.held on ``now``'s day); when none answers, the
    superseded and expired ones that do, each hit's ``status`` saying so. ``as_of``: the facts
    that held on that day instead, decay and recency judged at its end. ``user``: the user's own
    root, searched too and merged (memtree.search.roots).
    """
    if user is not None:
        k = state.settings.search.max_results if k is None else k

        def ask(st: RootState) -> SearchResult:
            return search(st, query, now, k, tier, budget, cache, scope, semantic, fixed_now, as_of)

        return _both(state, user, k, budget, ask)
    if tier not in TIER_CHOICES:
        raise QueryError(f"unknown tier {tier!r}: choose one of {', '.join(TIER_CHOICES)}")
    query = text.well_formed(query)
    settings = state.settings
    k = settings.search.max_results if k is None else k
    if k < 1:
        raise QueryError("k must be at least 1")
    if budget is not None and budget < 1:
        raise QueryError("the token budget must be at least 1")
    if not query.strip():
        raise QueryError("the query is empty")
    scope = settings.search.scope if scope is None else scope
    chain = scopes.parse_scope(scope) if scope else None
    moment = now.timestamp()
    # a day the query names is a term of its own (chunks carry their days: memtree.text.dates)
    today = datetime.fromtimestamp(moment).date()
    qterms = list(message.read(query, today).terms)
    if not qterms:
        raise QueryError(
            f"the query {quote_query(query)} has no searchable term (only punctuation or very common "
            f"words such as the/what/뭐야, which memtree does not index); add a content word"
        )
    tree, unreadable = state.routing_tree()
    state.fresh()
    stamp = (state.checked, state.tree_stamp)
    if stamp != state.files_checked:
        # the refresh has just seen every note on disk: only node files outside the tiers need a stat.
        # Why not an error: a note deleted or renamed in an editor must never stop search
        state.dangling = tuple(
            f"node '{n.id}' points to {n.path}, which is gone: search skips it "
            "(`memtree index` or a running `memtree watch` drops it)"
            for n in treemod.dangling(tree, state.root, state.index.files)
        )
        state.files_checked = stamp
    tiers = TIER_CHOICES[tier]
    if not any(e.tier in tiers for e in state.index.files.values()):
        raise EmptyMemory(
            f"{state.root} has no notes in {', '.join(t + '/' for t in tiers)}"
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
        now if fixed_now else None,
        today,
        as_of,
        state.index.version,
        state.tree_stamp,
        unreadable,
        tuple(state.warnings),
        state.dangling,
    )
    if cache and key in state.cache:
        cached: SearchResult = state.cache[key]
        _reinforce(state, cached, moment)  # a repeated question is still a recall
        return cached
    keywords = state.keywords(tree)
    # Why: importing numpy costs ~50 ms, more than one pure-Python query on a large index, so a
    # process's first query is scored in Python and the vectorized scorer takes over after it.
    vectorize = state.searches > 0 or "numpy" in sys.modules
    state.searches += 1
    skip = skipped(settings.disabled_banks)
    layer = semantic_layer(state) if semantic is not False else None
    day = as_of or today
    at = moment if as_of is None else datetime.combine(as_of, dtime.max, tzinfo=now.tzinfo).timestamp()

    def ranked(past: bool) -> tuple[SearchResult, decay.Adjuster, Fused | None]:
        sem = None
        if layer is not None and (semantic or layer.wanted()):
            sem = layer.scores(state.index, query, (frozenset(tiers), skip), state.read_lines)
        adjust = _adjuster(state, chain, at, day, past)
        found = run(
            state.index,
            tree,
            keywords,
            query,
            qterms,
            k,
            tiers,
            settings.search,
            state.read_lines,
            budget,
            vectorize,
            skip,
            settings.search.reinforce,
            adjust,
            sem,
            today,
        )
        return found, adjust, sem

    result, adjust, sem = ranked(past=False)
    if not result.hits and adjust.past_hidden and as_of is None:
        # Why: nothing current answers, yet the past does — served, each hit marked as the past
        past, then, _ = ranked(past=True)
        if past.hits:
            result = replace(past, hits=tuple(_marked(state, h, day, then.retired) for h in past.hits))
    notices = [*state.settings.warnings, *state.warnings, *([unreadable] if unreadable else []), *state.dangling]
    if layer is not None and layer.notice and not state.semantic_noticed:
        notices.append(layer.notice)  # said once per state: the downgrade is news only once
        state.semantic_noticed = True
    if notices or sem is not None:
        from memtree.search.fusion import RRF_K

        weights = dict(result.weights)
        if sem is not None:
            weights.update(keyword=sem.kw, semantic=sem.sw)
            if sem.fusion == "rrf":
                weights["rrf_k"] = RRF_K
        result = replace(result, warnings=tuple(notices), weights=weights)
    if cache:
        state.cache[key] = result
    _reinforce(state, result, moment)
    return result


def context(
    state: RootState,
    query: str,
    now: datetime,
    budget: int = 2000,
    k: int = 10,
    tier: str = "default",
    scope: str | None = None,
    fixed_now: bool = False,
    as_of: date | None = None,
    user: RootState | None = None,
) -> Context:
    """A prompt-ready Markdown block of the best chunks for ``query`` in ``budget`` tokens (``as_of``, ``user``:
    as search)."""
    from memtree.search.context import render

    if budget < 1:
        raise QueryError("the token budget must be at least 1")
    found = search(state, query, now, k=k, tier=tier, scope=scope, fixed_now=fixed_now, as_of=as_of, user=user)
    return render(found, budget)


def _both(
    state: RootState, user: RootState, k: int, budget: int | None, ask: Callable[[RootState], SearchResult]
) -> SearchResult:
    """``ask`` of the project's root and the user's, merged; a root with no note to search adds nothing, and
    a user root that cannot be searched (a broken memtree.yaml, say) is a warning, not a failed search."""
    from memtree.search.roots import merged

    empty: EmptyMemory | None = None
    try:
        mine: SearchResult | None = ask(state)
    except EmptyMemory as exc:
        mine, empty = None, exc
    broken = ""
    theirs: SearchResult | None = None
    try:
        with user.lock:
            theirs = ask(user)
    except EmptyMemory:
        pass
    except MemtreeError as exc:
        broken = f"user root {user.root} not searched: {exc}"
    if mine is None and theirs is None:
        assert empty is not None
        raise empty
    found = merged(mine, theirs, k, budget)
    return replace(found, warnings=(*found.warnings, broken)) if broken else found


def get(state: RootState, ref: str, now: datetime) -> Note:
    """A note by node id or path, or by a link's target (``note#entry-id``, ``note#heading``: ``line``
    says where that starts), named as links name notes (memtree.notes.links); counted as an access at ``now``."""
    from memtree.notes import links

    store.check_name(ref, "get")
    tree = state.tree()
    node = tree.by_id.get(ref.strip("/"))
    if node is not None and node.path is None:
        children = ", ".join(node.children) or "none"
        raise QueryError(f"node '{node.id}' is a category with no file; its children: {children}")
    # Why the disk, not the index: get serves bank/_archive/ and a note written a moment ago too.
    # Why one rule (store.served): get must never hand out .memtree/serve.token, .git/config or memtree.yaml
    node_paths = {unicodedata.normalize("NFC", n.id): n.path for n in tree.nodes if n.path}
    graph = links.Graph(state.root, {}, frozenset(state.index.files), node_paths, exists=_served(state))
    whole = links.Link("", 0, links.PLAIN, ref.strip())
    found = graph.follow(whole) if graph.path_of(whole.note) else graph.follow(links.target(ref))
    if found.path is None:
        raise QueryError(
            f"no node or note named {ref[:200]!r} in {state.root} "
            "(memtree serves the Markdown notes of bank/, memory/ and recall/)"
        )
    if found.problem:
        raise QueryError(found.problem[:300])
    path, full = found.path, store.served(state.root, found.path)
    if full is None:  # gone since it was looked up
        raise QueryError(f"no node or note named {ref[:200]!r} in {state.root}")
    node = tree.by_path.get(path)
    try:
        body = store.read_note(full)
    except UnicodeDecodeError:
        raise MemtreeError(f"{path}: not UTF-8 text") from None
    if state.settings.search.reinforce:
        state.usage().accessed([path], now.timestamp())
    return Note(path, node.id if node else None, body, node.keywords if node else (), found.line)


def _served(state: RootState) -> Callable[[str], str | None]:
    """``path → path`` when it is a note memtree serves (memtree.notes.store.served), else None."""
    return lambda path: path if store.served(state.root, path) is not None else None


def _adjuster(
    state: RootState, chain: tuple[str, ...] | None, now: float, day: date, past: bool = False
) -> decay.Adjuster:
    """Decay, recency, scope and the day facts must hold on, for this search."""
    settings = state.settings.search
    facts = state.note_facts

    def note(path: str) -> decay.NoteFacts:
        entry = state.index.files.get(path)
        stamp = (entry.mtime_ns, entry.size) if entry else (0, 0)
        known = facts.get(path)
        if known is not None and known[0] == stamp:
            found: decay.NoteFacts = known[1]
            return found
        found = decay.note_facts(path, state.read_lines(path), stamp[0] / 1e9)
        if len(facts) >= NOTE_FACTS_KEPT:
            facts.pop(next(iter(facts)))
        facts[path] = (stamp, found)
        return found

    recalls = state.usage().retrievals() if settings.decay else (lambda keys: 0)
    return decay.Adjuster(
        now,
        chain,
        recalls,
        note,
        settings.recency_boost,
        settings.scope_boost,
        curve=state.settings.decay,  # decay.* keys: the forgetting curve
        decay=settings.decay,  # search.decay: whether search weighs hits by it at all
        day=day,
        past=past,
        retired=retirements(state, note),
    )


def retirements(state: RootState, note: Callable[[str], decay.NoteFacts]) -> Retirements | None:
    """What the hand-written ``supersedes`` links of the root's notes retire (memtree.notes.links.retirements;
    None: nothing), worked out again only when the index or the tree changed.

    ``note``: a note's decay facts (their time is a link's day when no entry dates it).
    Why the index is asked first: a memory whose notes never say "supersedes" (nearly every one)
    then pays one look-up of a term, not a scan of every note's links.
    """
    stamp = (state.index.version, state.tree_stamp)
    known = state.retired
    if known is not None and known[0] == stamp:
        found: Retirements | None = known[1]
        return found
    # the index term of the word a relation line starts with (memtree.notes.links.SUPERSEDES: ``supersed``)
    if next(state.index.vocabulary(text.terms("supersedes")[0]), None) is None:
        state.retired = (stamp, None)
        return None
    from memtree.notes import links
    from memtree.search.links import graph

    tree, _ = state.routing_tree()  # Why not parsed_tree: a broken tree-index.json must not stop search
    found = links.retirements(graph(state, tree), lambda path: _day(note(path).time))
    state.retired = (stamp, found)
    return found


def _day(moment: float) -> date:
    """The local day of an epoch time; a time no calendar holds (a file dated in year 10^6) is the earliest."""
    try:
        return datetime.fromtimestamp(moment).date()
    except (ValueError, OverflowError, OSError):
        return date.min


def _marked(state: RootState, hit: Hit, day: date, retired: Retirements | None) -> Hit:
    """``hit`` with its status on ``day``: ``current``, or the first reason none of its entries held then
    (memtree's marks and the hand-written ``supersedes`` links alike)."""
    from memtree.notes import entries

    lines = state.read_lines(hit.path)[hit.lines[0] - 1 : hit.lines[1]]
    metas = [e.meta for e in entries.parse_entries("\n".join(lines))]
    if retired:
        metas = [retired.of(hit.path, m) for m in metas or [entries.EntryMeta()]]  # a heading: with its note
    said = [entries.status(m, day) for m in metas]
    return replace(hit, status="current" if not said or "current" in said else said[0])


def _reinforce(state: RootState, result: SearchResult, now: float) -> None:
    if state.settings.search.reinforce and result.hits:
        state.usage().retrieved([k for h in result.hits for k in h.keys], now)


def semantic_layer(state: RootState) -> Layer | None:
    """The embedding layer (None when embed.enabled is off); nothing heavy is loaded until used."""
    if state.settings.embed.enabled == "off":
        return None
    if state.semantic is None:
        from memtree.search.semantic import Layer

        s = state.settings.search
        # an engine that stores the vectors loads the model for its rows: the layer uses that one
        loader = getattr(state.index, "shared_embedder", None)
        state.semantic = Layer(state.root, state.settings.embed, s.keyword_weight, s.semantic_weight, loader)
    layer: Layer = state.semantic
    return layer


def semantic_status(state: RootState) -> dict[str, Any]:
    """The embedding layer as `status` shows it: on or not, the model, chunks with vectors."""
    layer = semantic_layer(state)
    if layer is None:
        return {"enabled": "off", "active": False}
    from memtree.search.semantic import coverage

    return coverage(state.root, state.index, layer)


def embed_all(state: RootState, progress: Callable[[int, int], None] | None) -> dict[str, Any]:
    """Embed every chunk without a vector (raises MemtreeError when the model cannot load)."""
    from memtree.search.semantic import Layer, _read_lines

    s = state.settings.search
    layer = semantic_layer(state) or Layer(state.root, state.settings.embed, s.keyword_weight, s.semantic_weight)
    embedder = layer.embedder()
    if embedder is None:
        raise MemtreeError(layer.notice or "the embedding model is unavailable")
    t0 = time.perf_counter()
    aligned = layer.align(state.index, lambda path: _read_lines(state.root, path), True, progress)
    return {
        "model": embedder.model_id,
        "chunks": len(aligned.rows),
        "embedded": layer.embedded,
        "seconds": round(time.perf_counter() - t0, 3),
    }
