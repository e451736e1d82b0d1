"""The search pipeline: terms → BM25 and tree routing → blend → rejection → tiers → budget.

    keyword = tree_weight × tree + bm25_weight × bm25 / max(bm25)        (0.4 / 0.6)

``tree`` is the routing score of the chunk's node (tree.route), already in [0, 1], times the
share of the query the chunk holds; BM25 is normalized by the best BM25 score of the query
(memtree.index.blend, the one home of that arithmetic). A hit's *coverage* — the IDF-weighted
share of query terms it holds (exactly 1.0, by prefix ``partial``), in its text or its node's
keywords, judged per clause of the query (memtree.search.evidence) — decides rejection: below
``reject_threshold`` memtree returns nothing rather than a guess. A hit's score is its keyword
blend (or the semantic blend) × (1 − w + w × coverage) × (1 − a + a × adjacency) × decay ×
recency × scope, and hits are returned in that order.

The pipeline asks its engine (memtree.index.protocol.Engine: memtree's chunk index, or another)
for scores and chunk locations only; it reads chunk text from the notes through ``read_lines``.

Why one module over 300 lines: ``run`` and the lazy weighing it drives share its candidates,
their bounds and their order; apart, each would be half of one algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from operator import mul
from typing import TYPE_CHECKING, NamedTuple

from memtree.config import SearchSettings
from memtree.index.protocol import ChunkRef, Engine, Location, Scores
from memtree.index.routing import KeywordIndex, Route, route
from memtree.notes import store
from memtree.notes.tree import Tree
from memtree.notes.usage import chunk_keys
from memtree.search import evidence, repair
from memtree.search.decay import Adjuster, Factors
from memtree.search.result import Hit, SearchResult, fit, recall_source, rejection

if TYPE_CHECKING:
    from memtree.index.blend import Blend
    from memtree.search.fusion import Fused


def run(
    index: Engine,
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
    semantic: Fused | None = None,
    today: date | None = None,
) -> SearchResult:
    """Rank the chunks of ``tiers`` for ``qterms``; see the module docstring.

    ``vectorize=False`` keeps a large index on the pure-Python scorer (same scores): for one
    query in a fresh process that is faster than importing numpy.
    """
    searched = frozenset(tiers)

    def scoring(terms: Sequence[str], aliases: dict[str, str] | None = None) -> tuple[Scores, list[float] | None]:
        # IDF over the tiers searched: memory/ logs do not make a word cheap for a bank/ search;
        # a message that asks something ranks by its question's words most (memtree.search.evidence)
        lift = (
            evidence.boosts(query, terms, today, settings.aside_weight, aliases) if settings.aside_weight < 1 else None
        )
        return index.score(terms, searched, settings, lift, vectorize), lift

    scored, lift = scoring(qterms)
    if len(qterms) > evidence.MAX_TERMS:  # a pasted page: its rarest words the memory holds
        qterms = evidence.bounded(qterms, [st.df for st in scored.stats])
        scored, lift = scoring(qterms)
    aliases = repair.repairs(index, qterms, [st.df for st in scored.stats], searched, settings, vectorize)
    if aliases:
        qterms = list(dict.fromkeys(aliases.get(q, q) for q in qterms))
        scored, lift = scoring(qterms, aliases)
    idfs = [st.idf for st in scored.stats]
    judged = evidence.weigh(query, qterms, idfs, [st.df for st in scored.stats], today, aliases)
    paired = evidence.pairs(qterms, judged, lift) if settings.adjacency_weight else evidence.Pairs()
    routes = route(keywords, qterms, idfs, settings.partial_match, settings.infix_match)
    routed: dict[str, Route] = {}
    for node_id, rt in routes.items():
        path = tree.by_id[node_id].path
        if path:
            routed[path] = rt
    route_scores = {path: rt.score for path, rt in routed.items()}
    tw, bw = settings.tree_weight, settings.bm25_weight
    # where each candidate is, and its note's route: asked of the engine once per candidate, in a batch
    places: dict[ChunkRef, tuple[Location, Route | None]] = {}

    hidden: list[str] = []  # chunks the current scope hid: the reason says so, not "not searched"

    by_keywords: dict[str, dict[int, float]] = {}  # node → its route's strength per query term

    def evidenced(keyword: float | None, ref: ChunkRef, strengths: list[float]) -> _Evidence:
        """What a chunk holds of the query, before its text is read: blend, coverage, route."""
        where, rt = places[ref]
        tree_score = 0.0
        held = None
        if rt is not None:
            # how each query term is evidenced: in the chunk's text, or in its node's keywords
            held = sum(map(mul, idfs, strengths)) or None
            # the note's route lifts a chunk by the share of the query the chunk itself holds;
            # a note reached by keywords alone (no chunk holds a term) keeps its whole route score
            tree_score = blend.tree(rt.score, held)
            by_keyword = by_keywords.get(rt.node)
            if by_keyword is None:  # a property that builds its dict: once per note, not per chunk
                by_keyword = by_keywords[rt.node] = rt.terms
            strengths = _stronger(strengths, by_keyword)
        if keyword is None:  # a chunk semantic search found: the same blend top() computes
            keyword = blend.keyword(scored.raw(ref), rt.score if rt else 0.0, held)
        coverage, answered = judged.shares(strengths, settings.aside_weight)
        return _Evidence(keyword, coverage, ref, where, rt, strengths, tree_score, answered)

    def candidate(ev: _Evidence) -> _Candidate | None:
        """The chunk read: its text, its entries' usage keys, and its decay, recency and scope."""
        where = ev.where
        chunk_text = "\n".join(read_lines(where.path)[where.start - 1 : where.end])
        keys = chunk_keys(where.path, chunk_text) if adjust is not None else ()
        past = adjust.past_hidden if adjust is not None else 0
        factors = adjust.factors(where.path, chunk_text, keys) if adjust is not None else None
        if factors is None and adjust is not None:
            if adjust.past_hidden == past:
                hidden.append(where.path)
            return None  # out of the current scope, or of the day asked (superseded, expired)
        cos = semantic.cos(ev.ref) if semantic is not None else None
        side = paired.adjacency(chunk_text, qterms, ev.strengths)
        return _Candidate(*ev, chunk_text, keys, factors, cos, side)

    # re-ranked by evidence and adjacency (and decay, scope, meaning): look at a few more than k
    by_text = settings.evidence_weight > 0 or settings.adjacency_weight > 0
    weighs = adjust is not None and adjust.weighs  # an adjuster may only filter (time) and weigh nothing
    reranked = weighs or semantic is not None or by_text
    fetch = max(3 * k, 15) if reranked else k
    blend: Blend
    while True:
        top, blend = scored.top(fetch, searched, route_scores, tw, bw, skip)
        wanted: list[tuple[float | None, ChunkRef]] = [(kw, ref) for kw, ref in top]
        if semantic is not None:
            seen = {ref for _, ref in top}
            wanted += [(None, ref) for ref in semantic.top(fetch) if ref not in seen]
        fresh = [ref for _, ref in wanted if ref not in places]
        for ref, where in zip(fresh, scored.locate(fresh)):
            places[ref] = (where, routed.get(where.path))
        if semantic is None and reranked:
            most = adjust.max_factor if adjust is not None else 1.0
            masses = scored.evidence([ref for _, ref in wanted])
            # Why all in one batch: most candidates are evidenced before the cut (26-29 of 30 on the dev trees)
            table = scored.strengths([ref for _, ref in wanted])
            bounds = _ceilings(wanted, masses, table, places, by_keywords, judged, paired, most, settings)
            ranked = _weigh_lazily(wanted, k, bounds, table, evidenced, candidate, settings, most, paired)
        else:
            if semantic is not None:
                semantic.known([ref for _, ref in wanted])
            table = scored.strengths([ref for _, ref in wanted])  # one batch: numpy pays per call
            found = [evidenced(kw, ref, st) for (kw, ref), st in zip(wanted, table)]
            ranked = [c for ev in found if (c := candidate(ev)) is not None]
        if (adjust is None and semantic is None) or len(ranked) >= k or len(top) < fetch:
            break
        fetch *= 4  # the scope hid too many: look deeper

    fused = semantic.fuse(ranked) if semantic is not None else {}
    if reranked:
        ranked.sort(key=lambda c: -_weighed(c, fused.get(c.ref, c.keyword), settings))
    had_candidates = bool(ranked)
    ranked = ranked[:k]
    reason = None
    # judged on what would be returned: the extra candidates decay looked at do not count
    best_cov = max((c.coverage for c in ranked), default=0.0)
    confident_meaning = semantic is not None and semantic.confident(ranked)
    if not ranked or (best_cov < settings.reject_threshold and not confident_meaning):
        missing = [st.term for st in scored.stats if st.df == 0]
        elsewhere = [] if not missing else _held_elsewhere(index, missing, searched, settings, vectorize)
        reason = rejection(
            scored.stats, best_cov, settings.reject_threshold, had_candidates, query, bool(hidden), elsewhere
        )
        if semantic is not None:
            reason += (
                f"; nothing means it closely either (similarity {semantic.best:.2f}, needs {semantic.threshold:.2f})"
            )
        ranked = []
    hits = []
    left = budget
    for c in ranked:
        node = tree.by_path.get(c.where.path)
        chunk_text = c.text
        truncated = False
        if left is not None:
            chunk_text, truncated, used = fit(chunk_text, left)
            left -= used
        matched = tuple(q for q, st in zip(qterms, c.strengths) if st)
        raw = scored.raw(c.ref)
        signals = {
            "tree": round(c.tree_score, 4),
            "route": round(c.rt.score if c.rt else 0.0, 4),
            "bm25": round(raw, 4),
            "bm25_norm": round(blend.bm25_norm(raw), 4),
            "keyword": round(c.keyword, 4),
            "coverage": round(c.coverage, 4),
        }
        final = fused.get(c.ref, c.keyword)
        if semantic is not None:
            signals.update(semantic.signals(c), blended=round(final, 4))
        if reranked:  # the factors the candidates were ranked by are the score's, so hits stay in rank order
            evidenced_by, side_by_side = _factors(c, settings)
            final *= evidenced_by * side_by_side
            signals.update(evidence=round(evidenced_by, 4), adjacency=round(side_by_side, 4))
        if c.factors is not None and weighs:
            f = c.factors
            final *= f.total
            signals.update(decay=round(f.decay, 4), recency=f.recency, scope=f.scope, age_days=f.age_days)
            signals["recalls"] = f.recalls
        tier = c.where.tier
        path, span, via = c.where.path, (c.where.start, c.where.end), ""
        if tier == "recall" and "from=" in c.text:
            source = recall_source(c.text)
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
            (c.keys if len(c.keys) == 1 else chunk_keys(c.where.path, c.text, matched)) if want_keys else (),
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
    ref: ChunkRef
    where: Location
    rt: Route | None
    strengths: list[float]
    tree_score: float
    answered: float  # the share of the question it answers (evidence.Weights.answered): its rank factor


class _Candidate(NamedTuple):
    keyword: float
    coverage: float
    ref: ChunkRef
    where: Location
    rt: Route | None
    strengths: list[float]
    tree_score: float
    answered: float
    text: str
    keys: tuple[str, ...]
    factors: Factors | None
    cos: float | None = None  # cosine similarity to the query (semantic layer on)
    adjacency: float = 1.0  # share of the question's word pairs side by side in the text (memtree.search.evidence)


def _stronger(strengths: list[float], by_keyword: dict[int, float]) -> list[float]:
    """Per query term, the larger of its strength in a chunk's text and in its note's keywords."""
    out = list(strengths)
    for qi, s in by_keyword.items():
        if qi < len(out) and s > out[qi]:
            out[qi] = s
    return out


def _factors(c: _Candidate, settings: SearchSettings) -> tuple[float, float]:
    """The two rank factors of a candidate's text: clause evidence and adjacency (each at most 1).

    Why the evidence: of two chunks the blend scores alike, the one answering a whole clause of the
    question beats one that gathers scattered words of a long message, or holds a whole greeting
    (evidence.Weights.answered). Why adjacency: of two paragraphs holding the same words, the one
    saying them together answers (memtree.search.evidence.Pairs). Both are ≤ 1 (the first never
    above the coverage the ceilings bound), so the lazy cut below stays exact.
    """
    ew, aw = settings.evidence_weight, settings.adjacency_weight
    return 1.0 - ew + ew * c.answered, 1.0 - aw + aw * c.adjacency


def _weighed(c: _Candidate, base: float, settings: SearchSettings) -> float:
    """A candidate's rank score: its blend, scaled by its text's factors, times decay, recency and scope."""
    evidenced_by, side_by_side = _factors(c, settings)
    base *= evidenced_by * side_by_side
    return base * c.factors.total if c.factors else base


def _ceilings(
    wanted: Sequence[tuple[float | None, ChunkRef]],
    held: Sequence[float] | None,
    table: Sequence[list[float]],
    places: dict[ChunkRef, tuple[Location, Route | None]],
    by_keywords: dict[str, dict[int, float]],
    judged: evidence.Weights,
    paired: evidence.Pairs,
    max_factor: float,
    settings: SearchSettings,
) -> list[float]:
    """The most each candidate's rank score can be before its evidence is known.

    Why a sharper bound than keyword × ``max_factor``: an engine that holds each chunk's Σ idf ×
    match strength (``held``; the pure scorer does) bounds, with its route's keyword mass, the
    chunk's coverage of any clause (a strength is the larger of the two), and so the share of the
    question it answers (evidence.Weights.answered: its question's clauses, or ``aside`` × any);
    and its strengths (``table``, raised by its route's keywords as :func:`run`'s ``evidenced``
    raises them, from the same ``by_keywords``: node → its route's strength per term, filled here)
    bound its adjacency (evidence.Pairs.possible), so most candidates are passed over without being
    weighed. Each factor is the one the tight bound of :func:`_weigh_lazily` takes, computed the
    same way, so a ceiling is never below it.
    """
    w = judged.weights
    ew, aw, aside = settings.evidence_weight, settings.adjacency_weight, settings.aside_weight
    smallest, asked = judged.lightest()
    has_pairs = paired.total > 0
    flat = 1.0 - aw + aw * 1.0  # the adjacency factor where Pairs.possible has no pair to judge (1.0)
    # a routed chunk's strengths are max(text, keyword): its route's keyword mass is added to its text's
    routed_mass: dict[str, float] = {}  # node → its route's keyword mass
    bounds = []
    for n, (keyword, ref) in enumerate(wanted):
        share = 1.0
        rt = places[ref][1]
        by_keyword = extra = None
        if rt is not None:
            by_keyword = by_keywords.get(rt.node)
            if by_keyword is None:  # a property that builds its dict: once per note, not per chunk
                by_keyword = by_keywords[rt.node] = rt.terms
            extra = routed_mass.get(rt.node)
            if extra is None:
                extra = routed_mass[rt.node] = sum(w[qi] * s for qi, s in by_keyword.items() if qi < len(w))
        if held is not None and smallest > 0:
            mass = held[n] if extra is None else held[n] + extra
            share = min(1.0, mass / smallest)
            if judged.question:
                share = max(min(1.0, mass / asked) if asked > 0 else 0.0, aside * share)
        side = flat
        if has_pairs:  # a pair needs both its words, in the text or the route's keywords
            side = 1.0 - aw + aw * paired.possible(table[n] if by_keyword is None else _stronger(table[n], by_keyword))
        bounds.append((keyword or 0.0) * (1.0 - ew + ew * share) * side * max_factor)
    return bounds


def _weigh_lazily(
    wanted: list[tuple[float | None, ChunkRef]],
    k: int,
    bounds: Sequence[float],
    table: Sequence[list[float]],
    evidenced: Callable[[float | None, ChunkRef, list[float]], _Evidence],
    candidate: Callable[[_Evidence], _Candidate | None],
    settings: SearchSettings,
    max_factor: float,
    paired: evidence.Pairs,
) -> list[_Candidate]:
    """Candidates weighed lazily, until none left can reach the top k.

    A chunk's rank score is at most its bound (:func:`_ceilings`) before its evidence is known,
    and keyword × its evidence factor × the adjacency factor its held words allow × ``max_factor``
    (recency × scope boost) once it is (memtree.search.evidence; no text read yet). The most
    promising step is taken each time — evidence the chunk with the highest bound, or read the
    best-bounded chunk already evidenced — and it stops when the k-th best weighed score reaches
    both bounds: usually after the first k chunks.
    """
    import bisect
    import heapq

    ew, aw = settings.evidence_weight, settings.adjacency_weight

    def tight(ev: _Evidence) -> float:  # adjacency, known once the text is read, needs both words of a pair
        return ev.keyword * (1.0 - ew + ew * ev.answered) * (1.0 - aw + aw * paired.possible(ev.strengths)) * max_factor

    order = sorted(((bound, n) for n, bound in enumerate(bounds)), key=lambda pair: -pair[0])
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
            kw, ref = wanted[n]
            ev = evidenced(kw, ref, table[n])
            heapq.heappush(pending, (-tight(ev), n, ev))
            i += 1
            continue
        _, _, ev = heapq.heappop(pending)
        c = candidate(ev)
        if c is None:
            continue
        ranked.append(c)
        bisect.insort(best, -_weighed(c, c.keyword, settings))
    return ranked


def _held_elsewhere(
    index: Engine, missing: Sequence[str], searched: frozenset[str], settings: SearchSettings, vectorize: bool
) -> list[tuple[str, str]]:
    """Which of a refused query's missing terms the tiers not searched hold: (term, tier), for the reason.

    Why: a word that is only in a daily log (``memory/``) is not "not in memory"; the user should
    hear which ``--tier`` finds it. Asked only when a search is refused, one engine call a tier.
    """
    out: list[tuple[str, str]] = []
    for tier in store.TIERS:  # in search order, as a refusal names them
        if tier in searched:
            continue
        held = index.score(list(missing), frozenset((tier,)), settings, None, vectorize).stats
        out.extend((st.term, tier) for st in held if st.df)
    return out
