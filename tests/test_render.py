"""memtree.render: the snippet shown for a hit and the words highlighted in it."""

from __future__ import annotations

from memtree.render import SNIPPET_CHARS, snippet
from memtree.search import Hit

SIGNALS = {"tree": 1.0, "bm25": 1.0, "bm25_norm": 1.0, "keyword": 1.0, "coverage": 1.0}


def hit(body: str, matched: tuple[str, ...]) -> Hit:
    return Hit("identity/values", "bank/identity/values.md", (1, 3), 1.0, SIGNALS, body, "bank", matched)


def test_snippet_is_the_line_with_most_matched_words_and_highlights_surface_forms() -> None:
    line, words = snippet(hit("---\n서론 문단\n우리의 가치관이 원칙을 정한다\n가치관 하나", ("가치관", "원칙")))
    assert line == "우리의 가치관이 원칙을 정한다"
    assert "가치관이" in words and "원칙을" in words  # the words as written, particles included


def test_a_long_snippet_is_cut_around_the_first_match() -> None:
    body = "앞 " * 200 + "가치관 " + "뒤 " * 200
    line, _ = snippet(hit(body, ("가치관",)))
    assert "가치관" in line
    assert line.startswith("…") and line.endswith("…")
    assert len(line) <= SNIPPET_CHARS + 2
