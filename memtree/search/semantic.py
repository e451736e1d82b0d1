"""The semantic layer (L4): query–chunk cosine similarity from a local ONNX sentence embedder, fused.

    linear:  blended = keyword_weight × keyword + semantic_weight × semantic      (0.6 / 0.4)
    rrf:     blended = (1/(60 + rank_keyword) + 1/(60 + rank_semantic)) × 61/2     (max 1)

``semantic`` is the chunk's cosine min–max normalized over the searched chunks (the best is 1).
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.notes import store
from memtree.notes.entries import strip_meta
from memtree.search import evidence

if TYPE_CHECKING:
    import numpy as np

    from memtree.config import EmbedSettings
    from memtree.index.protocol import ChunkRef, Engine

    Searched = tuple[frozenset[str], tuple[str, ...]]
    """The chunks a search covers: its tiers, and the path prefixes it skips (disabled banks)."""

RRF_K = 60
UNCALIBRATED = 1.01
"""τ for a model nobody calibrated: meaning alone never overrides keyword rejection."""
VECTORS_DIR = "vectors"


def query_texts(query: str, limit: int) -> list[str]:
    """What a query is embedded as: the question clauses of a message that also says other things, else itself.

    Why: an agent searches with the user's whole message; embedded whole, its greeting, context and
    asides pull the vector off the question (verbose KorQuAD and LoCoMo, README "Semantic search").
    Clauses are memtree.search.evidence's, and so is what asks. At most ``limit`` questions (the longest,
    in message order), so a long prompt costs a few short embeddings; ``limit`` 0 embeds it whole.
    """
    parts = [p.strip() for p in evidence._CLAUSE_END.split(query) if p and p.strip()]
    asking = [p for p in parts if evidence.is_question(p)]
    if limit < 1 or not asking or len(asking) == len(parts):
        return [query]
    longest = set(sorted(range(len(asking)), key=lambda i: -len(asking[i]))[:limit])
    return [p for i, p in enumerate(asking) if i in longest]


def load(model_dir: str | None) -> Any:
    """The embedder (memtree.embedding); raises EmbedUnavailable saying why it cannot load."""
    from memtree.embedding import load_embedder

    return load_embedder(model_dir)


class SemanticScores:
    """One query's cosine similarity to every searched chunk, and how it fuses with keywords."""

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

        self._rows, self._cos, self._docs = rows, cos, docs
        self._allowed = allowed
        searched = cos[allowed] if allowed.any() else np.zeros(1, dtype=np.float32)
        self.best = float(searched.max())
        self.low = float(searched.min())
        self.kw, self.sw, self.fusion, self.threshold = keyword_weight, semantic_weight, fusion, threshold

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

    def __init__(self, root: Path, settings: EmbedSettings, keyword_weight: float, semantic_weight: float) -> None:
        self.root, self.settings = root, settings
        self.kw, self.sw = keyword_weight, semantic_weight
        self.notice: str | None = None  # why the layer is off (said once)
        self._embedder: Any = None
        self._aligned: _Aligned | None = None
        self._failed = False
        self.embedded = 0  # chunks the last alignment had to embed

    def wanted(self) -> bool:
        """On when embed.enabled is "on", or "auto" and `memtree index --embed` has built vectors."""
        mode = self.settings.enabled
        if mode == "off":
            return False
        if mode == "on":
            return True
        folder = self.root / store.STATE_DIR / VECTORS_DIR
        return folder.is_dir() and any(folder.iterdir())

    def embedder(self) -> Any:
        """The embedder, loaded once; None (with ``notice`` set) when it cannot be."""
        if self._embedder is None and not self._failed:
            try:
                self._embedder = load(self.settings.model_dir or None)
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
    ) -> SemanticScores | None:
        """The query's similarity to every chunk searched (``searched``: tiers and skipped path
        prefixes), or None when the layer is off or fails."""
        embedder = self.embedder()
        if embedder is None:
            return None
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
        threshold = s.min_similarity or getattr(embedder, "min_similarity", None) or UNCALIBRATED
        return SemanticScores(aligned.rows, aligned.docs, cos, allowed, self.kw, self.sw, s.fusion, threshold)

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
    path, lines = None, []
    for ref, where in index.chunks():
        if where.path != path:  # chunks come note by note: each note is read once
            path, lines = where.path, read_lines(where.path)
        rows[ref] = len(texts)
        texts.append(_passage(lines, where.start, where.end))
    return rows, texts


def _read_lines(root: Path, path: str) -> list[str]:
    try:
        return store.read_note(root / path).split("\n")
    except (OSError, UnicodeDecodeError):
        return []


def _passage(lines: list[str], start: int, end: int) -> str:
    return strip_meta("\n".join(lines[start - 1 : end])).strip()


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
