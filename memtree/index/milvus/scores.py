"""One query's answer through Milvus (a memtree.index.protocol.Scores): candidates from the collection,
re-scored with memtree's exact BM25.

    statistics   N, average length, each term's df over the tiers searched: memtree's catalogue
    candidates   the collection's best rows by sparse inner product (memtree.index.milvus.forms),
                 over the tiers searched, and over the notes the tree routed to
    scores       per candidate, from the terms its row holds: tf' = Σ match × tf, BM25 with k1, b,
                 the match strengths and Σ idf × strength — memtree.index.bm25's arithmetic

A chunk asked about that was not a candidate (one the semantic layer found) is fetched by its
row id and scored the same way. ``matched`` — every chunk holding a query term, which only a
write's routing asks for — is the local scorer's. Chunks are named as the local index names them,
so ``locate`` and the semantic layer work unchanged.

Why one module over 300 lines: the candidates' exact scores and the Scores protocol's answers share
one query's rows and matches.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memtree.index.blend import Blend
from memtree.index.bm25 import idf as bm25_idf
from memtree.index.milvus import forms
from memtree.index.milvus.store import listed, quote
from memtree.index.protocol import ChunkRef, Location, TermStats
from memtree.text.match import EXACT, Match, match

if TYPE_CHECKING:
    from memtree.config import MilvusSettings, SearchSettings
    from memtree.index.milvus.store import Collection
    from memtree.index.protocol import Scores
    from memtree.index.segment import Segment


class Shadowed(Protocol):
    """What a query asks of memtree.index.milvus.MilvusIndex (named here, so the two modules import one way)."""

    @property
    def config(self) -> MilvusSettings: ...
    @property
    def collection(self) -> Collection | None: ...
    @property
    def files(self) -> Mapping[str, Any]: ...
    @property
    def segments(self) -> Mapping[str, Segment]: ...
    @property
    def version(self) -> int: ...

    df_cache: MutableMapping[tuple[str, float, float, frozenset[str] | None], int]
    df_version: int

    def segment_list(self) -> list[tuple[str, Segment]]: ...
    def segment_numbers(self) -> dict[str, int]: ...
    def chunk_of(self, path: str, key: str) -> ChunkRef | None: ...
    def key_of(self, ref: ChunkRef) -> str | None: ...
    def local_score(
        self, qterms: Sequence[str], tiers: frozenset[str] | None, settings: SearchSettings, vectorize: bool
    ) -> Scores: ...


def where(tiers: frozenset[str] | None, skip: tuple[str, ...], paths: Sequence[str] = ()) -> str:
    """The filter of a search over ``tiers`` (None: all), none under a ``skip`` prefix, in ``paths`` if given."""
    parts = []
    if tiers is not None:
        parts.append(f"tier in {listed(sorted(tiers))}")
    parts += [f"not (path like {quote(prefix + '%')})" for prefix in skip]
    if paths:
        parts.append(f"path in {listed(paths)}")
    return " and ".join(parts)


class MilvusScores:
    """One query's BM25 through Milvus (see the module docstring)."""

    def __init__(
        self,
        engine: Shadowed,
        qterms: Sequence[str],
        tiers: frozenset[str] | None,
        settings: SearchSettings,
        boosts: Sequence[float] | None,
        vectorize: bool,
    ) -> None:
        self.engine, self.qterms, self.tiers, self.settings = engine, list(qterms), tiers, settings
        self.boosts, self.vectorize = boosts, vectorize
        self.partial, self.infix = settings.partial_match, settings.infix_match
        self.segments = [seg for _, seg in engine.segment_list()]
        counts = [seg.tier_stats(tiers) for seg in self.segments]
        n_docs = sum(c.n_docs for c in counts)
        total = sum(c.total_len for c in counts)
        self.avgdl = total / n_docs if n_docs else 1.0
        if engine.df_version != engine.version:
            engine.df_cache.clear()
            engine.df_version = engine.version
        self.stats = [TermStats(q, df, bm25_idf(n_docs, df)) for q in self.qterms for df in [self._df(q)]]
        self.vector = forms.query_vector(self.qterms, [st.idf for st in self.stats], self.partial, self.infix, boosts)
        self._rows: dict[ChunkRef, tuple[float, list[float], float]] = {}  # raw, strengths, evidence
        self._paths: dict[ChunkRef, Location] = {}
        self._asked: dict[str, int] = {}  # filter expression → the most rows asked for
        self._seen: set[str] = set()  # candidate terms already related to the query terms
        self._related: list[dict[str, tuple[float, int]]] = [{} for _ in self.qterms]  # per term: matches

    # --- statistics -----------------------------------------------------------------------

    def _df(self, q: str) -> int:
        """Chunks of the tiers searched holding any term ``q`` matches (memtree.index.bm25's df)."""
        key = (q, self.partial, self.infix, self.tiers)
        cache = self.engine.df_cache
        found = cache.get(key)
        if found is not None:
            return found
        total = 0
        for seg in self.segments:
            ranges = seg.expand(q, self.partial, self.infix)
            if not ranges:
                continue
            offsets, post = seg.offsets, seg.post_doc
            docs: set[int] = set()
            for lo, hi, _, _ in ranges:
                docs.update(post[offsets[lo] : offsets[hi]])
            mask = seg.tier_stats(self.tiers).mask
            live = seg.live
            total += sum(1 for d in docs if live[d]) if mask is None else sum(mask[d] for d in docs)
        cache[key] = total
        return total

    # --- candidates -------------------------------------------------------------------------

    def _ask(self, expr: str, limit: int) -> None:
        """The collection's best rows for the query among those ``expr`` holds, scored exactly."""
        if self._asked.get(expr, 0) >= limit:
            return
        self._asked[expr] = limit
        coll = self.engine.collection
        if coll is None:
            return
        self._take(coll.search(self.vector, expr, limit))

    def _take(self, rows: list[dict[str, Any]]) -> None:
        chunk_of = self.engine.chunk_of
        found = []
        for row in rows:
            ref = chunk_of(row["path"], row["id"])
            if ref is not None and ref not in self._rows:
                found.append((ref, row["terms"].split()))
        self._learn(t for _, terms in found for t in terms)
        for ref, terms in found:
            self._rows[ref] = self._exact(terms)

    def _learn(self, terms: Iterable[str]) -> None:
        """Relate terms not seen before to each query term (memtree.text.match), keeping the matches."""
        fresh = set(terms) - self._seen
        self._seen |= fresh
        for q, related in zip(self.qterms, self._related):
            # Why the substring test first: every kind of match has one term inside the other, and
            # testing that is far cheaper than the rule itself over a few thousand candidate terms
            for t in fresh:
                if q in t or q.startswith(t):
                    kind = match(q, t)
                    w = self._strength(kind)
                    if w > 0:
                        related[t] = (w, int(kind))

    def _strength(self, kind: int) -> float:
        """What a match of this kind counts for: 1.0, ``partial`` (prefix), ``infix``, else 0."""
        return EXACT if kind == Match.EXACT else self.partial if kind == Match.PREFIX else self.infix if kind else 0.0

    def _exact(self, terms: list[str]) -> tuple[float, list[float], float]:
        """BM25, match strengths and evidence of a chunk with these terms (memtree.index.bm25's
        arithmetic); the terms must have been :meth:`_learn`-ed."""
        s = self.settings
        k1, b = s.k1, s.b
        norm, slope, k1p = k1 * (1.0 - b), (k1 * b / self.avgdl if self.avgdl else 0.0), k1 + 1.0
        counts = Counter(terms)
        length = len(terms)
        raw = evidence = 0.0
        strengths = []
        for qi, (st, related) in enumerate(zip(self.stats, self._related)):
            tf = 0.0
            kind = 0
            for t, (w, k) in related.items():
                n = counts.get(t)
                if n:
                    tf += w * n
                    kind = max(kind, k)
            strength = (
                EXACT if kind == Match.EXACT else self.partial if kind == Match.PREFIX else self.infix if kind else 0.0
            )
            strengths.append(strength)
            if tf:
                boost = self.boosts[qi] if self.boosts else 1.0
                raw += st.idf * k1p * boost * tf / (tf + norm + slope * length)
                evidence += st.idf * strength
        return raw, strengths, evidence

    def _known(self, refs: Sequence[ChunkRef]) -> None:
        """Fetch and score the chunks asked about that no search returned."""
        missing = {}
        for ref in refs:
            if ref not in self._rows:
                key = self.engine.key_of(ref)
                if key is None:
                    self._rows[ref] = (0.0, [0.0] * len(self.qterms), 0.0)
                else:
                    missing[key] = ref
        coll = self.engine.collection
        if missing and coll is not None:
            rows = [(missing[row["id"]], row["terms"].split()) for row in coll.fetch(list(missing))]
            self._learn(t for _, terms in rows for t in terms)
            for ref, terms in rows:
                self._rows[ref] = self._exact(terms)
        for ref in missing.values():
            self._rows.setdefault(ref, (0.0, [0.0] * len(self.qterms), 0.0))

    # --- the Scores protocol ----------------------------------------------------------------------

    def top(
        self,
        k: int,
        tiers: frozenset[str],
        routes: Mapping[str, float],
        tree_weight: float,
        bm25_weight: float,
        skip: tuple[str, ...] = (),
    ) -> tuple[list[tuple[float, ChunkRef]], Blend]:
        """Best ``k`` candidates by the keyword blend (memtree.index.protocol.Scores.top), and the blend."""
        limit = max(self.engine.config.candidates, 2 * k)
        self._ask(where(tiers, skip), limit)
        routed = sorted(p for p in routes if p.split("/", 1)[0] in tiers and not p.startswith(skip))
        if routed:
            self._ask(where(tiers, skip, routed), limit)
        entries = []
        for ref, (raw, _, held) in self._rows.items():
            at = self._where_is(ref)
            if raw > 0 and at.tier in tiers and not at.path.startswith(skip):
                entries.append((ref, at, raw, held))
        blend = Blend.of(
            tree_weight, bm25_weight, max((e[2] for e in entries), default=0.0), [st.idf for st in self.stats]
        )
        keyword = blend.keyword
        ranked: list[tuple[float, str, int, ChunkRef]] = []
        seen = set()
        for ref, at, raw, held in entries:
            route = routes.get(at.path)
            if route is None:
                ranked.append((keyword(raw), at.path, at.start, ref))
            else:  # a routed note lifts each chunk by the share of the query the chunk itself holds
                seen.add(at.path)
                ranked.append((keyword(raw, route, held), at.path, at.start, ref))
        for path in routed:  # the tree's parent fallback: a routed note none of whose chunks matched
            if path not in seen:
                first = self._first_chunk(path)
                if first is not None:
                    ranked.append((keyword(0.0, routes[path]), path, self._where_is(first).start, first))
        best = heapq.nsmallest(k, ranked, key=lambda r: (-r[0], r[1], r[2]))
        return [(kw, ref) for kw, _, _, ref in best], blend

    def _first_chunk(self, path: str) -> ChunkRef | None:
        entry = self.engine.files.get(path)
        if entry is None:
            return None
        numbers = self.engine.segment_numbers()
        seg = self.engine.segments[entry.segment]
        f = seg.file_id(path)
        if f is None or f in seg.dead_files:
            return None
        first = seg.first_doc(f)
        return None if first is None else (numbers[entry.segment], first)

    def _where_is(self, ref: ChunkRef) -> Location:
        found = self._paths.get(ref)
        if found is None:
            found = self._paths[ref] = self.segments[ref[0]].locate(ref[1])
        return found

    def raw(self, ref: ChunkRef) -> float:
        """The chunk's BM25 score (0 when it matched no query term)."""
        self._known([ref])
        return self._rows[ref][0]

    def strengths(self, refs: Sequence[ChunkRef]) -> list[list[float]]:
        """Per chunk, each query term's match strength (memtree.text.match)."""
        self._known(refs)
        return [list(self._rows[ref][1]) for ref in refs]

    def evidence(self, refs: Sequence[ChunkRef]) -> list[float]:
        """Per chunk, Σ idf × match strength over the query terms."""
        self._known(refs)
        return [self._rows[ref][2] for ref in refs]

    def matched(self) -> Iterator[tuple[ChunkRef, float]]:
        """Every live chunk holding a query term, with its evidence: the local scorer's enumeration."""
        return self.engine.local_score(self.qterms, self.tiers, self.settings, self.vectorize).matched()

    def locate(self, refs: Sequence[ChunkRef]) -> list[Location]:
        """Where each chunk is."""
        return [self._where_is(ref) for ref in refs]


if TYPE_CHECKING:

    def _answers_as_the_protocol_says(answer: MilvusScores) -> Scores:  # mypy holds MilvusScores to the protocol
        return answer
