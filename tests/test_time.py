"""Facts that change (issue 30): supersede, never delete; current by default; the past on request."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import assert_one_line_error
from typer.testing import CliRunner, Result

from memtree import MemTree, schema
from memtree.cli.app import app
from memtree.notes import entries
from memtree.notes.entries import EntryMeta, parse_entries
from memtree.write.retain import Created


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
    ok(root, "add", "배포는 금요일에 하지 않는다", "--to", "team/deploy")
    # its negation in other words: no plain replacement, a person settles it
    added = ok(root, "add", "금요일에도 배포한다", "--to", "team/deploy")
    assert added["conflict_id"], added
    done = ok(root, "conflicts", "resolve", added["conflict_id"], "--keep", "old")
    assert "superseded" in done["outcome"]
    note = (root / "bank/team/deploy.md").read_text(encoding="utf-8")
    assert "금요일에도 배포한다" in note  # the text stays
    newer = next(e for e in parse_entries(note) if e.meta.id == added["entry_id"])
    assert entries.is_retired(newer.meta) and not entries.held(newer.meta, date.today())


def test_a_conflict_whose_entry_was_forgotten_closes_itself(empty_root: Path) -> None:
    root = empty_root
    ok(root, "add", "배포는 금요일에 하지 않는다", "--to", "team/deploy")
    added = ok(root, "add", "금요일에도 배포한다", "--to", "team/deploy")
    assert added["conflict_id"], added
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


# --- search: current by default, the past on request ------------------------------------------------

KST = timezone(timedelta(hours=9))
JAN, MAR, APR = (datetime(2026, m, d, 10, 0, tzinfo=KST) for m, d in ((1, 10), (3, 1), (4, 1)))


def _changed_root(make_root: Callable[..., Path]) -> MemTree:
    root = make_root({"bank/readme.md": "# readme\n\nNotes live here.\n"})
    mt = MemTree(root, refresh_interval=0)
    mt.add("Redis pool size is 50", to="infra/redis", now=JAN)
    assert isinstance(mt.add("Redis pool size is 80", to="infra/redis", now=MAR), Created)
    mt.add("사무실 와이파이 비밀번호는 매주 바뀐다", to="office/wifi", now=JAN, until="2026-02-01")
    return mt


def test_search_serves_the_current_value_and_as_of_the_value_then(make_root: Callable[..., Path]) -> None:
    mt = _changed_root(make_root)
    now = mt.search("Redis pool size", now=APR)
    assert now.hits and "is 80" in now.hits[0].text and now.hits[0].status == "current"
    assert not any("is 50" in h.text for h in now.hits)  # the past is not served beside the present
    then = mt.search("Redis pool size", now=APR, as_of=date(2026, 2, 1))
    assert then.hits and "is 50" in then.hits[0].text and not any("is 80" in h.text for h in then.hits)
    before = mt.search("Redis pool size", now=APR, as_of=date(2025, 12, 31))
    assert not before.hits  # nothing was written yet


def test_an_expired_fact_is_served_only_when_nothing_current_answers_and_marked(
    make_root: Callable[..., Path],
) -> None:
    mt = _changed_root(make_root)
    found = mt.search("와이파이 비밀번호", now=APR)
    assert found.hits and found.hits[0].status == "expired 2026-02-01"
    doc = schema.search(found)
    assert doc["hits"][0]["status"] == "expired 2026-02-01"
    block = mt.context("와이파이 비밀번호", now=APR).markdown
    assert "[expired 2026-02-01: no longer current]" in block
    held = mt.search("와이파이 비밀번호", now=APR, as_of=date(2026, 1, 20))
    assert held.hits and held.hits[0].status == "current"


def test_search_as_of_on_the_cli_and_a_bad_day_is_one_line(make_root: Callable[..., Path]) -> None:
    mt = _changed_root(make_root)
    root = str(mt.root)
    result = run("search", "Redis pool size", "--as-of", "2026-02-01", "--root", root, "--json")
    assert result.exit_code == 0, result.stdout
    assert "is 50" in json.loads(result.stdout)["hits"][0]["text"]
    assert_one_line_error(run("search", "Redis pool size", "--as-of", "last week", "--root", root), "--as-of")
    assert_one_line_error(run("add", "x is 1", "--until", "someday", "--root", root), "--until")


def test_history_of_an_entry_shows_its_chain(make_root: Callable[..., Path]) -> None:
    mt = _changed_root(make_root)
    note = (mt.root / "bank/infra/redis.md").read_text(encoding="utf-8")
    old, new = (e.meta.id for e in parse_entries(note))
    for asked in (old, new):  # either end of the chain names the whole of it
        doc = ok(mt.root, "history", asked)
        assert [(v["id"], v["superseded"], v["by"]) for v in doc["chain"]] == [
            (old, "2026-03-01", new),
            (new, None, None),
        ]
    human = run("history", old, "--root", str(mt.root))
    assert human.exit_code == 0 and f"{old}  superseded 2026-03-01: Redis pool size is 50" in human.stdout
