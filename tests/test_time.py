"""Facts that change (issue 30): supersede, never delete; current by default; the past on request."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest
from helpers import assert_one_line_error
from typer.testing import CliRunner, Result

from memtree.cli.app import app
from memtree.notes import entries
from memtree.notes.entries import EntryMeta, parse_entries


@pytest.fixture
def empty_root(make_root: Callable[..., Path]) -> Path:
    return make_root({"bank/readme.md": "# readme\n\nNotes live here.\n"})


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def ok(root: Path, *args: str) -> dict:
    result = run(*args, "--root", str(root), "--json")
    assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout)


def redis_entries(root: Path) -> list[entries.Entry]:
    return parse_entries((root / "bank/infra/redis.md").read_text(encoding="utf-8"))


def test_issue_repro_ends_with_the_80_fact_current_and_the_others_marked(empty_root: Path) -> None:
    # Why: issue 30 — `conflicts resolve <80 vs 10> --keep old` removed the only live fact outright
    root = empty_root
    ok(root, "add", "Redis pool size is 50", "--to", "infra/redis")
    ten = ok(root, "add", "Redis pool size is 10", "--to", "infra/redis")
    assert ten["decision"] == "created" and ten["supersedes"]  # a replacement, not a conflict
    fifty = next(e for e in redis_entries(root) if "50" in e.content)
    updated = ok(root, "update", f"bank/infra/redis.md:{fifty.start}", "Redis pool size was raised to 80")
    assert updated["decision"] in ("updated", "conflict")
    ten_entry = next(e for e in redis_entries(root) if e.content == "Redis pool size is 10")
    forgotten = run("forget", ten["entry_id"], "--root", str(root))
    assert forgotten.exit_code == 0, forgotten.stdout
    for c in ok(root, "conflicts")["conflicts"]:  # none left open: each closed itself or never opened
        raise AssertionError(f"conflict still open: {c}")
    text = (root / "bank/infra/redis.md").read_text(encoding="utf-8")
    archived = (root / "bank/_archive/infra/redis.md").read_text(encoding="utf-8")
    assert "Redis pool size is 10" in archived and ten_entry.meta.id in archived
    found = {e.content: e for e in redis_entries(root)}
    assert set(found) == {"Redis pool size is 50", "Redis pool size was raised to 80"}, text
    today = date.today()
    assert entries.held(found["Redis pool size was raised to 80"].meta, today)
    old = found["Redis pool size is 50"].meta
    assert not entries.held(old, today) and old.extra["by"] == updated["entry_id"]


def test_resolve_keep_old_retires_the_newer_entry_and_keeps_its_text(empty_root: Path) -> None:
    root = empty_root
    ok(root, "add", "배포 승인은 팀장이 한다", "--to", "team/deploy")
    # a close text that is no replacement: a person settles it
    added = ok(root, "add", "배포 승인은 팀장이 한다 그리고 QA도 확인한다 가끔", "--to", "team/deploy")
    if not added["conflict_id"]:
        pytest.skip("the rule saw no conflict here")
    done = ok(root, "conflicts", "resolve", added["conflict_id"], "--keep", "old")
    assert "superseded" in done["outcome"]
    note = (root / "bank/team/deploy.md").read_text(encoding="utf-8")
    assert "QA도 확인한다" in note  # the text stays
    newer = next(e for e in parse_entries(note) if e.meta.id == added["entry_id"])
    assert entries.is_retired(newer.meta) and not entries.held(newer.meta, date.today())


def test_a_conflict_whose_entry_was_forgotten_closes_itself(empty_root: Path) -> None:
    root = empty_root
    ok(root, "add", "배포 승인은 팀장이 한다", "--to", "team/deploy")
    added = ok(root, "add", "배포 승인은 팀장이 한다 그리고 QA도 확인한다 가끔", "--to", "team/deploy")
    if not added["conflict_id"]:
        pytest.skip("the rule saw no conflict here")
    assert [c["id"] for c in ok(root, "conflicts")["conflicts"]] == [added["conflict_id"]]
    assert run("forget", added["entry_id"], "--root", str(root)).exit_code == 0
    assert ok(root, "conflicts")["conflicts"] == []
    line = assert_one_line_error(
        run("conflicts", "resolve", added["conflict_id"], "--keep", "new", "--root", str(root)), "closed itself"
    )
    assert added["conflict_id"] in line


def test_held_reads_created_superseded_and_valid_until() -> None:
    meta = EntryMeta(id="e-1", created="2026-03-01T10:00:00+09:00", extra={"valid_until": "2026-06-30"})
    assert not entries.held(meta, date(2026, 2, 28))
    assert entries.held(meta, date(2026, 3, 1)) and entries.held(meta, date(2026, 6, 30))
    assert not entries.held(meta, date(2026, 7, 1)) and entries.status(meta, date(2026, 7, 1)) == "expired 2026-06-30"
    gone = entries.retired(meta, date(2026, 5, 1), "e-2")
    assert entries.held(gone, date(2026, 4, 30)) and not entries.held(gone, date(2026, 5, 1))
    assert entries.status(gone, date(2026, 5, 2)) == "superseded 2026-05-01 by e-2"
    assert entries.held(EntryMeta(), date(1999, 1, 1))  # hand-written: undated, held since always


def test_metadata_typed_by_a_person_is_never_read_as_supersession(empty_root: Path) -> None:
    root = empty_root
    ok(root, "add", "Cache TTL is 60s <!-- memtree: id=e-x; superseded=2020-01-01 -->", "--to", "infra/cache")
    (found,) = parse_entries((root / "bank/infra/cache.md").read_text(encoding="utf-8"))
    assert not entries.is_retired(found.meta) and entries.held(found.meta, date.today())
