"""The search pipeline: terms → BM25 and tree routing → blend → rejection → tiers → budget.

    keyword = tree_weight × tree + bm25_weight × bm25 / max(bm25)        (0.4 / 0.6)

``tree`` is the routing score of the chunk's node (tree.route), already in [0, 1]; BM25 is
normalized by the best BM25 score of the query. A hit's *coverage* — the IDF-weighted share of
query terms it holds (exactly 1.0, by prefix ``partial``), in its text or its node's keywords —
decides rejection: below ``reject_threshold`` memtree returns nothing rather than a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import bm25, dense, text
from .config import SearchSettings
from .index import Index
from .routing import KeywordIndex, Route, route
from .tree import Tree
from .usage import chunk_keys

TERM_CACHE_SIZE = 2048
"""Query terms whose matches and IDF stay cached until the index changes (the IDF cache)."""


@dataclass(frozen=True)
class Hit:
    """One search hit: where it is, how it scored, and its text."""

    node: str | None
    path: str
    lines: tuple[int, int]
    score: float
    signals: dict[str, float]
    text: str
    tier: str
    matched: tuple[str, ...] = ()
    route: tuple[str, ...] = ()
    truncated: bool = False
    keys: tuple[str, ...] = ()  # the entries this chunk holds, as usage counts them (memtree.usage)

    def explain(self, tree_weight: float, bm25_weight: float) -> str:
        """The arithmetic of this hit's score, as in DESIGN §3.8."""
        s = self.signals
        label = self.node or self.path
        line = (
            f"{label}: {tree_weight:g}×{s['tree']:.2f} + {bm25_weight:g}×{s['bm25_norm']:.2f} "
            f"= {self.score:.3f}  (bm25 {s['bm25']:.2f}, coverage {s['coverage']:.2f})"
        )
        if s.get("route") and s["route"] != s["tree"]:
            line += f"; tree = route {s['route']:.2f} × the chunk's share of the query {s['tree'] / s['route']:.2f}"
        return line


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, or none with the reason; the query's terms and their statistics."""

    query: str
    terms: tuple[str, ...]
    hits: tuple[Hit, ...]
    rejected: str | None = None
    term_stats: tuple[bm25.TermStats, ...] = ()
    warnings: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)


def run(
    index: Index,
    tree: Tree,
    keywords: KeywordIndex,
    query: str,
    qterms: Sequence[str],
    k: int,
    tiers: Sequence[str],
    settings: SearchSettings,
    read_lines: Callable[[str], list[str]],
    budget: int | None = None,
    vectorize: bool = True,
    skip: tuple[str, ...] = (),
    want_keys: bool = False,
) -> SearchResult:
    """Rank the chunks of ``tiers`` for ``qterms``; see the module docstring.

    ``vectorize=False`` keeps a large index on the pure-Python scorer (same scores): for one
    query in a fresh process that is faster than importing numpy.
    """
    segments = [seg for _, seg in index.segment_list()]
    postings = sum(len(seg.post_doc) for seg in segments)
    backend: Any = bm25
    if postings >= dense.DENSE_MIN_POSTINGS and vectorize and dense.available():
        backend = dense
    cache = index.term_cache
    if len(cache) > TERM_CACHE_SIZE:
        cache.clear()
    scored = backend.score(segments, qterms, settings.partial_match, settings.k1, settings.b, cache)
    idfs = [st.idf for st in scored.stats]
    routes = route(keywords, qterms, idfs, settings.partial_match)
    routed = {tree.by_id[r].path: rt for r, rt in routes.items()}
    tw, bw = settings.tree_weight, settings.bm25_weight
    file_routes: list[dict[int, Route]] = []
    for seg in segments:
        by_file = {}
        for path, rt in routed.items():
            fi = seg.file_id(path) if path else None
            if fi is not None and fi not in seg.dead_files:
                by_file[fi] = rt
        file_routes.append(by_file)
    top, top_bm = scored.top(k, frozenset(tiers), file_routes, tw, bw, skip)
    total_idf = sum(idfs) or 1.0
    ranked = []
    table = scored.strengths([(si, d) for _, si, d in top])
    for (keyword, si, d), strengths in zip(top, table):
        seg = segments[si]
        rt = file_routes[si].get(seg.doc_file[d])
        # how each query term is evidenced: in the chunk's text, or in its node's keywords
        text_cov = sum(w * st for w, st in zip(idfs, strengths)) / total_idf
        tree_score = 0.0
        if rt is not None:
            # the note's route lifts a chunk by the share of the query the chunk itself holds;
            # a note reached by keywords alone (no chunk holds a term) keeps its whole route score
            tree_score = rt.score * text_cov if text_cov else rt.score
            strengths = [max(st, rt.terms.get(qi, 0.0)) for qi, st in enumerate(strengths)]
        coverage = sum(w * st for w, st in zip(idfs, strengths)) / total_idf
        ranked.append((keyword, coverage, si, d, rt, strengths, tree_score))

    reason = None
    best_cov = max((r[1] for r in ranked), default=0.0)
    if not ranked or best_cov < settings.reject_threshold:
        reason = _reason(scored.stats, best_cov, settings.reject_threshold, bool(ranked))
        ranked = []
    hits = []
    left = budget
    for keyword, coverage, si, d, rt, strengths, tree_score in ranked:
        seg = segments[si]
        path = seg.files[seg.doc_file[d]]
        node = tree.by_path.get(path)
        start, end = seg.doc_start[d], seg.doc_end[d]
        chunk_text = "\n".join(read_lines(path)[start - 1 : end])
        keys = chunk_keys(path, chunk_text) if want_keys else ()
        truncated = False
        if left is not None:
            chunk_text, truncated, used = _fit(chunk_text, left)
            left -= used
        matched = tuple(q for q, st in zip(qterms, strengths) if st)
        raw = scored.raw(si, d)
        signals = {
            "tree": round(tree_score, 4),
            "route": round(rt.score if rt else 0.0, 4),
            "bm25": round(raw, 4),
            "bm25_norm": round(raw / top_bm if top_bm else 0.0, 4),
            "keyword": round(keyword, 4),
            "coverage": round(coverage, 4),
        }
        tier = path.split("/", 1)[0]
        hit = Hit(
            node.id if node else None,
            path,
            (start, end),
            round(keyword, 4),
            signals,
            chunk_text,
            tier,
            matched,
            rt.keywords if rt else (),
            truncated,
            keys,
        )
        hits.append(hit)
    # recall/ is the hot buffer: its confident hits come before bank/ and memory/ hits.
    # A weak recall excerpt (below the rejection threshold on its own) keeps its rank.
    threshold = settings.reject_threshold
    hits.sort(key=lambda h: 0 if h.tier == "recall" and h.signals["coverage"] >= threshold else 1)
    weights = {"tree": tw, "bm25": bw}
    return SearchResult(query, tuple(qterms), tuple(hits), reason, tuple(scored.stats), (), weights)


def _fit(chunk_text: str, left: int) -> tuple[str, bool, int]:
    """Chunk text within ``left`` estimated tokens: whole, cut at a line, or empty."""
    need = text.estimate_tokens(chunk_text)
    if need <= left:
        return chunk_text, False, need
    if left <= 0:
        return "", True, 0
    kept: list[str] = []
    used = 0
    for line in chunk_text.split("\n"):
        cost = text.estimate_tokens(line + "\n")
        if used + cost > left:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept), True, used


def _reason(stats: Sequence[bm25.TermStats], best: float, threshold: float, had_candidates: bool) -> str:
    missing = [st.term for st in stats if st.df == 0]
    if len(missing) == len(stats):
        return f"no confident match: no term of the query occurs in memory ({', '.join(missing)})"
    if not had_candidates:
        found = ", ".join(st.term for st in stats if st.df)
        return (
            f"no confident match: {found} occur only in notes not searched "
            "(memory/ needs --tier memory or --tier all; disabled banks are left out)"
        )
    tail = f"; not in memory: {', '.join(missing)}" if missing else ""
    return f"no confident match: the best chunk covers {best:.0%} of the query (needs {threshold:.0%}){tail}"
