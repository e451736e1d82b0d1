"""memtree.search.context / `memtree context`: a prompt block within its budget that never breaks a chat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.notes.root import init
from memtree.search import context
from memtree.text import terms as text


@pytest.mark.parametrize("budget", [60, 150, 400, 2000])
def test_the_block_stays_within_its_budget_and_names_its_sources(sample_root: Path, budget: int) -> None:
    ctx = MemTree(sample_root).context("크론 스케줄 설계 KST", budget=budget)
    assert text.estimate_tokens(ctx.markdown) <= budget
    assert ctx.tokens <= budget
    for source in ctx.sources:
        path, lines = source.split(":")
        assert f"### {source}" in ctx.markdown and (sample_root / path).is_file() and "-" in lines
    if budget >= 400:
        assert ctx.sources and ctx.sources[0].startswith("bank/technical/cron-design.md")


def test_whole_chunks_only_and_no_metadata_comments(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    mt.add("크론 작업 consolidate는 일요일 04:30 KST에 돈다", tag="B")
    ctx = mt.context("consolidate 일요일", budget=2000)
    assert "consolidate는 일요일 04:30" in ctx.markdown and "<!-- memtree:" not in ctx.markdown
    hits = mt.search("consolidate 일요일", k=10).hits
    for hit in hits:
        if f"{hit.path}:{hit.lines[0]}-{hit.lines[1]}" in ctx.sources:
            body = "\n".join(ln.split(" <!--")[0] for ln in hit.text.splitlines())
            assert body.strip() in ctx.markdown  # included whole, never cut


def test_nothing_confident_gives_an_empty_block(sample_root: Path) -> None:
    result = CliRunner().invoke(app, ["context", "양자역학 블랙홀 증명", "--root", str(sample_root)])
    assert result.exit_code == 0 and result.stdout == ""


def test_any_failure_prints_nothing_warns_and_exits_zero(sample_root: Path) -> None:
    empty = sample_root / "bank" / "empty"
    empty.mkdir()
    result = CliRunner().invoke(app, ["context", "크론", "--root", str(empty)])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("memtree: warning: no memory context") and "memory root" in result.stderr


def test_a_broken_tree_index_still_gives_context_from_the_notes(sample_root: Path) -> None:
    # Why: conflict markers a merge left in tree-index.json must not blind an agent (issue 29)
    (sample_root / "tree-index.json").write_text('{"version": 1, "nodes": [', encoding="utf-8")
    result = CliRunner().invoke(app, ["context", "크론", "--root", str(sample_root)])
    assert result.exit_code == 0 and result.stdout.startswith("## Memory") and "cron-design" in result.stdout


def test_json_output(sample_root: Path) -> None:
    result = CliRunner().invoke(app, ["context", "가치관", "--root", str(sample_root), "--json", "--budget", "300"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["tokens"] <= doc["budget"] == 300 and doc["sources"]
    assert doc["markdown"].startswith("## Memory")


def test_a_1300_word_message_still_gets_chunks_and_is_quoted_only_in_part(sample_root: Path) -> None:
    message = " ".join(["크론", "스케줄", "설계", "KST"] * 325)  # 1,300 words, ~3,000 tokens echoed whole
    ctx = MemTree(sample_root).context(message)
    assert ctx.sources and ctx.sources[0].startswith("bank/technical/cron-design.md")
    assert text.estimate_tokens(ctx.markdown) <= ctx.budget
    quoted = ctx.markdown.split("for: ", 1)[1].split("\n", 1)[0]
    assert len(quoted) < 120 and quoted.endswith(f"… ({len(message):,} characters)")


def test_the_query_excerpt_is_one_short_line() -> None:
    assert context.excerpt("  배포\n롤백  ") == "배포 롤백"
    long = "deploy rollback " * 20
    cut = context.excerpt(long)
    assert cut.startswith("deploy rollback") and "\n" not in cut
    assert len(cut.split("…")[0]) <= context.QUERY_EXCERPT_CHARS and cut.endswith(f"({len(long.strip()):,} characters)")


def test_a_budget_of_50_still_returns_the_best_chunk_cut_at_a_line(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    best = mt.search("배포 롤백").hits[0]
    ctx = mt.context("배포 롤백", budget=50)
    assert ctx.markdown and len(ctx.sources) == 1 and text.estimate_tokens(ctx.markdown) <= 50
    path, span = ctx.sources[0].split(":")
    start, end = (int(n) for n in span.split("-"))
    assert path == best.path and best.lines[0] <= start <= end <= best.lines[1]
    lines = (sample_root / path).read_text(encoding="utf-8").split("\n")
    assert not lines[start - 1].startswith("#")  # the cut starts at the chunk's first line that is not a heading
    assert all(not ln.strip() or ln.startswith("#") for ln in lines[best.lines[0] - 1 : start - 1])
    shown = "\n".join(lines[start - 1 : end]).strip()
    body = ctx.markdown.rstrip("\n").split("\n\n", 2)[-1]
    if body.endswith(context.ELLIPSIS):  # the first line itself too long: its start
        assert start == end and shown.startswith(body.removesuffix(context.ELLIPSIS))
    else:
        assert body.endswith(shown)  # whole lines, named by their range


@pytest.mark.parametrize("query", ["배포 롤백", "크론 스케줄 설계 KST", "가치관", "decay half-life recall"])
@pytest.mark.parametrize("budget", [1, 8, 15, 25, 50, 90, 200, 700])
def test_the_block_never_exceeds_its_budget(sample_root: Path, query: str, budget: int) -> None:
    ctx = MemTree(sample_root).context(query, budget=budget)
    assert text.estimate_tokens(ctx.markdown) == ctx.tokens <= budget
    assert bool(ctx.markdown) == bool(ctx.sources)
    if budget >= 25 and MemTree(sample_root).search(query).hits:
        assert ctx.sources  # a small budget still gets something


def test_a_line_too_long_for_the_budget_is_clipped_with_an_ellipsis(sample_root: Path) -> None:
    note = sample_root / "bank" / "technical" / "long-line.md"
    note.write_text("롤백 절차는 " * 200 + "\n", encoding="utf-8")  # one paragraph on one long line
    ctx = MemTree(sample_root).context("롤백 절차", budget=30)
    assert ctx.sources == ("bank/technical/long-line.md:1-1",)
    assert ctx.markdown.rstrip("\n").endswith("롤백 절차는…") and text.estimate_tokens(ctx.markdown) <= 30


def test_a_small_budget_gets_the_entry_not_only_its_notes_heading(tmp_path: Path) -> None:
    mt = MemTree(init(tmp_path)[0])  # issue 28.10: `context 배포 --budget 20` answered only `# inbox`
    mt.add("배포는 금요일 오후에 하지 않는다, 무중단 배포 파이프라인을 사용한다")
    ctx = mt.context("배포", budget=20)
    assert ctx.tokens <= 20 and "배포" in ctx.markdown.split("\n", 3)[-1]
    assert "# inbox\n" not in ctx.markdown and ctx.sources == ("bank/inbox/inbox.md:3-3",)


def test_a_budget_too_small_for_any_entry_says_so(tmp_path: Path) -> None:
    mt = MemTree(init(tmp_path)[0])
    mt.add("배포는 금요일 오후에 하지 않는다, 무중단 배포 파이프라인을 사용한다")
    assert mt.context("배포", budget=14).markdown == ""  # a bullet and an ellipsis are not an answer
    run = CliRunner().invoke(app, ["context", "배포", "--budget", "5", "--root", str(tmp_path)])
    assert run.exit_code == 0 and run.stdout == ""
    assert run.stderr == "memtree: warning: no memory context: 1 chunk found, none fits in 5 tokens\n"


def test_terminal_control_characters_never_reach_the_output(sample_root: Path) -> None:
    note = sample_root / "bank" / "technical" / "escape.md"
    note.write_text("# 롤백\n\n- 롤백 절차 \x1b]0;owned\x07는 make rollback\x1b[2J\n", encoding="utf-8")
    for args in (["롤백 절차"], ["롤백 절차\x1b[31m"]):
        result = CliRunner().invoke(app, ["context", *args, "--root", str(sample_root)])
        assert result.exit_code == 0 and "make rollback" in result.stdout
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout
