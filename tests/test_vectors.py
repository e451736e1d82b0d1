"""The vector cache (memtree.index.vectors): keyed by chunk text hash and model id, atomic, never mixed."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy")

from memtree.index.vectors import VectorCache, digest  # noqa: E402

DIM = 8


class CountingEmbedder:
    """Deterministic pseudo-random unit vectors per text; records every text it embeds."""

    def __init__(self, model_id: str = "test/counting@1", dim: int = DIM) -> None:
        self.model_id, self.dim = model_id, dim
        self.seen: list[str] = []

    def embed(
        self,
        texts: Sequence[str],
        kind: str = "passage",
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
    ) -> Any:
        self.seen += texts
        return np.stack([vector(t, self.model_id, self.dim) for t in texts]) if texts else np.zeros((0, self.dim))


def vector(text: str, model_id: str = "test/counting@1", dim: int = DIM) -> Any:
    seed = int.from_bytes(hashlib.blake2b(f"{model_id}\0{text}".encode(), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


TEXTS = ["pytest -x --timeout=60 runs faster", "배포는 금요일에 하지 않는다", "커피는 오후에 마시지 않는다"]


def test_only_texts_without_a_vector_are_embedded_once_each(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = VectorCache(tmp_path, embedder.model_id, DIM)
    out = cache.vectors_for([*TEXTS, TEXTS[0]], embedder)
    assert embedder.seen == TEXTS  # the repeated text embedded once
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in [*TEXTS, TEXTS[0]]]))
    embedder.seen.clear()
    changed = [TEXTS[0], "배포는 월요일에 한다", TEXTS[2]]
    out = VectorCache(tmp_path, embedder.model_id, DIM).vectors_for(changed, embedder)  # another process
    assert embedder.seen == ["배포는 월요일에 한다"]
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in changed]))
    assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"]


def test_lookup_and_coverage_report_what_is_missing(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = VectorCache(tmp_path, embedder.model_id, DIM)
    cache.vectors_for(TEXTS[:2], embedder)
    have, missing = VectorCache(tmp_path, embedder.model_id, DIM).lookup(TEXTS)
    assert missing == [2]
    np.testing.assert_array_equal(have[:2], np.stack([vector(t) for t in TEXTS[:2]]))
    assert not have[2].any()
    assert cache.coverage(TEXTS) == (2, 3) and len(cache) == 2


def test_a_model_change_uses_another_file_and_never_mixes(tmp_path: Path) -> None:
    first, second = CountingEmbedder("e5@q4-aaaa"), CountingEmbedder("e5@q4-bbbb")
    VectorCache(tmp_path, first.model_id, DIM).vectors_for(TEXTS, first)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    out = VectorCache(tmp_path, second.model_id, DIM).vectors_for(TEXTS, second)
    assert second.seen == TEXTS  # nothing reused from the other model
    np.testing.assert_array_equal(out, np.stack([vector(t, second.model_id) for t in TEXTS]))
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert {k: after[k] for k in before} == before and len(after) == 2 * len(before)
    assert all(name.startswith(("e5_q4-aaaa.passage.", "e5_q4-bbbb.passage.")) for name in after)


def test_a_dimension_change_discards_the_file(tmp_path: Path) -> None:
    VectorCache(tmp_path, "m", DIM).vectors_for(TEXTS, CountingEmbedder("m"))
    wide = CountingEmbedder("m", dim=16)
    cache = VectorCache(tmp_path, "m", 16)
    assert len(cache) == 0
    assert cache.vectors_for(TEXTS, wide).shape == (3, 16) and wide.seen == TEXTS
    assert len(VectorCache(tmp_path, "m", 16)) == 3


def test_a_header_that_lies_about_the_width_is_caught_by_the_rows(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "m", DIM)
    cache.vectors_for(TEXTS, CountingEmbedder("m"))
    cache.meta_path.write_text('{"format": 1, "model": "m", "kind": "passage", "dim": 16}', encoding="utf-8")
    assert len(VectorCache(tmp_path, "m", 16)) == 0 and not cache.path.exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda npy, meta: npy.write_bytes(b"\x93NUMPY garbage" * 10),
        lambda npy, meta: npy.write_bytes(npy.read_bytes()[:-7]),  # torn
        lambda npy, meta: meta.unlink(),
        lambda npy, meta: meta.write_text('{"format": 1, "model": "other", "kind": "passage", "dim": 8}'),
        lambda npy, meta: meta.write_text("{not json"),
    ],
    ids=["garbage", "truncated", "no-header", "foreign-header", "bad-header"],
)
def test_a_damaged_cache_is_rebuilt(tmp_path: Path, damage: Callable[[Path, Path], object]) -> None:
    embedder = CountingEmbedder()
    cache = VectorCache(tmp_path, embedder.model_id, DIM)
    cache.vectors_for(TEXTS, embedder)
    damage(cache.path, cache.meta_path)
    embedder.seen.clear()
    out = VectorCache(tmp_path, embedder.model_id, DIM).vectors_for(TEXTS, embedder)
    assert embedder.seen == TEXTS
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in TEXTS]))
    assert len(VectorCache(tmp_path, embedder.model_id, DIM)) == 3


def test_retain_prunes_chunks_that_are_gone(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    VectorCache(tmp_path, embedder.model_id, DIM).vectors_for(TEXTS, embedder)
    cache = VectorCache(tmp_path, embedder.model_id, DIM)
    assert cache.retain([TEXTS[2], "never embedded"]) == 2
    assert cache.retain([TEXTS[2]]) == 0
    reloaded = VectorCache(tmp_path, embedder.model_id, DIM)
    assert len(reloaded) == 1 and reloaded.coverage(TEXTS) == (1, 3)
    np.testing.assert_array_equal(reloaded.lookup([TEXTS[2]])[0][0], vector(TEXTS[2]))


def test_two_writers_keep_each_others_vectors(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    a = VectorCache(tmp_path, embedder.model_id, DIM)
    b = VectorCache(tmp_path, embedder.model_id, DIM)  # both loaded before either wrote
    a.vectors_for(TEXTS[:2], embedder)
    b.vectors_for(TEXTS[2:], embedder)
    merged = VectorCache(tmp_path, embedder.model_id, DIM)
    assert merged.coverage(TEXTS) == (3, 3)
    np.testing.assert_array_equal(merged.lookup(TEXTS)[0], np.stack([vector(t) for t in TEXTS]))
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp files left


def test_an_unwritable_folder_keeps_vectors_in_memory_and_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "vectors"
    blocker.write_text("a file where the folder should be", encoding="utf-8")
    embedder = CountingEmbedder()
    cache = VectorCache(blocker, embedder.model_id, DIM)
    out = cache.vectors_for(TEXTS, embedder)
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in TEXTS]))
    assert len(cache.warnings) == 1 and "vectors not saved" in cache.warnings[0]
    embedder.seen.clear()
    cache.vectors_for(TEXTS, embedder)
    assert embedder.seen == [] and len(cache.warnings) == 1


def test_misuse_is_refused(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "test/counting@1", DIM)
    with pytest.raises(ValueError, match="expected"):
        cache.vectors_for(TEXTS, CountingEmbedder(dim=4))
    with pytest.raises(ValueError, match="passage vectors, not query"):
        cache.vectors_for(TEXTS, CountingEmbedder(), kind="query")
    assert not os.listdir(tmp_path)


def test_keys_are_16_byte_blake2b_of_the_text() -> None:
    assert digest("배포") == hashlib.blake2b("배포".encode(), digest_size=16).digest()
    assert digest("a") != digest("a ") and len(digest("")) == 16


def test_with_the_onnx_runtime_embedder(tmp_path: Path) -> None:
    for module in ("onnxruntime", "onnx", "tokenizers"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install 'memtree[embed]')")
    import tinyonnx

    from memtree.embedding import load_embedder

    tinyonnx.write_folder(tmp_path / "model", {"model_id": "tiny/lookup@1"})
    embedder = load_embedder(tmp_path / "model")
    texts = ["apple banana", "사과 바나나 커피", "pytest 테스트"]
    cache = VectorCache(tmp_path / "vectors", embedder.model_id, embedder.dim)
    out = cache.vectors_for(texts, embedder)
    np.testing.assert_allclose(out, embedder.embed(texts, "passage"), atol=1e-7)
    calls: list[int] = []
    real = embedder.embed
    embedder.embed = lambda texts, kind, **kw: calls.append(len(texts)) or real(texts, kind, **kw)  # type: ignore[method-assign]
    VectorCache(tmp_path / "vectors", embedder.model_id, embedder.dim).vectors_for([*texts, "cherry"], embedder)
    assert calls == [1]


def test_a_passage_is_the_chunk_under_its_headings() -> None:
    from memtree.index.vectors import passages

    lines = "# Deploy\n\n## Rollback\n\n- revert the tag <!-- memtree:id=a1 -->\n- redeploy\n".split("\n")
    assert passages(lines, [(1, 1), (3, 5), (6, 6)]) == [
        "# Deploy",
        "Deploy\n## Rollback\n\n- revert the tag",
        "Deploy › Rollback\n- redeploy",
    ]
