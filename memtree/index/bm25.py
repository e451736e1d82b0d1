"""BM25 over index segments, in pure Python, with exact/partial/infix term matching (no I/O).

Scoring treats a query term's related terms (:func:`memtree.text.match.match`) as one *soft* term:

    tf'(q, d) = Σ tf(t, d) · m(q, t)      m = 1.0 exact, ``partial`` (0.7) prefix, ``infix`` inside
    df(q)     = |{d : tf'(q, d) > 0}|     (live chunks of every segment)
    idf(q)    = ln((N − df + 0.5) / (df + 0.5) + 1)
    bm25(d)   = Σ_q idf(q) · tf'·(k1 + 1) / (tf' + k1·(1 − b + b·|d| / avgdl))

On an exact-token corpus (no related terms) this is textbook BM25 with the design's IDF. The
answer, :class:`Scored`, is a :class:`memtree.index.protocol.Scores`; memtree.index.dense is the
same scorer on numpy arrays, for large indexes.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

from memtree.config import INFIX_MATCH
from memtree.index.blend import Blend
from memtree.index.protocol import ChunkRef, Location, TermStats
from memtree.index.segment import Segment, counted, in_order
from memtree.text.match import EXACT, PARTIAL


def idf(n_docs: int, df: int) -> float:
    """The design's IDF: ln((N − df + 0.5)/(df + 0.5) + 1), always positive."""
    return math.log((n_docs - df + 0.5) / (df + 0.5) + 1.0)


@dataclass
class Scored:
    """One query's BM25 over segments (a :class:`memtree.index.protocol.Scores`); chunks are
    named ``(segment, chunk)``."""

    segments: Sequence[Segment]
    stats: list[TermStats]
    # [term][segment] → (soft tf, chunks matched exactly, chunks matched only inside a compound)
    matches: list[list[tuple[dict[int, float], set[int], set[int]]]]
    partial: float = PARTIAL
    infix: float = INFIX_MATCH
    summing: _Summing | None = None  # how the terms' shares add up: done on first use of the sums

    @functools.cached_property
    def _sums(self) -> tuple[list[dict[int, float]], list[dict[int, float]]]:
        # Why on first use: a search that repairs its terms (memtree.search.repair) reads only the
        # statistics of its first scoring, and so does the repair's own scoring of its candidates
        if self.summing is None:
            return [{} for _ in self.segments], [{} for _ in self.segments]
        return _sum_terms(self.segments, self.stats, self.matches, self.partial, self.infix, self.summing)

    @property
    def scores(self) -> list[dict[int, float]]:
        """[segment] chunk → BM25."""
        return self._sums[0]

    @property
    def held(self) -> list[dict[int, float]]:
        """[segment] chunk → Σ idf × match strength: its evidence."""
        return self._sums[1]

    def strengths(self, refs: Sequence[ChunkRef]) -> list[list[float]]:
        """Per chunk, each query term's match strength: its strongest kind of match, weighted."""
        partial, infix = self.partial, self.infix
        table = [[0.0] * len(self.matches) for _ in refs]
        rows: dict[int, dict[int, list[float]]] = {}  # segment → chunk → its row
        for (si, d), row in zip(refs, table):
            rows.setdefault(si, {})[d] = row
        for si, by_chunk in rows.items():
            # Why term by term: a chunk holds few of a query's terms, and one set intersection per term
            # finds the chunks asked about that hold it
            for qi, per_segment in enumerate(self.matches):
                acc, exact, weak = per_segment[si]
                for d in by_chunk.keys() & acc.keys():  # exact ⊆ acc and weak ⊆ acc
                    by_chunk[d][qi] = EXACT if d in exact else infix if d in weak else partial
        if len(refs) > sum(map(len, rows.values())):  # a chunk asked about twice: each row its own copy
            return [list(rows[si][d]) for si, d in refs]
        return table

    def raw(self, ref: ChunkRef) -> float:
        """The BM25 score of one chunk."""
        return self.scores[ref[0]].get(ref[1], 0.0)

    def evidence(self, refs: Sequence[ChunkRef]) -> list[float]:
        """Per chunk, Σ idf × match strength over the query terms: kept from scoring."""
        held = self.held
        return [held[si].get(d, 0.0) for si, d in refs]

    def matched(self) -> Iterator[tuple[ChunkRef, float]]:
        """Every live chunk that matched a query term, with its evidence."""
        for si, held in enumerate(self.held):
            for d, ev in held.items():
                yield (si, d), ev

    def locate(self, refs: Sequence[ChunkRef]) -> list[Location]:
        """Where each chunk is."""
        segments = self.segments
        return [segments[si].locate(d) for si, d in refs]

    def top(
        self,
        k: int,
        tiers: frozenset[str],
        routes: Mapping[str, float],
        tree_weight: float,
        bm25_weight: float,
        skip: tuple[str, ...] = (),
    ) -> tuple[list[tuple[float, ChunkRef]], Blend]:
        """Best ``k`` chunks by the keyword blend (memtree.index.protocol.Scores.top), and the blend."""
        segments = self.segments
        allowed = [seg.files_in(tiers, skip) for seg in segments]
        top_bm = 0.0
        for si, seg in enumerate(segments):
            doc_file, ok, scores = seg.doc_file, allowed[si], self.scores[si]
            if len(ok) == len(seg.files):  # every note searched: no chunk to leave out
                if scores:
                    top_bm = max(top_bm, max(scores.values()))
                continue
            for d, sc in scores.items():
                if sc > top_bm and doc_file[d] in ok:
                    top_bm = sc
        blend = Blend.of(tree_weight, bm25_weight, top_bm, [st.idf for st in self.stats])
        keywords: list[dict[int, float]] = []  # [segment] chunk → keyword blend
        for si, seg in enumerate(segments):
            ok, scores, starts, ids = allowed[si], self.scores[si], seg.file_start, seg.chunk_ids()
            keyword = blend.unrouted(scores)
            if len(ok) != len(seg.files):  # some notes are not searched: their chunks leave
                doc_file = seg.doc_file
                for d in [d for d in keyword if doc_file[d] not in ok]:
                    del keyword[d]
            for f, route in seg.routed(routes).items():
                if f not in ok:
                    continue
                # a routed note lifts each chunk by the share of the query the chunk itself holds
                lifted = blend.routed(scores, self.held[si], ids[starts[f] : starts[f + 1]], route)
                if lifted:
                    keyword.update(lifted)
                else:  # the tree's parent fallback routes to notes by category alone: their first chunk
                    first = seg.first_doc(f)
                    if first is not None and seg.live[first]:
                        keyword[first] = blend.keyword(0.0, route)
            keywords.append(keyword)
        best = heapq.nlargest(k, chain.from_iterable(kw.values() for kw in keywords))
        if not best:
            return [], blend
        floor = best[-1]  # every chunk tied with the k-th competes for its place, fairly
        tied = [(kw, si, d) for si, keyword in enumerate(keywords) for d, kw in keyword.items() if kw >= floor]
        return [(kw, (si, d)) for kw, si, d in in_order(segments, tied)[:k]], blend


def score(
    segments: Sequence[Segment],
    qterms: Sequence[str],
    partial: float = PARTIAL,
    k1: float = 1.2,
    b: float = 0.75,
    cache: MutableMapping[Any, Any] | None = None,
    infix: float = INFIX_MATCH,
    tiers: frozenset[str] | None = None,
    boosts: Sequence[float] | None = None,
) -> Scored:
    """BM25 over all live chunks of all segments for the given query terms.

    ``tiers`` (None: all) are the tiers searched: N, the average length and each term's document
    frequency count their chunks only, so a word common in memory/ logs is not made cheap for a
    search of bank/. ``cache`` (the IDF cache) keeps each term's matches and statistics between
    queries; its owner must empty it whenever the segments change. ``boosts`` (one per query term,
    default 1) scale each term's share of the BM25 score, not its statistics or evidence.
    """
    counts = [seg.tier_stats(tiers) for seg in segments]
    n_docs = sum(c.n_docs for c in counts)
    total_len = sum(c.total_len for c in counts)
    avgdl = total_len / n_docs if n_docs else 1.0
    matches: list[list[tuple[dict[int, float], set[int], set[int]]]] = []
    stats: list[TermStats] = []
    kept: list[dict[Any, list[dict[int, float]]]] = []  # per term: its BM25 shares, per boost, as computed
    for q in qterms:
        key = ("py", q, partial, infix, tiers)
        entry = cache.get(key) if cache is not None else None
        if entry is None:
            hits = [seg.soft_tf(seg.expand(q, partial, infix)) for seg in segments]
            df = sum(counted(acc, c.mask, len(acc)) for (acc, _, _), c in zip(hits, counts))
            entry = (hits, TermStats(q, df, idf(n_docs, df)), {})
            if cache is not None:
                cache[key] = entry
        matches.append(entry[0])
        stats.append(entry[1])
        kept.append(entry[2])
    return Scored(segments, stats, matches, partial, infix, _Summing(kept, boosts, k1, b, avgdl))


class _Summing(NamedTuple):
    """What adding up one query's terms takes besides their matches: each term's kept BM25 shares,
    the boosts, and BM25's parameters."""

    kept: list[dict[Any, list[dict[int, float]]]]
    boosts: Sequence[float] | None
    k1: float
    b: float
    avgdl: float


def _sum_terms(
    segments: Sequence[Segment],
    stats: Sequence[TermStats],
    matches: Sequence[list[tuple[dict[int, float], set[int], set[int]]]],
    partial: float,
    infix: float,
    summing: _Summing,
) -> tuple[list[dict[int, float]], list[dict[int, float]]]:
    """Per segment, chunk → BM25 and chunk → evidence, the query's terms added in their order."""
    kept, boosts, k1, b, avgdl = summing
    scores: list[dict[int, float]] = [{} for _ in segments]
    evidence: list[dict[int, float]] = [{} for _ in segments]
    norm = k1 * (1.0 - b)
    slope = k1 * b / avgdl if avgdl else 0.0
    k1p = k1 + 1.0
    for qi, (st, hits) in enumerate(zip(stats, matches)):
        if not any(acc for acc, _, _ in hits):  # a word no note holds
            continue
        boost = boosts[qi] if boosts else 1.0
        # Why kept with the term: its BM25 share of each chunk is the same in every query giving it this boost
        parts = kept[qi].get((k1, b, boost))
        if parts is None:
            w_idf = st.idf * k1p * boost
            parts = kept[qi][(k1, b, boost)] = [
                {d: w_idf * tf / (tf + norm + slope * seg.doc_len[d]) for d, tf in acc.items()}
                for seg, (acc, _, _) in zip(segments, hits)
            ]
        w_partial, w_exact = st.idf * partial, st.idf * (EXACT - partial)
        w_infix = st.idf * (infix - partial)
        for si, ((_, exact, weak), part) in enumerate(zip(hits, parts)):
            out, ev = scores[si], evidence[si]
            if not out:  # the first term to reach this segment: 0.0 + x is x, so whole dicts do
                out.update(part)
                ev.update(dict.fromkeys(part, w_partial))
                ev.update(dict.fromkeys(exact, w_partial + w_exact))
                ev.update(dict.fromkeys(weak, w_partial + w_infix))
                continue
            get, ev_get = out.get, ev.get
            # Why three loops: most terms match every chunk exactly (a Latin word only can), or have no
            # match inside a compound; each loop then skips a set lookup per chunk (LoCoMo: -16% of this
            # sum). The additions are the same, in the same order: strength is partial, raised to exact
            if len(exact) == len(part):  # exact ⊆ acc: every chunk at exact strength (weak, apart from exact, empty)
                for d, share in part.items():
                    out[d] = get(d, 0.0) + share
                    ev[d] = ev_get(d, 0.0) + w_partial + w_exact
            elif not weak:
                for d, share in part.items():
                    out[d] = get(d, 0.0) + share
                    if d in exact:
                        ev[d] = ev_get(d, 0.0) + w_partial + w_exact
                    else:
                        ev[d] = ev_get(d, 0.0) + w_partial
            else:
                for d, share in part.items():
                    out[d] = get(d, 0.0) + share
                    held = ev_get(d, 0.0) + w_partial
                    if d in exact:
                        held += w_exact
                    elif d in weak:  # weak ⊆ acc, apart from exact: only inside a compound, so infix strength
                        held += w_infix
                    ev[d] = held
    return scores, evidence


if TYPE_CHECKING:
    from memtree.index.protocol import Scores

    def _answers_as_the_protocol_says(answer: Scored) -> Scores:  # mypy holds Scored to memtree.index.protocol
        return answer
