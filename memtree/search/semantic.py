"""The semantic layer (L4): query–chunk cosine similarity from a local ONNX sentence embedder, fused.

Fusion (memtree.search.fusion): linear, ``0.6 × keyword + 0.4 × semantic``, or rrf, with
``semantic`` the chunk's cosine min–max normalized over the searched chunks (the best is 1).
Over an engine that stores the vectors itself (Milvus) the engine finds the nearest chunks
(memtree.search.served); otherwise the cosines come from the local vectors, every chunk scanned.
A chat message that asks among other talk is embedded as its questions, each chunk taking its best
cosine over them (``query_texts``); anything else is embedded whole.
Then decay, recency and scope multiply it as they do the keyword score. Rejection: a search with
no keyword evidence (coverage under search.reject_threshold) and no chunk whose cosine reaches
``embed.min_similarity`` returns nothing.

Vectors are cached in .memtree/ by chunk content hash and model id (memtree.index.vectors); a chunk
changed since `memtree index --embed` is embedded at search time, up to ``embed.max_new`` of them.
Whatever fails — the extra not installed, the model missing or broken — search goes on
keyword-only and says so once (a warning in the result, so `--json` carries it too).

Why one module over 300 lines: the layer's vectors, their alignment to the index's chunks and the
fusion of one query's cosines are one cache's life cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memtree.index.vectors import VECTORS_DIR, passages, wanted
from memtree.notes import store
from memtree.search import message
from memtree.search.fusion import Fused

if TYPE_CHECKING:
    import numpy as np

    from memtree.config import EmbedSettings
    from memtree.index.protocol import ChunkRef, DenseEngine, Engine

    Searched = tuple[frozenset[str], tuple[str, ...]]
    """The chunks a search covers: its tiers, and the path prefixes it skips (disabled banks)."""

UNCALIBRATED = 1.01
"""τ for a model nobody calibrated: meaning alone never overrides keyword rejection."""


def query_texts(query: str, limit: int) -> list[str]:
    """What a query is embedded as: the question clauses of a message that also says other things, else itself.

    Why: an agent searches with the user's whole message; embedded whole, its greeting, context and
    asides pull the vector off the question (verbose KorQuAD and LoCoMo, docs/concepts/scoring.md "Semantic search").
    Clauses and what asks are memtree.search.message's. At most ``limit`` questions (the longest,
    in message order), so a long prompt costs a few short embeddings; ``limit`` 0 embeds it whole.
    """
    parts = [p.strip() for p in message.clause_texts(query) if p.strip()]
    asking = [p for p in parts if message.is_question(p)]
    if limit < 1 or not asking or len(asking) == len(parts):
        return [query]
    longest = set(sorted(range(len(asking)), key=lambda i: -len(asking[i]))[:limit])
    return [p for i, p in enumerate(asking) if i in longest]


def load(model_dir: str | None) -> Any:
    """The embedder (memtree.embedding); raises EmbedUnavailable saying why it cannot load."""
    from memtree.embedding import load_embedder

    return load_embedder(model_dir)


class SemanticScores(Fused):
    """One query's cosine similarity to every searched chunk, from the local vectors."""

    def __init__(
        self,
        rows: dict[ChunkRef, int],
        docs: list[ChunkRef],
        cos: np.ndarray,
        allowed: np.ndarray,
        keyword_weight: float,
        semantic_weight: float,
        fusion: str,
        threshold: float,
    ) -> None:
        import numpy as np

        super().__init__(keyword_weight, semantic_weight, fusion, threshold)
        self._rows, self._cos, self._docs = rows, cos, docs
        self._allowed = allowed
        searched = cos[allowed] if allowed.any() else np.zeros(1, dtype=np.float32)
        self.best = float(searched.max())
        self.low = float(searched.min())

    def cos(self, ref: ChunkRef) -> float | None:
        """The chunk's cosine similarity to the query (None: it has no vector)."""
        row = self._rows.get(ref)
        return None if row is None else float(self._cos[row])

    def top(self, n: int) -> list[ChunkRef]:
        """The ``n`` searched chunks most similar to the query."""
        import numpy as np

        masked = np.where(self._allowed, self._cos, -np.inf)
        n = min(n, int(self._allowed.sum()))
        if n <= 0:
            return []
        best = np.argpartition(-masked, n - 1)[:n]
        best = best[np.argsort(-masked[best], kind="stable")]
        return [self._docs[i] for i in best.tolist()]


@dataclass
class _Aligned:
    version: int
    rows: dict[ChunkRef, int]
    matrix: np.ndarray  # (chunks, dim), L2-normalized rows; zeros where a chunk has no vector
    missing: int
    docs: list[ChunkRef] = field(default_factory=list)  # the chunk of each row
    masks: dict[object, np.ndarray] = field(default_factory=dict)  # the rows searched, per tier filter


class Layer:
    """The semantic layer of one MemTree: loads the embedder once, keeps vectors aligned to the index."""

    def __init__(
        self,
        root: Path,
        settings: EmbedSettings,
        keyword_weight: float,
        semantic_weight: float,
        loader: Callable[[str | None], Any] | None = None,
    ) -> None:
        self.root, self.settings = root, settings
        self.kw, self.sw = keyword_weight, semantic_weight
        self.loader = loader  # an engine's, when it stores vectors too: one model loaded per process
        self.notice: str | None = None  # why the layer is off (said once)
        self._embedder: Any = None
        self._aligned: _Aligned | None = None
        self._failed = False
        self.embedded = 0  # chunks the last alignment had to embed

    def wanted(self) -> bool:
        """On when embed.enabled is "on", or "auto" and `memtree index --embed` has built vectors."""
        return wanted(self.root, self.settings.enabled)

    def embedder(self) -> Any:
        """The embedder, loaded once; None (with ``notice`` set) when it cannot be."""
        if self._embedder is None and not self._failed:
            try:
                self._embedder = (self.loader or load)(self.settings.model_dir or None)
            except Exception as exc:  # a missing extra or a broken model must not break search
                from memtree.errors import MemtreeError

                why = str(exc) if isinstance(exc, MemtreeError) else f"{type(exc).__name__}: {exc}"
                self._fail(why)
        return self._embedder

    def _fail(self, why: str) -> None:
        self._failed = True
        self.notice = f"semantic search off, keyword only: {why}"

    def scores(
        self,
        index: Engine,
        query: str,
        searched: Searched,
        read_lines: Callable[[str], list[str]],
    ) -> Fused | None:
        """The query's similarity to every chunk searched (``searched``: tiers and skipped path
        prefixes), or None when the layer is off or fails."""
        embedder = self.embedder()
        if embedder is None:
            return None
        if self.served(index):
            from memtree.search.served import ServedScores

            try:
                queries = embedder.embed(query_texts(query, self.settings.max_questions), kind="query")
                engine = cast("DenseEngine", index)
                s = self.settings
                return ServedScores(engine, queries, searched, self.kw, self.sw, s.fusion, self.threshold(embedder))
            except Exception:  # the engine failed mid-query: the local vectors answer this one
                pass
        try:
            import numpy as np

            aligned = self.align(index, read_lines)
            queries = embedder.embed(query_texts(query, self.settings.max_questions), kind="query")
            # Why einsum, not @: a BLAS product wakes OpenBLAS's spinning threads, which then fight ONNX
            # Runtime's for the cores: the next query embedding ran 2.5× slower (22 ms vs 8.6 on 2 cores)
            cos = np.einsum("ij,kj->ik", aligned.matrix, queries).max(axis=1)  # each chunk's best question
            allowed = aligned.masks.get(searched)
            if allowed is None:
                allowed = np.zeros(len(aligned.rows), dtype=bool)
                rows = aligned.rows
                allowed[[rows[ref] for ref, _ in index.chunks(*searched) if ref in rows]] = True
                aligned.masks[searched] = allowed
        except Exception as exc:  # a failing layer never stops a search
            self._fail(f"{type(exc).__name__}: {exc}")
            return None
        if aligned.missing and self.notice is None:
            self.notice = (
                f"{aligned.missing} chunks have no vectors yet and are ranked by keywords alone "
                "(run `memtree index --embed`)"
            )
        s = self.settings
        return SemanticScores(
            aligned.rows, aligned.docs, cos, allowed, self.kw, self.sw, s.fusion, self.threshold(embedder)
        )

    def threshold(self, embedder: Any) -> float:
        """τ: embed.min_similarity, else the model's calibrated one, else :data:`UNCALIBRATED`."""
        return self.settings.min_similarity or getattr(embedder, "min_similarity", None) or UNCALIBRATED

    def served(self, index: Engine) -> bool:
        """Whether ``index`` stores this model's vectors and searches them itself, in step now
        (memtree.index.protocol.DenseEngine): the layer then asks it, and aligns nothing locally."""
        embedder = self._embedder
        dense_model = getattr(index, "dense_model", None)
        return embedder is not None and dense_model is not None and dense_model() == embedder.model_id

    def align(
        self,
        index: Engine,
        read_lines: Callable[[str], list[str]],
        embed_all: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> _Aligned:
        """Every live chunk's vector, in index order; new chunks embedded (all of them with ``embed_all``)."""
        if self._aligned is not None and self._aligned.version == index.version and not embed_all:
            return self._aligned
        import numpy as np

        from memtree.index.vectors import VectorCache

        embedder = self.embedder()
        if embedder is None:
            raise RuntimeError(self.notice or "no embedder")
        rows, texts = _chunk_texts(index, read_lines)
        cache = VectorCache(self.root / store.STATE_DIR / VECTORS_DIR, embedder.model_id, embedder.dim)
        missing = 0
        have, absent = cache.lookup(texts)
        if embed_all or len(absent) <= self.settings.max_new:
            matrix = cache.vectors_for(texts, embedder, kind="passage", progress=progress) if absent else have
            self.embedded = len(absent)
        else:  # too many to embed inside a search: those chunks rank by keywords until `index --embed`
            matrix, missing = have, len(absent)
        # a private, aligned copy: a product over rows read from the memory-mapped cache ran 40× slower
        matrix = np.array(matrix, dtype=np.float32, order="C", copy=True)
        self._aligned = _Aligned(index.version, rows, matrix, missing, list(rows))
        return self._aligned


def _chunk_texts(index: Engine, read_lines: Callable[[str], list[str]]) -> tuple[dict[ChunkRef, int], list[str]]:
    """Every live chunk's passage text, in index order, and its row: chunk → row."""
    rows: dict[ChunkRef, int] = {}
    texts: list[str] = []
    path: str | None = None
    spans: list[tuple[int, int]] = []

    def flush() -> None:
        if path is not None:
            texts.extend(passages(read_lines(path), spans))

    for ref, where in index.chunks():
        if where.path != path:  # chunks come note by note: each note is read once
            flush()
            path, spans = where.path, []
        rows[ref] = len(texts) + len(spans)
        spans.append((where.start, where.end))
    flush()
    return rows, texts


def _read_lines(root: Path, path: str) -> list[str]:
    try:
        return store.read_note(root / path).split("\n")
    except (OSError, UnicodeDecodeError):
        return []


def coverage(root: Path, index: Engine, layer: Layer) -> dict[str, Any]:
    """How many of the index's chunks have vectors for the configured model (for `status`)."""
    started = time.perf_counter()
    out: dict[str, Any] = {"enabled": layer.settings.enabled, "active": False}
    if not layer.wanted():
        return out
    embedder = layer.embedder()
    if embedder is None:
        out["notice"] = layer.notice
        return out
    from memtree.index.vectors import VectorCache

    _, texts = _chunk_texts(index, lambda path: _read_lines(root, path))
    cache = VectorCache(root / store.STATE_DIR / VECTORS_DIR, embedder.model_id, embedder.dim)
    have, total = cache.coverage(texts)
    out.update(
        active=True,
        model=embedder.model_id,
        chunks=total,
        with_vectors=have,
        seconds=round(time.perf_counter() - started, 3),
    )
    return out
