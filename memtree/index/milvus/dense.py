"""The semantic layer's vectors in memtree's Milvus collection: which model, the rows' vectors, dense search.

When the semantic layer is on (memtree.index.vectors.wanted) and its embedder loads, each row the
engine sends carries its chunk's passage vector in a ``dense`` field (FLOAT_VECTOR of the model's
dimension, inner product — memtree's vectors are L2-normalized, so that is their cosine), read
from the root's vector cache (memtree.index.vectors, by passage hash and model id): a chunk the
cache lacks is embedded once and cached, as `memtree index --embed` does, never twice.

The collection's analyzer signature then names the model (a digest of its id) and the dimension:
a collection synced keyword-only or with another model is another collection, dropped and rebuilt,
never mixed. A keyword-only memory has no ``dense`` field and loads no embedder.

Search (memtree.search.served) asks the collection for each query vector's nearest chunks among
the rows the sparse search filters to (same tiers and skipped prefixes), and fetches the vectors
of the keyword candidates by row id to give them their cosine too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.index.milvus.store import DENSE_FIELD, ID_BATCH, listed
from memtree.index.vectors import VECTORS_DIR, VectorCache
from memtree.notes import store

if TYPE_CHECKING:
    import numpy as np

    from memtree.index.milvus.scores import Shadowed
    from memtree.index.milvus.store import Collection
    from memtree.index.protocol import ChunkRef


def signature(model_id: str, dim: int) -> str:
    """What the analyzer signature adds when rows carry vectors: the model and its dimension."""
    return f"-e{hashlib.blake2b(model_id.encode(), digest_size=4).hexdigest()}-d{dim}"


@dataclass
class Dense:
    """The embedder whose vectors the rows carry, and the root's cache of them."""

    embedder: Any
    root: Path

    @property
    def model_id(self) -> str:
        return str(self.embedder.model_id)

    @property
    def dim(self) -> int:
        return int(self.embedder.dim)

    def cache(self) -> VectorCache:
        """The vector cache as it is on disk now (the semantic layer may have added to it)."""
        return VectorCache(self.root / store.STATE_DIR / VECTORS_DIR, self.model_id, self.dim)

    def prepare(self, cache: VectorCache, texts: Sequence[str]) -> int:
        """Embed, in one pass, the ``texts`` the cache has no vector for; how many were embedded."""
        todo = cache.absent(texts)
        if todo:
            cache.vectors_for(todo, self.embedder)
        return len(todo)


def nearest(coll: Collection, queries: np.ndarray, where: str, limit: int) -> list[list[tuple[str, str, float]]]:
    """Per query vector, the ``limit`` rows ``where`` holds with the highest inner product: (id, path, score)."""
    if limit <= 0 or not len(queries):
        return []
    found = coll.client.search(
        coll.name,
        data=[q.tolist() for q in queries],
        anns_field=DENSE_FIELD,
        limit=limit,
        filter=where,
        output_fields=["path"],
        search_params={"metric_type": "IP"},
    )
    return [[(hit["id"], hit["entity"]["path"], float(hit["distance"])) for hit in hits] for hits in found]


def fetch(coll: Collection, ids: Sequence[str]) -> dict[str, list[float]]:
    """The vectors of the rows with these ids."""
    out: dict[str, list[float]] = {}
    for i in range(0, len(ids), ID_BATCH):
        part = ids[i : i + ID_BATCH]
        for row in coll.client.query(coll.name, filter=f"id in {listed(part)}", output_fields=["id", DENSE_FIELD]):
            out[row["id"]] = row[DENSE_FIELD]
    return out


def nearest_chunks(engine: Shadowed, queries: np.ndarray, n: int, where: str) -> list[list[tuple[ChunkRef, float]]]:
    """:func:`nearest` with each row named as the engine's local chunk (rows of notes changed since
    the last sync are left out)."""
    coll = engine.collection
    if coll is None:
        return [[] for _ in queries]
    chunk_of = engine.chunk_of
    return [
        [(ref, score) for key, path, score in hits if (ref := chunk_of(path, key)) is not None]
        for hits in nearest(coll, queries, where, n)
    ]


def chunk_vectors(engine: Shadowed, refs: Sequence[ChunkRef]) -> dict[ChunkRef, list[float]]:
    """The vectors the collection holds for these local chunks (one without is left out)."""
    keys = {key: ref for ref in refs if (key := engine.key_of(ref)) is not None}
    coll = engine.collection
    if not keys or coll is None:
        return {}
    return {keys[key]: vec for key, vec in fetch(coll, list(keys)).items() if key in keys}
