"""memtree.notes.tree: the tree-index.json model, deterministic dumps, strict validation, routing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import node, tree_json, write_root
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtree.errors import TreeError
from memtree.index import routing
from memtree.notes import tree

# --- round trip (hypothesis) -----------------------------------------------------------------

SEGMENTS = ("identity", "values", "기술", "크론", "a", "b-2", "project_x")
KEYWORD = st.text(
    alphabet=st.sampled_from([*"가치관정체성크론설계회의물집 abcxyzREFLECT-_0123456789", '"', "\\", "\n", "🙂"]),
    min_size=1,
    max_size=12,
)


@st.composite
def trees(draw: st.DrawFn) -> tree.Tree:
    """A valid tree: ids in a small hierarchy (a parent is an id prefix), Korean/ASCII keywords, weights."""
    ids = draw(
        st.lists(
            st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map("/".join),
            min_size=0,
            max_size=12,
            unique=True,
        )
    )
    id_set = set(ids)
    parents: dict[str, str | None] = {}
    for node_id in ids:
        prefixes = [node_id.rsplit("/", k)[0] for k in range(1, node_id.count("/") + 1)]
        parents[node_id] = next((p for p in prefixes if p in id_set), None)
    nodes = []
    for i, node_id in enumerate(ids):
        path = draw(st.one_of(st.none(), st.just(f"bank/{node_id}-{i}.md")))
        keywords = tuple(draw(st.lists(KEYWORD, max_size=4)))
        weight = draw(
            st.one_of(
                st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False),
                st.integers(min_value=0, max_value=5).map(float),
            )
        )
        children = tuple(sorted(c for c, p in parents.items() if p == node_id))
        nodes.append(tree.Node(node_id, path, keywords, parents[node_id], children, weight))
    return tree.validate(draw(st.permutations(nodes)))


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(trees())
def test_dumps_loads_dumps_round_trip(t: tree.Tree) -> None:
    data = tree.dumps(t)
    back = tree.loads(data)
    assert back.nodes == t.nodes
    assert tree.dumps(back) == data


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(trees(), st.randoms())
def test_dumps_is_independent_of_node_and_children_order(t: tree.Tree, rnd: Any) -> None:
    shuffled = list(t.nodes)
    rnd.shuffle(shuffled)
    shuffled = [
        tree.Node(n.id, n.path, n.keywords, n.parent, tuple(rnd.sample(n.children, len(n.children))), n.weight)
        for n in shuffled
    ]
    assert tree.dumps(tree.Tree(tuple(shuffled))) == tree.dumps(t)


def test_dumps_format_is_fixed() -> None:
    t = tree.validate(
        [
            tree.Node("technical/cron", "bank/technical/cron.md", ("크론", "cron"), "technical", (), 2),
            tree.Node("technical", None, ("기술",), None, ("technical/cron",), 1.0),
        ]
    )
    data = tree.dumps(t)
    assert data.endswith(b"}\n") and not data.endswith(b"\n\n")
    doc = json.loads(data)
    assert [n["id"] for n in doc["nodes"]] == ["technical", "technical/cron"]
    assert all(list(n) == list(tree.NODE_KEYS) for n in doc["nodes"])
    assert list(doc) == ["version", "nodes"]
    assert b'\n  "nodes": [\n    {\n      "id": "technical",' in data  # 2-space indent
    assert "크론".encode() in data  # Korean written as UTF-8, not \\u escapes
    assert doc["nodes"][1]["weight"] == 2.0


# --- validation errors -------------------------------------------------------------------------


def test_invalid_json_names_line_and_column() -> None:
    with pytest.raises(TreeError) as err:
        tree.loads('{"version": 1,\n  "nodes": [,]}')
    message = str(err.value)
    assert "line 2" in message and "column 13" in message


BAD_TREES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "unknown key": ([node("a", colour="red")], "node 'a': unknown key(s) colour"),
    "duplicate id": ([node("a"), node("a")], "duplicate node id 'a'"),
    "unknown parent": ([node("a", parent="zz")], "node 'a' has unknown parent 'zz'"),
    "unknown child": ([node("a", children=["zz"])], "node 'a' lists unknown child 'zz'"),
    "child disagrees": ([node("a", children=["b"]), node("b")], "node 'a' lists child 'b'"),
    "parent disagrees": ([node("a"), node("b", parent="a")], "node 'b' has parent 'a'"),
    "cycle": (
        [node("a", parent="b", children=["b"]), node("b", parent="a", children=["a"])],
        "parent cycle through node 'a' (a → b → a)",
    ),
    "self cycle": ([node("a", parent="a", children=["a"])], "parent cycle through node 'a'"),
    # Why: ids whose parents were found to reach a top node are not walked again; one leading into a
    # cycle after such nodes is still caught, and named as the first node from which the cycle is reached
    "cycle past checked nodes": (
        [
            node("top", children=["top/x"]),
            node("top/x", parent="top"),
            node("c", parent="d", children=["d", "e"]),
            node("d", parent="c", children=["c"]),
            node("e", parent="c"),
        ],
        "parent cycle through node 'c' (c → d → c)",
    ),
    "dot-dot path": (
        [node("a", "bank/../../secret.md")],
        "node 'a': path 'bank/../../secret.md' leaves the memory root",
    ),
    "absolute path": ([node("a", "/etc/passwd")], "node 'a': path '/etc/passwd' must be relative"),
    "windows path": ([node("a", "C:\\notes\\a.md")], "node 'a': path"),
    "negative weight": ([node("a", weight=-1)], "node 'a': \"weight\" must be a number"),
    "keywords not a list": ([node("a", keywords="가치관")], "node 'a': \"keywords\" must be a list"),
    "empty id": ([node("")], 'nodes[0] needs an "id"'),
    "same path twice": ([node("a", "bank/x.md"), node("b", "bank/x.md")], "nodes 'a' and 'b' both point to bank/x.md"),
}


@pytest.mark.parametrize("case", list(BAD_TREES))
def test_bad_tree_raises_tree_error_naming_the_node(case: str) -> None:
    nodes, expected = BAD_TREES[case]
    with pytest.raises(TreeError) as err:
        tree.loads(tree_json(nodes))
    assert expected in str(err.value)


NODE_FIELDS = {
    "id": st.sampled_from(["a", "가치관/원칙", " a", "a/", "", 7, None]),
    "path": st.sampled_from([None, "bank/a.md", "", 3]),
    "keywords": st.sampled_from([["가치관", "x"], [], "가치관", [1], None]),
    "parent": st.sampled_from([None, "a", 2]),
    "children": st.sampled_from([[], ["b"], "b", [None]]),
    "weight": st.sampled_from([1, 0.5, 0, -1, True, "2", None]),
    "colour": st.just("red"),
}


@settings(max_examples=300)
@given(st.lists(st.fixed_dictionaries({}, optional=NODE_FIELDS) | st.sampled_from([[], "node", None]), max_size=4))
def test_nodes_checked_all_at_once_are_those_checked_one_by_one(raws: list[Any]) -> None:
    # Why: _nodes checks field by field over all nodes, and falls back to _node's one-by-one checks
    # (which name the first bad node) only when one fails; both must accept and refuse alike
    try:
        expected: Any = [tree._node(raw, i, "t") for i, raw in enumerate(raws)]
    except TreeError as exc:
        expected = str(exc)
    try:
        got: Any = tree._nodes(raws, "t")
    except TreeError as exc:
        got = str(exc)
    assert got == expected


def test_unknown_top_level_key_and_version_are_rejected() -> None:
    with pytest.raises(TreeError, match="unknown top-level key"):
        tree.loads('{"version": 1, "nodes": [], "extra": 1}')
    with pytest.raises(TreeError, match="unsupported version 2"):
        tree.loads('{"version": 2, "nodes": []}')


def test_load_reports_a_node_whose_file_is_missing(tmp_path: Path) -> None:
    root = write_root(tmp_path / "r", {"bank/a.md": "사과\n"}, [node("a", "bank/a.md"), node("b", "bank/b.md")])
    with pytest.raises(TreeError) as err:
        tree.load(root)
    assert "node 'b' points to bank/b.md, which does not exist" in str(err.value)
    assert str(root / "tree-index.json") in str(err.value)
    assert [n.id for n in tree.load(root, check_files=False).nodes] == ["a", "b"]


def test_load_of_a_root_without_tree_file_is_an_empty_tree(tmp_path: Path) -> None:
    assert tree.load(tmp_path).nodes == ()


# --- routing -----------------------------------------------------------------------------------


def routing_tree() -> tree.Tree:
    return tree.validate(
        [
            tree.Node("identity", None, ("정체성",), None, ("identity/tone", "identity/values")),
            tree.Node("identity/values", "bank/v.md", ("가치관", "원칙"), "identity"),
            tree.Node("identity/tone", "bank/t.md", ("말투",), "identity", (), 0.5),
            tree.Node("tech", "bank/tech.md", ("회의록", "cron")),
        ]
    )


def test_route_scores_exact_and_partial_keyword_matches() -> None:
    index = routing.KeywordIndex(routing_tree())
    routes = routing.route(index, ["가치관", "원칙"], [1.0, 1.0])
    assert routes["identity/values"].score == pytest.approx(1.0)
    partial = routing.route(index, ["가치"], [1.0])  # a prefix of 가치관
    assert partial["identity/values"].score == pytest.approx(0.7)
    assert "identity/tone" not in partial


def test_route_multiplies_by_weight_and_ignores_single_syllable_prefix() -> None:
    index = routing.KeywordIndex(routing_tree())
    assert routing.route(index, ["말투"], [1.0])["identity/tone"].score == pytest.approx(0.5)
    assert routing.route(index, ["회"], [1.0]) == {}  # 회 must not route to 회의록
    assert routing.route(index, ["cro"], [1.0]) == {}  # Latin matches whole terms only


def test_route_falls_back_to_children_of_a_matching_category() -> None:
    routes = routing.route(routing.KeywordIndex(routing_tree()), ["정체성"], [1.0])
    assert set(routes) == {"identity/values", "identity/tone"}
    assert all(r.via == "identity" for r in routes.values())
    assert routes["identity/tone"].score == pytest.approx(0.5)
