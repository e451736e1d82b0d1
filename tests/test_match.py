"""memtree.text.match: the one matching rule, and every user of it agreeing with it term by term."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree.index import bm25, routing
from memtree.index.segment import build_segment
from memtree.notes import tree
from memtree.text import match as rule
from memtree.text import terms as text
from memtree.text.match import EXACT, Match, SortedTerms, match, relation, verb_stem, weight

INFIX = 0.5


def test_single_syllable_does_not_match_a_longer_word() -> None:
    assert relation("회", "회의") == 0.0
    assert relation("회의", "회") == 0.0


def test_single_syllable_matches_itself_plus_particle() -> None:
    assert relation("집", "집") == EXACT
    assert relation("집", "집에") == pytest.approx(0.7)
    assert relation("집", "집값") == 0.0  # not a particle


def test_prefix_partial_match_both_ways() -> None:
    assert relation("가치", "가치관") == pytest.approx(0.7)
    assert relation("가치관", "가치") == pytest.approx(0.7)
    assert relation("가치관", "가치관") == EXACT
    assert relation("관계", "가치관") == 0.0


def test_latin_terms_never_match_by_prefix() -> None:
    assert relation("cron", "crontab") == 0.0


@pytest.mark.parametrize(
    ("query", "term"),
    [("데이터베이스", "분산데이터베이스"), ("배포", "무중단배포"), ("데이터베이스", "분산데이터베이스설계")],
)
def test_a_hangul_word_matches_inside_a_longer_compound(query: str, term: str) -> None:
    assert match(query, term) is Match.INFIX
    assert match(term, query) is Match.NONE  # the query word must be the one inside
    assert relation(query, term, infix=0.5) == pytest.approx(0.5)


def test_infix_weighs_nothing_unless_asked_for() -> None:
    # why: dedup compares words, and 배포 is not the same word as 무중단배포
    assert relation("배포", "무중단배포") == 0.0
    assert weight(Match.INFIX, infix=0.3) == pytest.approx(0.3)


def test_the_rule_gives_each_kind_its_strength() -> None:
    assert [weight(k, 0.7, INFIX) for k in Match] == [0.0, INFIX, 0.7, 1.0]


def test_two_syllable_word_matches_inside_only_at_the_compound_end() -> None:
    assert rule.INFIX_ANYWHERE == 3  # the rule this test pins (chosen on the dev sets)
    assert match("회의", "국회의원") is Match.NONE  # 회의 is in 국회의원 by accident
    assert match("회의", "주간회의") is Match.INFIX
    assert match("데이터", "분산데이터베이스") is Match.INFIX  # three syllables: anywhere


@pytest.mark.parametrize(("query", "term"), [("회", "사회"), ("물", "생수물"), ("집", "우리집"), ("회", "국회의원")])
def test_a_single_syllable_word_never_matches_inside(query: str, term: str) -> None:
    assert match(query, term) is Match.NONE


def test_particles_still_reduce_before_matching() -> None:
    assert text.terms("가치관이") == ["가치관"]
    assert match("가치관", text.terms("가치관이")[0]) is Match.EXACT
    assert match("가치관", "가치관이") is Match.PREFIX
    assert match("배포", text.terms("무중단배포를")[0]) is Match.INFIX
    assert match("집", "집에") is Match.PREFIX


def test_latin_words_never_match_inside() -> None:
    assert match("base", "database") is Match.NONE
    assert match("배포", "deploy배포") is Match.NONE


def test_sorted_terms_finds_every_related_term_once() -> None:
    words = "가치 가치관 국회의원 무중단배포 배포 배포판 분산데이터베이스 주간회의 회의"
    vocab = sorted(set(words.split()))
    lookup = SortedTerms(vocab)
    for q in ("배포", "회의", "데이터베이스", "가치관", "회"):
        found: dict[str, Match] = {}
        for lo, hi, kind in lookup.related(q):
            for t in vocab[lo:hi]:
                assert t not in found  # ranges never overlap
                found[t] = kind
        assert found == {t: match(q, t) for t in vocab if match(q, t)}
    assert {vocab[lo] for lo, _, k in lookup.related("배포") if k is Match.INFIX} == {"무중단배포"}
    assert not [k for *_, k in lookup.related("배포", infix=False) if k is Match.INFIX]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("태어났", "태어"),  # 태어났는가, the question's 는가 already gone
        ("일으켰", "일으"),  # contracted: 키 + 었
        ("벗어났던", "벗어"),
        ("돌아왔나", "돌아"),
        ("바꾸었나", "바꾸"),
        ("기르던", "기르"),
        ("하였던", ""),  # a light verb: its stem would be one syllable
        ("되었던", ""),
        ("아시안", ""),  # a noun: nothing ends a noun in ㅆ or 던
        ("태어난", ""),  # ㄴ ends nouns too (아시안): not read as a verb form
        ("사람들", ""),
        ("배포", ""),
        ("did", ""),
    ],
)
def test_a_past_verb_form_gives_its_stem(word: str, stem: str) -> None:
    assert verb_stem(word) == stem


def test_a_past_verb_form_matches_the_verbs_other_forms_weakly() -> None:
    pairs = [("태어났", "태어난"), ("태어났", "태어나"), ("일으켰", "일으킨")]
    pairs += [("기르던", "기르고"), ("벗어났던", "벗어나")]
    for q, t in pairs:
        assert match(q, t) is Match.INFIX, (q, t)
        assert relation(q, t, infix=0.5) == pytest.approx(0.5)
    assert match("태어났", "태어") is Match.PREFIX  # the stem itself is a prefix, as before
    assert match("아시안", "아시아") is Match.NONE
    assert match("하였던", "하였다") is Match.NONE
    vocab = sorted({"태어", "태어나", "태어난", "태어났", "태어났다", "태풍", "출생"})
    found = {vocab[i]: k for lo, hi, k in SortedTerms(vocab).related("태어났") for i in range(lo, hi)}
    assert found == {
        "태어": Match.PREFIX,
        "태어나": Match.INFIX,
        "태어난": Match.INFIX,
        "태어났": Match.EXACT,
        "태어났다": Match.PREFIX,
    }
    assert not [k for *_, k in SortedTerms(vocab).related("태어났", infix=False) if k is Match.INFIX]


# Words built from a few syllables, so that prefixes, infixes and suffixes of each other are common:
# Hangul (with the one-syllable particles 에, 는, 이, 가, 을, 만, and the past forms' 났, 켰, 던),
# Latin letters, a Han character.
_SYLLABLES = st.sampled_from([*"가나배포회의데이터베스분산집물에는이을만났켰던", "a", "b", "e", "中"])
_WORDS = st.lists(_SYLLABLES, min_size=1, max_size=5).map("".join)


@st.composite
def vocabularies(draw: st.DrawFn) -> list[str]:
    """Random Hangul, Latin and mixed words, plus words holding others as prefix, infix or suffix, and
    words sharing all but another's last syllable."""
    base = draw(st.lists(_WORDS, min_size=1, max_size=8))
    built = [draw(_WORDS) + w if draw(st.booleans()) else w for w in base]
    built += [w + draw(_WORDS) for w in base if draw(st.booleans())]
    built += [draw(_WORDS) + w + draw(_WORDS) for w in base if draw(st.booleans())]
    built += [w + p for w in base for p in draw(st.sets(st.sampled_from(rule.ONE_SYLLABLE_PARTICLES), max_size=2))]
    built += [w[:-1] + draw(_WORDS) for w in base if len(w) > 2 and draw(st.booleans())]  # another form of a verb
    return [*base, *built]


@settings(max_examples=300, deadline=None)
@given(
    vocab=vocabularies(),
    extra=st.lists(_WORDS, max_size=4),
    partial=st.sampled_from([0.7, 0.4]),
    infix=st.sampled_from([INFIX, 0.0]),
)
def test_every_user_of_the_rule_agrees_with_it_on_every_pair(
    vocab: list[str], extra: list[str], partial: float, infix: float
) -> None:
    # Why: the rule is one function, but the index asks it through fast lookups (bisection, bigrams)
    # and the scorers turn its answer into per-chunk strengths; each must say what match() says.
    terms = sorted(set(vocab))
    lookup = SortedTerms(terms)
    # one chunk per term: a chunk's match strength then says exactly how the query term met that term
    seg = build_segment([("bank/a.md", [(i + 1, i + 1, [t]) for i, t in enumerate(terms)])])
    chunks = [(0, d) for d in range(len(terms))]
    # routing: each term a keyword of two nodes, so its sorted terms hold repeats
    pairs = sorted((t, f"n{k}/{t}", t) for t in terms for k in (0, 1))
    keywords = routing.KeywordIndex(tree.validate([]), ([p[0] for p in pairs], [(p[1], p[2]) for p in pairs]))
    for q in dict.fromkeys([*terms, *extra]):
        kinds = {t: match(q, t) for t in terms}
        expected = {t: relation(q, t, partial, infix) for t in terms}
        wanted = {t: (kinds[t], w) for t, w in expected.items() if w}

        # the fast lookup, and Segment's term expansion built on it: (kind, weight) per term, each once
        for ranges in (lookup.weighted(q, partial, infix), seg.expand(q, partial, infix)):
            found: dict[str, tuple[Match, float]] = {}
            for lo, hi, w, kind in ranges:
                for t in terms[lo:hi]:
                    assert t not in found, (q, t)  # ranges never overlap
                    found[t] = (kind, w)
            assert found == wanted, q

        # both scorers: per chunk, the strength the rule gives its one term (0 where it gives none)
        scorers = [bm25.score]
        if _has_numpy():
            from memtree.index import dense

            scorers.append(dense.score)
        for score in scorers:
            scored = score([seg], [q], partial, infix=infix)
            assert [row[0] for row in scored.strengths(chunks)] == [expected[t] for t in terms], (score, q)
            assert scored.stats[0].df == len(wanted), (score, q)

        # keyword routing: every node whose keyword term the rule relates, at the rule's strength
        routed: dict[str, float] = {}
        for node_id, kw, strength in keywords.matches(q, partial, infix):
            assert node_id.endswith("/" + kw) and node_id not in routed
            routed[node_id] = strength
        assert routed == {f"n{i}/{t}": w for t, (_, w) in wanted.items() for i in (0, 1)}, q


def _has_numpy() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("particle", ["보다", "에서", "까지", "부터", "처럼", "에게", "마다"])
def test_a_single_syllable_matches_itself_plus_a_longer_particle(particle: str) -> None:
    assert match("탭", "탭" + particle) is Match.PREFIX
    vocabulary = sorted(["탭" + particle, "탭색", "회의"])
    at = vocabulary.index("탭" + particle)
    assert SortedTerms(vocabulary).related("탭") == [(at, at + 1, Match.PREFIX)]


@pytest.mark.parametrize("word", ["페이지", "보이다", "죽이고", "하였다", "말하고", "자라고"])
def test_a_single_syllable_does_not_match_a_word_that_ends_like_a_copula_or_a_verb(word: str) -> None:
    assert match(word[0], word) is Match.NONE
