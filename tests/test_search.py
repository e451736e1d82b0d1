"""memtree.search.pipeline through MemTree: ranking, hits, rejection, tiers, k, budget, cache, fallback."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import bump, final_score, node, tree_json

from memtree import MemTree
from memtree.index.chunk_index import Index
from memtree.search.result import Hit
from memtree.text import terms as text

SIGNALS = {"tree", "bm25", "bm25_norm", "keyword", "coverage"}


@pytest.fixture
def mt(sample_root: Path) -> MemTree:
    return MemTree(sample_root, refresh_interval=0)


def test_values_question_ranks_identity_values_first(mt: MemTree) -> None:
    result = mt.search("가치관이 뭐야?")
    assert result.rejected is None
    assert result.terms == ("가치관",)
    assert result.hits[0].node == "identity/values"
    assert result.hits[0].path == "bank/identity/values.md"


def test_reflect_pipeline_question_ranks_heartbeat_reflect_first(mt: MemTree) -> None:
    result = mt.search("Reflect 파이프라인 구조")
    assert result.hits[0].node == "technical/heartbeat-reflect"


def test_cron_question_with_particles_finds_cron_design(mt: MemTree) -> None:
    result = mt.search("크론 스케줄을 어떻게 설계했어?")
    assert result.hits[0].node == "technical/cron-design"


def test_nfd_query_gives_the_same_hits(sample_root: Path) -> None:
    # Why no reinforcement: the first search's recall counts would lift the second's decay
    (sample_root / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    mt = MemTree(sample_root, refresh_interval=0)
    query = "가치관이 뭐야?"
    nfc = mt.search(query)
    nfd = mt.search(unicodedata.normalize("NFD", query))
    assert unicodedata.normalize("NFD", query) != query
    assert [(h.path, h.lines, h.score) for h in nfd.hits] == [(h.path, h.lines, h.score) for h in nfc.hits]


def test_hits_carry_location_score_signals_and_the_exact_lines(mt: MemTree, sample_root: Path) -> None:
    result = mt.search("크론 스케줄 설계")
    assert result.hits
    for hit in result.hits:
        assert isinstance(hit, Hit)
        assert hit.node == mt.tree.by_path[hit.path].id
        start, end = hit.lines
        assert 1 <= start <= end
        assert set(hit.signals) >= SIGNALS
        assert 0.0 <= hit.signals["tree"] <= 1.0 and 0.0 <= hit.signals["bm25_norm"] <= 1.0
        assert hit.signals["keyword"] == pytest.approx(
            0.4 * hit.signals["tree"] + 0.6 * hit.signals["bm25_norm"], abs=1e-3
        )
        assert hit.score == pytest.approx(final_score(hit.signals), abs=1e-3)
        lines = (sample_root / hit.path).read_text(encoding="utf-8").split("\n")
        assert hit.text == "\n".join(lines[start - 1 : end])
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_a_query_about_something_absent_is_rejected_with_a_reason(mt: MemTree) -> None:
    result = mt.search("양자역학 블랙홀 증명")
    assert result.hits == ()
    assert result.rejected and result.rejected.startswith("no confident match")
    assert "\n" not in result.rejected
    assert "양자역학" in result.rejected


def test_memory_tier_is_searched_only_when_asked(mt: MemTree) -> None:
    query = "gateway 부하"  # words that occur only in memory/2026-11-27.md
    assert mt.search(query).hits == ()
    assert mt.search(query, tier="bank").hits == ()
    for tier in ("memory", "all"):
        hits = mt.search(query, tier=tier).hits
        assert hits[0].path == "memory/2026-11-27.md" and hits[0].tier == "memory"


def test_the_reason_for_terms_found_only_in_an_unsearched_tier_names_them(mt: MemTree) -> None:
    result = mt.search("gateway 부하")  # both words occur, but only in memory/
    assert result.hits == () and result.rejected
    assert "()" not in result.rejected  # not "no term of the query occurs in memory ()"
    assert "gateway" in result.rejected and "부하" in result.rejected


def test_k_limits_the_number_of_hits(mt: MemTree) -> None:
    matching = len(mt.search("Reflect", k=50).hits)  # every chunk under a "Reflect" heading matches
    assert 5 < matching < 50
    assert len(mt.search("Reflect").hits) == 5  # search.max_results
    assert len(mt.search("Reflect", k=2).hits) == 2


@pytest.mark.parametrize("budget", [1, 40, 120, 400])
def test_budget_limits_the_estimated_tokens_of_hit_texts(mt: MemTree, budget: int) -> None:
    hits = mt.search("가치관 원칙", budget=budget).hits
    assert hits
    assert sum(text.estimate_tokens(h.text) for h in hits) <= budget
    unlimited = mt.search("가치관 원칙").hits
    if sum(text.estimate_tokens(h.text) for h in unlimited) > budget:
        assert any(h.truncated for h in hits)


def test_the_query_cache_returns_the_same_result_until_a_note_changes(mt: MemTree, sample_root: Path) -> None:
    first = mt.search("크론 스케줄")
    assert mt.search("크론 스케줄") is first
    note = sample_root / "bank/technical/cron-design.md"
    bump(note, note.read_text(encoding="utf-8") + "\n크론 스케줄에 얼룩말 점검을 더한다.\n")
    second = mt.search("크론 스케줄")
    assert second is not first
    assert any("얼룩말" in h.text for h in second.hits)  # the new line is a short, dense match
    assert mt.search("크론 스케줄") is second


def test_recall_hits_are_searched_and_win_ties(mt: MemTree, sample_root: Path) -> None:
    (sample_root / "recall/values.md").write_text(
        "가치관 요약: 틀린 기억은 없는 기억보다 나쁘다. (bank/identity/values.md)\n", encoding="utf-8"
    )
    hits = mt.search("가치관 요약 틀린 기억").hits
    assert hits[0].path == "recall/values.md" and hits[0].tier == "recall"  # the best match is the excerpt
    assert list(hits) == sorted(hits, key=lambda h: (-h.score, h.tier != "recall"))


def test_a_weak_recall_hit_does_not_jump_ahead_of_a_confident_bank_hit(sample_root: Path) -> None:
    # the recall excerpt holds one of four query terms; decay off: the sample ages, the excerpt is new
    (sample_root / "memtree.yaml").write_text("search:\n  decay: false\n", encoding="utf-8")
    mt = MemTree(sample_root, refresh_interval=0)
    (sample_root / "recall/kst.md").write_text("- KST 기준.\n", encoding="utf-8")
    result = mt.search("크론 스케줄 설계 KST", k=50)
    recall = [h for h in result.hits if h.tier == "recall"]
    assert recall and recall[0].signals["coverage"] < result.hits[0].signals["coverage"]
    assert result.hits[0].node == "technical/cron-design"
    assert result.hits[0].score > recall[0].score


def test_a_confident_recall_excerpt_goes_first_only_when_it_matches_at_least_as_well(sample_root: Path) -> None:
    # Why: the excerpt lacks the query's distinctive word (설계); a bank chunk holding all of it must lead.
    # Decay off: the sample's notes age with the calendar and the excerpt is new; this is about the match.
    (sample_root / "memtree.yaml").write_text("search:\n  decay: false\n", encoding="utf-8")
    mt = MemTree(sample_root, refresh_interval=0)
    (sample_root / "recall/cron.md").write_text("- 크론 스케줄은 매일 돈다.\n", encoding="utf-8")
    result = mt.search("크론 스케줄 설계", k=50)
    recall = [h for h in result.hits if h.tier == "recall"]
    assert recall and recall[0].signals["coverage"] >= mt.settings.search.reject_threshold
    assert result.hits[0].tier == "bank" and result.hits[0].score > recall[0].score
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_parent_fallback_routes_a_category_keyword_to_its_children(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/identity/values.md": "# 가치관\n\n정직과 신뢰를 가장 중요하게 생각한다.\n",
            "bank/identity/tone.md": "# 말투\n\n차분한 해요체로 말한다.\n",
            "bank/tech/cron.md": "# 크론\n\n매일 새벽 세 시에 색인을 점검한다.\n",
        },
        [
            node("identity", keywords=["정체성"], children=["identity/tone", "identity/values"]),
            node("identity/values", "bank/identity/values.md", keywords=["가치관"], parent="identity"),
            node("identity/tone", "bank/identity/tone.md", keywords=["말투"], parent="identity"),
            node("tech", keywords=["기술"], children=["tech/cron"]),
            node("tech/cron", "bank/tech/cron.md", keywords=["크론"], parent="tech"),
        ],
    )
    result = MemTree(root, refresh_interval=0).search("정체성이 뭐야")  # 정체성 is in no note's text
    assert result.rejected is None
    assert {h.node for h in result.hits} == {"identity/values", "identity/tone"}
    assert all(h.signals["tree"] > 0 and h.signals["bm25"] == 0 for h in result.hits)


def test_a_tree_keyword_alone_routes_to_its_note(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {"bank/a.md": "사과와 배\n", "bank/b.md": "망치와 못\n"},
        [node("fruit", "bank/a.md", keywords=["과일"]), node("tools", "bank/b.md", keywords=["공구"])],
    )
    hits = MemTree(root, refresh_interval=0).search("과일").hits
    assert [h.node for h in hits] == ["fruit"]


def test_a_hand_edit_of_tree_index_is_seen_by_the_next_search(make_root: Callable[..., Path]) -> None:
    files = {"bank/a.md": "사과와 배\n", "bank/b.md": "망치와 못\n"}
    nodes = [node("fruit", "bank/a.md", keywords=["과일"]), node("tools", "bank/b.md", keywords=["공구"])]
    root = make_root(files, nodes)
    mt = MemTree(root, refresh_interval=0)
    assert [h.node for h in mt.search("과일").hits] == ["fruit"]
    nodes[1]["keywords"] = ["공구", "과일가게"]  # a person adds a keyword by hand
    (root / "tree-index.json").write_text(tree_json(nodes), encoding="utf-8")
    for searcher in (mt, MemTree(root, refresh_interval=0)):
        routed = {h.node: h.signals["tree"] for h in searcher.search("과일가게").hits}
        assert routed["tools"] == 1.0 and routed["fruit"] == pytest.approx(0.7)


def test_a_routed_note_lifts_its_chunks_by_the_share_of_the_query_they_hold(make_root: Callable[..., Path]) -> None:
    # note a is routed by 배포 (its keyword) but its chunks hold only 배포; note b is not routed, yet
    # one of its chunks holds every query word: the route must not carry a half match past it.
    root = make_root(
        {
            "bank/a.md": "- 배포는 금요일에 하지 않는다.\n- 배포 전에 체크리스트를 본다.\n",
            "bank/b.md": "- 롤백 스크립트로 배포 실패를 되돌린다.\n- 커피는 오후에.\n",
        },
        [node("deploy", "bank/a.md", keywords=["배포"]), node("misc", "bank/b.md", keywords=["잡담"])],
    )
    result = MemTree(root, refresh_interval=0).search("배포 실패 롤백 스크립트")
    top = result.hits[0]
    assert top.path == "bank/b.md" and top.lines == (1, 1)
    routed = [h for h in result.hits if h.node == "deploy"]
    assert routed and all(0 < h.signals["tree"] < h.signals["route"] for h in routed)
    for h in result.hits:  # the arithmetic --explain prints still holds
        assert h.signals["keyword"] == pytest.approx(0.4 * h.signals["tree"] + 0.6 * h.signals["bm25_norm"], abs=1e-3)


def test_the_idf_cache_is_dropped_when_a_note_changes(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "- 배포는 금요일에 하지 않는다.\n", "bank/b.md": "- 커피는 오후에.\n"})
    mt = MemTree(root, refresh_interval=0)
    first = mt.search("배포", cache=False)
    assert [h.path for h in first.hits] == ["bank/a.md"] and first.term_stats[0].df == 1
    bump(root / "bank/b.md", "- 커피는 오후에.\n- 배포 뒤에는 커피.\n")
    second = mt.search("배포", cache=False)  # same term: its cached matches must not be reused
    assert second.term_stats[0].df == 2
    assert {h.path for h in second.hits} == {"bank/a.md", "bank/b.md"}


class _OpaqueAnswer:
    """A query's answer seen only through memtree.index.protocol.Scores, its chunks named by strings."""

    def __init__(self, scored: Any) -> None:
        self._scored = scored

    @property
    def stats(self) -> Any:
        return self._scored.stats

    def top(self, *args: Any, **kwargs: Any) -> Any:
        ranked, blend = self._scored.top(*args, **kwargs)
        return [(kw, _name(ref)) for kw, ref in ranked], blend

    def raw(self, ref: str) -> float:
        return float(self._scored.raw(_ref(ref)))

    def strengths(self, refs: list[str]) -> Any:
        return self._scored.strengths([_ref(r) for r in refs])

    def evidence(self, refs: list[str]) -> Any:
        return self._scored.evidence([_ref(r) for r in refs])

    def matched(self) -> Any:
        return ((_name(ref), ev) for ref, ev in self._scored.matched())

    def locate(self, refs: list[str]) -> Any:
        return self._scored.locate([_ref(r) for r in refs])


class _OpaqueEngine:
    """memtree's chunk index seen only through memtree.index.protocol.Engine: another engine's shape."""

    def __init__(self, index: Index) -> None:
        self._index = index

    @property
    def version(self) -> int:
        return self._index.version

    def score(self, *args: Any, **kwargs: Any) -> _OpaqueAnswer:
        return _OpaqueAnswer(self._index.score(*args, **kwargs))

    def chunks(self, *args: Any, **kwargs: Any) -> Any:
        return ((_name(ref), where) for ref, where in self._index.chunks(*args, **kwargs))


def _name(ref: tuple[int, int]) -> str:
    return f"chunk {ref[0]}/{ref[1]}"


def _ref(name: str) -> tuple[int, int]:
    si, d = name.split()[1].split("/")
    return int(si), int(d)


@pytest.mark.parametrize("evidence_weight", [0.0, 0.5])  # plain ranking, and lazy weighing by evidence
def test_the_pipeline_needs_nothing_of_an_engine_but_the_protocol(sample_root: Path, evidence_weight: float) -> None:
    # Why: another engine (SQLite FTS, Milvus) must be able to serve the same pipeline; this one
    # hides segments and names chunks by strings search cannot look inside.
    from dataclasses import replace

    from memtree.config import load_settings
    from memtree.index.routing import KeywordIndex
    from memtree.notes import tree as treemod
    from memtree.search.pipeline import run

    index = Index(sample_root)
    index.refresh()
    tree = treemod.load(sample_root)
    settings = replace(load_settings(sample_root).search, evidence_weight=evidence_weight)

    def read_lines(path: str) -> list[str]:
        return (sample_root / path).read_text(encoding="utf-8").split("\n")

    queries = [
        "가치관이 뭐야?",
        "크론 스케줄 설계 KST",
        "정체성",
        "양자역학 블랙홀",
        "Reflect 파이프라인은 어떻게 도나요?",
    ]

    def search_all(engine: Any) -> list[Any]:
        keywords = KeywordIndex(tree)
        tiers = ("recall", "bank")
        return [run(engine, tree, keywords, q, text.query_terms(q), 5, tiers, settings, read_lines) for q in queries]

    results = search_all(_OpaqueEngine(index))
    assert results == search_all(index)
    assert sum(bool(r.hits) for r in results) >= 3 and any(r.rejected for r in results)


def test_a_refusal_says_which_tier_holds_a_missing_word(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/tools.md": "# Tools\n\n- We deploy the API with GitHub Actions\n",
            "memory/2026-03-02.md": "# 2026-03-02\n\n- 10:00 switched the web app from npm to pnpm\n",
        },
        None,
    )
    mt = MemTree(root, refresh_interval=0)
    refused = mt.search("pnpm", k=3)
    assert refused.hits == () and refused.rejected
    assert "pnpm is in memory/, which --tier memory searches" in refused.rejected
    assert "occurs in memory" not in refused.rejected  # it does: in a log
    assert mt.search("pnpm", k=3, tier="all").hits
    gone = mt.search("kubernetes", k=3)
    assert gone.rejected and "occurs in memory (kubernetes)" in gone.rejected and "--tier" not in gone.rejected


def test_a_refusal_says_when_every_word_is_held_but_apart(make_root: Callable[..., Path]) -> None:
    # four words, each in a passage of its own: no passage holds more than a quarter of the query
    words = ["deploy", "rollback", "canary", "sidecar"]
    notes = "\n\n".join(f"- {word} appears here, line {i}, with other words around it" for i, word in enumerate(words))
    root = make_root({"bank/words.md": f"# Words\n\n{notes}\n"}, None)
    refused = MemTree(root, refresh_interval=0).search(" ".join(words), k=3)
    assert refused.hits == () and refused.rejected
    assert refused.rejected.endswith("every word is in memory, but no passage holds enough of them together")
