"""Query words the memory cannot hold as typed: typos, glued question words, one-syllable nouns with their
particle (memtree.search.repair, memtree.text.terms.query_terms)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memtree import MemTree
from memtree.search import evidence, message
from memtree.search.repair import one_edit
from memtree.text import terms as text

NOTES = {
    "bank/people/caroline.md": (
        "# Caroline\n\n"
        "- Caroline wants to study psychology and counseling in her education.\n"
        "- Caroline went to the pride festival with Melanie in June.\n"
    ),
    "bank/travel/tim.md": "# Tim\n\n- Tim visited Tennessee last spring and loved the music there.\n",
    "bank/wiki/chess.md": (
        "# 체스\n\n"
        "체스보드의 가로줄은 랭크라고 부른다.\n\n"
        "체스보드의 세로줄인 열은 파일이라는 이름으로 부른다.\n\n"
        "노아의 방주는 3층으로 만들어져 있었다.\n"
    ),
    "bank/wiki/sport.md": "# 야구\n\n강정호는 2006년 현대 유니콘스 팀에 입단하였다.\n",
}


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("educaton", "education", True),  # a letter dropped
        ("tennesee", "tennessee", True),
        ("recieve", "receive", True),  # two neighbours swapped
        ("festivel", "festival", True),  # one changed
        ("music", "music", False),  # the same word is no repair
        ("music", "magic", False),  # two changes
        ("abc", "abcde", False),
    ],
)
def test_one_edit(a: str, b: str, near: bool) -> None:
    assert one_edit(a, b) is near and one_edit(b, a) is near


def test_a_typo_is_read_as_the_word_the_memory_holds(make_root: Callable[..., Path]) -> None:
    mt = MemTree(make_root(NOTES), refresh_interval=0)
    result = mt.search("What would Caroline likely pursue in her educaton?")
    assert result.rejected is None, result.rejected
    assert "education" in result.terms and "educaton" not in result.terms
    assert result.hits[0].path == "bank/people/caroline.md" and "education" in result.hits[0].text
    assert text.terms("Tennessee")[0] in mt.search("Has Tim been to Tennesee?").terms


def test_a_word_absent_for_real_is_not_repaired(make_root: Callable[..., Path]) -> None:
    """Repair needs a term the memory holds one edit away; a missing topic still rejects."""
    mt = MemTree(make_root(NOTES), refresh_interval=0)
    result = mt.search("What did Caroline say about quantum chromodynamics?")
    assert "chromodynamic" in result.terms or "chromodynamics" in result.terms
    assert result.rejected


def test_a_one_syllable_noun_with_its_particle_matches_the_noun(make_root: Callable[..., Path]) -> None:
    mt = MemTree(make_root(NOTES), refresh_interval=0)
    result = mt.search("체스보드에서 열을 부르는 이름은?")
    assert "열" in result.terms and "열을" not in result.terms
    assert result.rejected is None
    assert "세로줄인 열은" in result.hits[0].text


def test_a_question_word_glued_to_its_noun_is_split_off() -> None:
    # 년, 일: a bare counter names nothing (몇년도에 is stemmed to 몇년 first)
    assert text.query_terms("몇년도에 어느나라 무슨일 몇세기에") == ["나라", "세기"]
    assert text.query_terms("노아의 방주는 몇층으로 구성되어 있었는가?")[:2] == ["노아", "방주"]
    assert "몇층" not in text.query_terms("방주는 몇층인가")
    assert text.terms("몇층") == ["몇층"]  # notes are indexed as written


def test_the_word_after_how_that_asks_a_quantity_is_part_of_the_question() -> None:
    assert text.query_terms("How many weeks passed between the adoptions?") == ["week", "pass", "between", "adoption"]
    assert text.query_terms("how long has John been surfing") == ["john", "surf"]
    assert "long" in text.query_terms("a long trip: how was it?")  # not asked with how
    assert text.terms("how many") == ["many"]  # notes are indexed as written


def test_framing_words_and_a_formal_imperative_weigh_nothing_when_absent() -> None:
    for term in ["likely", "answer", text.english_stem("probably"), "적으시오"]:
        assert evidence.proves_little(term), term
    assert message.is_question("김정남이 죽은 시간을 정확히 적으시오")
    assert not evidence.proves_little("education")


def test_a_repair_counts_as_evidence_only_when_the_tiers_searched_hold_it(make_root: Callable[..., Path]) -> None:
    notes = {**NOTES, "memory/2026-11-30.md": "# log\n\n- talked about astronomy tonight\n"}
    mt = MemTree(make_root(notes), refresh_interval=0)
    assert "astronomy" not in mt.search("Did Caroline mention astronomi?").terms  # bank/ holds no astronomy
    assert "astronomy" in mt.search("Did Caroline mention astronomi?", tier="all").terms
