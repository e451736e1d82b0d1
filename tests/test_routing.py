"""memtree.index.routing: keyword matching by the one rule (memtree.text.terms.match), and its agreement with BM25."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import node
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree import MemTree
from memtree.index import bm25, routing
from memtree.notes import tree
from memtree.text import terms as text
from memtree.text.terms import Match

INFIX = 0.5


def compound_tree() -> tree.Tree:
    return tree.validate(
        [
            tree.Node("db", "bank/db.md", ("분산데이터베이스",)),
            tree.Node("deploy", "bank/deploy.md", ("무중단배포",)),
            tree.Node("politics", "bank/politics.md", ("국회의원",)),
            tree.Node("values", "bank/values.md", ("가치관이",)),  # a keyword with a particle
            tree.Node("water", "bank/water.md", ("생수물", "물")),
        ]
    )


def scores(routes: dict[str, routing.Route]) -> dict[str, float]:
    return {node_id: r.score for node_id, r in routes.items()}


def test_a_query_word_inside_a_compound_keyword_routes_at_infix_strength() -> None:
    index = routing.KeywordIndex(compound_tree())
    assert scores(routing.route(index, ["데이터베이스"], [1.0], infix=INFIX)) == {"db": pytest.approx(INFIX)}
    assert scores(routing.route(index, ["배포"], [1.0], infix=INFIX)) == {"deploy": pytest.approx(INFIX)}
    assert routing.route(index, ["배포"], [1.0], infix=0.0) == {}  # infix off: today's prefix rule only


def test_short_words_do_not_route_by_accident() -> None:
    index = routing.KeywordIndex(compound_tree())
    assert routing.route(index, ["회의"], [1.0], infix=INFIX) == {}  # not 국회의원
    assert routing.route(index, ["회"], [1.0], infix=INFIX) == {}
    assert scores(routing.route(index, ["물"], [1.0], infix=INFIX)) == {"water": 1.0}  # 물 itself, not 생수물's


def test_a_keyword_with_a_particle_still_matches_its_stem() -> None:
    index = routing.KeywordIndex(compound_tree())
    assert scores(routing.route(index, ["가치관"], [1.0], infix=INFIX)) == {"values": 1.0}
    assert scores(routing.route(index, ["가치"], [1.0], infix=INFIX)) == {"values": pytest.approx(0.7)}


# Words built from a few syllables, so that prefixes, infixes and suffixes of each other are common.
_SYLLABLES = st.sampled_from([*"가나배포회의데이터베스분산집물에는", "a", "b", "e", "中"])
_WORDS = st.lists(_SYLLABLES, min_size=1, max_size=5).map("".join)


@st.composite
def vocabularies(draw: st.DrawFn) -> list[str]:
    """Random Hangul, Latin and mixed words, plus words holding others as prefix, infix or suffix."""
    base = draw(st.lists(_WORDS, min_size=1, max_size=8))
    built = [draw(_WORDS) + w if draw(st.booleans()) else w for w in base]
    built += [w + draw(_WORDS) for w in base if draw(st.booleans())]
    built += [draw(_WORDS) + w + draw(_WORDS) for w in base if draw(st.booleans())]
    built += [w + p for w in base for p in draw(st.sets(st.sampled_from(text.ONE_SYLLABLE_PARTICLES), max_size=2))]
    return [*base, *built]


@settings(max_examples=300, deadline=None)
@given(vocab=vocabularies(), extra=st.lists(_WORDS, max_size=4), partial=st.sampled_from([0.7, 0.4]))
def test_text_bm25_and_routing_agree_on_every_pair(vocab: list[str], extra: list[str], partial: float) -> None:
    terms = sorted(set(vocab))
    # one chunk per term: the segment's postings then say exactly which terms a query term reached
    seg = bm25.build_segment([("bank/a.md", [(i + 1, i + 1, [t]) for i, t in enumerate(terms)])])
    chunk_of = {t: d for d, t in enumerate(terms)}
    # routing: each term a keyword of two nodes, so its sorted terms hold repeats
    pairs = sorted((t, f"n{k}/{t}", t) for t in terms for k in (0, 1))
    keywords = routing.KeywordIndex(tree.validate([]), ([p[0] for p in pairs], [(p[1], p[2]) for p in pairs]))
    for q in dict.fromkeys([*terms, *extra]):
        expected = {t: text.relation(q, t, partial, INFIX) for t in terms}
        by_range: dict[str, float] = {}
        for lo, hi, w, kind in seg.expand(q, partial, INFIX):
            for t in seg.terms[lo:hi]:
                assert t not in by_range, (q, t)  # ranges never overlap
                assert kind is text.match(q, t)
                by_range[t] = w
        assert by_range == {t: w for t, w in expected.items() if w}, q
        scored = bm25.score([seg], [q], partial, infix=INFIX)
        assert {t: scored.strength(0, 0, chunk_of[t]) for t in terms} == expected, q
        routed: dict[str, float] = {}
        for node_id, kw, strength in keywords.matches(q, partial, INFIX):
            assert node_id.endswith("/" + kw)
            routed[node_id] = strength
        assert routed == {f"n{i}/{t}": w for t, w in expected.items() if w for i in (0, 1)}, q


def test_the_rule_gives_each_kind_its_strength() -> None:
    assert [text.weight(k, 0.7, INFIX) for k in Match] == [0.0, INFIX, 0.7, 1.0]


def test_search_finds_a_compound_for_a_word_inside_it(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/db.md": "# 저장소\n\n- 분산데이터베이스를 도입하기로 했다.\n",
            "bank/misc.md": "# 잡담\n\n- 점심은 국수로 먹었다.\n",
        },
        [node("db", "bank/db.md", keywords=["저장소"]), node("misc", "bank/misc.md", keywords=["잡담"])],
    )
    result = MemTree(root, refresh_interval=0).search("데이터베이스")
    assert result.rejected is None
    assert [h.path for h in result.hits] == ["bank/db.md"]
    assert "분산데이터베이스" in result.hits[0].text
