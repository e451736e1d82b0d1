"""memtree.index.routing: keyword routing by the one rule (memtree.text.match; agreement: tests/test_match.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import node

from memtree import MemTree
from memtree.index import routing
from memtree.notes import tree

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
