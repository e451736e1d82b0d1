"""The search pipeline: terms → BM25 and tree routing → blend → rejection → tiers → budget.

    keyword = tree_weight × tree + bm25_weight × bm25 / max(bm25)        (0.4 / 0.6)

``tree`` is the routing score of the chunk's node (tree.route), already in [0, 1]; BM25 is
normalized by the best BM25 score of the query. A hit's *coverage* — the IDF-weighted share of
query terms it holds (exactly 1.0, by prefix ``partial``), in its text or its node's keywords,
judged per clause of the query (memtree.search.evidence) — decides rejection: below
``reject_threshold`` memtree returns nothing rather than a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, NamedTuple

from memtree.config import SearchSettings
from memtree.index import bm25, dense
from memtree.index.chunk_index import Index
from memtree.index.routing import KeywordIndex, Route, route
from memtree.lifecycle.usage import chunk_keys
from memtree.notes.tree import Tree
from memtree.search import evidence
from memtree.search.decay import Adjuster, Factors
from memtree.text import terms as text

if TYPE_CHECKING:
    from memtree.search.semantic import SemanticScores

import os as _os

_ASIDE = float(_os.environ.get("MT_ASIDE", "0.3"))
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
    keys: tuple[str, ...] = ()  # the entries this chunk holds, as usage counts them (memtree.lifecycle.usage)
    dated: str = ""  # where the chunk's age came from: entry, frontmatter, file name, modified
    via: str = ""  # a recall/ hit: the excerpt's own place (path and lines are its source's)

    def explain(self, tree_weight: float, bm25_weight: float) -> str:
        """The arithmetic of this hit's score, as in DESIGN §3.8."""
        s = self.signals
        label = self.node or self.path
        line = (
            f"{label}: keyword {tree_weight:g}×{s['tree']:.2f} + {bm25_weight:g}×{s['bm25_norm']:.2f} "
            f"= {s['keyword']:.3f}  (bm25 {s['bm25']:.2f}, coverage {s['coverage']:.2f})"
        )
        if s.get("route") and s["route"] != s["tree"]:
            line += f"; tree = route {s['route']:.2f} × the chunk's share of the query {s['tree'] / s['route']:.2f}"
        if "semantic" in s:
            line += (
                f"\n    semantic: cosine {s['semantic']:.2f} ({s['semantic_norm']:.2f} of the best)"
                f" → blended {s['blended']:.3f}"
            )
        if "decay" in s:
            age = f"{s['age_days']:g} d old by {self.dated}, " if self.dated else ""
            line += (
                f"\n    × decay {s['decay']:.2f} ({age}{s['recalls']:g} recalls) × recency {s['recency']:g}"
                f" × scope {s['scope']:g} = {self.score:.3f}"
            )
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
    adjust: Adjuster | None = None,
    semantic: SemanticScores | None = None,
    today: date | None = None,
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
    searched = frozenset(tiers)

    def scoring(terms: Sequence[str]) -> Any:
        # IDF over the tiers searched: memory/ logs do not make a word cheap for a bank/ search;
        # a message that asks something ranks by its question's words most (memtree.search.evidence)
        p = settings
        lift = evidence.boosts(query, terms, today, p.aside_weight) if p.aside_weight < 1 else None
        return backend.score(segments, terms, p.partial_match, p.k1, p.b, cache, p.infix_match, searched, lift)

    scored = scoring(qterms)
    if len(qterms) > evidence.MAX_TERMS:  # a pasted page: its rarest words the memory holds
        qterms = evidence.bounded(qterms, [st.df for st in scored.stats])
        scored = scoring(qterms)
    idfs = [st.idf for st in scored.stats]
    judged = evidence.weigh(query, qterms, idfs, [st.df for st in scored.stats], today)
    routes = route(keywords, qterms, idfs, settings.partial_match, settings.infix_match)
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
    total_idf = sum(idfs) or 1.0

    hidden: list[str] = []  # chunks the current scope hid: the reason says so, not "not searched"

    def evidenced(keyword: float | None, si: int, d: int, strengths: list[float]) -> _Evidence:
        """What a chunk holds of the query, before its text is read: blend, coverage, route."""
        seg = segments[si]
        rt = file_routes[si].get(seg.doc_file[d])
        tree_score = 0.0
        if rt is not None:
            # how each query term is evidenced: in the chunk's text, or in its node's keywords
            text_cov = sum(w * st for w, st in zip(idfs, strengths)) / total_idf
            # the note's route lifts a chunk by the share of the query the chunk itself holds;
            # a note reached by keywords alone (no chunk holds a term) keeps its whole route score
            tree_score = rt.score * text_cov if text_cov else rt.score
            by_keyword = rt.terms  # a property that builds its dict: once per chunk, not per term
            strengths = [max(st, by_keyword.get(qi, 0.0)) for qi, st in enumerate(strengths)]
        if keyword is None:  # a chunk semantic search found: the same blend top() computes
            keyword = tw * tree_score + (bw * scored.raw(si, d) / top_bm if top_bm else 0.0)
        return _Evidence(keyword, judged.coverage(strengths), si, d, rt, strengths, tree_score)

    def candidate(ev: _Evidence) -> _Candidate | None:
        """The chunk read: its text, its entries' usage keys, and its decay, recency and scope."""
        seg = segments[ev.si]
        path = seg.files[seg.doc_file[ev.d]]
        start, end = seg.doc_start[ev.d], seg.doc_end[ev.d]
        chunk_text = "\n".join(read_lines(path)[start - 1 : end])
        keys = chunk_keys(path, chunk_text) if adjust is not None else ()
        factors = adjust.factors(path, chunk_text, keys) if adjust is not None else None
        if factors is None and adjust is not None:
            hidden.append(path)
            return None  # out of the current scope
        cos = semantic.cos(ev.si, ev.d) if semantic is not None else None
        return _Candidate(*ev, path, chunk_text, keys, factors, cos)

    # re-ranked by evidence (and decay, scope, meaning): look at a few more than k
    reranked = adjust is not None or semantic is not None or settings.evidence_weight > 0
    fetch = max(3 * k, 15) if reranked else k
    while True:
        top, top_bm = scored.top(fetch, frozenset(tiers), file_routes, tw, bw, skip)
        wanted: list[tuple[float | None, int, int]] = [(kw, si, d) for kw, si, d in top]
        if semantic is not None:
            seen = {(si, d) for _, si, d in top}
            wanted += [(None, si, d) for si, d in semantic.top(fetch) if (si, d) not in seen]
        if semantic is None and reranked:
            most = adjust.max_factor if adjust is not None else 1.0
            ceiling = _ceiling(scored, judged, segments, file_routes, most, settings.evidence_weight)
            ranked = _weigh_lazily(wanted, k, ceiling, scored, evidenced, candidate, settings.evidence_weight, most)
        else:
            table = scored.strengths([(si, d) for _, si, d in wanted])  # one batch: numpy pays per call
            found = [evidenced(kw, si, d, st) for (kw, si, d), st in zip(wanted, table)]
            ranked = [c for ev in found if (c := candidate(ev)) is not None]
        if (adjust is None and semantic is None) or len(ranked) >= k or len(top) < fetch:
            break
        fetch *= 4  # the scope hid too many: look deeper

    fused = semantic.fuse(ranked) if semantic is not None else {}
    if reranked:
        ranked.sort(key=lambda c: -_weighed(c, fused.get((c.si, c.d), c.keyword), settings.evidence_weight))
    had_candidates = bool(ranked)
    ranked = ranked[:k]
    reason = None
    # judged on what would be returned: the extra candidates decay looked at do not count
    best_cov = max((c.coverage for c in ranked), default=0.0)
    confident_meaning = semantic is not None and semantic.confident(ranked)
    if not ranked or (best_cov < settings.reject_threshold and not confident_meaning):
        reason = _reason(scored.stats, best_cov, settings.reject_threshold, had_candidates, query, bool(hidden))
        if semantic is not None:
            reason += (
                f"; nothing means it closely either (similarity {semantic.best:.2f}, needs {semantic.threshold:.2f})"
            )
        ranked = []
    hits = []
    left = budget
    for c in ranked:
        seg = segments[c.si]
        node = tree.by_path.get(c.path)
        chunk_text = c.text
        truncated = False
        if left is not None:
            chunk_text, truncated, used = _fit(chunk_text, left)
            left -= used
        matched = tuple(q for q, st in zip(qterms, c.strengths) if st)
        raw = scored.raw(c.si, c.d)
        signals = {
            "tree": round(c.tree_score, 4),
            "route": round(c.rt.score if c.rt else 0.0, 4),
            "bm25": round(raw, 4),
            "bm25_norm": round(raw / top_bm if top_bm else 0.0, 4),
            "keyword": round(c.keyword, 4),
            "coverage": round(c.coverage, 4),
        }
        final = fused.get((c.si, c.d), c.keyword)
        if semantic is not None:
            signals.update(semantic.signals(c), blended=round(final, 4))
        if c.factors is not None:
            f = c.factors
            final *= f.total
            signals.update(decay=round(f.decay, 4), recency=f.recency, scope=f.scope, age_days=f.age_days)
            signals["recalls"] = f.recalls
        tier = c.path.split("/", 1)[0]
        path, span, via = c.path, (seg.doc_start[c.d], seg.doc_end[c.d]), ""
        if tier == "recall" and "from=" in c.text:
            source = _recall_source(c.text)
            if source is not None:  # report where the knowledge lives, not the excerpt
                via = f"{path}:{span[0]}"
                path, span = source
                node = tree.by_path.get(path)
        hit = Hit(
            node.id if node else None,
            path,
            span,
            round(final, 4),
            signals,
            chunk_text,
            tier,
            matched,
            c.rt.keywords if c.rt else (),
            truncated,
            (c.keys if len(c.keys) == 1 else chunk_keys(c.path, c.text, matched)) if want_keys else (),
            c.factors.origin if c.factors else "",
            via,
        )
        hits.append(hit)
    sources = [(h.path, h.lines) for h in hits if h.via]
    if sources:  # a bank chunk already shown through its recall/ excerpt is not shown twice
        hits = [
            h
            for h in hits
            if h.via or not any(p == h.path and s <= h.lines[1] and h.lines[0] <= e for p, (s, e) in sources)
        ]
    # recall/ is the hot buffer: it wins ties, never a better match (hits are in score order already)
    hits.sort(key=lambda h: (-h.score, h.tier != "recall"))
    weights = {"tree": tw, "bm25": bw}
    return SearchResult(query, tuple(qterms), tuple(hits), reason, tuple(scored.stats), (), weights)


class _Evidence(NamedTuple):
    keyword: float
    coverage: float
    si: int
    d: int
    rt: Route | None
    strengths: list[float]
    tree_score: float


class _Candidate(NamedTuple):
    keyword: float
    coverage: float
    si: int
    d: int
    rt: Route | None
    strengths: list[float]
    tree_score: float
    path: str
    text: str
    keys: tuple[str, ...]
    factors: Factors | None
    cos: float | None = None  # cosine similarity to the query (semantic layer on)


def _weighed(c: _Candidate, base: float, evidence_weight: float) -> float:
    """A candidate's rank score: its blend, scaled by its clause evidence, times decay, recency and scope.

    Why the evidence: of two chunks the blend scores alike, the one answering a whole clause of the
    question beats one that gathers scattered words of a long message (both factors are ≤ 1, so
    the lazy cut below stays exact).
    """
    base *= 1.0 - evidence_weight + evidence_weight * c.coverage
    return base * c.factors.total if c.factors else base


def _ceiling(
    scored: Any,
    judged: evidence.Weights,
    segments: Sequence[bm25.Segment],
    file_routes: list[dict[int, Route]],
    max_factor: float,
    evidence_weight: float,
) -> Callable[[float, int, int], float]:
    """The most a candidate's rank score can be before its evidence is known.

    Why a sharper bound than keyword × ``max_factor``: the pure scorer already holds each chunk's
    Σ idf × match strength, which with its route's keyword mass bounds its coverage of any clause
    (a strength is the larger of the two), so most candidates are passed over without being weighed.
    """
    held = getattr(scored, "evidence", None)
    w = judged.weights
    totals = [sum(w[i] for i in c) for c in judged.clauses]
    smallest = min((t for t in totals if t > 0), default=0.0)
    # a routed chunk's strengths are max(text, keyword): its route's keyword mass is added to its text's
    routed_mass: dict[int, float] = {}

    def ceiling(keyword: float, si: int, d: int) -> float:
        share = 1.0
        if held and smallest > 0:
            mass = held[si].get(d, 0.0)
            rt = file_routes[si].get(segments[si].doc_file[d])
            if rt is not None:
                extra = routed_mass.get(id(rt))
                if extra is None:
                    extra = routed_mass[id(rt)] = sum(w[qi] * s for qi, s in rt.terms.items() if qi < len(w))
                mass += extra
            share = min(1.0, mass / smallest)
        return keyword * (1.0 - evidence_weight + evidence_weight * share) * max_factor

    return ceiling


def _weigh_lazily(
    wanted: list[tuple[float | None, int, int]],
    k: int,
    ceiling: Callable[[float, int, int], float],
    scored: Any,
    evidenced: Callable[[float | None, int, int, list[float]], _Evidence],
    candidate: Callable[[_Evidence], _Candidate | None],
    evidence_weight: float,
    max_factor: float,
) -> list[_Candidate]:
    """Candidates weighed lazily, until none left can reach the top k.

    A chunk's rank score is at most its ``ceiling`` before its evidence is known, and keyword × its
    evidence factor × ``max_factor`` (recency × scope boost) once it is (memtree.search.evidence; no text
    read yet). The most promising step is taken each time — evidence the chunk with the highest
    ceiling, or read the best-bounded chunk already evidenced — and it stops when the k-th best
    weighed score reaches both bounds: usually after the first k chunks.
    """
    import bisect
    import heapq

    def tight(ev: _Evidence) -> float:
        return ev.keyword * (1.0 - evidence_weight + evidence_weight * ev.coverage) * max_factor

    order = sorted(((ceiling(kw or 0.0, si, d), n) for n, (kw, si, d) in enumerate(wanted)), key=lambda pair: -pair[0])
    # the pure scorer answers one chunk at a time cheaply; the numpy one pays per call, so it gets one batch
    table = None if isinstance(scored, bm25.Scored) else scored.strengths([(si, d) for _, si, d in wanted])
    ranked: list[_Candidate] = []
    best: list[float] = []  # weighed scores so far, negated and sorted
    pending: list[tuple[float, int, _Evidence]] = []  # evidenced, not read: (−tight bound, order, evidence)
    i = 0
    while True:
        loose = order[i][0] if i < len(order) else -1.0
        near = -pending[0][0] if pending else -1.0
        floor = -best[k - 1] if len(best) >= k else -1.0
        if max(loose, near) <= floor or (loose < 0 and near < 0):
            break
        if loose > near:
            n = order[i][1]
            kw, si, d = wanted[n]
            strengths = table[n] if table is not None else scored.strengths([(si, d)])[0]
            ev = evidenced(kw, si, d, strengths)
            heapq.heappush(pending, (-tight(ev), n, ev))
            i += 1
            continue
        _, _, ev = heapq.heappop(pending)
        c = candidate(ev)
        if c is None:
            continue
        ranked.append(c)
        bisect.insort(best, -_weighed(c, c.keyword, evidence_weight))
    return ranked


def _recall_source(chunk_text: str) -> tuple[str, tuple[int, int]] | None:
    from memtree.lifecycle.recall import source_of
    from memtree.notes.entries import META_RE, parse_meta

    for m in META_RE.finditer(chunk_text):
        found = source_of(parse_meta(m.group("body")))
        if found is not None:
            return found
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


QUOTED_TERMS = 8
"""Terms (or words) a message quotes before "… and N more"; why: a 20,000-word query made a 129 KB error line."""
QUOTED_CHARS = 40
"""Characters a message quotes of one term or word (a query may be one 100 KB word)."""


def quote_terms(words: Sequence[str]) -> str:
    """``words`` comma-joined for a one-line message: the first ``QUOTED_TERMS``, then how many more."""
    shown = ", ".join(w if len(w) <= QUOTED_CHARS else w[:QUOTED_CHARS] + "…" for w in words[:QUOTED_TERMS])
    return shown + (f" … and {len(words) - QUOTED_TERMS:,} more" if len(words) > QUOTED_TERMS else "")


def quote_query(query: str) -> str:
    """``query`` quoted for a one-line message; a long one by its first words and its length in words."""
    words = query.split()
    if len(words) <= QUOTED_TERMS and len(query) <= QUOTED_TERMS * QUOTED_CHARS:
        return repr(query)
    head = " ".join(w if len(w) <= QUOTED_CHARS else w[:QUOTED_CHARS] + "…" for w in words[:QUOTED_TERMS])
    return f"{head + ' …'!r} ({len(words):,} word{'' if len(words) == 1 else 's'})"


def _reason(
    stats: Sequence[bm25.TermStats],
    best: float,
    threshold: float,
    had_candidates: bool,
    query: str = "",
    scoped_out: bool = False,
) -> str:
    # the user's own words, not the stems they were indexed as (blue-green, not blu)
    words = dict(reversed(text.terms_with_surface(query))) if query else {}

    def shown(terms: list[str]) -> str:
        return quote_terms(list(dict.fromkeys(words.get(t, t) for t in terms if not t.startswith("@"))) or terms)

    missing = [st.term for st in stats if st.df == 0]
    if len(missing) == len(stats):
        return f"no confident match: no term of the query occurs in memory ({shown(missing)})"
    if not had_candidates:
        found = shown([st.term for st in stats if st.df])
        if scoped_out:
            return f"no confident match: {found} occur only in entries outside the current scope (see --scope)"
        return (
            f"no confident match: {found} occur only in notes not searched "
            "(memory/ needs --tier memory or --tier all; disabled banks are left out)"
        )
    tail = f"; not in memory: {shown(missing)}" if missing else ""
    return f"no confident match: the best chunk covers {best:.0%} of the query (needs {threshold:.0%}){tail}"
