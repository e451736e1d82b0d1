"""memtree.context / `memtree context`: a prompt block within its budget that never breaks a chat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtree import MemTree, text
from memtree.cli import app


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
    (sample_root / "tree-index.json").write_text('{"version": 1, "nodes": [', encoding="utf-8")
    result = CliRunner().invoke(app, ["context", "크론", "--root", str(sample_root)])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("memtree: warning: no memory context") and "line" in result.stderr


def test_json_output(sample_root: Path) -> None:
    result = CliRunner().invoke(app, ["context", "가치관", "--root", str(sample_root), "--json", "--budget", "300"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["tokens"] <= doc["budget"] == 300 and doc["sources"]
    assert doc["markdown"].startswith("## Memory")
