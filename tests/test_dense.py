"""memtree.index.dense: the numpy backend ranks and scores exactly like the pure-Python one."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import bump, steady

from memtree import MemTree
from memtree.index import dense

pytest.importorskip("numpy")

QUERIES = [
    "가치관이 뭐야?",
    "Reflect 파이프라인 구조",
    "가치",  # a prefix of 가치관
    "정체성",  # a category keyword only: parent fallback
    "집",  # one syllable: matches 집에
    "크론 스케줄 설계 KST",
    "양자역학 블랙홀",  # rejected
]


# Why: decay reads the notes' ages; a pinned moment keeps both runs (and every date) comparable.
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def outcome(mt: MemTree, query: str, tier: str) -> tuple[object, ...]:
    result = mt.search(query, tier=tier, cache=False, now=NOW)
    hits = [(h.node, h.path, h.lines, h.score, steady(h.signals), h.matched) for h in result.hits]
    return result.rejected, [(s.term, s.df) for s in result.term_stats], hits


@pytest.mark.parametrize("tier", ["default", "all"])
def test_both_backends_give_the_same_results(sample_root: Path, monkeypatch: pytest.MonkeyPatch, tier: str) -> None:
    # Why: each search counts a recall, which lifts decay; the second pass must see the first's memory.
    (sample_root / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    note = sample_root / "bank/identity/values.md"
    MemTree(sample_root).refresh()
    bump(note, note.read_text(encoding="utf-8") + "\n가치관 메모: 집에서도 원칙을 지킨다.\n")  # a delta segment
    mt = MemTree(sample_root, refresh_interval=0)
    python = [outcome(mt, q, tier) for q in QUERIES]
    calls = []
    real_score = dense.score

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real_score(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(dense, "DENSE_MIN_POSTINGS", 0)
    monkeypatch.setattr(dense, "score", counted)
    vectorized = [outcome(mt, q, tier) for q in QUERIES]
    assert len(calls) >= len(QUERIES)  # the numpy backend really ran (a refusal asks the other tiers too)
    assert vectorized == python
    assert any(hits for _, _, hits in python)


def test_both_backends_agree_on_words_inside_compounds() -> None:
    from memtree.index import bm25
    from memtree.index.segment import build_segment
    from memtree.text import terms as text

    docs = ["분산데이터베이스를 도입했다", "무중단배포 절차와 배포 일정", "무중단배포만", "국회의원 회의", "데이터"]
    seg = build_segment([("bank/a.md", [(i + 1, i + 1, text.terms(d)) for i, d in enumerate(docs)])])
    for q in (["데이터베이스"], ["배포"], ["회의", "데이터"], ["분산데이터베이스"]):
        py = bm25.score([seg], q, infix=0.5)
        np_ = dense.score([seg], q, infix=0.5)
        chunks = [(0, d) for d in range(len(docs))]
        assert np_.strengths(chunks) == py.strengths(chunks), q
        assert [np_.raw(c) for c in chunks] == pytest.approx([py.raw(c) for c in chunks])
        assert dict(np_.matched()) == pytest.approx(dict(py.matched()))  # each chunk's Σ idf × strength
        assert [(s.term, s.df) for s in np_.stats] == [(s.term, s.df) for s in py.stats]
    assert bm25.score([seg], ["배포"], infix=0.5).strengths([(0, 2)]) == [[0.5]]


def test_both_backends_count_a_chunk_once_when_a_word_matches_several_of_its_terms() -> None:
    """One query word may prefix-match several neighbouring terms (나왔 ~ 나왔다, 나왔으며); a chunk
    holding two of them is one chunk for df and one sum of tf for BM25 (the numpy scorer once took
    such a range's postings for one term's: df 14 where 13 chunks held the word)."""
    from memtree.index import bm25
    from memtree.index.segment import build_segment
    from memtree.text import terms as text

    docs = ["그는 서울에서 나왔다", "책이 나왔으며 곧 다시 나왔다", "다른 이야기", "새 앨범이 나왔지"]
    seg = build_segment([("bank/a.md", [(i + 1, i + 1, text.terms(d)) for i, d in enumerate(docs)])])
    chunks = [(0, d) for d in range(len(docs))]
    py = bm25.score([seg], ["나왔"])
    np_ = dense.score([seg], ["나왔"])
    assert [(s.term, s.df) for s in np_.stats] == [(s.term, s.df) for s in py.stats] == [("나왔", 3)]
    assert [np_.raw(c) for c in chunks] == pytest.approx([py.raw(c) for c in chunks])
    assert np_.raw((0, 1)) > np_.raw((0, 0)) > 0  # two matching words outweigh one
