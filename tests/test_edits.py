"""update, forget, history, undo and the change journal (memtree.lifecycle.edits, memtree.write.history,
memtree.notes.changes): every memtree write is journaled, reverts byte for byte, and refuses when a
person's edit is in the way."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_one_line_error, distinct_fact, grown, node, snapshot, write_root
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memtree import MemTree, schema
from memtree.cli.app import app
from memtree.errors import StaleUndo
from memtree.notes import changes, entries, recorder, store

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=timezone(timedelta(hours=9)))
"""Every write in these tests happens at this moment (nothing reads the clock)."""
E1 = "- 배포는 금요일에 하지 않는다 <!-- memtree: id=e-1; created=2026-03-01T09:00:00+09:00; tags=deploy; kind=fact -->"
OPS = (
    "# ops\n\n"
    f"{E1}\n"
    "- Backups run nightly at 02:00 UTC.\n\n"
    "1. 레플리카는 서울 리전에 있다\n"
    "2. Staging uses one small instance\n\n"
    "## Notes\n\n"
    "PgBouncer max pool size is 50. The cache lives in Redis.\n"
)
OPS_NODE = node("ops", "bank/ops.md", keywords=["배포", "ops"])
OLD = "- 오래된 메모 한 줄 <!-- memtree: id=e-old; created=2020-01-01T00:00:00+09:00; kind=fact -->"
POOL = "# pool\n\n- Redis 연결 풀은 50으로 올려야 안정적이다.\n- Redis 연결 풀은 50으로 올려야 안정적이다 확실히\n"


@pytest.fixture
def root(make_root: Callable[..., Path]) -> Path:
    return make_root({"bank/ops.md": OPS}, [OPS_NODE])


def mt_of(root: Path) -> MemTree:
    return MemTree(root, refresh_interval=0)


def cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=stdin, env=env)


def cli_json(root: Path, *args: str) -> dict[str, Any]:
    result = cli(*args, "--root", str(root), "--json")
    assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def journal(root: Path) -> list[changes.Change]:
    return changes.load(root)


def commands(root: Path) -> list[str]:
    return [c.command for c in journal(root)]


# --- update ---------------------------------------------------------------------------------------


def test_update_by_id_keeps_the_metadata_and_sets_updated(root: Path) -> None:
    done = mt_of(root).update("e-1", "배포는 목요일 오후까지만 한다", now=NOW)
    assert (done.decision, done.entry_id, done.path, done.node, done.lines) == (
        "updated",
        "e-1",
        "bank/ops.md",
        "ops",
        (4, 4),
    )
    lines = (root / "bank/ops.md").read_text(encoding="utf-8").split("\n")
    meta = entries.parse_entries(lines[3])[0].meta
    assert lines[3].startswith("- 배포는 목요일 오후까지만 한다 <!-- memtree: id=e-1;")
    assert (meta.id, meta.created, meta.tags, meta.kind) == ("e-1", "2026-03-01T09:00:00+09:00", ("deploy",), "fact")
    assert meta.extra["updated"] == NOW.isoformat(timespec="seconds")
    # Why: issue 30 — the old words stay just above, marked superseded by the entry that says it now
    (past,) = entries.parse_entries(lines[2])
    assert past.content == "배포는 금요일에 하지 않는다" and past.meta.id not in ("", "e-1")
    assert past.meta.created == "2026-03-01T09:00:00+09:00" and past.meta.tags == ("deploy",)
    assert (past.meta.extra["superseded"], past.meta.extra["by"]) == ("2026-03-02", "e-1")
    assert lines[:2] + lines[4:] == OPS.split("\n")[:2] + OPS.split("\n")[3:]  # every other line as it was
    hits = mt_of(root).search("목요일 오후 배포", now=NOW).hits
    assert hits and hits[0].path == "bank/ops.md" and "목요일 오후까지만" in hits[0].text  # indexed at once


def test_update_by_path_and_line_keeps_a_hand_written_entrys_form(root: Path) -> None:
    done = mt_of(root).update("bank/ops.md:6", "레플리카는 도쿄 리전으로 옮겼다", now=NOW)
    assert done.decision == "updated" and done.entry_id and done.lines == (7, 7)
    lines = (root / "bank/ops.md").read_text(encoding="utf-8").split("\n")
    stamp = NOW.isoformat(timespec="seconds")
    assert lines[6] == f"1. 레플리카는 도쿄 리전으로 옮겼다 <!-- memtree: id={done.entry_id}; updated={stamp} -->"
    assert lines[5].startswith("1. 레플리카는 서울 리전에 있다 <!-- memtree: id=e-")
    assert lines[5].endswith(f"superseded=2026-03-02; by={done.entry_id} -->")
    assert lines[7] == "2. Staging uses one small instance"
    para = mt_of(root).update("bank/ops.md:12", "PgBouncer max pool size is 80. The cache lives in Redis.", now=NOW)
    assert para.decision == "updated"
    text = (root / "bank/ops.md").read_text(encoding="utf-8").split("\n")
    assert text[11].startswith("PgBouncer max pool size is 50. The cache lives in Redis. <!-- memtree: id=e-")
    assert text[12] == ""  # two paragraphs: the past, then what holds now
    assert text[13].startswith("PgBouncer max pool size is 80. The cache lives in Redis. <!-- memtree: id=")


def test_update_is_rechecked_against_the_other_entries(root: Path) -> None:
    mt = mt_of(root)
    before = snapshot(root)
    dup = mt.update("bank/ops.md:4", "배포는 금요일에 하지 않는다.", now=NOW)
    assert (dup.decision, dup.existing, dup.similarity) == ("duplicate", "e-1", 1.0)
    same = mt.update("e-1", "배포는 금요일에 하지 않는다", now=NOW)
    assert same.decision == "unchanged"
    assert snapshot(root) == before and journal(root) == []  # nothing written, nothing journaled
    # the same statement with the negation gone replaces e-1: marked superseded, its words kept
    replaced = mt.update("bank/ops.md:4", "배포는 금요일에도 한다", now=NOW)
    assert replaced.decision == "updated" and replaced.replaced == "e-1"
    assert replaced.other == "배포는 금요일에 하지 않는다" and mt.conflicts() == []
    found = {e.content: e for e in entries.parse_entries((root / "bank/ops.md").read_text(encoding="utf-8"))}
    assert found["배포는 금요일에 하지 않는다"].meta.extra["by"] == replaced.entry_id
    staging = found["Staging uses one small instance"].start
    conflict = mt.update(f"bank/ops.md:{staging}", "금요일에는 배포를 안 한다", now=NOW)
    assert conflict.decision == "conflict" and conflict.other == "배포는 금요일에도 한다"
    assert [c.id for c in mt.conflicts()] == [conflict.conflict_id]


def test_update_sanitizes_the_new_words(root: Path) -> None:
    done = mt_of(root).update("e-1", "배포 토큰은 ghp_abcdefghijklmnopqrstuvwxyz0123456789 이다", now=NOW)
    text = (root / "bank/ops.md").read_text(encoding="utf-8")
    assert "ghp_abcdef" not in text and "[REDACTED:github-token]" in text and done.redacted == ("github-token",)
    assert "ghp_abcdef" not in (root / ".memtree/changes.jsonl").read_text(encoding="utf-8")


def test_update_cli_json_and_human(root: Path) -> None:
    doc = cli_json(root, "update", "e-1", "배포는 목요일에만 한다")
    assert set(doc) == schema.KEYS["update"] and doc["decision"] == "updated" and doc["lines"] == [4, 4]
    human = cli("update", "bank/ops.md:5", "-", "--root", str(root), stdin="Backups run nightly at 04:30 UTC.\n")
    assert human.exit_code == 0 and re.match(r"updated e-\S+ at bank/ops.md:6-6; its old words", human.stdout)


# --- forget ---------------------------------------------------------------------------------------


def test_forget_moves_the_entry_to_the_archive_with_its_reason(root: Path) -> None:
    gone = mt_of(root).forget("e-1", reason="정책 바뀜; 이제 매일 배포 -->", now=NOW)
    assert (gone.entry_id, gone.path, gone.lines, gone.archive) == (
        "e-1",
        "bank/ops.md",
        (3, 3),
        "bank/_archive/ops.md",
    )
    assert gone.why == "forgotten: 정책 바뀜, 이제 매일 배포 →"
    note = (root / "bank/ops.md").read_text(encoding="utf-8")
    assert "e-1" not in note and note == OPS.replace(E1 + "\n", "")
    archived = (root / "bank/_archive/ops.md").read_text(encoding="utf-8")
    assert f"<!-- memtree: archived=2026-03-02; from=bank/ops.md:3-3; why={gone.why} -->\n{E1}\n" in archived
    assert entries.parse_entries(archived)[-1].meta.id == "e-1"  # the metadata went with it
    hits = mt_of(root).search("배포 금요일", now=NOW).hits
    assert all("금요일" not in h.text for h in hits)  # the archive is never searched


def test_forget_a_hand_written_entry_and_drop_its_recall_excerpt(root: Path) -> None:
    from memtree.lifecycle.aging import digest

    sha = digest("Backups run nightly at 02:00 UTC.")
    hot = f"- Backups run nightly <!-- memtree: from=bank/ops.md:4-4; sha={sha}; key=k -->\n"
    (root / "recall/hot.md").write_text(hot, encoding="utf-8")
    doc = cli_json(root, "forget", "bank/ops.md:4")
    assert set(doc) == schema.KEYS["forget"] and doc["entry_id"] is None and doc["why"] == "forgotten"
    assert (root / "recall/hot.md").read_text(encoding="utf-8") == ""  # recall/ is searched first
    assert commands(root) == ["forget"] and set(journal(root)[0].paths) == {
        "bank/ops.md",
        "bank/_archive/ops.md",
        "recall/hot.md",
    }


def test_forget_refuses_what_is_archived_already(root: Path) -> None:
    mt_of(root).forget("e-1", now=NOW)
    before = snapshot(root)
    line = assert_one_line_error(cli("forget", "e-1", "--root", str(root)), "e-1", "bank/_archive/ops.md")
    assert "nothing was written" in line and snapshot(root) == before


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("update", "e-nope", "x"), ("e-nope",)),
        (("forget", "e-nope"), ("e-nope",)),
        (("update", "bank/ops.md:1", "x"), ("bank/ops.md:1", "holds no entry")),
        (("update", "bank/ops.md:9", "x"), ("bank/ops.md:9", "holds no entry")),
        (("forget", "bank/ops.md:99"), ("bank/ops.md:99", "out of range", "11 lines")),
        (("forget", "bank/ops.md:0"), ("out of range",)),
        (("update", "bank/missing.md:3", "x"), ("bank/missing.md",)),
        (("update", "memory/2026-03-01.md:1", "x"), ("bank notes only",)),
        (("update", "e-1", "   "), ("empty",)),
        (("update", "bank/ops.md", "x"), ("PATH:LINE",)),
        (("undo",), ("nothing to undo",)),
        (("undo", "0"), ("at least 1",)),
        (("history", "no-such-thing"), ("no-such-thing",)),
        (("history", "--limit", "0"), ("--limit",)),
    ],
)
def test_bad_input_is_one_line_exit_two_and_nothing_written(
    root: Path, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    (root / "memory/2026-03-01.md").write_text("- 09:00 log line\n", encoding="utf-8")
    before = snapshot(root)
    assert_one_line_error(cli(*args, "--root", str(root)), *needles)
    assert snapshot(root) == before
    assert not (root / ".memtree/changes.jsonl").exists()


def test_undo_of_more_than_is_journaled_is_refused(root: Path) -> None:
    mt_of(root).add("Redis 연결 풀은 50이다", to="ops", now=NOW)
    before = snapshot(root)
    assert_one_line_error(cli("undo", "2", "--root", str(root)), "only 1")
    assert snapshot(root) == before


# --- the journal ------------------------------------------------------------------------------------


def test_an_add_is_one_journal_line_with_what_undo_needs(root: Path) -> None:
    decision = mt_of(root).add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    [change] = journal(root)
    assert (change.command, change.time, change.ids) == ("add", "2026-03-02T10:00:00+09:00", (decision.entry_id,))
    assert change.summary == "Redis 연결 풀은 50으로 올렸다" and change.id.startswith("ch-20260302100000-")
    [f] = change.files
    new = (root / "bank/ops.md").read_bytes()
    assert (f.path, f.before, f.after) == ("bank/ops.md", changes.digest(OPS.encode()), changes.digest(new))
    assert f.was == b"" and f.head == len(OPS.encode())  # an append keeps no old bytes at all
    line = (root / ".memtree/changes.jsonl").read_text(encoding="utf-8")
    assert line.count("\n") == 1 and len(line) < 600


def test_a_write_outside_any_command_is_journaled_on_its_own(root: Path) -> None:
    with store.write_lock(root):
        snap = store.read(root, "bank/ops.md")
        store.save(root, snap, snap.data + b"- hand-off line\n")  # type: ignore[operator]
    [change] = journal(root)
    assert change.command == "write" and change.paths == ("bank/ops.md",)
    mt_of(root).undo(now=NOW)
    assert (root / "bank/ops.md").read_text(encoding="utf-8") == OPS


def test_big_old_versions_are_kept_in_the_undo_folder(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "INLINE_MAX", 64)
    before = snapshot(root)
    mt_of(root).forget("e-1", now=NOW)
    blobs = list((root / ".memtree/undo").iterdir())
    assert len(blobs) == 1 and "was_blob" in (root / ".memtree/changes.jsonl").read_text(encoding="utf-8")
    mt_of(root).undo(now=NOW)
    assert snapshot(root) == before


def test_the_journal_and_its_undo_copies_keep_their_newest_part(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "JOURNAL_MAX_BYTES", 4000)
    # Why 4000: each update keeps the old words in the note (issue 30), so the note, and each copy, grows
    monkeypatch.setattr(changes, "UNDO_MAX_BYTES", 4000)
    monkeypatch.setattr(changes, "INLINE_MAX", 64)
    mt = mt_of(root)
    for i in range(12):
        mt.update("e-1", f"배포는 {i + 1}번째 규칙으로 바뀌었다 — 매주 점검하고 기록을 남긴다", now=NOW)
    kept = journal(root)
    assert 0 < len(kept) < 12 and (root / ".memtree/changes.jsonl").stat().st_size <= 4000
    copies = list((root / ".memtree/undo").iterdir())
    assert copies and sum(p.stat().st_size for p in copies) <= 4000  # the copies of the oldest changes went
    named = {f'was_blob":"{p.name}' for p in copies}
    text = (root / ".memtree/changes.jsonl").read_text(encoding="utf-8")
    assert all(n in text for n in named)  # no copy left that no line names
    settled = snapshot(root)
    mt.undo(now=NOW)
    assert "11번째" in (root / "bank/ops.md").read_text(encoding="utf-8")  # the newest change still undoes
    mt.undo(now=NOW)
    assert snapshot(root) == settled


def test_deleting_the_state_folder_loses_only_the_undo_history(root: Path) -> None:
    mt_of(root).add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    kept = snapshot(root)
    shutil.rmtree(root / ".memtree")
    assert snapshot(root) == kept
    assert_one_line_error(cli("undo", "--root", str(root)), "nothing to undo")
    assert snapshot(root) == kept


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=120),
    st.lists(st.sampled_from([b"a", b"\n", b"\xea\xb0\x80", b"- x\n", b"\xff"]), max_size=12),
    st.lists(st.sampled_from([b"a", b"\n", b"\xea\xb0\x80", b"- y\n", b"\xfe"]), max_size=12),
    st.binary(max_size=120),
)
def test_a_journaled_change_rebuilds_the_old_bytes_exactly(
    prefix: bytes, a: list[bytes], b: list[bytes], suffix: bytes
) -> None:
    before, after = prefix + b"".join(a) + suffix, prefix + b"".join(b) + suffix
    rec = recorder.Recording("/nowhere", "test", NOW)
    rec.saved("bank/a.md", before, after)
    change = rec.finish()
    if before == after:
        assert change is None
        return
    assert change is not None
    with tempfile.TemporaryDirectory() as tmp:
        changes.append(Path(tmp), change)
        [back] = changes.load(Path(tmp))
    assert back.files[0].before_bytes(after) == before


# --- undo ---------------------------------------------------------------------------------------------


def test_undo_of_an_undo_redoes(root: Path) -> None:
    mt = mt_of(root)
    mt.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    added = snapshot(root)
    first = mt.undo(now=NOW)
    assert first.paths == ("bank/ops.md",) and (root / "bank/ops.md").read_text(encoding="utf-8") == OPS
    again = mt.undo(now=NOW)
    assert again.undone[0].command == "undo" and again.undone[0].undoes == (first.undone[0].id,)
    assert snapshot(root) == added
    assert commands(root) == ["add", "undo", "undo"]


def test_undo_n_reverts_newest_first_and_dry_run_writes_nothing(root: Path) -> None:
    mt = mt_of(root)
    before = snapshot(root)
    mt.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    mt.update("e-1", "배포는 목요일에만 한다", now=NOW)
    mt.forget("bank/ops.md:4", now=NOW)
    after = snapshot(root)
    dry = cli_json(root, "undo", "3", "--dry-run")
    assert set(dry) == schema.KEYS["undo"] and dry["dry_run"] and dry["change_id"] is None
    assert [c["command"] for c in dry["undone"]] == ["forget", "update", "add"]
    assert snapshot(root) == after
    done = cli_json(root, "undo", "3")
    assert not done["dry_run"] and done["change_id"] and set(done["paths"]) == {"bank/ops.md", "bank/_archive/ops.md"}
    assert snapshot(root) == before
    assert not (root / "bank/_archive").exists()  # the folders the forget made went with its note


def test_a_persons_edit_after_a_memtree_write_blocks_its_undo(root: Path) -> None:
    mt = mt_of(root)
    mt.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    note = root / "bank/ops.md"
    with note.open("a", encoding="utf-8") as f:
        f.write("- 사람이 손으로 덧붙인 줄\n")
    before = snapshot(root)
    line = assert_one_line_error(cli("undo", "--root", str(root)), "bank/ops.md changed since", "nothing was written")
    assert "(add," in line
    assert snapshot(root) == before and commands(root) == ["add"]


def test_a_stale_undo_checks_every_change_before_writing_any(root: Path) -> None:
    mt = mt_of(root)
    mt.add("첫 번째 사실: 크론은 매일 돈다", to="ops", now=NOW)
    mt.add("두 번째 사실: 배치는 새벽에 돈다", to="pool", now=NOW)
    (root / "bank/ops.md").write_text("# ops\n\n- 사람이 새로 쓴 노트\n", encoding="utf-8")
    before = snapshot(root)
    assert_one_line_error(cli("undo", "2", "--root", str(root)), "bank/ops.md")
    assert snapshot(root) == before  # the newer change (to pool) was not reverted either


OPERATIONS: dict[str, Callable[[MemTree, Path], object]] = {
    "add": lambda mt, root: mt.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW),
    "add (new note and node)": lambda mt, root: mt.add("새 노트에 들어갈 첫 사실", to="infra/new", now=NOW),
    "update": lambda mt, root: mt.update("e-1", "배포는 금요일에도 한다", now=NOW),
    "forget": lambda mt, root: mt.forget("e-1", reason="틀렸다", now=NOW),
    "split": lambda mt, root: mt.split("bank/big.md", now=NOW),
    "consolidate": lambda mt, root: mt.consolidate(now=NOW),
    "archive": lambda mt, root: mt.archive(now=NOW),
    "import": lambda mt, root: mt.import_(_export_of(root.parent / "other"), now=NOW),
    "banks disable": lambda mt, root: mt.set_bank("infra", False, now=NOW),
    "conflicts resolve": lambda mt, root: None,  # the conflict is made first (below), then resolved
}


def _export_of(where: Path) -> bytes:
    other = write_root(where, {"bank/imported/facts.md": "# facts\n\n- 가져온 사실 하나\n- 가져온 사실 둘\n"})
    mt_of(other).index(now=NOW)
    return json.dumps(mt_of(other).export()).encode()


def _conflicted(mt: MemTree) -> str:
    decision = mt.add("금요일에도 배포한다", to="ops", now=NOW)
    assert decision.conflict_id  # type: ignore[union-attr]
    return decision.conflict_id  # type: ignore[union-attr]


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_undo_restores_every_tracked_byte(make_root: Callable[..., Path], name: str) -> None:
    root = make_root(
        {"bank/ops.md": OPS + f"{OLD}\n", "bank/pool.md": POOL, "bank/infra/db.md": "# db\n\n- Postgres 16\n"},
        [
            OPS_NODE,
            node("pool", "bank/pool.md"),
            node("infra", None, children=["infra/db"]),
            node("infra/db", "bank/infra/db.md", parent="infra"),
            node("big", "bank/big.md"),
        ],
    )
    (root / "bank/big.md").write_text("# big\n", encoding="utf-8")
    (root / "bank/big.md").write_text(grown(root / "bank/big.md"), encoding="utf-8")  # past the split limit
    mt = mt_of(root)
    if name == "conflicts resolve":
        resolved_id = _conflicted(mt)
        before = snapshot(root)
        mt.resolve_conflict(resolved_id, "new", now=NOW)
    else:
        before = snapshot(root)
        OPERATIONS[name](mt, root)
    assert snapshot(root) != before, f"{name} wrote nothing"
    expected = name.split(" (")[0]
    assert commands(root)[-1] == expected
    mt_of(root).undo(now=NOW)
    assert snapshot(root) == before
    assert commands(root)[-1] == "undo"


def test_every_writer_journals_itself_under_its_command(sample_root: Path) -> None:
    mt = mt_of(sample_root)
    (sample_root / "bank/infra").mkdir()
    (sample_root / "bank/infra/pool.md").write_text(POOL + f"- 타임아웃은 30초다\n{OLD}\n", encoding="utf-8")
    mt.index(now=NOW)
    mt.add("PR마다 CHANGELOG를 고친다", to="project/rules", now=NOW)
    mt.update("bank/infra/pool.md:5", "타임아웃은 10초다", now=NOW)
    mt.consolidate(now=NOW)
    mt.archive(now=NOW)
    cid = mt.add("Redis 연결 풀 크기는 10이면 충분하다", to="project/decisions", now=NOW)
    cid = mt.add("Redis는 연결 풀을 쓰지 않는다", to="project/decisions", now=NOW)
    mt.resolve_conflict(cid.conflict_id, "both", now=NOW)  # type: ignore[union-attr]
    entry = mt.add("지워질 사실 하나", to="project/rules", now=NOW).entry_id  # type: ignore[union-attr]
    mt.forget(entry, now=NOW)
    cron = sample_root / "bank/technical/cron-design.md"
    cron.write_text(grown(cron), encoding="utf-8")
    mt.split(now=NOW)
    mt.set_bank("infra", False, now=NOW)
    mt.set_bank("infra", True, now=NOW)
    (sample_root / "recall/hot.md").write_text(
        "- 사라진 출처 <!-- memtree: from=bank/gone.md:1-1; sha=abc; key=k -->\n", encoding="utf-8"
    )
    mt.recall_sync(now=NOW)
    mt.import_(_export_of(sample_root.parent / "other"), now=NOW)
    found = journal(sample_root)
    assert [c.command for c in found] == [
        "index",
        "add",
        "update",
        "consolidate",
        "archive",
        "add",
        "add",
        "conflicts resolve",
        "add",
        "forget",
        "split",
        "banks disable",
        "banks enable",
        "recall sync",
        "import",
    ]
    assert all(c.time == "2026-03-02T10:00:00+09:00" for c in found)
    by = {c.command: c for c in found}
    assert by["index"].paths == ("tree-index.json",)
    assert "conflicts.json" in by["conflicts resolve"].paths
    assert by["banks disable"].paths == ("memtree.yaml",) and by["banks disable"].summary == "infra"
    assert "recall/hot.md" in by["recall sync"].paths
    assert {"tree-index.json", "bank/technical/cron-design.md"} <= set(by["split"].paths)
    assert any(p.startswith("bank/_archive/") for p in by["archive"].paths)
    assert entry in by["forget"].ids and "e-old" in by["archive"].ids


def test_a_distill_run_is_one_change(root: Path) -> None:
    log = (
        "- 09:00 TypeError: unhashable type 'list' 에러가 났다 → 알고 보니 dict 키에 list를 넣고 있었다, "
        "tuple로 바꿔서 해결\n"
        "- 10:00 MAX_POOL_SIZE를 10에서 50으로 변경했다\n"
    )
    (root / "memory/2026-03-01.md").write_text(log, encoding="utf-8")
    before = snapshot(root)
    report = mt_of(root).distill(now=NOW)
    assert report.written >= 2
    assert commands(root) == ["distill"] and len(journal(root)[0].ids) == report.written
    mt_of(root).undo(now=NOW)
    assert snapshot(root) == before


# --- conflicts resolve --------------------------------------------------------------------------------


def test_resolve_touches_only_the_conflicting_sentence_of_a_hand_written_paragraph(
    make_root: Callable[..., Path],
) -> None:
    paragraph = (
        "Redis 커넥션 풀은 50개로 둔다. 백업은 매일 새벽 2시에 돈다. 레플리카는 서울 리전에 있다.\n"
        "스테이징은 작은 인스턴스 하나를 쓴다."
    )
    note = f"# db\n\n{paragraph}\n\n- 로그는 30일 보관한다\n"
    root = make_root({"bank/db.md": note}, [node("db", "bank/db.md")])
    mt = mt_of(root)
    decision = mt.add("Redis 커넥션 풀은 80개로 늘렸다", to="db", now=NOW)
    # a sentence of the paragraph is replaced: a conflict (never the whole paragraph superseded)
    assert decision.conflict_id  # type: ignore[union-attr]
    added = (root / "bank/db.md").read_text(encoding="utf-8")
    [conflict] = mt.conflicts()
    before = snapshot(root)
    _, outcome = mt.resolve_conflict(conflict.id, "new", now=NOW)
    assert outcome.startswith("moved 'Redis 커넥션 풀은 50개로 둔다.' out of bank/db.md:3-4")
    rest = paragraph.replace("Redis 커넥션 풀은 50개로 둔다. ", "")
    after = (root / "bank/db.md").read_text(encoding="utf-8")
    assert after.startswith(added.replace(paragraph, rest).rstrip("\n"))  # the rest byte for byte
    moved = entries.parse_entries(after)[-1]  # its words kept, marked, at the note's end
    assert moved.content == "Redis 커넥션 풀은 50개로 둔다." and moved.meta.extra["superseded"] == "2026-03-02"
    mt.undo(now=NOW)
    assert snapshot(root) == before  # the sentence and conflicts.json are back
    assert mt.resolve_conflict(conflict.id, "old", now=NOW)[1].startswith("marked bank/db.md:7-7 superseded")
    after = (root / "bank/db.md").read_text(encoding="utf-8")
    assert paragraph in after and "Redis 커넥션 풀은 80개로 늘렸다" in after  # no text left the note
    assert commands(root) == ["add", "conflicts resolve", "undo", "conflicts resolve"]


# --- history ---------------------------------------------------------------------------------------


def test_history_of_the_memory_a_note_a_node_and_an_entry(root: Path) -> None:
    mt = mt_of(root)
    mt.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    mt.add("배치는 새벽에 돈다", to="jobs/batch", now=NOW)
    mt.update("e-1", "배포는 목요일에만 한다", now=NOW)
    whole = cli_json(root, "history")
    assert set(whole) == schema.KEYS["history"] and whole["target"] is None and whole["commits"] == []
    assert [c["command"] for c in whole["changes"]] == ["update", "add", "add"]
    assert all(set(c) == schema.OBJECTS["change"] for c in whole["changes"])
    assert [c.command for c in mt.history("bank/ops.md").changes] == ["update", "add"]
    assert [c.command for c in mt.history("jobs").changes] == ["add"]  # a category: the notes under it
    assert [c.summary for c in mt.history("e-1").changes] == ["배포는 목요일에만 한다"]
    assert len(mt.history(limit=1).changes) == 1
    human = cli("history", "e-1", "--root", str(root))
    assert human.exit_code == 0 and "update" in human.stdout and "bank/ops.md" in human.stdout


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "test@example.com")
    _git(root, "config", "user.name", "Test")
    _git(root, "config", "commit.gpgsign", "false")
    (root / ".gitignore").write_text(".memtree/\n", encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the notes")
    return root


def test_history_reads_git_too(repo: Path) -> None:
    with (repo / "bank/ops.md").open("a", encoding="utf-8") as f:
        f.write("- 손으로 쓴 줄\n")
    _git(repo, "commit", "-q", "-am", "a hand edit")
    found = mt_of(repo).history("bank/ops.md")
    assert [c.subject for c in found.commits] == ["a hand edit", "the notes"] and found.changes == ()
    doc = cli_json(repo, "history", "ops")
    assert [c["subject"] for c in doc["commits"]] == ["a hand edit", "the notes"]
    assert all(set(c) == schema.OBJECTS["commit"] for c in doc["commits"])
    assert datetime.fromisoformat(doc["commits"][0]["time"]).tzinfo is not None


def test_git_autocommit_commits_each_write_and_only_its_files(repo: Path) -> None:
    (repo / "memtree.yaml").write_text("git:\n  autocommit: true\n", encoding="utf-8")
    _git(repo, "add", "memtree.yaml")
    _git(repo, "commit", "-q", "-m", "settings")
    (repo / "bank/scratch.md").write_text("# 사람이 쓰는 중\n", encoding="utf-8")  # a person's work in progress
    text = "Redis 연결 풀은 50으로 올렸다, 그리고 타임아웃은 30초로 줄였다 — 다음 분기에 다시 보기로 했다"
    mt = mt_of(repo)
    mt.add(text, to="ops", now=NOW)
    assert _git(repo, "log", "-1", "--format=%s").strip() == f"memtree add: {text[:60].rstrip()}"
    assert _git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["bank/ops.md"]
    assert "?? bank/scratch.md" in _git(repo, "status", "--porcelain")
    assert journal(repo)[-1].commit == _git(repo, "rev-parse", "HEAD").strip()
    mt.undo(now=NOW)
    assert _git(repo, "log", "-1", "--format=%s").strip().startswith("memtree undo: ch-")
    assert _git(repo, "status", "--porcelain", "bank/ops.md") == ""
    assert [c.subject.split(":")[0] for c in mt.history("bank/ops.md").commits][:2] == ["memtree undo", "memtree add"]


def test_git_autocommit_outside_a_repository_warns_once_and_still_writes(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (root / "memtree.yaml").write_text("git:\n  autocommit: true\n", encoding="utf-8")
    mt = mt_of(root)
    with caplog.at_level(logging.WARNING, logger="memtree"):
        mt.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
        mt.add("타임아웃은 30초다", to="ops", now=NOW)
    said = [r.getMessage() for r in caplog.records if "autocommit" in r.getMessage()]
    assert len(said) == 1 and ("not in a git repository" in said[0] or "not installed" in said[0])
    assert commands(root) == ["add", "add"] and all(c.commit is None for c in journal(root))


# --- concurrency -------------------------------------------------------------------------------------

WRITERS = 3
ADDS = 30
WRITERS_DEADLINE_S = 300
"""A deadline, not a duration: a few seconds on an idle machine, much more on a loaded one."""


def fact(worker: int, i: int) -> str:
    return distinct_fact(worker, i, ADDS)


def _writer(root: str, worker: int) -> None:
    mt = MemTree(root, refresh_interval=3600)
    for i in range(ADDS):
        mt.add(fact(worker, i), to="facts", now=NOW)


def test_concurrent_adds_lose_nothing_and_journal_in_the_order_they_landed(tmp_path: Path) -> None:
    root = write_root(tmp_path / "root", {"bank/facts.md": "# facts\n"}, [node("facts", "bank/facts.md")])
    (root / "memtree.yaml").write_text("split:\n  max_bytes: 1000000\n", encoding="utf-8")  # one note, one chain
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(root), w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(timeout=WRITERS_DEADLINE_S)
            assert p.exitcode == 0, f"writer exit code {p.exitcode} (None: still running after the deadline)"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    found = [e.content for e in entries.parse_entries((root / "bank/facts.md").read_text(encoding="utf-8"))]
    assert sorted(found) == sorted(fact(w, i) for w in range(WRITERS) for i in range(ADDS))
    chain = journal(root)
    assert [c.command for c in chain] == ["add"] * (WRITERS * ADDS)
    previous = changes.digest(b"# facts\n")
    for change in chain:  # each change starts from the bytes the one before it left
        [f] = [f for f in change.files if f.path == "bank/facts.md"]
        assert f.before == previous
        previous = f.after
    assert previous == changes.digest((root / "bank/facts.md").read_bytes())
    mt_of(root).undo(3, now=NOW)
    assert len(entries.parse_entries((root / "bank/facts.md").read_text(encoding="utf-8"))) == WRITERS * ADDS - 3


# --- the journal is written ahead ----------------------------------------------------------------------

_KILLED_BEFORE_ITS_LINE = """
import os, signal, sys
from datetime import datetime
from memtree import MemTree
from memtree.notes import recorder

def die(*args, **kwargs):  # the note is written: die before its journal line is
    os.kill(os.getpid(), signal.SIGKILL)

recorder.append = die
MemTree(sys.argv[1], refresh_interval=0).add(sys.argv[2], to="ops", now=datetime.fromisoformat(sys.argv[3]))
"""


def _killed_add(root: Path, text: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_BEFORE_ITS_LINE, str(root), text, NOW.isoformat()],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -9, done.stderr.decode()


def test_a_write_killed_before_its_journal_line_is_journaled_by_the_next_writer(root: Path) -> None:
    mt_of(root).add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    _killed_add(root, "타임아웃은 30초로 정했다")
    assert "타임아웃은 30초로 정했다" in (root / "bank/ops.md").read_text(encoding="utf-8")  # it landed
    assert len(journal(root)) == 1
    undone = mt_of(root).undo(2, now=NOW)  # the killed add is journaled first, so both are undone
    assert [c.command for c in undone.undone] == ["add", "add"]
    assert (root / "bank/ops.md").read_text(encoding="utf-8") == OPS
    assert not (root / ".memtree" / changes.PENDING_FILE).exists()


def test_a_write_ahead_record_whose_write_never_landed_is_dropped(root: Path) -> None:
    mt_of(root).add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    written = (root / "bank/ops.md").read_bytes()
    f = recorder._file_change("bank/ops.md", written, written + b"- never written\n")
    changes.write_ahead(root, "killed", "add", NOW.isoformat(), f)  # killed right after this
    with store.write_lock(root):
        pass
    assert commands(root) == ["add"] and not (root / ".memtree" / changes.PENDING_FILE).exists()
    mt_of(root).undo(now=NOW)
    assert (root / "bank/ops.md").read_text(encoding="utf-8") == OPS


# --- undo takes the caller's own change ----------------------------------------------------------------


def test_undo_takes_the_callers_own_change_and_keeps_a_later_one_by_someone_else(root: Path) -> None:
    a = MemTree(root, refresh_interval=0, actor="writer-a")
    b = MemTree(root, refresh_interval=0, actor="writer-b")
    mine = a.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    theirs = b.add("타임아웃은 30초로 정했다", to="ops", now=NOW)
    done = a.undo(now=NOW)
    assert [c.actor for c in done.undone] == ["writer-a"]
    text = (root / "bank/ops.md").read_text(encoding="utf-8")
    assert theirs.entry_id in text and mine.entry_id not in text
    assert text == OPS + text[len(OPS) :] and text.count("\n") == OPS.count("\n") + 1  # only b's line added
    [change] = [c for c in journal(root) if c.command == "undo"]
    assert change.actor == "writer-a" and change.undoes == (journal(root)[0].id,)
    a.undo(now=NOW)  # a's undo of its undo redoes its add, b's line still kept
    text = (root / "bank/ops.md").read_text(encoding="utf-8")
    assert mine.entry_id in text and theirs.entry_id in text


def test_undo_is_refused_when_a_later_change_by_someone_else_touches_the_same_entry(root: Path) -> None:
    a = MemTree(root, refresh_interval=0, actor="writer-a")
    b = MemTree(root, refresh_interval=0, actor="writer-b")
    mine = a.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    assert mine.entry_id is not None
    b.update(mine.entry_id, "Redis 연결 풀은 80으로 올렸다", now=NOW)
    before = snapshot(root)
    result = cli("undo", "--root", str(root), env={"MEMTREE_ACTOR": "writer-a"})
    assert_one_line_error(result, "a later change by writer-b", "nothing was written")
    assert snapshot(root) == before


def test_undo_by_id_and_an_actor_with_nothing_journaled(root: Path) -> None:
    a = MemTree(root, refresh_interval=0, actor="writer-a")
    a.add("Redis 연결 풀은 50으로 올렸다", to="ops", now=NOW)
    assert_one_line_error(
        cli("undo", "--root", str(root), env={"MEMTREE_ACTOR": "writer-c"}), "no memtree write by writer-c"
    )
    [change] = journal(root)
    result = cli("undo", "--id", change.id, "--root", str(root), env={"MEMTREE_ACTOR": "writer-c"})
    assert result.exit_code == 0, result.stdout
    assert (root / "bank/ops.md").read_text(encoding="utf-8") == OPS
    assert journal(root)[-1].actor == "writer-c"


def test_undo_of_a_note_someone_else_wrote_to_since_it_was_created_is_refused(root: Path) -> None:
    a = MemTree(root, refresh_interval=0, actor="writer-a")
    b = MemTree(root, refresh_interval=0, actor="writer-b")
    a.add("캐시 만료는 10분이다", to="cache", now=NOW)  # creates bank/cache.md and its node
    b.add("캐시 키에는 버전을 붙인다", to="cache", now=NOW)
    before = snapshot(root)
    with pytest.raises(StaleUndo, match=r"a later change by writer-b .* bank/cache\.md, which it created"):
        a.undo(now=NOW)
    assert snapshot(root) == before
