"""index.backend: milvus with the semantic layer on, against a real Milvus Lite: vectors in the rows,
the layer's candidates from Milvus's dense search, rebuilds on a model change or a layer toggle.

Nothing is mocked at the engine boundary: notes are synced into a Milvus Lite file under tmp_path
and read back from it. The embedder is a small deterministic one at the embedder seam (words map to
shared concepts, so meaning matches where no word is shared), as in test_semantic.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import write_root

np = pytest.importorskip("numpy")
pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from memtree import MemTree, embedding  # noqa: E402
from memtree.index import vectors  # noqa: E402
from memtree.index.milvus.index import MilvusIndex  # noqa: E402
from memtree.search.served import ServedScores  # noqa: E402

NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
MILVUS = "index:\n  backend: milvus\n  milvus:\n    timeout_s: 60\nsearch:\n  reinforce: false\n"
ON = 'embed:\n  enabled: "on"\n'
CONCEPTS = {"테스트": "test", "pytest": "test", "tests": "test", "성능": "speed", "높일까": "speed", "timeout": "speed"}
CONCEPTS |= {"빠르게": "speed", "faster": "speed"}
CONCEPTS |= {"배포": "deploy", "deploy": "deploy", "금요일": "friday", "friday": "friday", "커피": "coffee"}
DIM = 16
NOTES = {
    "bank/tools/pytest.md": "# pytest\n\n- pytest -x --timeout=60 makes the suite stop early and run faster\n",
    "bank/ops/deploy.md": "# Deploy\n\n- 배포는 금요일에 하지 않는다\n",
    "bank/misc/coffee.md": "# Coffee\n\n- 커피는 오후에 마시지 않는다\n",
    "memory/2026-11-30.md": "- 09:00 pytest runs got faster after the timeout change\n",
}
MEANING_ONLY = "테스트 성능을 어떻게 높일까"  # shares no word with the pytest note, only concepts


class ConceptEmbedder:
    """Bag of concepts (unknown words hashed into the rest), L2-normalized; counts what it embeds."""

    def __init__(self, model_id: str = "test/concepts@1") -> None:
        self.model_id, self.dim, self.min_similarity = model_id, DIM, 0.5
        self.embedded: list[str] = []

    def embed(
        self,
        texts: Sequence[str],
        kind: str = "passage",
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
    ) -> Any:
        if kind == "passage":
            self.embedded += texts
        names = sorted(set(CONCEPTS.values()))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.casefold()):
                concept = next((c for k, c in CONCEPTS.items() if w.startswith(k)), None)
                out[i, names.index(concept) if concept else 8 + sum(map(ord, w)) % (DIM - 8)] += 1.0
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
        return out


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> ConceptEmbedder:
    fake = ConceptEmbedder()
    monkeypatch.setattr(embedding, "load_embedder", lambda model_dir=None, threads=2: fake)
    return fake


def make_root(tmp_path: Path, name: str, yaml: str, notes: dict[str, str] | None = None) -> Path:
    return write_root(tmp_path / name, {**(notes or NOTES), "memtree.yaml": yaml})


def engine_of(mt: MemTree) -> MilvusIndex:
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex)
    return engine


def held_rows(engine: MilvusIndex, fields: Sequence[str] = ("path", "start", "end", "dense")) -> list[dict[str, Any]]:
    """What the collection holds now, read back from Milvus."""
    assert engine.collection is not None
    found = engine.collection.client.query(engine.name, filter="", output_fields=list(fields), limit=16384)
    return list(found)


def field_names(engine: MilvusIndex) -> set[str]:
    assert engine.collection is not None
    return {f["name"] for f in engine.collection.client.describe_collection(engine.name)["fields"]}


def path_of(engine: MilvusIndex, ref: tuple[int, int]) -> str:
    return engine.segment_list()[ref[0]][1].locate(ref[1]).path


def passages(root: Path, engine: MilvusIndex) -> dict[tuple[str, int, int], str]:
    out = {}
    for _, where in engine.chunks():
        lines = (root / where.path).read_text(encoding="utf-8").split("\n")
        out[(where.path, where.start, where.end)] = vectors.passages(lines, [(where.start, where.end)])[0]
    return out


def test_rows_carry_the_cached_vectors_embedded_once(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = make_root(tmp_path, "m", MILVUS + ON)
    mt = MemTree(root, refresh_interval=3600)
    result = mt.index(embed=True)
    engine = engine_of(mt)
    assert engine.in_step and engine.dense_model() == "test/concepts@1"
    assert result.embedded is not None and result.embedded["chunks"] == len(NOTES)
    texts = passages(root, engine)
    assert sorted(embedder.embedded) == sorted(texts.values())  # each chunk once: the rows took the cache's
    cache = vectors.VectorCache(root / ".memtree" / "vectors", embedder.model_id, DIM)
    held = held_rows(engine)
    assert len(held) == len(texts)
    for row in held:
        text = texts[(row["path"], row["start"], row["end"])]
        cached, missing = cache.lookup([text])
        assert not missing
        assert np.allclose(np.asarray(row["dense"], dtype=np.float32), cached[0], atol=1e-6)
    # a change that keeps a chunk's terms but not its text (its vector differs) sends that row again
    deploy = root / "bank/ops/deploy.md"
    deploy.write_text(deploy.read_text(encoding="utf-8").replace("않는다", "않는다!"), encoding="utf-8")
    mt.refresh()
    assert engine.sent == 1 and engine.deleted == 0


def test_a_chunk_found_only_by_meaning_comes_from_milvus_as_it_does_locally(
    tmp_path: Path, embedder: ConceptEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    milvus = MemTree(make_root(tmp_path, "m", MILVUS + ON), refresh_interval=3600)
    milvus.index(embed=True)
    engine = engine_of(milvus)
    asked: list[int] = []
    nearest = engine.nearest
    monkeypatch.setattr(engine, "nearest", lambda q, n, *a: asked.append(n) or nearest(q, n, *a))  # observed only
    local = MemTree(make_root(tmp_path, "l", "search:\n  reinforce: false\n" + ON), refresh_interval=3600)
    local.index(embed=True)
    assert not MemTree(local.root).search(MEANING_ONLY, semantic=False, now=NOW).hits  # no keyword reaches it
    for query, tier in ((MEANING_ONLY, "all"), (MEANING_ONLY, "bank"), ("배포 금요일", "bank"), ("coffee", "all")):
        # k = 2: past the chunks near in meaning, the rest tie at no shared concept, in no set order
        ours = milvus.search(query, k=2, cache=False, now=NOW, tier=tier)
        theirs = local.search(query, k=2, cache=False, now=NOW, tier=tier)
        assert [(h.path, h.lines) for h in ours.hits] == [(h.path, h.lines) for h in theirs.hits], query
        assert [h.score for h in ours.hits] == pytest.approx([h.score for h in theirs.hits], abs=1e-6)
        for a, b in zip(ours.hits, theirs.hits):
            assert a.signals == pytest.approx(b.signals, abs=1e-4)
    assert milvus.search(MEANING_ONLY, k=1, cache=False, now=NOW).hits[0].path == "bank/tools/pytest.md"
    layer = milvus.state.semantic
    assert layer is not None and layer.served(engine)
    assert len(asked) == 2 * 5  # every query asked Milvus for its nearest chunks, and for its floor


def test_tier_and_bank_filters_apply_to_the_semantic_candidates(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = make_root(tmp_path, "m", MILVUS + ON + "banks:\n  disabled: [ops]\n")
    mt = MemTree(root, refresh_interval=3600)
    mt.index(embed=True)
    engine = engine_of(mt)
    query = embedder.embed([MEANING_ONLY], kind="query")
    everywhere = {path_of(engine, ref) for ref, _ in engine.nearest(query, 10, None)[0]}
    assert everywhere == set(NOTES)
    banks = {path_of(engine, ref) for ref, _ in engine.nearest(query, 10, frozenset({"bank"}), ("bank/ops/",))[0]}
    assert banks == {"bank/tools/pytest.md", "bank/misc/coffee.md"}
    found = mt.search("deploy on friday", k=5, cache=False, now=NOW, tier="all")
    assert "bank/ops/deploy.md" not in {h.path for h in found.hits}  # its bank is disabled
    scores = ServedScores(engine, query, (frozenset({"memory"}), ()), 0.6, 0.4, "linear", 0.5)
    assert [path_of(engine, ref) for ref in scores.top(5)] == ["memory/2026-11-30.md"]
    assert scores.best == scores.low  # one chunk searched: it is both ends of the normalization


def test_the_floor_of_the_normalization_is_the_local_one(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    notes = dict(NOTES)
    for i in range(12):
        notes[f"bank/more/n{i}.md"] = f"- note {i} about {'배포' if i % 3 else 'coffee'} and item{i}\n"
    milvus = MemTree(make_root(tmp_path, "m", MILVUS + ON, notes), refresh_interval=3600)
    milvus.index(embed=True)
    local = MemTree(make_root(tmp_path, "l", ON, notes), refresh_interval=3600)
    local.index(embed=True)
    searched = (frozenset({"bank", "memory", "recall"}), ())
    for query in (MEANING_ONLY, "배포 금요일", "coffee item3"):
        milvus.search(query, cache=False, now=NOW)
        local.search(query, cache=False, now=NOW)
        ours, mine = milvus.state.semantic, local.state.semantic
        served = ours.scores(milvus.state.index, query, searched, milvus.state.read_lines)
        theirs = mine.scores(local.state.index, query, searched, local.state.read_lines)
        assert isinstance(served, ServedScores) and theirs is not None
        assert (served.best, served.low) == pytest.approx((theirs.best, theirs.low), abs=1e-6)
        assert len(served.top(8)) == 8
        assert [served.cos(r) for r in served.top(8)] == pytest.approx([theirs.cos(r) for r in theirs.top(8)], abs=1e-6)


def test_a_layer_turned_on_or_a_model_change_rebuilds_the_collection(tmp_path: Path, embedder: ConceptEmbedder) -> None:
    root = make_root(tmp_path, "m", MILVUS)  # embed.enabled auto, no vectors yet: keyword only
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    engine = engine_of(mt)
    keyword_only = engine.name
    assert "dense" not in field_names(engine) and engine.dense_model() is None
    assert embedder.embedded == []  # a keyword-only memory never loads the model
    mt.index(embed=True)  # the layer turns on: another collection, every row sent once, with its vector
    assert engine.name != keyword_only and "dense" in field_names(engine)
    assert engine.sent == len(NOTES) and engine.dense_model() == "test/concepts@1"
    assert keyword_only not in engine.collection.client.list_collections()  # dropped, never mixed
    assert all(len(row["dense"]) == DIM for row in held_rows(engine))
    first = engine.name
    embedder.model_id = "test/concepts@2"  # another model (a new process would load it)
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_all()  # let the next MemTree open the Lite file this one holds
    again = MemTree(root, refresh_interval=3600)
    again.index(embed=True)
    other = engine_of(again)
    assert other.name != first and other.sent == len(NOTES) and other.dense_model() == "test/concepts@2"
    (root / "memtree.yaml").write_text(MILVUS + 'embed:\n  enabled: "off"\n', encoding="utf-8")
    server_manager_instance.release_all()
    off = MemTree(root, refresh_interval=3600)
    off.index()
    assert engine_of(off).name == keyword_only and "dense" not in field_names(engine_of(off))
    assert engine_of(off).sent == len(NOTES)


def test_a_model_that_cannot_load_leaves_a_keyword_only_collection_and_one_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(model_dir: str | None = None, threads: int = 2) -> Any:
        raise embedding.EmbedUnavailable("the embed extra is not installed")

    monkeypatch.setattr(embedding, "load_embedder", missing)
    mt = MemTree(make_root(tmp_path, "m", MILVUS + ON), refresh_interval=3600)
    mt.index()
    engine = engine_of(mt)
    assert engine.in_step and engine.dense_model() is None and "dense" not in field_names(engine)
    result = mt.search("배포 금요일", k=1, cache=False, now=NOW)
    assert result.hits and result.hits[0].path == "bank/ops/deploy.md"
    notices = [w for w in result.warnings if "semantic search off" in w]
    assert len(notices) == 1 and "embed extra" in notices[0]
