"""memtree.write.split: plan (pure), join, slugs, idempotence, and split_file on disk with the tree."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, node
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtree.errors import ChangedOnDisk, MemtreeError
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.write import split as split_module
from memtree.write.split import MARKER, SplitPlan, join_parts, plan_split, slugify, split_file

KO = ["가치관이", "판단기준을", "원칙은", "메모리", "검색에서", "한국어", "조사가", "파일을", "분할한다", "물", "집에"]
EN = ["memory", "split", "note", "heading", "cron", "search", "values", "paths", "Redis", "pool", "KST"]
ENTRY = re.compile(r"^- \[.*\]\(<?([^<>()]+)>?\)\r?$")
Doc = tuple[str, str, list[tuple[int, int, str]]]
"""A generated note, its body, and the body's blocks as (first line, last line, kind)."""


def body_of(text: str) -> str:
    """A note without its frontmatter (what the split must keep, byte for byte)."""
    if text.startswith("---\n"):
        end = text.index("\n---\n", 3)
        return text[end + 5 :]
    return text


def read_back(root: Path, rel: str) -> tuple[str, str, list[str]]:
    """(parent content before its index, content after it, children's texts in index order)."""
    parent = (root / rel).read_text(encoding="utf-8")
    before, _, rest = body_of(parent).partition(MARKER + "\n")
    lines = rest.split("\n")
    targets = []
    while lines and ENTRY.match(lines[0]):
        targets.append(ENTRY.match(lines.pop(0)).group(1))  # type: ignore[union-attr]
    folder = (root / rel).parent
    return before, "\n".join(lines), [(folder / t).read_text(encoding="utf-8") for t in targets]


def section(title: str, level: int, size: int, word: str = "메모리") -> str:
    """A heading and paragraphs of about ``size`` bytes."""
    para = " ".join([word] * 12) + "\n\n"  # 12 × 9 + 12 bytes
    return "#" * level + f" {title}\n\n" + para * max(1, size // len(para.encode()))


# --- the round trip, as a property ------------------------------------------------------------


def words(draw: st.DrawFn, lo: int, hi: int) -> str:
    return " ".join(draw(st.lists(st.sampled_from(KO + EN), min_size=lo, max_size=hi)))


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    """(note, its body, the body's generated blocks as 0-based inclusive line ranges with a kind)."""
    lines: list[str] = []
    blocks: list[tuple[int, int, str]] = []
    for n in range(draw(st.integers(1, 30))):
        kinds = ["heading", "para", "long", "list", "code", "table"] + (["rule"] if n else [])
        kind = draw(st.sampled_from(kinds))
        start = len(lines)
        if kind == "heading":
            if lines and not lines[-1] and draw(st.booleans()):
                lines.pop()  # a heading right under the previous block, no blank line
                start -= 1
            lines.append("#" * draw(st.integers(1, 6)) + " " + words(draw, 1, 4))
            blocks.append((start, start, kind))
            if draw(st.booleans()):
                continue  # text right under the heading, no blank line
        elif kind in ("para", "long"):
            lo, hi = (1, 12) if kind == "para" else (40, 300)
            lines += [words(draw, lo, hi) for _ in range(draw(st.integers(1, 3)))]
        elif kind == "list":
            loose = draw(st.booleans())
            for i in range(draw(st.integers(1, 5))):
                item = len(lines)
                lines.append(("- " if i % 2 else f"{i + 1}. ") + words(draw, 1, 30))
                for _ in range(draw(st.integers(0, 2))):
                    lines.append("  - " + words(draw, 1, 20))
                if draw(st.booleans()):
                    lines.append("  " + words(draw, 1, 20))  # a continuation line
                blocks.append((item, len(lines) - 1, "item"))
                if loose:
                    lines.append("")
            if loose:
                lines.pop()
            lines.append("")
            continue
        elif kind == "code":
            fence = draw(st.sampled_from(["```", "~~~", "````"]))
            inside = [
                "",
                "# not a heading",
                "| not | a table |",
                "- not an item",
                "```python" if fence != "```" else "``",
            ]
            lines.append(fence + draw(st.sampled_from(["", "python", "bash"])))
            for _ in range(draw(st.integers(0, 12))):
                lines.append(draw(st.sampled_from([*inside, words(draw, 1, 10)])))
            unclosed = draw(st.integers(0, 9)) == 0
            if not unclosed:
                lines.append(fence)
            blocks.append((start, len(lines) - 1, kind))
            if unclosed:  # CommonMark: an unclosed fence runs to the end of the document
                break
            lines.append("")
            continue
        elif kind == "table":
            lines += [
                "| " + words(draw, 1, 3) + " | " + words(draw, 1, 3) + " |" for _ in range(draw(st.integers(2, 6)))
            ]
        else:
            lines.append("---")
        blocks.append((start, len(lines) - 1, kind))
        lines.append("")
    body = "\n".join(lines).rstrip("\n") + draw(st.sampled_from(["", "\n", "\n\n"]))
    front = draw(st.sampled_from(["", "---\ntitle: 메모\nkeywords: [메모리, split]\n---\n"]))
    return front + body, body, blocks


def entries(parent: str) -> list[str]:
    """The link targets of a parent's index, in order."""
    return [m.group(1) for m in map(ENTRY.match, parent.split("\n")) if m]


def leaves(plan: SplitPlan, targets: list[str]) -> list[str]:
    """The parts the index ``targets`` lead to, in order: an index note's links are followed."""
    notes = {c.path: c.text for c in plan.indexes}
    out = []
    for target in targets:
        if target in notes:
            folder = target.rsplit("/", 1)[0]
            out += leaves(plan, [f"{folder}/{t}" for t in entries(notes[target])])
        else:
            out.append(target)
    return out


def start_lines(plan: SplitPlan) -> list[int]:
    """The 0-based body line on which each child starts."""
    out, line = [], plan.preamble.count("\n")
    for c in plan.children:
        out.append(line)
        line += c.text.count("\n")
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(200, 2000), documents())
def test_split_then_join_gives_the_body_back(doc: Doc, max_bytes: int, extra: Doc) -> None:
    text, body, blocks = doc
    plan = plan_split(text, max_bytes, "n")
    if len(text.encode()) <= max_bytes:
        assert plan is None
        return
    assert plan is not None
    if not plan.children:  # nothing could be moved: the note is left as it is, and says why
        assert plan.parent_text == text and plan.warnings
        return
    assert join_parts(plan) == body
    assert plan.parent_text.startswith(text[: len(text) - len(body)])  # frontmatter stays with the parent
    for c, first in zip(plan.children, start_lines(plan)):
        # never inside a fence, a table or a list item (nor between a heading and its text)
        assert not any(s < first <= e for s, e, kind in blocks if kind in ("code", "table", "item"))
        assert not c.text.startswith("---")  # a child must not open with what reads as frontmatter
        if len(c.text.encode()) > max_bytes:
            assert c.oversized and any(c.path in w for w in plan.warnings)
            last = first + c.text.rstrip("\n").count("\n")
            held = {(s, e) for s, e, kind in blocks if kind not in ("heading", "rule") and s <= last and e >= first}
            assert len(held) == 1  # only a single block too big for the limit may exceed it
        else:
            assert not c.oversized
        again = plan_split(c.text, max_bytes, "c")
        assert again is None or not again.children  # idempotent on the children
    again = plan_split(plan.parent_text, max_bytes, "n")
    assert again is None or not again.children  # and on the parent
    if len(plan.parent_text.encode()) > max_bytes:
        assert plan.preamble == "" and plan.warnings  # only an index too long for the limit
    # every part is reached from the parent's index, in order, once (through index notes if need be)
    assert leaves(plan, entries(plan.parent_text)) == [c.path for c in plan.children]
    for note in plan.indexes:
        assert len(note.text.encode()) <= max_bytes or any(note.path in w for w in plan.warnings)
        again = plan_split(note.text, max_bytes, "i")
        assert again is None or not again.children
    # the parent grows: its new content is split again, its index extended, never repeated
    grown = plan_split(plan.parent_text + extra[1], max_bytes, "n")
    if grown is not None and grown.children:
        assert join_parts(grown) == plan.preamble + extra[1]
        assert grown.parent_text.count(MARKER) == 1
        old, new = (entries(t) for t in (plan.parent_text, grown.parent_text))
        assert new[: len(old)] == old and leaves(grown, new[len(old) :]) == [c.path for c in grown.children]
        assert len(set(new)) == len(new)


# --- choosing the cut ------------------------------------------------------------------------


def test_a_note_under_the_limit_is_not_split() -> None:
    assert plan_split("# 작은 노트\n\n짧다.\n", 10_240) is None
    assert plan_split("a" * 100, 100) is None
    assert plan_split("a" * 101, 100) is not None


def test_cut_at_the_coarsest_heading_level_that_fits() -> None:
    text = (
        "# 가치관\n\n소개 문단.\n\n"
        + section("원칙", 2, 300)
        + section("세부 원칙 하나", 3, 300)
        + section("세부 원칙 둘", 3, 300)
        + section("판단기준", 2, 400)
        + section("예시", 3, 300)
    )
    plan = plan_split(text, 1200, "values")
    assert plan is not None and not plan.warnings
    assert [(c.heading, c.level) for c in plan.children] == [("원칙", 2), ("판단기준", 2)]
    assert plan.preamble == "# 가치관\n\n소개 문단.\n\n"
    assert all(len(c.text.encode()) <= 1200 for c in plan.children)
    assert "### 세부 원칙 둘" in plan.children[0].text  # the ### sections stay inside their ## part
    assert join_parts(plan) == text


def test_a_deeper_level_is_used_everywhere_when_the_coarser_one_does_not_fit() -> None:
    a = section("A", 2, 200) + section("A1", 3, 600) + section("A2", 3, 600)
    text = "# T\n\n" + a + section("B", 2, 300) + section("B1", 3, 300)
    plan = plan_split(text, 1000, "t")
    assert plan is not None
    # B would fit whole, but the level that works is ###, for every section
    assert [(c.heading, c.level) for c in plan.children] == [("A", 2), ("A1", 3), ("A2", 3), ("B", 2), ("B1", 3)]


def test_sections_are_cut_further_only_where_no_heading_level_fits() -> None:
    big = "## 큰 절\n\n" + "".join(f"문단 {i} " + "검색 " * 60 + "\n\n" for i in range(12))
    text = "# 제목\n\n" + section("작은 절", 2, 200) + big + section("끝", 2, 200)
    plan = plan_split(text, 1000, "n")
    assert plan is not None and not plan.warnings
    headings = [c.heading for c in plan.children]
    assert headings[:2] == ["작은 절", "큰 절"] and headings[-1] == "끝"
    middle = plan.children[2:-1]
    assert middle and all(c.heading == "" and c.level == 0 for c in middle)
    assert all(c.slug.startswith("part-") for c in middle)
    assert all(len(c.text.encode()) <= 1000 for c in plan.children)
    assert sum(c.text.count("문단 ") for c in plan.children) == 12
    assert len(plan.children) < 12  # paragraphs are packed together, not one file each
    assert "- [큰 절 (continued)](n/part-3.md)" in plan.parent_text
    assert join_parts(plan) == text


def test_paragraph_fallback_without_headings() -> None:
    text = "".join(f"Paragraph {i}: " + "memory " * 40 + "\n\n" for i in range(20))
    plan = plan_split(text, 1000, "log")
    assert plan is not None and not plan.warnings
    assert all(len(c.text.encode()) <= 1000 for c in plan.children)
    assert plan.preamble.startswith("Paragraph 0")  # the first paragraphs stay in the parent
    assert len(plan.parent_text.encode()) <= 1000
    assert join_parts(plan) == text


FENCED = """# 설계

## 코드

```python
def f():

    # not a heading

    return 1
```

| 키 | 값 |
|---|---|
| cron | KST |

- 첫 항목
  - 중첩 항목

  이어지는 문단
- 둘째 항목
"""


def test_fences_tables_and_list_items_are_never_cut() -> None:
    text = FENCED + "\n" + section("다음", 2, 300)
    plan = plan_split(text, 150, "d")
    assert plan is not None
    joined = [c.text for c in plan.children]
    fence = FENCED[FENCED.index("```python") : FENCED.index("```\n\n|") + 3]
    table = "| 키 | 값 |\n|---|---|\n| cron | KST |\n"
    item = "- 첫 항목\n  - 중첩 항목\n\n  이어지는 문단\n"
    for whole in (fence, table, item):
        assert sum(whole in t for t in joined) == 1
    assert not any(t.startswith(("  ", "|---", "    # not")) for t in joined)
    assert join_parts(plan) == text


def test_a_single_block_over_the_limit_stays_whole_and_is_reported() -> None:
    code = "```\n" + "x = 1\n\n" * 200 + "```\n"
    text = "# 노트\n\n소개.\n\n## 큰 코드\n\n" + code + "\n" + section("작은 절", 2, 200)
    plan = plan_split(text, 800, "n")
    assert plan is not None
    big = next(c for c in plan.children if c.heading == "큰 코드")
    assert big.oversized and code in big.text
    assert any("큰-코드.md" in w and "never cut" in w for w in plan.warnings)
    again = plan_split(big.text, 800, "큰-코드")
    assert again is not None and again.children == () and again.warnings  # splitting it again moves nothing


def test_a_note_that_is_one_block_is_left_as_it_is() -> None:
    text = "```\n" + "x\n" * 500 + "```\n"
    plan = plan_split(text, 200, "n")
    assert plan is not None and plan.children == () and plan.parent_text == text
    assert "never cut" in plan.warnings[0]
    only_front = plan_split("---\nnotes: " + "x" * 500 + "\n---\n", 200, "n")
    assert only_front is not None and only_front.children == () and "no content to move" in only_front.warnings[0]


def test_frontmatter_stays_in_the_parent() -> None:
    front = "---\ntitle: 크론\nkeywords: [크론, cron]\n---\n"
    text = front + section("A", 2, 600) + section("B", 2, 600)
    plan = plan_split(text, 800, "cron")
    assert plan is not None
    assert plan.parent_text.startswith(front + MARKER + "\n")
    assert not any("keywords:" in c.text for c in plan.children)
    assert join_parts(plan) == text[len(front) :]


def test_frontmatter_too_big_for_the_parent_sends_all_content_to_children() -> None:
    front = "---\nnotes: " + "가" * 300 + "\n---\n"
    text = front + "# 제목\n\n짧은 본문.\n"
    plan = plan_split(text, 930, "n")
    assert plan is not None and plan.preamble == ""
    assert [c.text for c in plan.children] == ["# 제목\n\n짧은 본문.\n"]


# --- slugs and the index ---------------------------------------------------------------------


def test_slugs() -> None:
    assert slugify("1. Markdown이 진실이다") == "1-markdown이-진실이다"
    assert slugify("Heartbeat → Reflect 파이프라인") == "heartbeat-reflect-파이프라인"
    assert slugify("크론 (KST) — 스케줄!") == "크론-kst-스케줄"
    assert slugify("\u1100\u1161\u11ab") == "간"  # NFD Hangul, as macOS writes it
    assert slugify("snake_case_name") == "snake-case-name"
    assert slugify("?!…") == ""
    assert len(slugify("긴 제목 " * 30)) <= 60 and not slugify("긴 제목 " * 30).endswith("-")


def test_duplicate_and_empty_headings_get_distinct_slugs() -> None:
    text = "".join(section(h, 2, 400) for h in ["Notes", "Notes", "notes", "?!", "회의 기록"])
    plan = plan_split(text, 600, "n")
    assert plan is not None
    assert [c.slug for c in plan.children] == ["notes", "notes-2", "notes-3", "part-4", "회의-기록"]
    assert "- [Notes](n/notes-2.md)" in plan.parent_text and "- [?!](n/part-4.md)" in plan.parent_text
    taken = plan_split(text, 600, "n", taken={"notes"})
    assert taken is not None and taken.children[0].slug == "notes-2"


def test_index_links_are_relative_and_escaped() -> None:
    text = section("[WIP] 설계", 2, 600) + section("B", 2, 600)
    plan = plan_split(text, 800, "my note")
    assert plan is not None
    assert r"- [\[WIP\] 설계](<my note/wip-설계.md>)" in plan.parent_text


# --- idempotence and growth -------------------------------------------------------------------


def test_splitting_again_changes_nothing() -> None:
    text = "# 제목\n\n소개.\n\n" + section("A", 2, 700) + section("B", 2, 700)
    plan = plan_split(text, 1000, "n")
    assert plan is not None
    assert plan_split(plan.parent_text, 1000, "n") is None
    assert all(plan_split(c.text, 1000, "c") is None for c in plan.children)


def test_a_grown_parent_is_split_again_with_its_index_extended() -> None:
    first = plan_split("# 제목\n\n소개.\n\n" + section("A", 2, 700) + section("B", 2, 700), 1000, "n")
    assert first is not None
    grown = first.parent_text + "\n" + section("A", 2, 700) + section("C", 2, 700)
    again = plan_split(grown, 1000, "n")
    assert again is not None
    assert [c.slug for c in again.children] == ["a-2", "c"]  # the existing a.md is never reused
    assert again.parent_text.count(MARKER) == 1
    links = [ln for ln in again.parent_text.split("\n") if ln.startswith("- [")]
    assert links == ["- [A](n/a.md)", "- [B](n/b.md)", "- [A](n/a-2.md)", "- [C](n/c.md)"]
    assert again.preamble == "# 제목\n\n소개.\n\n\n"  # the blank line written after the index stays
    assert join_parts(again) == "# 제목\n\n소개.\n\n" + "\n" + section("A", 2, 700) + section("C", 2, 700)
    assert plan_split(again.parent_text, 1000, "n") is None


def test_crlf_notes_round_trip_and_get_a_crlf_index() -> None:
    text = "# 제목\r\n\r\n소개.\r\n\r\n## A\r\n\r\n" + "가 " * 300 + "\r\n\r\n## B\r\n\r\n" + "나 " * 300 + "\r\n"
    plan = plan_split(text, 1000, "n")
    assert plan is not None and join_parts(plan) == text
    assert plan.parent_text == "# 제목\r\n\r\n소개.\r\n\r\n" + MARKER + "\r\n- [A](n/a.md)\r\n- [B](n/b.md)\r\n"
    grown = plan_split(plan.parent_text + "## C\r\n\r\n" + "다 " * 300 + "\r\n", 1000, "n")
    assert grown is not None and [c.slug for c in grown.children] == ["c"]
    assert entries(grown.parent_text) == ["n/a.md", "n/b.md", "n/c.md"]


def test_a_marker_inside_code_is_content() -> None:
    text = "```\n" + MARKER + "\n- [A](n/a.md)\n```\n\n" + section("A", 2, 600) + section("B", 2, 600)
    plan = plan_split(text, 800, "n")
    assert plan is not None and join_parts(plan) == text
    assert plan.preamble.startswith("```\n" + MARKER)


# --- on disk ----------------------------------------------------------------------------------

NOTE = (
    "---\ntitle: 가치관\nkeywords: [가치관, 원칙]\n---\n# memtree의 가치관\n\n소개 문단이다.\n\n"
    + "## 한국어는 1급 시민\n\n"
    + "조사가 붙은 가치관이 찾아져야 한다. 형태소 분석기 없이 조사를 떼어낸다. " * 20
    + "\n\n## Local first\n\n"
    + "memtree works offline. Offline search needs no network, offline writes need no server. " * 15
    + "\n"
)


def split_root(make_root: Callable[..., Path], files: dict[str, str]) -> Path:
    nodes = [
        node("identity", None, keywords=["정체성"], children=["identity/values"]),
        node("identity/values", "bank/identity/values.md", keywords=["가치관", "원칙", "offline"], parent="identity"),
    ]
    return make_root(files, nodes)


def test_split_file_writes_children_and_adds_their_nodes(make_root: Callable[..., Path]) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    tree = treemod.load(root)
    result = split_file(root, "bank/identity/values.md", tree, 1500)
    assert result.children == ("bank/identity/values/한국어는-1급-시민.md", "bank/identity/values/local-first.md")
    assert result.nodes == ("identity/values/한국어는-1급-시민", "identity/values/local-first")
    new = result.tree
    assert treemod.validate(new.nodes, root) == new
    parent = new.by_id["identity/values"]
    assert set(parent.children) == set(result.nodes)
    ko, en = (new.by_id[i] for i in result.nodes)
    assert ko.parent == en.parent == "identity/values" and ko.weight == en.weight == 1.0
    assert ko.path == result.children[0]
    assert ko.keywords[:2] == ("가치관", "한국어는 1급 시민")  # the parent's keyword it holds, then its heading
    assert "원칙" not in ko.keywords and "offline" not in ko.keywords
    assert en.keywords[:2] == ("offline", "local first")
    assert "조사" in ko.keywords or "조사가" in ko.keywords  # a distinctive word of its own
    assert new.by_id["identity"] == tree.by_id["identity"]
    before, after, children = read_back(root, "bank/identity/values.md")
    assert before + "".join(children) + after == body_of(NOTE)
    assert before == "# memtree의 가치관\n\n소개 문단이다.\n\n"
    loaded = treemod.loads(treemod.dumps(new), root)  # what the caller saves loads back
    assert loaded == new
    again = split_file(root, "bank/identity/values.md", new, 1500)
    assert again.tree is new and again.children == () and again.nodes == ()


def test_a_grown_parent_on_disk_gains_children_and_keeps_the_old_ones(make_root: Callable[..., Path]) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    first = split_file(root, "bank/identity/values.md", treemod.load(root), 1500)
    note = root / "bank/identity/values.md"
    grown_text = note.read_text(encoding="utf-8") + "\n## 원칙 추가\n\n" + "새 원칙을 적는다. " * 80 + "\n"
    note.write_text(grown_text, encoding="utf-8")
    old_files = {p: (root / p).read_bytes() for p in first.children}
    second = split_file(root, "bank/identity/values.md", first.tree, 1500)
    assert second.nodes == ("identity/values/원칙-추가",)
    assert {p: (root / p).read_bytes() for p in first.children} == old_files  # existing children untouched
    assert all(second.tree.by_id[i] == first.tree.by_id[i] for i in first.nodes)
    assert set(second.tree.by_id["identity/values"].children) == {*first.nodes, *second.nodes}
    assert "원칙" in second.tree.by_id["identity/values/원칙-추가"].keywords  # carried over from the parent
    before, after, children = read_back(root, "bank/identity/values.md")
    intro = "# memtree의 가치관\n\n소개 문단이다.\n\n"
    assert before == intro + "\n"  # the blank line written under the index stays with the parent's text
    assert (
        "".join(children) + after == body_of(NOTE)[len(intro) :] + "## 원칙 추가\n\n" + "새 원칙을 적는다. " * 80 + "\n"
    )


def test_split_file_under_the_limit_changes_nothing(make_root: Callable[..., Path]) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    tree = treemod.load(root)
    result = split_file(root, "bank/identity/values.md", tree, 10_240)
    assert result.tree is tree and result.children == () and result.warnings == ()
    assert (root / "bank/identity/values.md").read_text(encoding="utf-8") == NOTE
    assert not (root / "bank/identity/values").exists()


def test_split_file_leaves_an_uncuttable_note_and_says_why(make_root: Callable[..., Path]) -> None:
    text = "# 로그\n\n" + "긴 한 줄 " * 400 + "\n"
    root = split_root(make_root, {"bank/identity/values.md": text})
    tree = treemod.load(root)
    result = split_file(root, "bank/identity/values.md", tree, 1000)
    assert result.tree is tree and result.children == () and "never cut" in result.warnings[0]
    assert (root / "bank/identity/values.md").read_text(encoding="utf-8") == text


def test_split_file_never_overwrites_a_different_file(make_root: Callable[..., Path]) -> None:
    other = "# 다른 노트\n\n건드리면 안 된다.\n"
    root = split_root(make_root, {"bank/identity/values.md": NOTE, "bank/identity/values/local-first.md": other})
    result = split_file(root, "bank/identity/values.md", treemod.load(root), 1500)
    assert "bank/identity/values/local-first-2.md" in result.children
    assert (root / "bank/identity/values/local-first.md").read_text(encoding="utf-8") == other
    before, after, children = read_back(root, "bank/identity/values.md")
    assert before + "".join(children) + after == body_of(NOTE)


def test_split_file_reuses_identical_children_of_an_interrupted_split(make_root: Callable[..., Path]) -> None:
    plan = plan_split(NOTE, 1500, "values")
    assert plan is not None
    files = {"bank/identity/values.md": NOTE, **{f"bank/identity/{c.path}": c.text for c in plan.children}}
    root = split_root(make_root, files)
    result = split_file(root, "bank/identity/values.md", treemod.load(root), 1500)
    assert result.children == tuple(f"bank/identity/{c.path}" for c in plan.children)


def test_split_file_without_a_node(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/loose.md": NOTE}, [])
    tree = treemod.load(root)
    result = split_file(root, "bank/loose.md", tree, 1500)
    assert result.tree is tree and result.nodes == () and len(result.children) == 2
    assert any("no node" in w for w in result.warnings)


def test_split_file_attaches_children_to_a_category_node_of_the_same_id(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/topic.md": NOTE}, [node("topic", None, keywords=["원칙"])])
    result = split_file(root, "bank/topic.md", treemod.load(root), 1500)
    assert result.nodes == ("topic/한국어는-1급-시민", "topic/local-first")
    assert set(result.tree.by_id["topic"].children) == set(result.nodes)


def test_split_file_refuses_notes_outside_bank(make_root: Callable[..., Path]) -> None:
    root = make_root({"memory/2026-11-29.md": NOTE}, [])
    with pytest.raises(MemtreeError, match="only notes in bank/"):
        split_file(root, "memory/2026-11-29.md", treemod.load(root), 1500)
    with pytest.raises(MemtreeError, match="cannot be read"):
        split_file(root, "bank/missing.md", treemod.load(root), 1500)


def test_a_failed_write_leaves_the_note_whole_and_no_child_behind(
    make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    real = store.tempfile.mkstemp

    def disk_full_on_the_parent(*args: Any, **kwargs: Any) -> tuple[int, str]:
        if kwargs.get("prefix", "").startswith(".values.md"):
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(store.tempfile, "mkstemp", disk_full_on_the_parent)
    with pytest.raises(MemtreeError, match="No space left on device"):
        split_file(root, "bank/identity/values.md", treemod.load(root), 1500)
    assert (root / "bank/identity/values.md").read_text(encoding="utf-8") == NOTE
    assert list((root / "bank/identity/values").glob("*.md")) == []


def _editing_while_planning(monkeypatch: pytest.MonkeyPatch, note: Path, edit: Callable[[str], str]) -> None:
    """Make the split's planning step edit ``note`` as a person would, once."""
    real = split_module.plan_split
    done: list[bool] = []

    def plan_and_edit(*args: Any, **kwargs: Any) -> Any:
        if not done:
            note.write_text(edit(note.read_text(encoding="utf-8")), encoding="utf-8")
            done.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(split_module, "plan_split", plan_and_edit)


def test_a_note_edited_during_the_split_is_not_written(
    make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    note = root / "bank/identity/values.md"
    _editing_while_planning(monkeypatch, note, lambda t: t.replace("\n", "\n(고침)\n", 1))
    with pytest.raises(ChangedOnDisk):
        split_file(root, "bank/identity/values.md", treemod.load(root), 1500)
    assert "(고침)" in note.read_text(encoding="utf-8")
    assert list((root / "bank/identity/values").glob("*.md")) == []


def test_a_line_appended_during_the_split_stays_in_the_parent(
    make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    note = root / "bank/identity/values.md"
    _editing_while_planning(monkeypatch, note, lambda t: t + "- 방금 추가된 항목\n")
    result = split_file(root, "bank/identity/values.md", treemod.load(root), 1500)
    assert result.children
    assert note.read_text(encoding="utf-8").endswith("- 방금 추가된 항목\n")


def test_split_file_on_the_sample_notes_times_four(make_root: Callable[..., Path]) -> None:
    notes = sorted((REPO / "bank").rglob("*.md"))
    big = "".join(p.read_text(encoding="utf-8") for p in notes) * 4
    assert len(big.encode()) > 10_240
    root = split_root(make_root, {"bank/identity/values.md": big})
    result = split_file(root, "bank/identity/values.md", treemod.load(root), 10_240)
    assert len(result.children) >= 4 and result.warnings == ()
    assert all((root / p).stat().st_size <= 10_240 for p in result.children)
    assert (root / "bank/identity/values.md").stat().st_size <= 10_240
    before, after, children = read_back(root, "bank/identity/values.md")
    assert before + "".join(children) + after == body_of(big)
    assert set(result.tree.by_id["identity/values"].children) == set(result.nodes)
    treemod.validate(result.tree.nodes, root)
    again = split_file(root, "bank/identity/values.md", result.tree, 10_240)
    assert again.children == () and all(
        split_file(root, p, result.tree, 10_240).children == () for p in result.children
    )


def test_an_index_too_long_for_the_parent_goes_into_index_notes() -> None:
    text = "# 긴 목록\n\n" + "".join(f"- 항목 {i}: 메모리 분할 목록의 한 줄\n" for i in range(5000))
    plan = plan_split(text, 2048, "list")
    assert plan is not None and plan.indexes and not plan.warnings
    assert join_parts(plan) == text
    assert len(plan.parent_text.encode()) <= 2048 and all(len(f.text.encode()) <= 2048 for f in plan.files)
    assert leaves(plan, entries(plan.parent_text)) == [c.path for c in plan.children]
    assert plan_split(plan.parent_text, 2048, "list") is None
    assert all(plan_split(f.text, 2048, "c") is None for f in plan.files)


# --- all or nothing: a split killed between its children and its parent -----------------------------

_KILLED_SPLIT = """
import os, signal, sys
from pathlib import Path
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.write.split import split_file

root, rel = Path(sys.argv[1]), sys.argv[2]
real_save = store.save

def save(root_, snap, data, durable=True):
    if snap.rel == rel:  # the children are written: die before the parent is
        os.kill(os.getpid(), signal.SIGKILL)
    return real_save(root_, snap, data, durable)

store.save = save
with store.write_lock(root):
    split_file(root, rel, treemod.load(root), 1500)
"""


def _killed_split(root: Path, rel: str) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _KILLED_SPLIT, str(root), rel], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()


def _lines_once(root: Path, text: str) -> None:
    """Every line of ``text`` is in exactly one note under bank/."""
    notes = [p.read_text(encoding="utf-8") for p in (root / "bank").rglob("*.md")]
    for line in {ln for ln in text.splitlines() if ln.strip() and not ln.startswith("---")}:
        assert sum(n.splitlines().count(line) for n in notes) == 1, line


def test_a_split_killed_before_its_parent_is_rolled_back_by_the_next_writer(make_root: Callable[..., Path]) -> None:
    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    _killed_split(root, "bank/identity/values.md")
    assert list((root / "bank/identity/values").glob("*.md"))  # it died with its children written
    with store.write_lock(root):  # the next writer to take the lock settles it
        assert not (root / "bank/identity/values").exists()
    assert (root / "bank/identity/values.md").read_text(encoding="utf-8") == NOTE
    _lines_once(root, NOTE)
    said = "rolled back the interrupted split of bank/identity/values.md: removed 2 copied note(s)"
    assert store.recovered() == [said]
    again = split_file(root, "bank/identity/values.md", treemod.load(root), 1500)  # and it splits cleanly again
    assert len(again.children) == 2
    _lines_once(root, NOTE)


def test_a_split_whose_parent_was_written_is_completed(make_root: Callable[..., Path]) -> None:
    from memtree.notes import intent

    root = split_root(make_root, {"bank/identity/values.md": NOTE})
    plan = plan_split(NOTE, 1500, "values")
    assert plan is not None
    created = [(f"bank/identity/{c.path}", c.text.encode()) for c in plan.children]
    intent.begin(root, "bank/identity/values.md", NOTE.encode(), plan.parent_text.encode(), created)
    for rel, data in created:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "bank/identity/values.md").write_text(plan.parent_text + "- 나중에 덧붙인 줄\n", encoding="utf-8")
    with store.write_lock(root):
        pass
    assert all((root / rel).read_bytes() == data for rel, data in created)  # kept: the parent gave them up
    assert not intent.pending(root)
