"""memtree.write.merge: each tracked kind merged three ways by its structure; symmetric, no line lost."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree.notes import entries
from memtree.write import markers, merge

BASE = "# Redis\n\n- pool 10 <!-- memtree: id=e-1 -->\n- other <!-- memtree: id=e-2 -->\n"


def _e(text: str, eid: str) -> str:
    return f"- {text} <!-- memtree: id={eid} -->"


def test_a_note_appended_on_both_sides_keeps_both_entries_without_a_clash() -> None:
    ours = BASE + _e("A new", "e-3") + "\n"
    theirs = BASE + _e("B new", "e-4") + "\n"
    got = merge.merge("bank/redis.md", BASE, ours, theirs)
    assert got.clashes == ()
    assert got.text == BASE + _e("A new", "e-3") + "\n" + _e("B new", "e-4") + "\n"
    assert merge.merge("bank/redis.md", BASE, theirs, ours) == got


def test_an_entry_edited_on_one_side_and_deleted_on_the_other() -> None:
    edited = BASE.replace("pool 10", "pool 20")
    deleted_untouched = BASE.replace(_e("other", "e-2") + "\n", "")
    got = merge.merge("bank/redis.md", BASE, edited, deleted_untouched)
    assert "pool 20" in got.text and "other" not in got.text  # edit taken, untouched deletion applied
    deleted_edited = BASE.replace(_e("pool 10", "e-1") + "\n", "")
    got = merge.merge("bank/redis.md", BASE, edited, deleted_edited)
    assert "pool 20" in got.text  # an edit is never lost to a deletion


def test_an_entry_edited_both_ways_is_kept_both_ways_and_marked() -> None:
    a, b = BASE.replace("pool 10", "pool 20"), BASE.replace("pool 10", "pool 30")
    got = merge.merge("bank/redis.md", BASE, a, b)
    assert len(got.clashes) == 1
    found = {e.meta.id: e for e in entries.parse_entries(got.text)}
    assert found["e-1"].content == "pool 20"
    clashed = [e for e in found.values() if e.meta.extra.get("clash") == got.clashes[0]]
    assert [e.content for e in clashed] == ["pool 30"] and clashed[0].meta.id.startswith("e-1.")
    assert merge.MARKER_RE.search(got.text) is None
    assert merge.merge("bank/redis.md", BASE, b, a) == got


def test_prose_rewritten_both_ways_keeps_both_lines_and_marks_one() -> None:
    base = "# T\n\nhello world\nsecond line\n"
    got = merge.merge("bank/t.md", base, base.replace("hello", "HELLO"), base.replace("hello", "bye"))
    assert "HELLO world" in got.text and "bye world <!-- memtree: clash=" in got.text and len(got.clashes) == 1


def test_a_daily_log_is_the_union_in_time_order() -> None:
    log = "# 2026-12-07\n\n- 09:00 a\n"
    got = merge.merge("memory/2026-12-07.md", log, log + "- 10:00 x\n", log + "- 09:30 y\n- 10:00 x\n")
    assert got.text == "# 2026-12-07\n\n- 09:00 a\n- 09:30 y\n- 10:00 x\n"


def test_a_line_logged_twice_on_one_side_stays_twice() -> None:
    log = "# 2026-12-07\n\n- 09:00 a\n"
    got = merge.merge("memory/2026-12-07.md", log, log + "- 10:00 x\n- 10:00 x\n", log + "- 11:00 y\n")
    assert got.text == log + "- 10:00 x\n- 10:00 x\n- 11:00 y\n"
    gone = merge.merge("memory/2026-12-07.md", log, "# 2026-12-07\n\n", log + "- 11:00 y\n")
    assert gone.text == "# 2026-12-07\n\n- 11:00 y\n"  # removed on one side, untouched on the other


def _tree(*nodes: dict[str, object]) -> str:
    return orjson.dumps({"version": 1, "nodes": list(nodes)}, option=orjson.OPT_INDENT_2).decode() + "\n"


def _node(nid: str, **kw: object) -> dict[str, object]:
    return {"id": nid, "path": kw.get("path"), "keywords": kw.get("keywords", []), "parent": kw.get("parent")} | {
        "children": kw.get("children", []),
        "weight": kw.get("weight", 1.0),
    }


def test_tree_index_merges_by_node_and_keywords_as_sets() -> None:
    from memtree.notes import tree as treemod

    base = _tree(_node("a", keywords=["x"]))
    ours = _tree(_node("a", keywords=["x", "y"], children=["a/b"]), _node("a/b", parent="a", path="bank/a/b.md"))
    theirs = _tree(_node("a", keywords=["z"], children=["a/c"]), _node("a/c", parent="a", path="bank/a/c.md"))
    got = merge.merge("tree-index.json", base, ours, theirs)
    tree = treemod.loads(got.text)
    assert tree.by_id["a"].keywords == ("y", "z") and tree.by_id["a"].children == ("a/b", "a/c")
    assert merge.merge("tree-index.json", base, theirs, ours) == got


def test_a_node_field_changed_both_ways_keeps_ours_and_records_theirs_under_one_id() -> None:
    base = _tree(_node("a", path="bank/a.md", weight=1.0))
    ours, theirs = _tree(_node("a", path="bank/a.md", weight=2.0)), _tree(_node("a", path="bank/a.md", weight=3.0))
    got = merge.merge("tree-index.json", base, ours, theirs)
    back = merge.merge("tree-index.json", base, theirs, ours)
    assert orjson.loads(got.text)["nodes"][0]["weight"] == 2.0  # ours kept
    assert orjson.loads(back.text)["nodes"][0]["weight"] == 3.0  # ours kept, the other way round
    (clash,) = got.fields
    assert (clash.node, clash.field, clash.ours, clash.theirs) == ("a", "weight", 2.0, 3.0)
    assert [c.id for c in back.fields] == [clash.id] and got.clashes == (clash.id,)
    # check --fix takes a file with markers apart by the same rule: the <<<<<<< block is ours
    marked = "<<<<<<< HEAD\n" + ours + "=======\n" + theirs + ">>>>>>> b\n"
    assert markers.repair("tree-index.json", marked).fields[0].ours == 2.0


def test_a_resolution_wins_over_an_open_conflict() -> None:
    c1 = {"id": "c-1", "created": "2026-12-01T00:00:00", "similarity": 0.6, "new": {}, "old": {}}
    c2 = c1 | {"id": "c-2"}
    c3 = c1 | {"id": "c-3"}
    doc = lambda *cs: orjson.dumps({"version": 1, "conflicts": list(cs)}).decode()  # noqa: E731
    got = orjson.loads(merge.merge("conflicts.json", doc(c1, c2), doc(c2, c3), doc(c1, c2)).text)
    assert [c["id"] for c in got["conflicts"]] == ["c-2", "c-3"]  # c-1 resolved by ours, c-3 opened


def test_recall_merges_as_a_union_in_source_order() -> None:
    line = lambda p, n: f"- x <!-- memtree: from=bank/{p}.md:{n}-{n}; sha=s{n}; key=k -->"  # noqa: E731
    got = merge.merge("recall/hot.md", "", line("b", 1) + "\n", line("a", 2) + "\n")
    assert got.text == line("a", 2) + "\n" + line("b", 1) + "\n"


def test_markers_are_taken_apart_and_merged_as_the_driver_would() -> None:
    ours, theirs = BASE + _e("A new", "e-3") + "\n", BASE + _e("B new", "e-4") + "\n"
    marked = BASE + "<<<<<<< HEAD\n" + _e("A new", "e-3") + "\n=======\n" + _e("B new", "e-4") + "\n>>>>>>> b\n"
    assert markers.first_marker(marked) == BASE.count("\n") + 1
    assert markers.repair("bank/redis.md", marked) == merge.merge("bank/redis.md", BASE, ours, theirs)
    assert markers.first_marker("Title\n=======\n") is None  # a Markdown heading underline is no marker
    shown = "How a conflict looks:\n\n```\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n```\n"
    assert markers.first_marker(shown) is None and markers.split(shown).ours == shown  # a note about git


# --- properties ---------------------------------------------------------------------------------

POOL = [
    "# H",
    "",
    "plain line",
    "another line",
    "- hand item",
    _e("fact one", "e-1"),
    _e("fact two", "e-2"),
    _e("fact three", "e-3"),
]
EDITS = {_e("fact one", "e-1"): _e("fact one changed", "e-1"), _e("fact two", "e-2"): _e("fact 2!", "e-2")}


@st.composite
def _version(draw: st.DrawFn, base: list[str]) -> list[str]:
    lines = [ln for ln in base if draw(st.integers(0, 4))]  # mostly kept
    lines = [EDITS.get(ln, ln) if draw(st.integers(0, 3)) == 0 else ln for ln in lines]
    at = draw(st.integers(0, len(lines)))
    added = draw(st.lists(st.sampled_from(["new prose", "- new item", _e("new fact", "e-9"), "", "more"]), max_size=3))
    added = [ln for i, ln in enumerate(added) if "e-9" not in ln or all("e-9" not in x for x in added[:i])]
    return [*lines[:at], *added, *lines[at:]]


@st.composite
def _three(draw: st.DrawFn) -> tuple[str, str, str]:
    base = draw(st.lists(st.sampled_from(POOL), max_size=8, unique_by=lambda x: x if "id=" in x else object()))
    ours, theirs = draw(_version(base)), draw(_version(base))
    return "\n".join(base) + "\n", "\n".join(ours) + "\n", "\n".join(theirs) + "\n"


@settings(max_examples=300, deadline=None)
@given(_three(), st.sampled_from(["bank/n.md", "memory/2026-12-07.md", "recall/hot.md", "notes.txt"]))
def test_a_merge_is_symmetric(three: tuple[str, str, str], path: str) -> None:
    base, ours, theirs = three
    assert merge.merge(path, base, ours, theirs) == merge.merge(path, base, theirs, ours)


@st.composite
def _trees(draw: st.DrawFn) -> tuple[str, str, str]:
    ids = ["a", "b", "c"]
    base = {i: _node(i, path=f"bank/{i}.md", keywords=["k"]) for i in ids}

    def side() -> dict[str, dict[str, object]]:
        out = {}
        for i, n in base.items():
            if draw(st.integers(0, 5)) == 0:
                continue  # deleted
            n = dict(n)
            if draw(st.booleans()):
                n["weight"] = draw(st.sampled_from([0.5, 2.0, 3.0]))
            if draw(st.integers(0, 3)) == 0:
                n["path"] = draw(st.sampled_from([f"bank/{i}2.md", f"bank/{i}3.md"]))
            n["keywords"] = draw(st.lists(st.sampled_from(["k", "x", "y"]), unique=True))
            out[i] = n
        if draw(st.booleans()):
            out["d"] = _node("d", path="bank/d.md", weight=draw(st.sampled_from([1.0, 4.0])))
        return out

    return _tree(*base.values()), _tree(*side().values()), _tree(*side().values())


@settings(max_examples=300, deadline=None)
@given(_trees())
def test_a_tree_merge_is_symmetric_up_to_which_side_is_ours(three: tuple[str, str, str]) -> None:
    base, ours, theirs = three
    got = merge.merge("tree-index.json", base, ours, theirs)
    back = merge.merge("tree-index.json", base, theirs, ours)
    assert sorted(got.clashes) == sorted(back.clashes)  # the same recorded ids, whichever side merges
    assert {(c.id, c.ours, c.theirs) for c in got.fields} == {(c.id, c.theirs, c.ours) for c in back.fields}
    # with each recorded field given the other side's value, the two merges are the same bytes
    nodes = {n["id"]: n for n in orjson.loads(got.text)["nodes"]}
    for c in got.fields:
        nodes[c.node][c.field] = c.theirs
    assert _tree(*[nodes[k] for k in sorted(nodes)]) == back.text


def _words(text: str) -> set[str]:
    return {entries.strip_meta(ln).rstrip() for ln in text.split("\n")}


@settings(max_examples=300, deadline=None)
@given(_three(), st.sampled_from(["bank/n.md", "memory/2026-12-07.md", "notes.txt"]))
def test_a_merge_loses_no_line_either_side_added(three: tuple[str, str, str], path: str) -> None:
    base, ours, theirs = three
    got = _words(merge.merge(path, base, ours, theirs).text)
    before = set(base.split("\n"))
    for side in (ours, theirs):
        for line in side.split("\n"):
            if line not in before:
                assert entries.strip_meta(line).rstrip() in got, line
    assert merge.MARKER_RE.search(merge.merge(path, base, ours, theirs).text) is None
