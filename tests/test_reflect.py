"""`memtree distill` end to end: detectors → add (source auto, provenance), idempotent, bounded."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

import pytest
from helpers import snapshot
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.config import DistillSettings
from memtree.errors import QueryError
from memtree.notes.entries import parse_entries


def bank_entries(root: Path) -> list:
    return [e for p in sorted((root / "bank").rglob("*.md")) for e in parse_entries(p.read_text(encoding="utf-8"))]


def test_a_run_writes_auto_entries_that_name_their_log_lines(sample_root: Path) -> None:
    mt = MemTree(sample_root, refresh_interval=0)
    report = mt.distill()
    assert report.written >= 5
    written = [p for p in report.proposals if p.outcome == "written"]
    assert written and all(p.provenance.startswith("memory/2026-11-2") for p in written)
    auto = [e for e in bank_entries(sample_root) if e.meta.source == "auto"]
    origins = {e.meta.extra.get("from") for e in auto}
    assert {p.provenance for p in written} <= origins
    assert any("pnpm" in e.content for e in auto)  # the first-use-of-a-tool line of the sample log
    assert report.notices == ()  # no llm_command is the default: nothing to warn about


def test_distilling_twice_writes_nothing_new(sample_root: Path) -> None:
    mt = MemTree(sample_root, refresh_interval=0)
    mt.distill()
    before = snapshot(sample_root)
    again = mt.distill()
    assert again.written == 0 and {p.outcome for p in again.proposals} <= {"known", "below-score", "duplicate"}
    assert snapshot(sample_root) == before


def test_a_dry_run_writes_nothing(sample_root: Path) -> None:
    before = snapshot(sample_root)
    report = MemTree(sample_root).distill(dry_run=True)
    assert report.proposals and all(p.outcome in ("dry-run", "below-score") for p in report.proposals)
    assert snapshot(sample_root) == before


def test_at_most_max_writes_per_run(sample_root: Path) -> None:
    (sample_root / "memtree.yaml").write_text("distill:\n  max_writes: 2\n", encoding="utf-8")
    mt = MemTree(sample_root, refresh_interval=0)
    assert mt.settings.distill == DistillSettings(max_writes=2)
    report = mt.distill()
    assert report.written == 2 and any(p.outcome == "over-limit" for p in report.proposals)
    assert mt.distill().written == 2  # the next run picks up where the limit stopped this one


def test_since_and_files_choose_the_logs(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    late = mt.distill(since=date(2026, 11, 28), dry_run=True)
    assert late.proposals and all(p.provenance.startswith("memory/2026-11-28.md") for p in late.proposals)
    one = mt.distill(["memory/2026-11-27.md"], dry_run=True)
    assert one.proposals and all(p.provenance.startswith("memory/2026-11-27.md") for p in one.proposals)
    with pytest.raises(QueryError):
        mt.distill(["bank/project/rules.md"], dry_run=True)


def test_an_llm_command_rescores_and_a_failing_one_leaves_the_rules(sample_root: Path, tmp_path: Path) -> None:
    script = tmp_path / "llm.py"
    script.write_text(
        "import json, sys\n"
        "items = json.load(sys.stdin)\n"
        "print(json.dumps([{'i': c['i'], 'score': 0} for c in items]))\n",
        encoding="utf-8",
    )
    (sample_root / "memtree.yaml").write_text(f"distill:\n  llm_command: {sys.executable} {script}\n", encoding="utf-8")
    report = MemTree(sample_root).distill(dry_run=True)
    # the LLM scored every candidate 0: averaged with the rule score, each is halved (and rounded)
    assert report.proposals and all(p.candidate.score <= 50 for p in report.proposals)
    assert not any("llm_command" in n for n in report.notices)
    (sample_root / "memtree.yaml").write_text("distill:\n  llm_command: /nonexistent/llm --x\n", encoding="utf-8")
    failing = MemTree(sample_root).distill(dry_run=True)
    assert any("llm_command failed" in n for n in failing.notices)
    assert any(p.candidate.score > 50 for p in failing.proposals)


def test_a_run_without_an_llm_command_says_nothing_on_stderr(sample_root: Path) -> None:
    result = CliRunner().invoke(app, ["distill", "--root", str(sample_root), "--dry-run"])
    assert result.exit_code == 0 and "candidates" in result.stdout
    assert result.stderr == ""


def test_the_cli_prints_one_line_per_candidate_and_json(sample_root: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["distill", "--root", str(sample_root), "--dry-run"])
    assert result.exit_code == 0 and "candidates" in result.stdout and "dry-run" in result.stdout
    result = runner.invoke(app, ["distill", "--root", str(sample_root), "--json"])
    doc = json.loads(result.stdout)
    assert doc["written_count"] >= 1 and doc["proposals"][0]["provenance"].startswith("memory/")
    bad = runner.invoke(app, ["distill", "--root", str(sample_root), "--since", "yesterday"])
    assert bad.exit_code == 2 and "not a date" in bad.stderr


def test_min_score_in_memtree_yaml_is_the_floor_of_every_candidate(sample_root: Path) -> None:
    every = MemTree(sample_root).distill(dry_run=True)
    (sample_root / "memtree.yaml").write_text("distill:\n  min_score: 60\n", encoding="utf-8")
    strict = MemTree(sample_root).distill(dry_run=True)
    assert any(p.candidate.score < 60 for p in every.proposals)
    assert strict.proposals and all(p.candidate.score >= 60 for p in strict.proposals)
    assert {p.provenance for p in strict.proposals} == {
        p.provenance for p in every.proposals if p.candidate.score >= 60
    }
