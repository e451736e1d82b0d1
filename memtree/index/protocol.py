"""What search asks of a chunk index: the seam between memtree.search and an engine.

memtree's engine is the segmented index of memtree.index.chunk_index, scored in pure Python
(memtree.index.bm25) or with numpy (memtree.index.dense). Another engine (SQLite FTS, Milvus, …)
serves the same pipeline by implementing the two protocols here:

* :class:`Engine` scores a query's terms over the tiers searched, and lists its live chunks
  (the semantic layer keeps one vector per chunk);
* :class:`Scores` is one query's answer: each term's df and idf, the best chunks by the keyword
  blend (memtree.index.blend) with routed notes lifted, and per chunk its BM25, how strongly it
  matched each query term (the evidence search judges coverage and rejection by) and where it is.

An engine that also stores the semantic layer's vectors and searches them (Milvus) implements
:class:`DenseEngine` too — optional: memtree.search.semantic asks for it by its methods, and scans
its own vectors over any other engine.

A chunk is named by a :data:`ChunkRef`, opaque to search: it only hands a ref back to the engine
that made it, and uses it as a key. A chunk's text is its note's lines ``start``..``end``, which
search reads from the note itself (Markdown is the truth), so an engine need not store text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    import numpy as np

    from memtree.config import SearchSettings
    from memtree.index.blend import Blend

ChunkRef = tuple[int, int]
"""A chunk, as its engine names it (memtree's: segment and chunk number); search never looks inside."""


class Location(NamedTuple):
    """Where a chunk is: its note and the 1-based lines it spans."""

    path: str
    start: int
    end: int

    @property
    def tier(self) -> str:
        """The tier folder the note is in: bank, memory or recall."""
        return self.path.split("/", 1)[0]


@dataclass(frozen=True)
class TermStats:
    """A query term across the chunks of the tiers searched: document frequency and IDF."""

    term: str
    df: int
    idf: float


class Scores(Protocol):
    """One query's answer from an engine (see the module docstring)."""

    @property
    def stats(self) -> Sequence[TermStats]:
        """Per query term, in query order: its df and idf over the tiers searched."""
        ...

    def top(
        self,
        k: int,
        tiers: frozenset[str],
        routes: Mapping[str, float],
        tree_weight: float,
        bm25_weight: float,
        skip: tuple[str, ...] = (),
    ) -> tuple[list[tuple[float, ChunkRef]], Blend]:
        """The best ``k`` live chunks of ``tiers`` (none under a ``skip`` prefix) by keyword blend
        (:meth:`memtree.index.blend.Blend.keyword`), best first, every chunk tied with the k-th
        competing for its place by path and line; and the query's blend.

        ``routes`` are the routed notes' route scores by path. A routed note none of whose chunks
        matched a term still offers its first chunk (the tree's parent fallback).
        """
        ...

    def raw(self, ref: ChunkRef) -> float:
        """The chunk's BM25 score (0 when it matched no query term)."""
        ...

    def strengths(self, refs: Sequence[ChunkRef]) -> list[list[float]]:
        """Per chunk, how its text matched each query term: 1.0 exactly, ``partial`` by prefix,
        ``infix`` inside a compound, else 0 (memtree.text.match)."""
        ...

    def evidence(self, refs: Sequence[ChunkRef]) -> list[float] | None:
        """Per chunk, Σ idf × strength over the query terms (what :meth:`strengths` adds up to), when
        the engine holds it at hand; None when it would have to work it out (search then bounds a
        candidate by its keyword blend alone)."""
        ...

    def matched(self) -> Iterator[tuple[ChunkRef, float]]:
        """Every live chunk whose text matched a query term, with its Σ idf × strength."""
        ...

    def locate(self, refs: Sequence[ChunkRef]) -> list[Location]:
        """Where each chunk (of this engine, as it was when it scored) is."""
        ...


class Engine(Protocol):
    """A searchable chunk index (see the module docstring)."""

    @property
    def version(self) -> int:
        """Changes whenever the chunks change: what depends on them (vectors, caches) keys on it."""
        ...

    def score(
        self,
        qterms: Sequence[str],
        tiers: frozenset[str] | None,
        settings: SearchSettings,
        boosts: Sequence[float] | None = None,
        vectorize: bool = True,
    ) -> Scores:
        """BM25 (``settings``: k1, b, partial and infix match) of the live chunks for ``qterms``.

        ``tiers`` (None: all) are the tiers searched: N, the average length and each term's df
        count their chunks only. ``boosts`` (one per term, default 1) scale a term's share of the
        BM25 score, not its statistics. ``vectorize=False`` asks for the engine's quickest start
        over its fastest steady state (memtree's: no numpy import for a process's first query).
        """
        ...

    def vocabulary(self, prefix: str) -> Iterator[str]:
        """Index terms that start with ``prefix`` (repeats allowed; a term may belong to no live
        chunk of the tiers searched: :meth:`score` tells its df). Query repair (memtree.search.repair)
        looks up typos' readings here."""
        ...

    def chunks(
        self, tiers: frozenset[str] | None = None, skip: tuple[str, ...] = ()
    ) -> Iterator[tuple[ChunkRef, Location]]:
        """Every live chunk of ``tiers`` (None: all) not under a ``skip`` prefix, note by note in index order."""
        ...


class DenseEngine(Engine, Protocol):
    """An engine that keeps each chunk's vector of the semantic layer's model and searches them itself."""

    def dense_model(self) -> str | None:
        """The model id whose vectors the engine holds for every live chunk and searches now; None
        when it cannot (no vectors, another model, out of step): the layer then scans its own."""
        ...

    def nearest(
        self, queries: np.ndarray, n: int, tiers: frozenset[str] | None, skip: tuple[str, ...] = ()
    ) -> list[list[tuple[ChunkRef, float]]]:
        """Per query vector (rows of ``queries``), the ``n`` live chunks of ``tiers`` (None: all; none
        under a ``skip`` prefix) with the highest inner product with it, best first, with that product.
        Approximate where the engine's index is (a graph index may miss a few)."""
        ...

    def vectors(self, refs: Sequence[ChunkRef]) -> Mapping[ChunkRef, Sequence[float]]:
        """The vectors the engine holds for these chunks (a chunk without one is left out)."""
        ...
