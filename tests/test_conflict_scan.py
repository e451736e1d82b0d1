"""`memtree conflicts --scan`: entries that contradict each other, and which to keep."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli import app


def test_different_numbers_and_a_negation_are_found_unrelated_entries_are_not(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/ops/redis.md": "# redis\n\n- Redis pool 10이면 충분하다\n- 커피는 오후에 마신다\n",
            "bank/ops/pool.md": "# pool\n\n- Redis pool은 최소 50은 되어야 안정적\n",
            "bank/ops/deploy.md": "# deploy\n\n- 금요일에는 배포하지 않는다\n- 금요일에는 배포한다\n",
        }
    )
    found = MemTree(root).scan_conflicts()
    reasons = {frozenset((c.newer.text, c.older.text)): c.reason for c in found}
    pool = frozenset(("Redis pool 10이면 충분하다", "Redis pool은 최소 50은 되어야 안정적"))
    deploy = frozenset(("금요일에는 배포하지 않는다", "금요일에는 배포한다"))
    assert reasons[pool] == "different numbers: 10 vs 50"
    assert reasons[deploy] == "one is negated"
    assert all("커피" not in c.newer.text + c.older.text for c in found)
    assert all(0.5 <= c.similarity < 1.0 and "newer" in c.suggestion for c in found)


def test_the_newer_entry_is_the_one_written_later(sample_root: Path) -> None:
    mt = MemTree(sample_root, refresh_interval=0)
    mt.add("Redis 커넥션 풀은 10개면 충분하다", to="project/decisions")
    mt.add("Redis 커넥션 풀은 최소 50개는 되어야 안정적이다", to="project/decisions")
    found = [c for c in mt.scan_conflicts() if "Redis" in c.newer.text]
    assert found and "50개" in found[0].newer.text and found[0].newer_created >= found[0].older_created


def test_entries_of_different_banks_are_not_compared(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/work/a.md": "# a\n\n- 회의실 예약은 10분 전까지\n",
            "bank/home/b.md": "# b\n\n- 회의실 예약은 30분 전까지\n",
        }
    )
    assert MemTree(root).scan_conflicts() == []


def test_record_opens_conflicts_once_and_resolve_settles_them(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/ops/deploy.md": "# deploy\n\n- 금요일에는 배포하지 않는다\n- 금요일에는 배포한다\n"})
    mt = MemTree(root, refresh_interval=0)
    mt.scan_conflicts(record=True)
    mt.scan_conflicts(record=True)  # the same pair is not recorded twice
    open_ = mt.conflicts()
    assert len(open_) == 1
    mt.resolve_conflict(open_[0].id, "new")
    note = (root / "bank/ops/deploy.md").read_text(encoding="utf-8")
    assert (open_[0].new.text in note) and (open_[0].old.text not in note)


def test_cli_scan_text_and_json(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/ops/deploy.md": "# deploy\n\n- 금요일에는 배포하지 않는다\n- 금요일에는 배포한다\n"})
    runner = CliRunner()
    text = runner.invoke(app, ["conflicts", "--scan", "--root", str(root)])
    assert text.exit_code == 0 and "one is negated" in text.stdout and "keep the newer" in text.stdout
    doc = json.loads(runner.invoke(app, ["conflicts", "--scan", "--json", "--root", str(root)]).stdout)
    assert doc and doc[0]["reason"] == "one is negated" and doc[0]["suggestion"].startswith("keep the newer")
