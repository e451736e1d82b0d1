"""The keyword blend of one query (DESIGN §3.4), the one place its arithmetic lives:

    keyword = tree_weight × tree + bm25_weight × bm25 / max(bm25)        (0.4 / 0.6)
    tree    = route × evidence / Σ idf       (route alone when the chunk's text holds no query term)

``route`` is the tree's routing score of the chunk's note (memtree.index.routing), ``evidence``
the chunk's Σ idf × match strength over the query terms its own text holds, so a routed note
lifts each chunk by the share of the query the chunk itself holds; a note reached by its keywords
alone (the parent fallback) keeps its whole route. ``max(bm25)`` is the best BM25 among the
chunks searched. Both scorers (memtree.index.bm25 per chunk, memtree.index.dense on arrays) and
the search pipeline call :meth:`Blend.keyword`; its operands may be floats or numpy arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Blend:
    """One query's blend: the weights, the best BM25 it normalizes by, and the query's Σ idf."""

    tree_weight: float
    bm25_weight: float
    top_bm25: float
    total_idf: float  # Σ idf of the query terms (1.0 when it would be 0)
    scale: float = field(init=False)  # bm25_weight / top_bm25 (0 when nothing scored)
    inverse_idf: float = field(init=False)  # 1 / Σ idf

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", self.bm25_weight / self.top_bm25 if self.top_bm25 else 0.0)
        object.__setattr__(self, "inverse_idf", 1.0 / self.total_idf)

    @classmethod
    def of(cls, tree_weight: float, bm25_weight: float, top_bm25: float, idfs: Sequence[float]) -> Blend:
        """The blend of a query whose terms have these IDFs."""
        return cls(tree_weight, bm25_weight, top_bm25, sum(idfs) or 1.0)

    def keyword(self, bm25: float, route: float = 0.0, evidence: float | None = None) -> float:
        """``tree_weight × tree + bm25_weight × bm25 / max(bm25)`` of a chunk, or of numpy arrays of chunks.

        ``evidence`` None: the chunk's text holds no query term, and its note's whole ``route``
        counts. Why this order of operations (``tree_weight × route / Σ idf`` first): rankings
        are kept bit for bit as they were when the pure scorer computed that factor once per note.
        """
        if evidence is None:
            return self.scale * bm25 + self.tree_weight * route
        return self.scale * bm25 + self.lift(route) * evidence

    def lift(self, route: float) -> float:
        """``tree_weight × route / Σ idf``: what a chunk of a note routed with ``route`` gains per unit of evidence."""
        return self.tree_weight * route * self.inverse_idf

    def unrouted(self, bm25: Mapping[int, float]) -> dict[int, float]:
        """:meth:`keyword` of chunks whose note is not routed, from chunk → BM25 (the tree's 0 added changes no bit)."""
        scale = self.scale  # a comprehension: its float multiply is specialized, a bound __mul__ is not (~40 % faster)
        return {d: scale * bm for d, bm in bm25.items()}

    def routed(
        self, bm25: Mapping[int, float], evidence: Mapping[int, float], chunks: Iterable[int], route: float
    ) -> dict[int, float]:
        """:meth:`keyword` of those ``chunks`` of a note routed with ``route`` that have a BM25 score."""
        scale, lift = self.scale, self.lift(route)
        return {d: scale * bm25[d] + lift * evidence[d] for d in chunks if d in bm25}

    def tree(self, route: float, evidence: float | None = None) -> float:
        """The tree signal of a chunk: ``route × evidence / Σ idf``, or ``route`` without evidence."""
        return route * (evidence / self.total_idf) if evidence else route

    def bm25_norm(self, bm25: float) -> float:
        """A BM25 score over the query's best: the share of ``bm25_weight`` the chunk gets."""
        return bm25 / self.top_bm25 if self.top_bm25 else 0.0
