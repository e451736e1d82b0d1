"""`memtree conflicts --scan`: entries that contradict each other, and which to keep."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.errors import QueryError
from memtree.notes import entries


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
    assert all(0.5 <= c.similarity < 1.0 and c.suggestion.startswith("neither is dated") for c in found)  # by hand


def test_the_newer_entry_is_the_one_written_later(make_root: Callable[..., Path]) -> None:
    # written as an older memtree (or another clone) left them: both current, neither marked
    older = "- Redis 커넥션 풀은 10개면 충분하다 <!-- memtree: id=e-1; created=2025-03-01T09:00:00+09:00 -->"
    newer = (
        "- Redis 커넥션 풀은 최소 50개는 되어야 안정적이다 <!-- memtree: id=e-2; created=2025-04-01T09:00:00+09:00 -->"
    )
    root = make_root({"bank/project/decisions.md": f"# decisions\n\n{newer}\n{older}\n"})
    mt = MemTree(root, refresh_interval=0)
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
    found = {e.content: e for e in entries.parse_entries(note)}
    assert not entries.is_retired(found[open_[0].new.text].meta)
    assert entries.is_retired(found[open_[0].old.text].meta)  # marked superseded, its words kept
    assert mt.conflicts() == [] and mt.scan_conflicts() == []  # the past contradicts nothing


def test_cli_scan_text_and_json(make_root: Callable[..., Path]) -> None:
    dated = "- 금요일에는 배포한다 <!-- memtree: id=e-1; created=2025-03-01T09:00:00+09:00 -->"
    root = make_root({"bank/ops/deploy.md": f"# deploy\n\n- 금요일에는 배포하지 않는다\n{dated}\n"})
    runner = CliRunner()
    text = runner.invoke(app, ["conflicts", "--scan", "--root", str(root)])
    assert text.exit_code == 0 and "one is negated" in text.stdout and "keep the newer" in text.stdout
    assert "(undated): 금요일에는 배포하지 않는다" in text.stdout
    doc = json.loads(runner.invoke(app, ["conflicts", "--scan", "--json", "--root", str(root)]).stdout)[
        "contradictions"
    ]
    assert doc and doc[0]["reason"] == "one is negated" and doc[0]["suggestion"].startswith("keep the newer")
    assert doc[0]["newer"]["id"] == "e-1" and doc[0]["older_created_at"] is None


# --- issue 12: an undated entry is never the newer; resolve removes only the conflicting sentence ---

PARAGRAPHS = {
    "en": (
        "PgBouncer max pool size is 50.",
        "Backups run nightly at 02:00 UTC. The replica lives in eu-west-1.",
        "PgBouncer max pool size was raised to 80",
    ),
    "ko": (
        "Redis 커넥션 풀은 50개로 둔다.",
        "백업은 매일 새벽 2시에 돈다. 레플리카는 서울 리전에 있다.",
        "Redis 커넥션 풀은 80개로 늘렸다",
    ),
}
CREATED = "2025-03-01T09:00:00+09:00"
LATER = 1_748_736_000  # 2025-06-01: the note was modified (by an add) after the dated entry's date


def _paragraph_root(make_root: Callable[..., Path], lang: str) -> tuple[Path, str]:
    """A hand-written paragraph whose first sentence a dated entry (added later) contradicts."""
    stale, rest, fresh = PARAGRAPHS[lang]
    note = f"# DB\n\n{stale} {rest}\n\n- {fresh} <!-- memtree: id=e-fresh; created={CREATED} -->\n"
    root = make_root({"bank/ops/db.md": note})
    os.utime(root / "bank/ops/db.md", (LATER, LATER))
    return root, note


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_hand_written_entry_is_undated_and_never_newer_than_a_dated_one(
    make_root: Callable[..., Path], lang: str
) -> None:
    root, _ = _paragraph_root(make_root, lang)
    stale, _, fresh = PARAGRAPHS[lang]
    (found,) = MemTree(root).scan_conflicts()
    assert found.newer.text == fresh and datetime.fromisoformat(found.newer_created) == datetime.fromisoformat(CREATED)
    assert found.older.text == stale and found.older_created == "undated"  # its sentence, not the paragraph
    assert found.reason == "different numbers: 50 vs 80" and found.suggestion.startswith("keep the newer")


def test_of_two_undated_entries_neither_is_called_newer(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {"bank/ops/pool.md": "# pool\n\n- Redis pool 10이면 충분하다\n- Redis pool은 최소 50은 되어야 안정적\n"}
    )
    (found,) = MemTree(root).scan_conflicts()
    assert found.newer_created == found.older_created == "undated"
    assert found.suggestion.startswith("neither is dated") and "newer" not in found.suggestion


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_resolve_removes_only_the_recorded_sentence_of_a_hand_written_paragraph(
    make_root: Callable[..., Path], lang: str
) -> None:
    root, note = _paragraph_root(make_root, lang)
    stale = PARAGRAPHS[lang][0]
    mt = MemTree(root, refresh_interval=0)
    mt.scan_conflicts(record=True)
    (conflict,) = mt.conflicts()
    assert conflict.old.text == stale
    _, outcome = mt.resolve_conflict(conflict.id, "new")
    assert outcome.startswith("moved") and stale in outcome
    after = (root / "bank/ops/db.md").read_text(encoding="utf-8")
    assert after.startswith(note.replace(f"{stale} ", "").rstrip("\n"))  # the rest byte for byte
    moved = entries.parse_entries(after)[-1]
    assert moved.content == stale and entries.is_retired(moved.meta)
    assert mt.conflicts() == []


def test_resolve_keeps_the_wrapped_lines_and_indent_of_a_hand_written_list_item(
    make_root: Callable[..., Path],
) -> None:
    item = "- 배포는 금요일에 하지 않는다.\n  롤백 담당은 인프라팀이다.\n  장애 공지는 #ops 채널에 올린다.\n"
    dated = f"- 배포는 금요일에 한다 <!-- memtree: id=e-2; created={CREATED} -->\n"
    root = make_root({"bank/ops/deploy.md": f"# deploy\n\n{item}{dated}"})
    mt = MemTree(root, refresh_interval=0)
    mt.scan_conflicts(record=True)
    (conflict,) = mt.conflicts()
    assert conflict.old.text == "배포는 금요일에 하지 않는다."
    mt.resolve_conflict(conflict.id, "new")
    left = "- 롤백 담당은 인프라팀이다.\n  장애 공지는 #ops 채널에 올린다.\n"
    after = (root / "bank/ops/deploy.md").read_text(encoding="utf-8")
    assert after.startswith(f"# deploy\n\n{left}{dated}")
    moved = entries.parse_entries(after)[-1]
    assert moved.content == "배포는 금요일에 하지 않는다." and moved.meta.extra["by"] == "e-2"


def test_resolve_changes_nothing_when_the_recorded_sentence_is_no_longer_there_exactly(
    make_root: Callable[..., Path],
) -> None:
    root, note = _paragraph_root(make_root, "en")
    mt = MemTree(root, refresh_interval=0)
    mt.scan_conflicts(record=True)
    (conflict,) = mt.conflicts()
    edited = note.replace("size is 50.", "size is 50 (until May).")
    (root / "bank/ops/db.md").write_text(edited, encoding="utf-8")
    assert mt.conflicts() == []  # its sentence changed: the conflict closed itself
    with pytest.raises(QueryError, match="closed itself"):
        mt.resolve_conflict(conflict.id, "new")
    assert (root / "bank/ops/db.md").read_text(encoding="utf-8") == edited


def test_the_cause_of_a_conflict_names_what_differs_never_a_similarity_a_merge_did_not_measure() -> None:
    from memtree.write.conflicts import OpenConflict, Side, cause, measured

    added = OpenConflict(
        "c-20261201-3fa9c2d17b0e5a48", "", 0.79, Side("bank/a.md", "e-2", "Redis pool size is 80"),
        Side("bank/a.md", "e-1", "Redis pool size is 50"),
    )  # fmt: skip
    assert cause(added) == "number: 50 → 80 (similarity 0.79)" and measured(added)
    clash = OpenConflict(
        "c-0123456789ab", "", 0.0, Side("bank/a.md", "e-1.1a2b3c", "pool is 80"), Side("bank/a.md", "e-1", "pool is 20")
    )
    assert cause(clash) == "a git merge kept both versions of one entry" and not measured(clash)
    field = OpenConflict(
        "c-ba9876543210", "", 0.0, Side("tree-index.json", "infra", "weight=2.0"),
        Side("tree-index.json", "infra", "weight=1.0"),
    )  # fmt: skip
    assert cause(field) == "node infra: weight 1.0 kept, 2.0 from the merge" and not measured(field)
