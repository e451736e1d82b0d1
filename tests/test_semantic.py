"""The semantic layer's fusion, rejection, caching and downgrades, with a small deterministic embedder.

The embedder here maps words to shared "concepts" (테스트 and pytest are both *test*), so meaning
can be matched where no word is shared; the real ONNX model is exercised in test_embed.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import write_root
from typer.testing import CliRunner

np = pytest.importorskip("numpy")

from memtree import MemTree  # noqa: E402
from memtree.cli.app import app  # noqa: E402
from memtree.errors import MemtreeError  # noqa: E402
from memtree.search import semantic  # noqa: E402

CONCEPTS = {
    "테스트": "test",
    "pytest": "test",
    "tests": "test",
    "성능": "speed",
    "높일까": "speed",
    "timeout": "speed",
    "빠르게": "speed",
    "faster": "speed",
    "배포": "deploy",
    "deploy": "deploy",
    "금요일": "friday",
    "friday": "friday",
}
DIM = 16


class ConceptEmbedder:
    """Bag of concepts (unknown words hashed into the rest), L2-normalized; counts what it embeds."""

    def __init__(self, model_id: str = "test/concepts@1") -> None:
        self.model_id, self.dim = model_id, DIM
        self.min_similarity = 0.5
        self.calls: list[int] = []
        self.fail = False

    def embed(
        self,
        texts: Sequence[str],
        kind: str = "passage",
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
    ) -> Any:
        if self.fail:
            raise RuntimeError("onnxruntime exploded")
        self.calls.append(len(texts))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        names = sorted(set(CONCEPTS.values()))
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.casefold()):
                concept = next((c for k, c in CONCEPTS.items() if w.startswith(k)), None)
                j = names.index(concept) if concept else 8 + sum(map(ord, w)) % (DIM - 8)
                out[i, j] += 1.0
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
        return out


NOTES = {
    "bank/tools/pytest.md": "# pytest\n\n- pytest -x --timeout=60 makes the suite stop early and run faster\n",
    "bank/ops/deploy.md": "# Deploy\n\n- 배포는 금요일에 하지 않는다\n",
    "bank/misc/coffee.md": "# Coffee\n\n- 커피는 오후에 마시지 않는다\n",
}


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> ConceptEmbedder:
    pytest.importorskip("memtree.index.vectors", reason="the vector cache (memtree.index.vectors) is needed")
    fake = ConceptEmbedder()
    monkeypatch.setattr(semantic, "load", lambda model_dir: fake)
    return fake


def _root(tmp_path: Path, yaml: str = "embed:\n  enabled: 'on'\n") -> Path:
    return write_root(tmp_path, {**NOTES, "memtree.yaml": yaml})


def test_meaning_finds_what_no_word_matches(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path)
    keyword_only = MemTree(root, refresh_interval=0).search("테스트 성능을 어떻게 높일까", semantic=False)
    assert keyword_only.rejected and not keyword_only.hits
    result = MemTree(root, refresh_interval=0).search("테스트 성능을 어떻게 높일까")
    assert result.hits and result.hits[0].path == "bank/tools/pytest.md"
    top = result.hits[0]
    assert top.signals["semantic"] > 0.5 and top.signals["semantic_norm"] == 1.0
    assert result.weights["keyword"] == 0.6 and result.weights["semantic"] == 0.4
    assert "semantic: cosine" in top.explain(0.4, 0.6)


def test_the_linear_blend_is_the_documented_arithmetic(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    result = MemTree(_root(tmp_path), refresh_interval=0).search("배포 금요일 deploy", k=3)
    for h in result.hits:
        s = h.signals
        assert s["blended"] == pytest.approx(0.6 * s["keyword"] + 0.4 * s["semantic_norm"], abs=2e-4)
        text_factors = s["evidence"] * s["adjacency"]  # coverage and adjacency rank the blend (DESIGN §3.8)
        assert h.score == pytest.approx(s["blended"] * text_factors * s["decay"] * s["recency"] * s["scope"], abs=2e-3)


def test_rrf_fusion_is_an_option(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path, "embed:\n  enabled: 'on'\n  fusion: rrf\n")
    result = MemTree(root, refresh_interval=0).search("배포 금요일", k=3)
    assert result.weights["rrf_k"] == 60
    assert result.hits[0].path == "bank/ops/deploy.md" and result.hits[0].signals["blended"] == pytest.approx(1.0)


def test_nothing_close_in_words_or_meaning_is_rejected(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    result = MemTree(_root(tmp_path), refresh_interval=0).search("양자역학 블랙홀 증명")
    assert not result.hits and result.rejected
    assert "nothing means it closely either" in result.rejected


def test_vectors_are_cached_and_only_new_chunks_embedded(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    mt.search("배포 금요일")
    assert embedder.calls[0] == 3  # every chunk once, then the query
    embedder.calls.clear()
    MemTree(root, refresh_interval=0).search("배포 금요일")  # a new process: vectors from .memtree/
    assert embedder.calls == [1]
    (root / "bank/misc/coffee.md").write_text("# Coffee\n\n- 커피는 오전에만 마신다\n", encoding="utf-8")
    embedder.calls.clear()
    mt.search("커피 오전", cache=False)
    assert embedder.calls == [1, 1]  # the one changed chunk, then the query


def test_a_model_change_never_mixes_vectors(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path)
    MemTree(root, refresh_interval=0).search("배포 금요일")
    embedder.model_id = "test/concepts@2"
    embedder.calls.clear()
    MemTree(root, refresh_interval=0).search("배포 금요일")
    assert embedder.calls[0] == 3  # everything again, for the new model


def test_index_embed_turns_the_layer_on_in_auto_mode(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path, "")
    mt = MemTree(root, refresh_interval=0)
    assert "semantic" not in mt.search("배포 금요일").hits[0].signals  # auto, no vectors yet: keyword only
    assert embedder.calls == []  # and the model was never loaded
    result = MemTree(root, refresh_interval=0).index(embed=True)
    assert result.embedded is not None and result.embedded["embedded"] == 3 and result.embedded["chunks"] == 3
    assert "semantic" in MemTree(root, refresh_interval=0).search("배포 금요일").hits[0].signals


def test_too_many_new_chunks_wait_for_index_embed(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path, "embed:\n  enabled: 'on'\n  max_new: 2\n")
    result = MemTree(root, refresh_interval=0).search("배포 금요일")
    assert result.hits and result.hits[0].path == "bank/ops/deploy.md"
    assert any("3 chunks have no vectors yet" in w for w in result.warnings)


def test_a_missing_extra_or_model_downgrades_to_keywords_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(model_dir: str | None) -> Any:
        raise MemtreeError("pip install 'memtree[embed]' to search by meaning")

    monkeypatch.setattr(semantic, "load", missing)
    mt = MemTree(_root(tmp_path), refresh_interval=0)
    first = mt.search("배포 금요일")
    second = mt.search("pytest timeout")
    assert first.hits and second.hits
    assert first.warnings == ("semantic search off, keyword only: pip install 'memtree[embed]' to search by meaning",)
    assert second.warnings == ()
    assert "semantic" not in first.hits[0].signals


def test_an_embedder_failing_mid_search_does_not_stop_the_search(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    embedder.fail = True
    result = MemTree(_root(tmp_path), refresh_interval=0).search("배포 금요일")
    assert result.hits and result.hits[0].path == "bank/ops/deploy.md"
    assert any("onnxruntime exploded" in w for w in result.warnings)


def test_cli_json_carries_the_notice_and_keeps_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "load", lambda model_dir: (_ for _ in ()).throw(MemtreeError("no model here")))
    root = _root(tmp_path)
    runner = CliRunner()
    found = runner.invoke(app, ["search", "배포 금요일", "--root", str(root), "--json"])
    assert found.exit_code == 0
    assert json.loads(found.stdout)["warnings"] == ["semantic search off, keyword only: no model here"]
    missing = runner.invoke(app, ["search", "양자역학 블랙홀", "--root", str(root), "--json"])
    assert missing.exit_code == 1
    embed = runner.invoke(app, ["index", "--embed", "--root", str(root)])
    assert embed.exit_code == 2 and "no model here" in embed.stderr


def test_a_message_is_embedded_as_its_question_not_its_greeting(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path)
    message = "Hello! Hello again, hello from the office. 테스트 성능을 어떻게 높일까?"
    assert semantic.query_texts(message, 4) == ["테스트 성능을 어떻게 높일까?"]
    # embedded whole, the greeting dilutes the meaning below the fake model's τ (0.5)
    whole, chunk = embedder.embed([message, "pytest -x --timeout=60 makes the suite stop early and run faster"])
    assert float(whole @ chunk) < embedder.min_similarity
    assert MemTree(root, refresh_interval=0).search(message, semantic=False).rejected
    result = MemTree(root, refresh_interval=0).search(message)
    assert result.hits and result.hits[0].path == "bank/tools/pytest.md"
    assert result.hits[0].signals["semantic"] >= embedder.min_similarity


def test_a_plain_question_or_a_message_without_one_is_embedded_whole() -> None:
    assert semantic.query_texts("테스트 성능을 어떻게 높일까?", 4) == ["테스트 성능을 어떻게 높일까?"]
    remark = "Hi there. The deploy went fine today."
    assert semantic.query_texts(remark, 4) == [remark]
    assert semantic.query_texts("Hi there. When do we deploy?", 0) == ["Hi there. When do we deploy?"]


def test_a_question_naming_a_date_is_embedded_with_its_date() -> None:
    asked = "What did Elise buy on Jan. 7, 2024?"
    assert semantic.query_texts(f"Hi! {asked} Thanks.", 4) == [asked]
    assert semantic.query_texts("안녕하세요. 2024. 1. 7. 회의에서 뭘 정했나요? 감사합니다", 4) == [
        "2024. 1. 7. 회의에서 뭘 정했나요?"
    ]


def test_a_long_prompt_costs_a_bounded_number_of_query_embeddings(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    mt.search("배포 금요일")  # every chunk embedded once
    embedder.calls.clear()
    asides = " ".join(f"Question {i}: is item {i} still open? It was on the list." for i in range(50))
    prompt = f"Hello! {asides} When do we deploy, on friday?"
    assert len(prompt) > 2800
    mt.search(prompt, cache=False)
    assert embedder.calls == [4]  # the four longest questions, in one batch
