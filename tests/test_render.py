"""memtree.cli.render: the snippet shown for a hit, the words highlighted in it, and what never reaches a terminal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import node
from typer.testing import CliRunner

from memtree.cli.app import app
from memtree.cli.render import SHOWN_LINE_CHARS, SNIPPET_CHARS, highlighter, print_hits, printable, snippet
from memtree.search.result import Hit, SearchResult

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


# --- hostile notes: escape sequences and huge lines -------------------------------------------

HOSTILE = "\x1b]0;pwned\x07가치관이 \x1b[2J원칙을\x9b31m 정한다\r"


def test_printable_drops_control_characters_but_keeps_newlines_and_tabs() -> None:
    assert printable("a\x1b[2Jb\tc\nd\x07\x00\x7f\x85\x9be") == "a[2Jb\tc\nde"
    assert printable("가치관 원칙") == "가치관 원칙"


def test_no_escape_sequence_of_a_note_reaches_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    h = Hit("values\x1b[31m", "bank/v\x1b.md", (1, 1), 1.0, SIGNALS, HOSTILE, "bank", ("가치관",), ("원칙\x07",))
    print_hits(SearchResult("가치관", ("가치관",), (h,), weights={}), explain=True, show_text=True)
    out = capsys.readouterr().out
    assert "가치관이" in out and "pwned" in out  # the text is shown, only its control characters go
    assert not any(c in out for c in "\x1b\x07\x9b\r")


def test_a_huge_line_is_shown_capped_with_how_to_see_it_all(capsys: pytest.CaptureFixture[str]) -> None:
    line = "앞 " * 300_000 + "가치관 " + "뒤 " * 300_000  # 1.2 M characters on one line
    h = hit(line, ("가치관",))
    shown, _ = snippet(h)
    assert len(shown) <= SNIPPET_CHARS + 2
    print_hits(SearchResult("가치관", ("가치관",), (h,), weights={}), explain=False, show_text=True)
    out = capsys.readouterr().out
    assert len(out) < SHOWN_LINE_CHARS + 2_000
    assert f"{len(line) - SHOWN_LINE_CHARS:,} more characters; memtree get bank/identity/values.md, lines 1-3" in out


def test_the_highlighter_is_one_alternation_longest_first() -> None:
    pattern = highlighter(["가치관", "가치관이", "Redis"])
    assert pattern is not None and highlighter([]) is None
    assert [m.group() for m in pattern.finditer("가치관이 redis 가치관")] == ["가치관이", "redis", "가치관"]


def test_get_and_search_strip_control_characters_but_json_keeps_them(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/v.md": f"# 가치관\n\n{HOSTILE}\n"}, [node("v", "bank/v.md", keywords=["가치관"])])
    for args in (["get", "bank/v.md"], ["search", "가치관", "--explain", "--budget", "500"]):
        result = CliRunner().invoke(app, [*args, "--root", str(root)])
        assert result.exit_code == 0, result.output
        assert "정한다" in result.stdout and "\x1b" not in result.stdout and "\x07" not in result.stdout
    raw = CliRunner().invoke(app, ["get", "bank/v.md", "--json", "--root", str(root)])
    assert json.loads(raw.stdout)["text"] == f"# 가치관\n\n{HOSTILE}\n"


# --- piped output, NO_COLOR, metadata comments (issue 12) ------------------------------------------

LONG_ENTRY = "- Redis 커넥션 풀은 50개로 올렸다: 야간 배치가 풀을 모두 써 버려서 " + "대기열이 길어졌다 " * 12
META = " <!-- memtree: id=e-20260301-aaaa1111; created=2026-03-01T09:00:00+09:00; kind=fact -->"


def test_piped_output_is_unwrapped_and_unpadded(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/ops.md": f"# 운영\n\n{LONG_ENTRY}{META}\n"}, [node("ops", "bank/ops.md")])
    result = CliRunner().invoke(app, ["search", "Redis 커넥션 풀", "--explain", "--budget", "500", "--root", str(root)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.split("\n")
    assert not [line for line in lines if line != line.rstrip()]  # no padding to the console width
    assert any(line.strip() == LONG_ENTRY.strip() for line in lines)  # the whole entry on one line, twice
    assert any("× decay" in line and "× scope 1 = " in line for line in lines)  # the sum and its result together
    assert "<!-- memtree" not in result.stdout and "e-20260301-aaaa1111" not in result.stdout


def test_no_color_drops_bold_too(sample_root: Path) -> None:
    args = ["search", "가치관", "--root", str(sample_root)]
    styled = CliRunner().invoke(app, args, env={"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": ""})
    assert "\x1b[1" in styled.stdout  # forced styles do reach a pipe: the check below can fail
    plain = CliRunner().invoke(app, args, env={"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": "1"})
    assert plain.exit_code == 0 and "identity/values" in plain.stdout
    assert "\x1b" not in plain.stdout


def test_status_shows_brackets_in_names_as_written(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/[초안]/note.md": "# 초안\n\n- 가치관 메모\n"}, name="mem[bold]")
    result = CliRunner().invoke(app, ["status", "--root", str(root)])
    assert result.exit_code == 0, result.stderr
    assert "mem[bold]" in result.stdout and "[초안] (1 entries" in result.stdout
