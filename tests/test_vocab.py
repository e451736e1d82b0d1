"""memtree.index.vocab: term ids for one build, always the terms memtree.text.terms gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memtree.index.vocab import NO_TERM, Vocabulary
from memtree.text import terms as text

_PIECES = st.sampled_from(
    ["가치관이", "배포", "회의", "Notion에", "GPU를", "the", "무엇", "paintings", "1.5", " ", ". ", "漢字"]
)


@given(st.lists(st.lists(_PIECES, max_size=12).map(" ".join), max_size=6))
def test_ids_name_the_terms_of_each_text(texts: list[str]) -> None:
    vocab = Vocabulary()
    for body in texts:
        words, ids = vocab.words(body)
        assert (words, [vocab.terms[i] for i in ids]) == text.words_and_terms(body)
    assert len(set(vocab.terms)) == len(vocab.terms)  # one id per term


def test_a_stopword_has_no_term_and_a_term_keeps_its_id() -> None:
    vocab = Vocabulary()
    _, ids = vocab.words("the 배포를 배포")
    assert ids[0] == NO_TERM and ids[1] == ids[2] == vocab.id("배포")
    assert vocab.of(["배포", "@d2024-01-07"]) == (ids[1], len(vocab.terms) - 1)
    assert vocab.of(["배포"]) == (ids[1],) and vocab.of([]) == ()
