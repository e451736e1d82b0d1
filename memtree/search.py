"""The search pipeline: terms → BM25 and tree routing → blend → rejection → tiers → budget.

    keyword = tree_weight × tree + bm25_weight × bm25 / max(bm25)        (0.4 / 0.6)

``tree`` is the routing score of the chunk's node (tree.route), already in [0, 1]; BM25 is
normalized by the best BM25 score of the query. A hit's *coverage* — the IDF-weighted share of
query terms it holds (exactly 1.0, by prefix ``partial``), in its text or its node's keywords —
decides rejection: below ``reject_threshold`` memtree returns nothing rather than a guess.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from . import bm25, text
from .config import SearchSettings
from .index import Index
from .tree import KeywordIndex, Route, Tree, route

POOL_FACTOR = 4
"""Chunks ranked by BM25 alone considered per requested hit before the tree bonus is added."""


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

    def explain(self, tree_weight: float, bm25_weight: float) -> str:
        """The arithmetic of this hit's score, as in DESIGN §3.8."""
        s = self.signals
        label = self.node or self.path
        return (
            f"{label}: {tree_weight:g}×{s['tree']:.2f} + {bm25_weight:g}×{s['bm25_norm']:.2f} "
            f"= {self.score:.3f}  (bm25 {s['bm25']:.2f}, coverage {s['coverage']:.2f})"
        )


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
) -> SearchResult:
    """Rank the chunks of ``tiers`` for ``qterms``; see the module docstring."""
    segments = index.segment_list()
    scored = bm25.score([s for _, s in segments], qterms, settings.partial_match, settings.k1, settings.b)
    idfs = [st.idf for st in scored.stats]
    routes = route(keywords, qterms, idfs, settings.partial_match)
    weights = {"tree": settings.tree_weight, "bm25": settings.bm25_weight}

    def locate(key: tuple[int, int]) -> tuple[str, str]:
        seg = segments[key[0]][1]
        path = seg.files[seg.doc_file[key[1]]]
        entry = index.files.get(path)
        return path, entry.tier if entry else ""

    allowed = set(tiers)
    bm = {key: s for key, s in scored.scores.items() if locate(key)[1] in allowed}
    routed_paths = {tree.by_id[r].path: rt for r, rt in routes.items() if tree.by_id[r].path}
    pool = set(heapq.nlargest(k * POOL_FACTOR, bm, key=bm.__getitem__))
    pool |= {key for key in bm if locate(key)[0] in routed_paths}
    # Parent fallback may route to a note none of whose chunks holds a query term: offer its first chunk.
    covered = {locate(key)[0] for key in pool}
    for path, _rt in routed_paths.items():
        if path in covered or path not in index.files or index.files[path].tier not in allowed:
            continue
        first = _first_chunk(segments, index, path)
        if first is not None:
            pool.add(first)
    top_bm = max(bm.values(), default=0.0) or 1.0
    total_idf = sum(idfs) or 1.0
    ranked = []
    for key in pool:
        path, tier = locate(key)
        node = tree.by_path.get(path)
        rt = routed_paths.get(path)
        tree_score = rt.score if rt else 0.0
        raw = bm.get(key, 0.0)
        norm = raw / top_bm
        keyword = settings.tree_weight * tree_score + settings.bm25_weight * norm
        coverage = _coverage(key, scored, rt, idfs, total_idf)
        ranked.append((keyword, coverage, key, path, tier, node.id if node else None, tree_score, raw, norm, rt))
    ranked.sort(key=lambda r: (-r[0], r[3], r[2]))
    ranked = ranked[:k]

    reason = None
    best_cov = max((r[1] for r in ranked), default=0.0)
    if not ranked or best_cov < settings.reject_threshold:
        reason = _reason(scored.stats, best_cov, settings.reject_threshold, bool(ranked))
        ranked = []
    # recall/ is the hot buffer: its confident hits come before bank/ and memory/ hits.
    ranked.sort(key=lambda r: 0 if r[4] == "recall" and r[1] >= settings.reject_threshold else 1)

    hits = []
    left = budget
    for keyword, coverage, key, path, tier, node_id, tree_score, raw, norm, rt in ranked:
        seg = segments[key[0]][1]
        start, end = seg.doc_start[key[1]], seg.doc_end[key[1]]
        chunk_text = "\n".join(read_lines(path)[start - 1 : end])
        truncated = False
        if left is not None:
            chunk_text, truncated, used = _fit(chunk_text, left)
            left -= used
        matched = tuple(
            q for qi, q in enumerate(qterms) if key in scored.strength[qi] or (rt is not None and qi in rt.terms)
        )
        signals = {
            "tree": round(tree_score, 4),
            "bm25": round(raw, 4),
            "bm25_norm": round(norm, 4),
            "keyword": round(keyword, 4),
            "coverage": round(coverage, 4),
        }
        hits.append(
            Hit(
                node_id,
                path,
                (start, end),
                round(keyword, 4),
                signals,
                chunk_text,
                tier,
                matched,
                rt.keywords if rt else (),
                truncated,
            )
        )
    return SearchResult(query, tuple(qterms), tuple(hits), reason, tuple(scored.stats), (), weights)


def _coverage(
    key: tuple[int, int], scored: bm25.Scored, rt: Route | None, idfs: Sequence[float], total: float
) -> float:
    got = 0.0
    for qi, idf in enumerate(idfs):
        s = scored.strength[qi].get(key, 0.0)
        if rt is not None:
            s = max(s, rt.terms.get(qi, 0.0))
        got += idf * s
    return got / total


def _first_chunk(segments: list[tuple[str, bm25.Segment]], index: Index, path: str) -> tuple[int, int] | None:
    entry = index.files[path]
    for si, (name, seg) in enumerate(segments):
        if name != entry.segment:
            continue
        fi = seg.file_id(path)
        d = seg.first_doc(fi) if fi is not None else None
        return (si, d) if d is not None else None
    return None


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
    if not had_candidates or len(missing) == len(stats):
        return f"no confident match: no term of the query occurs in memory ({', '.join(missing)})"
    tail = f"; not in memory: {', '.join(missing)}" if missing else ""
    return f"no confident match: the best chunk covers {best:.0%} of the query (needs {threshold:.0%}){tail}"
