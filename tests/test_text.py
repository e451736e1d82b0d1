"""memtree.text.terms: normalization, Korean-aware terms, matching strength, token estimates."""

from __future__ import annotations

import unicodedata

import pytest

from memtree.text import terms as text


def test_nfd_hangul_gives_the_same_terms_as_nfc() -> None:
    nfd = unicodedata.normalize("NFD", "가치관을")
    assert nfd != "가치관을"  # the input really is decomposed
    assert text.terms(nfd) == text.terms("가치관을") == ["가치관"]


def test_casefold_makes_case_irrelevant() -> None:
    assert text.terms("MEMTREE Straße") == text.terms("memtree strasse")
    assert text.terms("Heartbeat") == ["heartbeat"]


@pytest.mark.parametrize(
    ("mixed", "expected"),
    [
        ("Notion에", ["notion"]),
        ("Notion에서는", ["notion"]),
        ("10에서", ["10"]),
        ("GPU를 쓴다", ["gpu", "쓴다"]),
    ],
)
def test_mixed_scripts_split_and_glued_particle_dropped(mixed: str, expected: list[str]) -> None:
    assert text.terms(mixed) == expected


@pytest.mark.parametrize("particle", ["이", "가", "을", "를", "은", "는", "에서", "으로", "의"])
def test_particles_reduce_to_the_stem(particle: str) -> None:
    assert text.terms("가치관" + particle) == ["가치관"]


def test_single_syllable_words_are_kept() -> None:
    assert text.terms("물 집") == ["물", "집"]
    # a two-syllable word that merely looks like stem + particle stays whole
    assert text.terms("회의") == ["회의"]


def test_single_syllable_does_not_match_a_longer_word() -> None:
    assert text.relation("회", "회의") == 0.0
    assert text.relation("회의", "회") == 0.0


def test_single_syllable_matches_itself_plus_particle() -> None:
    assert text.relation("집", "집") == text.EXACT
    assert text.relation("집", "집에") == pytest.approx(0.7)
    assert text.relation("집", "집값") == 0.0  # not a particle


def test_prefix_partial_match_both_ways() -> None:
    assert text.relation("가치", "가치관") == pytest.approx(0.7)
    assert text.relation("가치관", "가치") == pytest.approx(0.7)
    assert text.relation("가치관", "가치관") == text.EXACT
    assert text.relation("관계", "가치관") == 0.0


def test_latin_terms_never_match_by_prefix() -> None:
    assert text.relation("cron", "crontab") == 0.0


@pytest.mark.parametrize("word", ["paintings", "painted", "painting", "paints", "paint"])
def test_english_inflections_share_a_term(word: str) -> None:
    assert text.terms(word) == text.terms("paint")


@pytest.mark.parametrize("query", ["뭐야?", "?!... ---", "what is it? 무엇 어떻게 왜?"])
def test_query_of_only_punctuation_or_question_words_has_no_terms(query: str) -> None:
    assert text.query_terms(query) == []


def test_query_terms_are_distinct_in_first_seen_order() -> None:
    assert text.query_terms("가치관이 뭐야? 가치관을 reflect Reflect") == ["가치관", "reflect"]


def test_estimate_tokens_is_cjk_aware() -> None:
    assert text.estimate_tokens("") == 0
    assert text.estimate_tokens("가" * 30) == 20  # 1.5 characters per token
    assert text.estimate_tokens("a" * 40) == 10  # 4 characters per token
    assert text.estimate_tokens("漢字かな" * 3) == 8
    assert text.estimate_tokens("가나다abcd") == 3  # 2 + 1
    assert text.estimate_tokens("가") == 1  # rounded up, never 0 for real text


def test_estimate_tokens_counts_punctuation_and_symbols_as_latin() -> None:
    # em dash, arrow, ellipsis and Vietnamese letters are not CJK: 12 characters → 3 tokens
    assert text.estimate_tokens("—→…ệ" * 3) == 3


@pytest.mark.parametrize(
    ("query", "term"),
    [("데이터베이스", "분산데이터베이스"), ("배포", "무중단배포"), ("데이터베이스", "분산데이터베이스설계")],
)
def test_a_hangul_word_matches_inside_a_longer_compound(query: str, term: str) -> None:
    assert text.match(query, term) is text.Match.INFIX
    assert text.match(term, query) is text.Match.NONE  # the query word must be the one inside
    assert text.relation(query, term, infix=0.5) == pytest.approx(0.5)


def test_infix_weighs_nothing_unless_asked_for() -> None:
    # why: dedup compares words, and 배포 is not the same word as 무중단배포
    assert text.relation("배포", "무중단배포") == 0.0
    assert text.weight(text.Match.INFIX, infix=0.3) == pytest.approx(0.3)


def test_two_syllable_word_matches_inside_only_at_the_compound_end() -> None:
    assert text.INFIX_ANYWHERE == 3  # the rule this test pins (chosen on the dev sets)
    assert text.match("회의", "국회의원") is text.Match.NONE  # 회의 is in 국회의원 by accident
    assert text.match("회의", "주간회의") is text.Match.INFIX
    assert text.match("데이터", "분산데이터베이스") is text.Match.INFIX  # three syllables: anywhere


@pytest.mark.parametrize(("query", "term"), [("회", "사회"), ("물", "생수물"), ("집", "우리집"), ("회", "국회의원")])
def test_a_single_syllable_word_never_matches_inside(query: str, term: str) -> None:
    assert text.match(query, term) is text.Match.NONE


def test_particles_still_reduce_before_matching() -> None:
    assert text.terms("가치관이") == ["가치관"]
    assert text.match("가치관", text.terms("가치관이")[0]) is text.Match.EXACT
    assert text.match("가치관", "가치관이") is text.Match.PREFIX
    assert text.match("배포", text.terms("무중단배포를")[0]) is text.Match.INFIX
    assert text.match("집", "집에") is text.Match.PREFIX


def test_latin_words_never_match_inside() -> None:
    assert text.match("base", "database") is text.Match.NONE
    assert text.match("배포", "deploy배포") is text.Match.NONE


def test_sorted_terms_finds_every_related_term_once() -> None:
    words = "가치 가치관 국회의원 무중단배포 배포 배포판 분산데이터베이스 주간회의 회의"
    vocab = sorted(set(words.split()))
    lookup = text.SortedTerms(vocab)
    for q in ("배포", "회의", "데이터베이스", "가치관", "회"):
        found: dict[str, text.Match] = {}
        for lo, hi, kind in lookup.related(q):
            for t in vocab[lo:hi]:
                assert t not in found  # ranges never overlap
                found[t] = kind
        assert found == {t: text.match(q, t) for t in vocab if text.match(q, t)}
    assert {vocab[lo] for lo, _, k in lookup.related("배포") if k is text.Match.INFIX} == {"무중단배포"}
    assert not [k for *_, k in lookup.related("배포", infix=False) if k is text.Match.INFIX]


def test_english_negative_contractions_are_not_topic_words() -> None:
    # Why: "wouldn't" left "wouldn" as a query term no note holds, counted as missing evidence
    assert text.query_terms("What pets wouldn't cause discomfort? I don't know, isn't it?") == [
        "pet",
        "caus",
        "discomfort",
        "know",
    ]
