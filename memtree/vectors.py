"""The vector cache: chunk embeddings in .memtree/vectors/, keyed by content hash and model id.

One model's vectors live in ``<model>.npy`` (float32 rows) beside ``<model>.keys`` (16-byte
blake2b digests of the chunk texts, one per row) and ``<model>.json`` (model id, dimension,
rows). A different model id means different files, so vectors of two models never mix; files
whose header disagrees with the model (a torn write, another dimension) are discarded and
rebuilt. Only texts whose hash is missing are embedded; writes are atomic (temp file, rename).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from . import store

DIGEST = 16


def digest(text: str) -> bytes:
    """The cache key of a chunk text."""
    return hashlib.blake2b(text.encode(), digest_size=DIGEST).digest()


def _safe(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[:120] or "model"


class VectorCache:
    """Vectors of one model, loaded lazily, grown by ``vectors_for``."""

    def __init__(self, directory: Path, model_id: str, dim: int) -> None:
        self.directory, self.model_id, self.dim = directory, model_id, dim
        stem = directory / _safe(model_id)
        self._npy, self._keys, self._meta = (stem.with_suffix(s) for s in (".npy", ".keys", ".json"))
        self._rows: dict[bytes, int] | None = None
        self._matrix: Any = None

    def _load(self) -> None:
        import numpy as np

        if self._rows is not None:
            return
        self._rows, self._matrix = {}, np.zeros((0, self.dim), dtype=np.float32)
        try:
            meta = orjson.loads(self._meta.read_bytes())
            keys = self._keys.read_bytes()
            matrix = np.load(self._npy, allow_pickle=False)
        except (OSError, ValueError):
            return  # nothing cached yet, or unreadable: rebuilt as texts are embedded
        n = len(keys) // DIGEST
        if (
            meta.get("model") != self.model_id
            or meta.get("dim") != self.dim
            or meta.get("rows") != n
            or matrix.shape != (n, self.dim)
            or matrix.dtype != np.float32
        ):
            return  # a torn or foreign cache: discarded, never mixed in
        self._matrix = matrix
        self._rows = {keys[i * DIGEST : (i + 1) * DIGEST]: i for i in range(n)}

    def lookup(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """The cached vector of each text (zeros where missing) and the indexes of the missing ones."""
        import numpy as np

        self._load()
        assert self._rows is not None
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing = []
        found_at, found_rows = [], []
        for i, t in enumerate(texts):
            row = self._rows.get(digest(t))
            if row is None:
                missing.append(i)
            else:
                found_at.append(i)
                found_rows.append(row)
        if found_at:
            out[found_at] = self._matrix[found_rows]
        return out, missing

    def vectors_for(
        self,
        texts: Sequence[str],
        embedder: Any,
        kind: str = "passage",
        progress: Callable[[int, int], None] | None = None,
    ) -> Any:
        """Vectors for ``texts`` (one row each), embedding and saving only the ones not cached."""
        import numpy as np

        out, missing = self.lookup(texts)
        if not missing:
            return out
        todo = list(dict.fromkeys(texts[i] for i in missing))
        fresh = np.asarray(embedder.embed(todo, kind=kind, progress=progress), dtype=np.float32)
        if fresh.shape != (len(todo), self.dim):
            raise ValueError(f"the embedder returned {fresh.shape}, expected ({len(todo)}, {self.dim})")
        by_text = dict(zip(todo, range(len(todo))))
        for i in missing:
            out[i] = fresh[by_text[texts[i]]]
        self._add([digest(t) for t in todo], fresh)
        return out

    def _add(self, keys: list[bytes], vectors: Any) -> None:
        import numpy as np

        assert self._rows is not None
        start = len(self._rows)
        for j, key in enumerate(keys):
            self._rows[key] = start + j
        self._matrix = np.concatenate([self._matrix, vectors]) if start else vectors
        self.save()

    def retain(self, texts: Sequence[str]) -> int:
        """Drop the vectors of chunks no longer present (all but ``texts``); returns how many went."""
        self._load()
        assert self._rows is not None
        keep = {digest(t) for t in texts}
        kept = [(k, r) for k, r in self._rows.items() if k in keep]
        dropped = len(self._rows) - len(kept)
        if dropped:
            self._matrix = self._matrix[[r for _, r in kept]]
            self._rows = {k: i for i, (k, _) in enumerate(kept)}
            self.save()
        return dropped

    def save(self) -> None:
        """Write the three files atomically (derived state: no fsync)."""
        import io

        import numpy as np

        assert self._rows is not None
        order = sorted(self._rows.items(), key=lambda kv: kv[1])
        keys = b"".join(k for k, _ in order)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(self._matrix, dtype=np.float32), allow_pickle=False)
        store.atomic_write(self._npy, buf.getvalue(), durable=False)
        store.atomic_write(self._keys, keys, durable=False)
        meta = {"model": self.model_id, "dim": self.dim, "rows": len(self._rows)}
        store.atomic_write(self._meta, orjson.dumps(meta), durable=False)

    def __len__(self) -> int:
        self._load()
        assert self._rows is not None
        return len(self._rows)
