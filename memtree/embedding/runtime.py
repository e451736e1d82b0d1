"""ONNX Runtime sentence embeddings: tokenizer.json → model.onnx → pooled, L2-normalized rows.

A model directory holds ``model.onnx`` (inputs ``input_ids`` and optionally ``attention_mask``
and ``token_type_ids``; output ``last_hidden_state`` or else the first one, per token
``(batch, seq, dim)`` or already pooled ``(batch, dim)``), ``tokenizer.json`` (Hugging Face
``tokenizers``) and optionally ``memtree-embed.json`` (:class:`ModelConfig`). numpy,
onnxruntime and tokenizers are imported here only, and only when a model loads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import INSTALL_HINT, EmbedUnavailable, Kind, Progress

if TYPE_CHECKING:
    import numpy as np

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "memtree-embed.json"
POOLINGS = ("mean", "cls")
MAX_BATCH_TOKENS = 2048
"""A batch stops growing before its padded size passes this many tokens. Why: on 2 cores a batch
of 16 long paragraphs ran 40% slower per text than batches of 4 (attention buffers outgrow the caches)."""
SORT_WINDOW = 4096
"""Texts are sorted by length, then tokenized this many at a time (bounded memory), each window
re-sorted by token count so that a batch pads little."""
_FEEDS = ("input_ids", "attention_mask", "token_type_ids")
_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "max_length": ((int,), "an integer"),
    "min_similarity": ((float, int, type(None)), "a number or null"),
}


@dataclass(frozen=True)
class ModelConfig:
    """memtree-embed.json: how to feed and pool a model. The defaults fit a bare export."""

    model_id: str = ""  # empty: "<folder name>@<sha256 of the files, 12 hex>"
    query_prefix: str = ""  # e5 wants "query: "
    passage_prefix: str = ""  # e5 wants "passage: "
    pooling: str = "mean"  # "mean" over the attention mask, or "cls" (the first token)
    max_length: int = 512  # tokens, special ones included (or tokenizer.json's own limit if lower); the rest is cut
    min_similarity: float | None = None  # a calibrated τ (bench/reject.py --semantic); None: uncalibrated

    @classmethod
    def read(cls, model_dir: Path) -> ModelConfig:
        """The folder's memtree-embed.json, or the defaults when it has none."""
        path = model_dir / CONFIG_FILE
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            raise EmbedUnavailable(f"{path}: not readable JSON ({exc})") from None
        if not isinstance(data, dict):
            raise EmbedUnavailable(f"{path}: expected a JSON object")
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}  # other keys: provenance
        for name, value in values.items():
            expected, what = _TYPES.get(name, ((str,), "a string"))
            if not isinstance(value, expected) or isinstance(value, bool):
                raise EmbedUnavailable(f"{path}: {name} must be {what}, got {value!r}")
        config = cls(**values)
        if config.pooling not in POOLINGS:
            raise EmbedUnavailable(f"{path}: pooling must be one of {', '.join(POOLINGS)}, got {config.pooling!r}")
        if config.max_length < 2:
            raise EmbedUnavailable(f"{path}: max_length must be at least 2, got {config.max_length}")
        return config

    def to_json(self, **extra: Any) -> bytes:
        """The file's content, with ``extra`` keys (provenance) after the settings."""
        return (json.dumps({**asdict(self), **extra}, ensure_ascii=False, indent=2) + "\n").encode()


def import_runtime() -> tuple[Any, Any]:
    """(onnxruntime, tokenizers), or EmbedUnavailable naming the missing one."""
    try:
        import onnxruntime
        import tokenizers
    except ImportError as exc:
        raise EmbedUnavailable(f"{exc.name or 'onnxruntime'} is not installed: {INSTALL_HINT}") from None
    return onnxruntime, tokenizers


def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def files_hash(paths: Sequence[Path], extra: bytes = b"") -> str:
    """sha256 over the files' bytes (and ``extra``), hex."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    digest.update(extra)
    return digest.hexdigest()


class OnnxEmbedder:
    """A sentence-embedding model directory run by ONNX Runtime on the CPU."""

    def __init__(self, model_dir: str | Path, threads: int = 2) -> None:
        ort, tokenizers = import_runtime()
        self.dir = Path(model_dir).expanduser()
        self.model_path = self.dir / MODEL_FILE
        if not self.dir.is_dir():
            raise EmbedUnavailable(f"{self.dir}: no such model directory")
        missing = [n for n in (MODEL_FILE, TOKENIZER_FILE) if not (self.dir / n).is_file()]
        if missing:
            raise EmbedUnavailable(f"{self.dir}: no {' or '.join(missing)} (a model folder holds both)")
        self.config = ModelConfig.read(self.dir)
        self.min_similarity = self.config.min_similarity
        self.tokenizer = self._tokenizer(tokenizers)
        self.session = self._session(ort, threads)
        inputs = {i.name: i.type for i in self.session.get_inputs()}
        unknown = sorted(set(inputs) - set(_FEEDS))
        if "input_ids" not in inputs or unknown:
            has = ", ".join(sorted(inputs))
            raise EmbedUnavailable(
                f"{self.model_path}: inputs {has}; expected input_ids [attention_mask, token_type_ids]"
            )
        self._inputs = {name: "int32" if kind == "tensor(int32)" else "int64" for name, kind in inputs.items()}
        outputs = [o.name for o in self.session.get_outputs()]
        self._output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        self.dim = 0
        self.dim = int(self._run([self.tokenizer.encode("memtree")]).shape[1])  # proves the model runs
        if self.config.model_id:
            self.model_id = self.config.model_id
        else:
            config = json.dumps(asdict(self.config), sort_keys=True).encode()
            digest = files_hash([self.model_path, self.dir / TOKENIZER_FILE], config)
            self.model_id = f"{self.dir.resolve().name}@{digest[:12]}"

    def _tokenizer(self, tokenizers: Any) -> Any:
        path = self.dir / TOKENIZER_FILE
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises plain Exception for any bad file
            raise EmbedUnavailable(f"{path}: not a tokenizers file ({_one_line(exc)})") from None
        self._pad_id = int((tokenizer.padding or {}).get("pad_id", 0))
        tokenizer.no_padding()  # padding is done here, per length-sorted batch
        own = (tokenizer.truncation or {}).get("max_length") or self.config.max_length
        tokenizer.enable_truncation(max_length=min(own, self.config.max_length))  # never past what the export allows
        return tokenizer

    def _session(self, ort: Any, threads: int) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # errors only: optimizer notes are not for users
        try:
            return ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's errors share no base class worth naming
            raise EmbedUnavailable(f"{self.model_path}: ONNX Runtime cannot load it ({_one_line(exc)})") from None

    def embed(
        self, texts: Sequence[str], kind: Kind, batch_size: int = 32, progress: Progress | None = None
    ) -> np.ndarray:
        """Embed ``texts`` as queries or passages: float32 (n, dim), rows of unit length, in order."""
        import numpy as np

        if kind not in ("query", "passage"):
            raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")
        prefix = self.config.query_prefix if kind == "query" else self.config.passage_prefix
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        done = 0
        for start in range(0, len(order), SORT_WINDOW):
            window = order[start : start + SORT_WINDOW]
            encodings = self.tokenizer.encode_batch([prefix + texts[i] for i in window])
            lengths = [len(e.ids) for e in encodings]
            ranked = sorted(range(len(window)), key=lengths.__getitem__)
            for batch in _batches(ranked, lengths, max(1, batch_size)):
                out[[window[j] for j in batch]] = self._run([encodings[j] for j in batch])
                done += len(batch)
                if progress is not None:
                    progress(done, len(texts))
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        """One padded batch through the model: pooled, normalized rows."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        values = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: values[name].astype(kind, copy=False) for name, kind in self._inputs.items()}
        try:
            (hidden,) = self.session.run([self._output], feeds)
        except Exception as exc:
            raise EmbedUnavailable(f"{self.model_path}: inference failed ({_one_line(exc)})") from None
        hidden = np.asarray(hidden, dtype=np.float32)
        if hidden.ndim == 3 and hidden.shape[:2] == ids.shape:
            if self.config.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        elif hidden.ndim == 2 and hidden.shape[0] == len(encodings):
            pooled = hidden  # the export pools itself
        else:
            shape = tuple(hidden.shape)
            raise EmbedUnavailable(
                f"{self.model_path}: output of shape {shape}; expected (batch, seq, dim) or (batch, dim)"
            )
        if self.dim and pooled.shape[1] != self.dim:
            raise EmbedUnavailable(f"{self.model_path}: output width changed from {self.dim} to {pooled.shape[1]}")
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)


def _batches(ranked: list[int], lengths: list[int], batch_size: int) -> Iterator[list[int]]:
    """Consecutive runs of the length-sorted indices, each under both the size and the token budget."""
    batch: list[int] = []
    for j in ranked:
        if batch and (len(batch) >= batch_size or (len(batch) + 1) * lengths[j] > MAX_BATCH_TOKENS):
            yield batch
            batch = []
        batch.append(j)
    if batch:
        yield batch
