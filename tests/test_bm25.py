"""memtree.index.bm25 (textbook BM25 on exact tokens, checked against rank_bm25; soft Korean
matching) and the segments it scores (memtree.index.segment: both CSR layouts, merging)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from memtree.index import bm25, segment
from memtree.index.segment import Segment, build_segment
from memtree.text import terms as text
from memtree.text.match import EXACT

# Words that are their own index term (no stemming, no stopword) and not prefixes of each other.
VOCAB = "banana cherry lemon mango melon peach plum kiwi walnut almond pepper carrot radish turnip".split()

CORPUS = [
    "banana cherry banana lemon",
    "mango melon peach plum kiwi walnut",
    "banana",
    "almond pepper carrot radish turnip banana cherry cherry",
    "kiwi kiwi kiwi lemon",
    "walnut almond",
    "peach plum carrot",
]


def segment_of(docs: Sequence[str], path: str = "bank/a.md") -> Segment:
    """One note whose chunks are the given documents (one line each)."""
    chunks = [(i + 1, i + 1, text.terms(doc)) for i, doc in enumerate(docs)]
    return build_segment([(path, chunks)])


def scores_of(scored: bm25.Scored, n_docs: int, seg: int = 0) -> list[float]:
    """Per-chunk scores of one segment (0.0 for chunks that did not match)."""
    return [scored.raw((seg, d)) for d in range(n_docs)]


def strength_of(scored: bm25.Scored, term: int, doc: int, seg: int = 0) -> float:
    """How chunk ``doc`` matched query term ``term``: 1.0 exact, 0.7 partial, 0.0 not at all."""
    return scored.strengths([(seg, doc)])[0][term]


def test_a_batch_of_chunks_gets_the_strengths_each_gets_alone() -> None:
    # Why: strengths are found term by term over the whole batch; two segments, a repeat, any order
    segments = [segment_of(CORPUS), segment_of(["배포 절차", "무중단배포", "cherry 배포를"], "bank/b.md")]
    scored = bm25.score(segments, ["cherry", "배포", "walnut", "absent"], infix=0.5)
    refs = [(1, 2), (0, 3), (1, 1), (0, 0), (0, 3), (1, 0), (0, 6)]
    table = scored.strengths(refs)
    assert table == [scored.strengths([ref])[0] for ref in refs]
    assert table[1] is not table[4]  # a chunk asked about twice gets two rows
    assert table[0] == [EXACT, EXACT, 0.0, 0.0] and table[2] == [0.0, 0.5, 0.0, 0.0]  # 무중단배포: infix


def test_vocabulary_is_exact_tokens() -> None:
    # the premise of the comparison below: every word is its own term and no word prefixes another
    assert [t for w in VOCAB for t in text.terms(w)] == VOCAB
    assert not [(a, b) for a in VOCAB for b in VOCAB if a != b and b.startswith(a)]


@pytest.mark.parametrize("query", [["banana"], ["cherry", "lemon"], ["kiwi", "walnut", "almond"], VOCAB])
def test_scores_equal_rank_bm25_with_the_design_idf(query: list[str]) -> None:
    corpus = [text.terms(doc) for doc in CORPUS]
    seg = segment_of(CORPUS)
    scored = bm25.score([seg], query, k1=1.2, b=0.75)

    reference = BM25Okapi(corpus, k1=1.2, b=0.75)
    n = len(corpus)
    dfs = {t: sum(t in doc for doc in corpus) for t in query}
    reference.idf = {t: bm25.idf(n, df) for t, df in dfs.items()}
    expected = reference.get_scores(query)

    assert scores_of(scored, n) == pytest.approx(list(expected), rel=1e-9, abs=1e-12)
    assert [(s.term, s.df) for s in scored.stats] == [(t, dfs[t]) for t in query]
    assert any(v > 0 for v in expected)


def test_idf_is_the_design_formula_and_always_positive() -> None:
    import math

    assert bm25.idf(10, 3) == pytest.approx(math.log((10 - 3 + 0.5) / (3 + 0.5) + 1))
    assert bm25.idf(10, 10) > 0  # a term in every chunk still counts a little
    assert bm25.idf(10, 1) > bm25.idf(10, 5)


def test_korean_stem_matches_exactly_and_prefix_partially() -> None:
    docs = ["우리의 가치관이 가장 중요하다", "크론 설계와 스케줄", "가치 투자와 관계"]
    seg = segment_of(docs)
    exact = bm25.score([seg], ["가치관"])
    assert strength_of(exact, 0, 0) == EXACT
    assert strength_of(exact, 0, 1) == 0.0
    assert strength_of(exact, 0, 2) == pytest.approx(0.7)  # 가치 ⊂ 가치관
    partial = bm25.score([seg], ["가치"])
    assert strength_of(partial, 0, 0) == pytest.approx(0.7)
    assert strength_of(partial, 0, 2) == EXACT
    scores = scores_of(exact, 3)
    assert scores[0] > scores[2] > 0 and scores[1] == 0.0


def test_partial_weight_scales_the_soft_term_frequency() -> None:
    seg = segment_of(["가치관이 중요하다", "다른 이야기 하나", "또 다른 이야기"])
    strong = scores_of(bm25.score([seg], ["가치"], partial=0.7), 3)[0]
    weak = scores_of(bm25.score([seg], ["가치"], partial=0.35), 3)[0]
    assert 0 < weak < strong


def test_single_syllable_query_matches_particle_form_but_not_longer_word() -> None:
    seg = segment_of(["집에 간다", "집값 상승", "물 한 잔", "회의 일정"])
    home = bm25.score([seg], ["집"])
    assert [strength_of(home, 0, d) for d in range(4)] == [pytest.approx(0.7), 0.0, 0.0, 0.0]
    assert scores_of(bm25.score([seg], ["회"]), 4) == [0.0, 0.0, 0.0, 0.0]
    assert strength_of(bm25.score([seg], ["물"]), 0, 2) == EXACT


def test_dead_files_leave_the_statistics() -> None:
    docs = ["banana cherry", "banana", "lemon"]
    one = build_segment(
        [
            ("bank/a.md", [(1, 1, text.terms(docs[0])), (2, 2, text.terms(docs[1]))]),
            ("bank/b.md", [(1, 1, text.terms(docs[2]))]),
        ]
    )
    one.set_dead(frozenset({1}))  # bank/b.md has a newer version elsewhere
    alone = segment_of(docs[:2])
    assert scores_of(bm25.score([one], ["banana", "cherry"]), 2) == pytest.approx(
        scores_of(bm25.score([alone], ["banana", "cherry"]), 2)
    )


def test_a_chunks_evidence_is_its_terms_idf_times_match_strength_whatever_kinds_the_terms_match_by() -> None:
    # Why these terms after a first one: a later term is added by one of three loops, by whether it
    # matches every chunk exactly (cherry), exactly or by prefix (배포 ~ 배포판), or inside a compound too
    seg = segment_of(["banana 배포 cherry", "배포판 무중단배포", "무중단배포 cherry", "banana 절차", "배포 절차"])
    cases = [(["banana", "cherry", "배포"], 0.5), (["절차", "배포", "cherry"], 0.5), (["banana", "배포"], 0.0)]
    for qterms, infix in cases:  # infix 0: 배포 matches exactly or by prefix only
        scored = bm25.score([seg], qterms, infix=infix)
        refs = [(0, d) for d in range(5)]
        idfs = [st.idf for st in scored.stats]
        expected = [sum(idf * s for idf, s in zip(idfs, row)) for row in scored.strengths(refs)]
        assert scored.evidence(refs) == pytest.approx(expected)
        assert dict(scored.matched()) == {ref: pytest.approx(e) for ref, e in zip(refs, expected) if e}


def test_a_word_inside_a_compound_matches_at_infix_strength() -> None:
    seg = segment_of(["분산데이터베이스를 도입했다", "무중단배포 절차", "국회의원 선거", "배포 일정", "회의 일정"])
    db = bm25.score([seg], ["데이터베이스"], infix=0.5)
    assert [strength_of(db, 0, d) for d in range(5)] == [pytest.approx(0.5), 0.0, 0.0, 0.0, 0.0]
    deploy = bm25.score([seg], ["배포"], infix=0.5)
    assert [strength_of(deploy, 0, d) for d in range(5)] == [0.0, pytest.approx(0.5), 0.0, EXACT, 0.0]
    assert scores_of(deploy, 5)[3] > scores_of(deploy, 5)[1] > 0  # the word itself outranks the compound
    meeting = bm25.score([seg], ["회의"], infix=0.5)
    assert [strength_of(meeting, 0, d) for d in range(5)] == [0.0, 0.0, 0.0, 0.0, EXACT]  # not 국회의원
    assert scores_of(bm25.score([seg], ["회"], infix=0.5), 5) == [0.0] * 5


def test_infix_weight_scales_and_zero_turns_it_off() -> None:
    seg = segment_of(["무중단배포 절차", "다른 이야기", "또 다른 이야기"])
    strong = scores_of(bm25.score([seg], ["배포"], infix=0.7), 3)[0]
    weak = scores_of(bm25.score([seg], ["배포"], infix=0.3), 3)[0]
    assert 0 < weak < strong
    off = bm25.score([seg], ["배포"], infix=0.0)
    assert scores_of(off, 3) == [0.0, 0.0, 0.0] and off.stats[0].df == 0


def test_a_chunk_matched_exactly_and_inside_counts_as_exact() -> None:
    seg = segment_of(["배포 그리고 무중단배포", "무중단배포만"])
    scored = bm25.score([seg], ["배포"], infix=0.5)
    assert [strength_of(scored, 0, d) for d in range(2)] == [EXACT, pytest.approx(0.5)]
    assert scored.stats[0].df == 2


def test_idf_counts_only_the_tiers_searched(make_root: Callable[..., Path]) -> None:
    from memtree import MemTree

    logs = {f"memory/2026-11-{d:02d}.md": f"# 2026-11-{d:02d}\n\n- 배포 로그 {d}번째 확인.\n" for d in range(1, 21)}
    bank_notes = {"bank/deploy.md": "# 배포\n\n- 배포는 화요일 오전에 한다.\n", "bank/x.md": "# x\n\n- 다른 메모.\n"}
    root = make_root({**logs, **bank_notes})
    mt = MemTree(root, refresh_interval=0)
    bank = {st.term: st for st in mt.search("배포 화요일", tier="default").term_stats}
    everything = {st.term: st for st in mt.search("배포 화요일", tier="all").term_stats}
    assert bank["배포"].df == 1 and everything["배포"].df == 21
    assert bank["배포"].idf > everything["배포"].idf  # rare in bank/, whatever memory/ logs say


def _columns(seg: Segment) -> dict[str, object]:
    names = "terms offsets post_doc post_tf doc_len doc_file doc_start doc_end files file_start file_len".split()
    return {n: (getattr(seg, n), getattr(getattr(seg, n), "typecode", None)) for n in names}


def test_numpy_and_pure_python_layouts_build_the_same_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    notes: list[tuple[str, list[tuple[int, int, list[str] | dict[str, int]]]]] = [
        (
            "bank/a.md",
            [(1, 1, text.terms("가치관이 바뀌었다 Notion에 배포 배포")), (2, 3, []), (4, 4, ["banana"] * 70_000)],
        ),
        ("bank/empty.md", []),
        ("memory/2024-01-07.md", [(1, 2, {"무중단배포": 3, "kiwi": 1, "@d2024-01-07": 2}), (3, 3, ["kiwi", "plum"])]),
        ("recall/r.md", [(5, 9, text.terms("회의 국회의원 회의 the meeting notes"))]),
    ]
    monkeypatch.setattr(segment, "NUMPY_MIN_TERMS", 0)
    vectorized = _columns(build_segment(notes))
    monkeypatch.setattr(segment, "_numpy_available", lambda: False)
    pure = _columns(build_segment(notes))
    assert vectorized == pure
    assert pure["post_tf"][0][list(pure["terms"][0]).index("banana")] == segment.MAX_TF  # capped, not wrapped


def test_a_build_from_term_ids_lays_out_the_same_segment_with_either_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    from memtree.index.vocab import Vocabulary

    vocab = Vocabulary()
    by_terms: list[tuple[str, list[tuple[int, int, list[str] | dict[str, int]]]]] = []
    by_ids = []
    for path, docs in [
        ("bank/a.md", ["가치관이 바뀌었다 Notion에 배포 배포", "the of and", "", "plum " * 70_000]),
        ("bank/empty.md", []),
        ("memory/2024-01-07.md", ["무중단배포 kiwi kiwi 회의", "국회의원 회의 the meeting notes kiwi"]),
    ]:
        pairs = [vocab.words(doc) for doc in docs]
        by_ids.append((path, [(i + 1, i + 1, ids) for i, (_, ids) in enumerate(pairs)]))
        by_terms.append((path, [(i + 1, i + 1, text.terms(doc)) for i, doc in enumerate(docs)]))
    assert any(0 in row for _, chunks in by_ids for *_, row in chunks)  # stopwords hold a place as id 0
    expected = _columns(build_segment(by_terms))
    for threshold in (0, 10**9):  # numpy, then pure Python
        monkeypatch.setattr(segment, "NUMPY_MIN_TERMS", threshold)
        assert _columns(segment.build_segment_ids(by_ids, vocab.terms)) == expected


def test_merging_segments_keeps_postings_with_either_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    seg = segment_of(CORPUS)
    for threshold in (0, 10**9):  # numpy, then pure Python
        monkeypatch.setattr(segment, "NUMPY_MIN_TERMS", threshold)
        assert _columns(segment.merge_segments([seg])) == _columns(seg)


def test_the_blend_is_the_documented_arithmetic() -> None:
    from memtree.index.blend import Blend

    blend = Blend.of(0.4, 0.6, 2.0, [1.5, 2.5])  # Σ idf 4
    assert blend.keyword(1.0) == pytest.approx(0.6 * 1.0 / 2.0)
    assert blend.keyword(1.0, 0.5, 2.0) == pytest.approx(0.4 * 0.5 * 2.0 / 4.0 + 0.6 * 1.0 / 2.0)
    assert blend.keyword(0.0, 0.5) == pytest.approx(0.4 * 0.5)  # no evidence in the text: the whole route
    assert blend.tree(0.5, 2.0) == pytest.approx(0.25) and blend.tree(0.5) == 0.5
    assert blend.bm25_norm(1.0) == 0.5 and Blend.of(0.4, 0.6, 0.0, []).bm25_norm(1.0) == 0.0


def test_top_ranks_by_the_blend_it_hands_back() -> None:
    seg = build_segment(
        [
            ("bank/a.md", [(i + 1, i + 1, text.terms(doc)) for i, doc in enumerate(CORPUS[:4])]),
            ("bank/b.md", [(i + 1, i + 1, text.terms(doc)) for i, doc in enumerate(CORPUS[4:])]),
            ("bank/c.md", [(1, 1, ["almond"])]),  # routed, matching nothing: offers its first chunk
        ]
    )
    scored = bm25.score([seg], ["banana", "kiwi", "walnut"])
    routes = {"bank/a.md": 0.8, "bank/c.md": 0.5}
    ranked, blend = scored.top(20, frozenset({"bank"}), routes, 0.4, 0.6)
    places = scored.locate([ref for _, ref in ranked])
    assert blend.top_bm25 == max(scored.raw(ref) for _, ref in ranked) > 0
    for (kw, ref), where in zip(ranked, places, strict=True):
        evidence = scored.evidence([ref])[0] or None
        assert kw == blend.keyword(scored.raw(ref), routes.get(where.path, 0.0), evidence)  # bit for bit
    assert [kw for kw, _ in ranked] == sorted((kw for kw, _ in ranked), reverse=True)
    assert ("bank/c.md", 1) in [(w.path, w.start) for w in places]
    assert scored.top(20, frozenset({"memory"}), routes, 0.4, 0.6)[0] == []  # no note of that tier
