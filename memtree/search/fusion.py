"""How one query's cosines fuse with its keyword scores, whoever computed the cosines.

    linear:  blended = keyword_weight × keyword + semantic_weight × semantic      (0.6 / 0.4)
    rrf:     blended = (1/(60 + rank_keyword) + 1/(60 + rank_semantic)) × 61/2     (max 1)

``semantic`` is the chunk's cosine min–max normalized between ``low`` and ``best``, the least and
the most similar chunk searched. Rejection: a returned chunk whose cosine reaches ``threshold``
answers without keyword evidence. :class:`Fused` holds that arithmetic; memtree.search.semantic
computes the cosines over the local vectors, memtree.search.served asks an engine that stores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree.index.protocol import ChunkRef

RRF_K = 60


class Fused:
    """One query's similarity to the chunks searched (:meth:`cos`, :meth:`top`), and how it fuses with keywords."""

    best: float  # the cosine of the most similar chunk searched
    low: float  # the cosine of the least similar chunk searched (the floor of the normalization)

    def __init__(self, keyword_weight: float, semantic_weight: float, fusion: str, threshold: float) -> None:
        self.kw, self.sw, self.fusion, self.threshold = keyword_weight, semantic_weight, fusion, threshold

    def cos(self, ref: ChunkRef) -> float | None:
        """The chunk's cosine similarity to the query (None: it has no vector)."""
        raise NotImplementedError

    def top(self, n: int) -> list[ChunkRef]:
        """The ``n`` searched chunks most similar to the query, best first."""
        raise NotImplementedError

    def known(self, refs: Sequence[ChunkRef]) -> None:
        """Make the cosines of these chunks ready in one go (the pipeline asks before it reads them one by one)."""

    def normalized(self, cos: float | None) -> float:
        if cos is None:
            return 0.0
        span = self.best - self.low
        return max(0.0, (cos - self.low) / span) if span > 0 else 1.0

    def fuse(self, candidates: Sequence[Any]) -> dict[ChunkRef, float]:
        """Chunk → blended score, for the candidates (memtree.search.pipeline._Candidate)."""
        if self.fusion == "rrf":
            by_kw = sorted(candidates, key=lambda c: -c.keyword)
            by_sem = sorted(candidates, key=lambda c: -(c.cos if c.cos is not None else -2.0))
            rank_kw = {c.ref: r for r, c in enumerate(by_kw, 1)}
            rank_sem = {c.ref: r for r, c in enumerate(by_sem, 1)}
            scale = (RRF_K + 1) / 2
            return {
                key: round(scale * (1 / (RRF_K + rank_kw[key]) + 1 / (RRF_K + rank_sem[key])), 6) for key in rank_kw
            }
        return {c.ref: self.kw * c.keyword + self.sw * self.normalized(c.cos) for c in candidates}

    def confident(self, returned: Sequence[Any]) -> bool:
        """Whether a returned chunk is close enough in meaning to answer without keyword evidence."""
        return any(c.cos is not None and c.cos >= self.threshold for c in returned)

    def signals(self, c: Any) -> dict[str, float]:
        return {
            "semantic": round(c.cos, 4) if c.cos is not None else 0.0,
            "semantic_norm": round(self.normalized(c.cos), 4),
        }
