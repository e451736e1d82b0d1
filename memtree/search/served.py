"""The semantic layer over an engine that stores the vectors and searches them itself (Milvus).

memtree.search.semantic scans the local vectors of every chunk searched. Over an engine that is a
memtree.index.protocol.DenseEngine serving the layer's model, one query asks the engine instead:

    top(n)     per question vector, the engine's ``n`` nearest chunks among those searched (the same
               tiers and skipped banks as the keyword search), merged by each chunk's best question
    cos(ref)   the chunk's best inner product over the questions, from its vector as the engine holds
               it (fetched by id, one batch for the pipeline's candidates: a keyword candidate that is
               no near neighbour still gets its cosine)
    best       the cosine of the nearest chunk
    low        the floor of the min–max normalization. Locally it is the least similar chunk searched;
               here the engine's nearest chunk to the *negated* question vector, which is that chunk —
               the local floor exactly for a one-question query on an exact index. With several
               questions, the largest of their floors: a lower bound of the local floor (its least
               similar chunk by best question), so a chunk's normalized cosine is at most a little lower.

Cosines are computed here from the engine's vectors, as the local layer computes them, so a chunk
the engine returns has the local layer's cosine; fusion, rejection and signals are memtree.search.fusion's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtree.search.fusion import Fused

if TYPE_CHECKING:
    import numpy as np

    from memtree.index.protocol import ChunkRef, DenseEngine

FIRST_DEPTH = 32
"""Nearest chunks asked per question at once: the pipeline wants max(3k, 15), 30 at k = 10; deeper on demand."""


class ServedScores(Fused):
    """One query's cosines from a DenseEngine (see the module docstring)."""

    def __init__(
        self,
        engine: DenseEngine,
        queries: np.ndarray,
        searched: tuple[frozenset[str], tuple[str, ...]],
        keyword_weight: float,
        semantic_weight: float,
        fusion: str,
        threshold: float,
    ) -> None:
        super().__init__(keyword_weight, semantic_weight, fusion, threshold)
        self.engine, self.queries = engine, queries
        self.tiers, self.skip = searched
        self._cos: dict[ChunkRef, float | None] = {}
        self._ranked: list[ChunkRef] = []
        self._depth = 0
        floors = [hits[0][0] for hits in engine.nearest(-queries, 1, self.tiers, self.skip) if hits]
        self._search(FIRST_DEPTH, floors)
        self.best = (self._cos[self._ranked[0]] or 0.0) if self._ranked else 0.0
        if floors:
            found = self._products(floors)
            self.low = max(float(found[ref][i]) for i, ref in enumerate(floors) if ref in found)
        else:
            self.low = self.best

    def _products(self, refs: Sequence[ChunkRef]) -> dict[ChunkRef, np.ndarray]:
        """Each chunk's inner product with every question, from the vectors the engine holds."""
        import numpy as np

        held = self.engine.vectors(refs)
        order = [ref for ref in dict.fromkeys(refs) if ref in held]
        if not order:
            return {}
        matrix = np.asarray([held[ref] for ref in order], dtype=np.float32)
        # Why einsum, not @: as memtree.search.semantic (a BLAS product wakes threads that fight ONNX Runtime's)
        products = np.einsum("ij,kj->ik", matrix, self.queries)
        return dict(zip(order, products))

    def _search(self, n: int, also: Sequence[ChunkRef] = ()) -> None:
        """The ``n`` nearest chunks by best question (each question's ``n`` nearest hold them all)."""
        merged: dict[ChunkRef, float] = {}
        for hits in self.engine.nearest(self.queries, n, self.tiers, self.skip):
            for ref, score in hits:
                merged[ref] = max(score, merged.get(ref, score))
        ranked = sorted(merged, key=lambda ref: (-merged[ref], ref))[:n]
        self.known([*ranked, *also])
        # ranked again by the cosines computed here, which are the local layer's arithmetic
        self._ranked = sorted(ranked, key=lambda ref: (-(self._cos.get(ref) or -2.0), ref))
        self._depth = n

    def known(self, refs: Sequence[ChunkRef]) -> None:
        """Fetch, in one batch, the vectors of the chunks whose cosine is not known yet."""
        missing = [ref for ref in refs if ref not in self._cos]
        if not missing:
            return
        found = self._products(missing)
        for ref in missing:
            products = found.get(ref)
            self._cos[ref] = None if products is None else float(products.max())

    def cos(self, ref: ChunkRef) -> float | None:
        """The chunk's cosine similarity to the query (None: the engine holds no vector for it)."""
        if ref not in self._cos:
            self.known([ref])
        return self._cos[ref]

    def top(self, n: int) -> list[ChunkRef]:
        """The ``n`` searched chunks most similar to the query, best first."""
        if n > self._depth:
            self._search(n)
        return self._ranked[:n]
