"""The same BM25 as :mod:`memtree.index.bm25`, vectorized with numpy for large indexes.

Pure-Python scoring walks every posting of every query term in the interpreter; past a few
hundred thousand postings that is what a query costs. This backend reads the same segments
through zero-copy numpy views and keeps everything sparse: a query term's postings are
gathered with slicing, merged with ``unique``/``bincount``, scored in one vector expression,
and ranked with ``argpartition`` — work proportional to the postings touched, never to the size
of the index. numpy is imported only here, and only for indexes of at least
``DENSE_MIN_POSTINGS`` postings, so small memories keep their fast cold start. Tests hold both
backends to the same scores.

Why one module over 300 lines: it is one backend, whose scoring, ranking and evidence all read
the same cached numpy views of a segment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from memtree.config import INFIX_MATCH
from memtree.index.blend import Blend
from memtree.index.bm25 import idf
from memtree.index.protocol import ChunkRef, Location, TermStats
from memtree.index.segment import Segment, in_order
from memtree.text.match import EXACT, PARTIAL, Match

DENSE_MIN_POSTINGS = 400_000
"""Indexes with fewer postings are scored in pure Python (no numpy import on a cold start)."""


def available() -> bool:
    """True when numpy can be imported."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _views(seg: Segment) -> dict[str, Any]:
    """numpy views of a segment's columns, made once per segment (and per set of dead files)."""
    import numpy as np

    cache = seg.__dict__.get("_np")
    if cache is None or cache["dead"] is not seg.dead_files:
        doc_file = np.frombuffer(seg.doc_file, dtype=np.int32)
        cache = {
            "dead": seg.dead_files,
            "post_doc": np.frombuffer(seg.post_doc, dtype=np.int32),
            "post_tf": np.frombuffer(seg.post_tf, dtype=np.uint16),
            "doc_len": np.frombuffer(seg.doc_len, dtype=np.int32),
            "doc_file": doc_file,
            "file_start": np.searchsorted(doc_file, np.arange(len(seg.files) + 1)).tolist(),
            "live": np.frombuffer(bytes(seg.live), dtype=np.uint8).astype(bool),
            "tiers": {},
        }
        seg.__dict__["_np"] = cache
    return cache


def _merge(docs: Any, weights: Any, n_docs: int) -> tuple[Any, Any]:
    """Sum weights per document: sorted unique documents and their totals."""
    import numpy as np

    if docs.size == 0:
        return docs, weights
    if docs.size * 16 > n_docs:  # many postings: one pass over a dense array beats sorting them
        acc = np.bincount(docs, weights=weights, minlength=n_docs)
        nz = np.flatnonzero(acc)
        return nz, acc[nz]
    uniq, inverse = np.unique(docs, return_inverse=True)
    return uniq, np.bincount(inverse, weights=weights, minlength=uniq.size)


def _term_matches(
    seg: Segment, v: dict[str, Any], q: str, partial: float, infix: float
) -> tuple[tuple[Any, Any], tuple[Any, Any, Any]]:
    """One query term in one segment: (chunks, soft tf) and (chunks, chunks matched exactly,
    chunks matched only inside a compound)."""
    import numpy as np

    parts, weights, exact = [], [], []
    strong: list[Any] = []  # postings of exact and prefix matches
    inside: list[Any] = []  # postings of infix matches
    one_term = True
    for lo, hi, w, kind in seg.expand(q, partial, infix):
        s, e = seg.offsets[lo], seg.offsets[hi]
        if e > s:
            docs = v["post_doc"][s:e]
            parts.append(docs)
            weights.append(v["post_tf"][s:e] * w)
            (inside if kind is Match.INFIX else strong).append(docs)
            if kind is Match.EXACT:
                exact.append(docs)
            one_term = one_term and hi - lo == 1
    empty = np.zeros(0, dtype=np.int32)
    if not parts:
        return (empty, np.zeros(0)), (empty, empty, empty)
    # Why one term, not one range: a range of several terms (나왔다, 나왔다고 …) holds a chunk once per term
    if len(parts) == 1 and one_term:  # one term's postings are already sorted by chunk and unique
        docs, tf = parts[0], weights[0]
    else:
        docs, tf = _merge(np.concatenate(parts), np.concatenate(weights), len(seg.doc_len))
    ex = np.concatenate(exact) if exact else empty  # one exact term: already sorted, unique
    weak = empty
    if inside:  # chunks whose strongest match is inside a compound
        weak = np.unique(np.concatenate(inside))
        if strong:
            weak = np.setdiff1d(weak, np.concatenate(strong), assume_unique=False)
    if seg.n_live != len(seg.doc_len):
        alive = v["live"][docs]
        docs, tf = docs[alive], tf[alive]
        ex = ex[v["live"][ex]]
        weak = weak[v["live"][weak]]
    return (docs, tf), (docs, ex, weak)


def _members(sorted_docs: Any, docs: Any) -> Any:
    """Which of ``docs`` occur in ``sorted_docs`` (a boolean array)."""
    import numpy as np

    if sorted_docs.size == 0:
        return np.zeros(docs.size, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_docs, docs), sorted_docs.size - 1)
    return sorted_docs[at] == docs


class DenseScored:
    """Sparse per-segment (chunks, scores) arrays: a :class:`memtree.index.protocol.Scores`, as
    :class:`memtree.index.bm25.Scored` is, with chunks named ``(segment, chunk)`` too."""

    def __init__(
        self,
        segments: Sequence[Segment],
        stats: list[TermStats],
        scored: list[tuple[Any, Any]],
        matched: list[list[tuple[Any, Any, Any]]],
        partial: float,
        infix: float = INFIX_MATCH,
    ) -> None:
        self.segments = segments
        self.stats = stats
        self._scored = scored  # [segment] → (sorted chunks, bm25)
        # [term][segment] → sorted chunks: matched, matched exactly, matched only inside a compound
        self._matched = matched
        self.partial = partial
        self.infix = infix
        self._strengths: dict[ChunkRef, list[float]] = {}
        self._offered: list[ChunkRef] = []  # what top() returned last: its strengths are asked for next

    def strengths(self, refs: Sequence[ChunkRef]) -> list[list[float]]:
        """Per chunk, each query term's match strength. Why the batch: numpy pays per call, so
        the first chunk asked for brings those top() offered with it, in one vectorized pass."""
        known = self._strengths
        missing = [ref for ref in dict.fromkeys(refs) if ref not in known]
        if missing:
            seen = set(missing)
            batch = missing + [ref for ref in self._offered if ref not in known and ref not in seen]
            known.update(zip(batch, self._table(batch)))
        return [known[ref] for ref in refs]

    def _table(self, chunks: Sequence[ChunkRef]) -> list[list[float]]:
        import numpy as np

        table = [[0.0] * len(self.stats) for _ in chunks]
        for si in {si for si, _ in chunks}:
            rows = [i for i, (s, _) in enumerate(chunks) if s == si]
            docs = np.array([chunks[i][1] for i in rows], dtype=np.int64)
            for qi in range(len(self.stats)):
                col = self._term_strength(qi, si, docs)
                for i, value in zip(rows, col.tolist()):
                    table[i][qi] = value
        return table

    def raw(self, ref: ChunkRef) -> float:
        """The BM25 score of one chunk."""
        import numpy as np

        docs, scores = self._scored[ref[0]]
        i = int(np.searchsorted(docs, ref[1]))
        return float(scores[i]) if i < docs.size and int(docs[i]) == ref[1] else 0.0

    def evidence(self, refs: Sequence[ChunkRef]) -> None:
        """None: this backend keeps no per-chunk evidence (it works it out only for :meth:`matched`)."""
        return None

    def matched(self) -> Iterator[tuple[ChunkRef, float]]:
        """Every live chunk that matched a query term, with its Σ idf × match strength."""
        for si, (docs, _) in enumerate(self._scored):
            if docs.size:
                held = self._evidence(si, docs)
                for d, ev in zip(docs.tolist(), held.tolist()):
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
        import numpy as np

        per_seg = []
        top_bm = 0.0
        for si in range(len(self.segments)):
            docs, scores = self._scored[si]
            ok = self._tier_mask(si, tiers, skip)[docs] if docs.size else np.zeros(0, dtype=bool)
            docs, scores = docs[ok], scores[ok]
            per_seg.append((docs, scores))
            if scores.size:
                top_bm = max(top_bm, float(scores.max()))
        blend = Blend.of(tree_weight, bm25_weight, top_bm, [st.idf for st in self.stats])
        best: list[tuple[float, int, int]] = []
        for si, seg in enumerate(self.segments):
            docs, scores = per_seg[si]
            views = _views(seg)
            keyword: Any = blend.keyword(scores)
            routed = seg.routed(routes)
            if routed:
                route = np.zeros(len(seg.files))
                for f, score in routed.items():
                    route[f] = score
                lift = route[views["doc_file"][docs]]
                at = np.flatnonzero(lift)
                if at.size:  # a routed note lifts each chunk by the share of the query it holds
                    keyword[at] = blend.keyword(scores[at], lift[at], self._evidence(si, docs[at]))
                # parent fallback: a routed note none of whose chunks matched a term offers its first
                starts = views["file_start"]
                files = list(routed)
                lo = np.searchsorted(docs, [starts[f] for f in files])  # candidates are sorted by chunk
                hi = np.searchsorted(docs, [starts[f + 1] for f in files])
                mask = self._tier_mask(si, tiers, skip)
                extra = [starts[f] for f, a, b in zip(files, lo.tolist(), hi.tolist()) if a == b]
                extra = [d for d in extra if d < len(seg.doc_file) and mask[d]]
                if extra:
                    docs = np.concatenate([docs, np.array(extra, dtype=docs.dtype)])
                    keyword = np.concatenate([keyword, blend.keyword(0.0, route[views["doc_file"][extra]])])
            if docs.size > k:
                floor = np.partition(keyword, docs.size - k)[docs.size - k]
                keep = keyword >= floor  # the k best and every chunk tied with the k-th
                docs, keyword = docs[keep], keyword[keep]
            best += [(float(kw), si, int(d)) for kw, d in zip(keyword.tolist(), docs.tolist())]
        ranked = [(kw, (si, d)) for kw, si, d in in_order(self.segments, best)[:k]]
        self._offered = [ref for _, ref in ranked]
        return ranked, blend

    def _term_strength(self, qi: int, si: int, docs: Any) -> Any:
        """How each of ``docs`` matched query term ``qi``: 1.0 exactly, ``partial`` by prefix,
        ``infix`` inside a compound, else 0."""
        import numpy as np

        matched, exact, weak = self._matched[qi][si]
        strength = np.where(_members(matched, docs), self.partial, 0.0)
        if weak.size:
            strength = np.where(_members(weak, docs), self.infix, strength)
        return np.where(_members(exact, docs), EXACT, strength)

    def _evidence(self, si: int, docs: Any) -> Any:
        """Σ idf × match strength over the query terms, for each of ``docs``."""
        import numpy as np

        held = np.zeros(docs.size)
        for qi, st in enumerate(self.stats):
            held += st.idf * self._term_strength(qi, si, docs)
        return held

    def _tier_mask(self, si: int, tiers: frozenset[str], skip: tuple[str, ...] = ()) -> Any:
        import numpy as np

        seg = self.segments[si]
        views = _views(seg)
        mask = views["tiers"].get((tiers, skip))
        if mask is None:
            files = np.zeros(len(seg.files), dtype=bool)
            files[sorted(seg.files_in(tiers, skip))] = True
            mask = files[views["doc_file"]] & views["live"]
            views["tiers"][(tiers, skip)] = mask
        return mask


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
) -> DenseScored:
    """BM25 of the live chunks holding any query term (see :func:`memtree.index.bm25.score`)."""
    import numpy as np

    counts = [seg.tier_stats(tiers) for seg in segments]
    n_docs = sum(c.n_docs for c in counts)
    total_len = sum(c.total_len for c in counts)
    avgdl = total_len / n_docs if n_docs else 1.0
    views = [_views(seg) for seg in segments]
    soft: list[list[tuple[Any, Any]]] = []  # [term][segment] → (chunks, soft tf)
    matched: list[list[tuple[Any, Any, Any]]] = []
    stats: list[TermStats] = []
    for q in qterms:
        key = ("np", q, partial, infix, tiers)
        entry = cache.get(key) if cache is not None else None
        if entry is None:
            soft_q, matched_q = zip(*(_term_matches(seg, v, q, partial, infix) for seg, v in zip(segments, views)))
            df = sum(
                int(docs.size) if c.mask is None else int(np.frombuffer(c.mask, dtype=np.uint8)[docs].sum())
                for (docs, _), c in zip(soft_q, counts)
            )
            entry = (list(soft_q), list(matched_q), TermStats(q, df, idf(n_docs, df)))
            if cache is not None:
                cache[key] = entry
        soft.append(entry[0])
        matched.append(entry[1])
        stats.append(entry[2])
    norm = k1 * (1.0 - b)
    slope = k1 * b / avgdl if avgdl else 0.0
    scored = []
    for si, v in enumerate(views):
        parts, contrib = [], []
        for qi, (st, soft_q) in enumerate(zip(stats, soft)):
            docs, tf = soft_q[si]
            if docs.size:
                parts.append(docs)
                boost = boosts[qi] if boosts else 1.0
                contrib.append(st.idf * boost * (k1 + 1.0) * tf / (tf + norm + slope * v["doc_len"][docs]))
        if parts:
            scored.append(_merge(np.concatenate(parts), np.concatenate(contrib), len(segments[si].doc_len)))
        else:
            scored.append((np.zeros(0, dtype=np.int32), np.zeros(0)))
    return DenseScored(segments, stats, scored, matched, partial, infix)


if TYPE_CHECKING:
    from memtree.index.protocol import Scores

    def _answers_as_the_protocol_says(
        answer: DenseScored,
    ) -> Scores:  # mypy holds DenseScored to memtree.index.protocol
        return answer
