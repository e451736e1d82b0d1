"""memtree.text.terms: normalization, Korean-aware terms, token estimates (matching: tests/test_match.py)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memtree import MemTree
from memtree.text import terms as text
from memtree.text.irregular import IRREGULAR


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


# The rule as first written: 1-4 syllables right after a non-Hangul word character, a particle dropped.
_PLAIN_GLUED = re.compile(
    r"(?<=[^\W_\uac00-\ud7a3\u3130-\u318f])[\uac00-\ud7a3\u3130-\u318f]{1,4}(?![\uac00-\ud7a3\u3130-\u318f])"
)
_GLUE_PIECES = st.sampled_from(
    [*sorted(text.PARTICLES), *"회의천황가나", "a", "Z", "1", "_", " ", ".", "'", "\u3130", "\u3164", "漢", "カ"]
)


@given(st.lists(_GLUE_PIECES, max_size=8).map("".join))
@example("a에서부터이")  # five syllables: a word, not a particle
@example("_를 a 를 x이다른 漢字의 a에서")
@settings(max_examples=300)
def test_ungluing_drops_exactly_the_glued_particles(s: str) -> None:
    plain = _PLAIN_GLUED.sub(lambda m: " " if m.group() in text.PARTICLES else m.group(), s)
    assert text._unglue(s) == plain


@pytest.mark.parametrize("particle", ["이", "가", "을", "를", "은", "는", "에서", "으로", "의"])
def test_particles_reduce_to_the_stem(particle: str) -> None:
    assert text.terms("가치관" + particle) == ["가치관"]


def test_single_syllable_words_are_kept() -> None:
    assert text.terms("물 집") == ["물", "집"]
    # a two-syllable word that merely looks like stem + particle stays whole
    assert text.terms("회의") == ["회의"]


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


def test_english_negative_contractions_are_not_topic_words() -> None:
    # Why: "wouldn't" left "wouldn" as a query term no note holds, counted as missing evidence
    assert text.query_terms("What pets wouldn't cause discomfort? I don't know, isn't it?") == [
        "pet",
        "caus",
        "discomfort",
        "know",
    ]


@pytest.mark.parametrize(
    ("word", "base"),
    [
        ("bought", "buy"),
        ("went", "go"),
        ("gone", "go"),
        ("taken", "take"),
        ("thought", "think"),
        ("ate", "eat"),
        ("got", "get"),
        ("held", "hold"),
        ("understood", "understand"),
    ],
)
def test_a_common_irregular_past_form_stems_as_its_verb(word: str, base: str) -> None:
    assert text.term(word) == text.term(base) != word


def test_every_irregular_form_and_verb_is_one_plain_word() -> None:
    assert all(past.isalpha() and verb.isalpha() for past, verb in IRREGULAR.items())


@pytest.mark.parametrize(
    ("word", "verb"), [("saw", "see"), ("left", "leave"), ("rose", "rise"), ("found", "find"), ("won", "win")]
)
def test_a_past_form_that_is_mostly_a_word_of_its_own_is_left_as_it_is(word: str, verb: str) -> None:
    assert text.term(word) != text.term(verb)


def test_what_someone_did_is_found_in_the_past_tense(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/elise.md": "# Elise\n\n- Elise bought a red bicycle in March\n- Elise went to Lisbon\n"})
    mt = MemTree(root, refresh_interval=0)
    assert "red bicycle" in mt.search("What did Elise buy?", k=1).hits[0].text
    assert "Lisbon" in mt.search("Where does Elise go on holiday?", k=1).hits[0].text


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("alpha0x0", ["alpha0x0"]),
        ("GPT4 and gpt-4", ["gpt4", "gpt", "4"]),
        ("commit 3f9a2c", ["commit", "3f9a2c"]),
        ("v1.2.3", ["v1.2.3"]),
        ("500ms, 3rd, 10km", ["500", "ms", "3", "rd", "10", "km"]),  # a quantity and its unit: two words
        ("x86에서 빌드", ["x86", "빌드"]),
    ],
)
def test_a_run_mixing_letters_and_digits_is_one_word(written: str, expected: list[str]) -> None:
    assert text.terms(written) == expected


def test_a_query_word_does_not_match_inside_a_mixed_run(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/ids.md": "# Ids\n\n- The build id is alpha0x0\n- The x axis shows latency\n"})
    mt = MemTree(root, refresh_interval=0)
    found = [h.text for h in mt.search("x", k=5).hits]
    assert found and all("alpha0x0" not in t for t in found)
    assert "alpha0x0" in mt.search("alpha0x0", k=1).hits[0].text


def test_a_one_syllable_noun_with_a_longer_particle_is_found(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {"bank/ui.md": "# UI\n\n- 키보드 단축키가 탭보다 빠르다\n- 회의는 매주 월요일\n- 회사 주차장은 지하 2층\n"}
    )
    mt = MemTree(root, refresh_interval=0)
    hits = mt.search("탭", k=5).hits
    assert hits and "탭보다" in hits[0].text
    assert not mt.search("회", k=5).hits  # one syllable: itself and its particles, never 회의 or 회사
