"""memtree.notes.chunks: Markdown → chunks with 1-based inclusive line ranges; frontmatter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memtree.notes import chunks
from memtree.notes.chunks import CHUNK_MAX_CHARS


def spans(source: str) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks.parse(source).chunks]


def test_paragraphs_are_chunks_with_1_based_inclusive_lines() -> None:
    source = "첫 문단 첫 줄\n첫 문단 둘째 줄\n\n둘째 문단\n"
    doc = chunks.parse(source)
    assert [(c.start, c.end, c.text) for c in doc.chunks] == [
        (1, 2, "첫 문단 첫 줄\n첫 문단 둘째 줄"),
        (4, 4, "둘째 문단"),
    ]


def test_chunk_text_is_exactly_its_lines() -> None:
    source = "alpha\n\n- 가치관\n  이어지는 줄\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nomega\n"
    lines = source.split("\n")
    for c in chunks.parse(source).chunks:
        assert c.text == "\n".join(lines[c.start - 1 : c.end])


def test_list_item_keeps_continuation_and_nested_items() -> None:
    source = (
        "- 첫 항목\n"  # 1
        "  이어지는 설명\n"  # 2
        "  - 중첩 항목 a\n"  # 3
        "  - 중첩 항목 b\n"  # 4
        "- 둘째 항목\n"  # 5
        "\n"  # 6
        "  빈 줄 뒤의 들여쓴 계속\n"  # 7
        "- 셋째 항목\n"  # 8
    )
    assert spans(source) == [(1, 4), (5, 7), (8, 8)]


def test_numbered_items_are_separate_chunks() -> None:
    assert spans("1. 하나\n2. 둘\n3) 셋\n") == [(1, 1), (2, 2), (3, 3)]


def test_frontmatter_is_parsed_not_chunked() -> None:
    source = "---\ntitle: 가치관\nkeywords: [가치관, 원칙]\n---\n본문 문단\n"
    doc = chunks.parse(source)
    assert doc.meta == {"title": "가치관", "keywords": ["가치관", "원칙"]}
    assert doc.meta_error is None
    assert doc.body_start == 5
    assert [(c.start, c.end, c.text) for c in doc.chunks] == [(5, 5, "본문 문단")]


def test_invalid_frontmatter_is_reported_not_raised() -> None:
    doc = chunks.parse("---\nkeywords: [가치관, 원칙\n---\n본문\n")
    assert doc.meta == {}
    assert doc.meta_error is not None and "YAML" in doc.meta_error
    assert [(c.start, c.text) for c in doc.chunks] == [(4, "본문")]


def test_frontmatter_that_is_not_a_mapping_is_reported() -> None:
    doc = chunks.parse("---\n- a\n- b\n---\n본문\n")
    assert doc.meta == {}
    assert doc.meta_error == "frontmatter is not a mapping"


def test_fenced_code_with_blank_lines_stays_whole() -> None:
    source = "앞 문단\n\n```python\nx = 1\n\n\ny = 2\n```\n\n뒤 문단\n"
    doc = chunks.parse(source)
    assert [(c.start, c.end) for c in doc.chunks] == [(1, 1), (3, 8), (10, 10)]
    assert doc.chunks[1].text == "```python\nx = 1\n\n\ny = 2\n```"


def test_heading_like_line_inside_fence_is_code() -> None:
    source = "~~~\n# not a heading\n\n## nor this\n~~~\n"
    doc = chunks.parse(source)
    assert doc.headings == ()
    assert spans(source) == [(1, 5)]


def test_table_is_one_chunk() -> None:
    source = "| 상황 | 톤 |\n|---|---|\n| 검색 결과 없음 | 확실한 기록이 없어요 |\n| 충돌 | 두 출처 |\n다음 문단\n"
    assert spans(source) == [(1, 4), (5, 5)]


def test_a_small_section_is_cut_into_its_blocks_the_heading_joining_the_first() -> None:
    source = "# 가치관\n\n첫 문단\n\n- 항목 하나\n- 항목 둘\n\n# 다음 절\n\n다른 문단\n"
    doc = chunks.parse(source)
    assert doc.headings == ("가치관", "다음 절")
    assert [(c.start, c.end, c.headings) for c in doc.chunks] == [
        (1, 3, ()),  # the heading's own words find its first block
        (5, 5, ("가치관",)),
        (6, 6, ("가치관",)),
        (8, 10, ()),
    ]


def test_a_one_line_answer_in_a_small_english_note_is_its_own_chunk() -> None:
    source = (
        "# Deploy\n"  # 1
        "\n"  # 2
        "Deploys run from CI on every merge to main.\n"  # 3
        "\n"  # 4
        "- Rollback: `make rollback` restores the previous release.\n"  # 5
        "- Freeze: no deploys on Fridays after 15:00.\n"  # 6
    )
    doc = chunks.parse(source)
    assert [(c.start, c.end) for c in doc.chunks] == [(1, 3), (5, 5), (6, 6)]
    assert doc.chunks[1].text == "- Rollback: `make rollback` restores the previous release."
    assert doc.chunks[1].headings == ("Deploy",)


def test_chunks_name_every_enclosing_heading_outside_their_lines() -> None:
    source = (
        "# 프로젝트\n"  # 1
        "## 배포\n"  # 2: a sub-heading right under its parent joins it and the first block
        "\n"  # 3
        "배포는 CI에서 한다.\n"  # 4
        "\n"  # 5
        "- 롤백은 make rollback\n"  # 6
        "### 주의\n"  # 7
        "금요일 배포 금지\n"  # 8
        "## 회의\n"  # 9
        "| 요일 | 시간 |\n"  # 10
        "|---|---|\n"  # 11
        "| 월 | 10:00 |\n"  # 12
        "```\n"  # 13
        "make meeting\n"  # 14
        "```\n"  # 15
    )
    doc = chunks.parse(source)
    assert [(c.start, c.end, c.headings) for c in doc.chunks] == [
        (1, 4, ()),
        (6, 6, ("프로젝트", "배포")),
        (7, 8, ("프로젝트", "배포")),
        (9, 12, ("프로젝트",)),  # a table stays whole
        (13, 15, ("프로젝트", "회의")),  # so does a fenced block
    ]


def test_a_heading_with_an_empty_section_stands_alone() -> None:
    source = "## 빈 절\n## Filled\nbody text\n### Trailing\n"
    doc = chunks.parse(source)
    assert [(c.start, c.end, c.headings) for c in doc.chunks] == [
        (1, 1, ()),  # not lent to a sibling's first block
        (2, 3, ()),
        (4, 4, ("Filled",)),
    ]


def test_a_long_section_joins_its_heading_to_the_next_block_only() -> None:
    para = "긴 문단 " * 60  # each paragraph ~300 characters
    source = f"## 절\n{para}\n\n{para}\n\n{para}\n"
    assert spans(source) == [(1, 2), (4, 4), (6, 6)]


def test_a_capped_heading_block_names_the_heading_in_its_later_pieces() -> None:
    source = "# 긴 절\n" + "\n".join("줄 " * 500 for _ in range(5)) + "\n"  # ~5,000 characters
    doc = chunks.parse(source)
    assert len(doc.chunks) > 1 and doc.chunks[0].start == 1 and doc.chunks[0].headings == ()
    assert all(c.headings == ("긴 절",) for c in doc.chunks[1:])


def test_giant_single_line_is_cut_into_capped_chunks_on_that_line() -> None:
    words = " ".join(f"단어{i}" for i in range(6000))
    giant = (words + " ")[:30_000]
    source = f"머리 문단\n\n{giant}\n\n꼬리 문단\n"
    doc = chunks.parse(source)
    middle = [c for c in doc.chunks if c.start == 3]
    assert len(middle) >= 30_000 // CHUNK_MAX_CHARS
    assert all(c.end == 3 and 0 < len(c.text) <= CHUNK_MAX_CHARS for c in middle)
    assert "".join(c.text for c in middle) == giant.rstrip()
    assert (doc.chunks[0].start, doc.chunks[-1].start) == (1, 5)


def test_giant_line_without_spaces_is_still_cut() -> None:
    doc = chunks.parse("가" * 30_000)
    assert all(c.start == c.end == 1 and len(c.text) <= CHUNK_MAX_CHARS for c in doc.chunks)
    assert sum(len(c.text) for c in doc.chunks) == 30_000


def test_every_chunk_is_capped_for_many_long_lines() -> None:
    source = "\n".join("줄 " * 500 for _ in range(20))  # one 20-line paragraph, ~20,000 characters
    doc = chunks.parse(source)
    assert len(doc.chunks) > 1
    assert all(len(c.text) <= CHUNK_MAX_CHARS for c in doc.chunks)
    covered = [n for c in doc.chunks for n in range(c.start, c.end + 1)]
    assert covered == list(range(1, 21))  # every line in exactly one chunk, in order


def test_a_longer_fence_is_closed_only_by_a_fence_as_long() -> None:
    source = "````markdown\n## 예시 노트\n\n```python\nx = 1\n```\n\n## 둘째 절\n````\n\n뒤 문단\n"
    doc = chunks.parse(source)
    assert doc.headings == ()
    assert [(c.start, c.end) for c in doc.chunks] == [(1, 9), (11, 11)]


def test_a_fence_line_with_an_info_string_does_not_close_the_block() -> None:
    source = "```\n첫 줄\n```python\n둘째 줄\n```\n"
    assert spans(source) == [(1, 5)]


_LINES = st.sampled_from(
    ["# A", "## B", "### C", "#### D", "text", "", "- item", "  - nested", "```", "~~~~", "# in code?", "---", "| t |"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_chunk_headings_are_the_ones_parse_gives(lines: list[str]) -> None:
    """memtree.notes.chunks.chunk_headings (one pass, no YAML) agrees with parse() on every chunk."""
    doc = chunks.parse("\n".join(lines))
    spans = [(c.start, c.end) for c in doc.chunks]
    assert chunks.chunk_headings(list(doc.lines), spans) == [c.headings for c in doc.chunks]
