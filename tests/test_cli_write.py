"""The writing commands through typer's CliRunner: add, log, conflicts, split (and status's counts)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from helpers import assert_one_line_error, grown, snapshot
from typer.testing import CliRunner, Result

from memtree.cli.app import app
from memtree.notes import tree as treemod
from memtree.notes.entries import Entry, parse_entries
from memtree.write.split import MARKER

FACT_OLD = "배포는 금요일에 하지 않는다"
FACT_NEW = "금요일에도 배포한다"  # its negation worded otherwise: a conflict a person settles
REDIS_OLD = "Redis 커넥션 풀은 50개로 둔다"
REDIS_RAISED = "Redis 커넥션 풀은 80개로 둔다"  # the same with another value: a replacement
# Built in code, so that this file holds no literal secret for a scanner to flag.
GITHUB_TOKEN = "ghp" + "_" + "Zq8Lm2Xv5Rt1Wy7Np4Kc9Hd3Fs6Bj0Ga1Ue"
EMAIL = "lee.jiwon" + "@" + "example.co.kr"


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=stdin)


def add_json(root: Path, *args: str, stdin: str | bytes | None = None) -> dict:
    result = run("add", *args, "--root", str(root), "--json", stdin=stdin)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout)


def entry_with_id(note: Path, entry_id: str) -> Entry:
    found = [e for e in parse_entries(note.read_text(encoding="utf-8")) if e.meta.id == entry_id]
    assert len(found) == 1, f"{entry_id} not exactly once in {note}"
    return found[0]


# --- add: decisions ------------------------------------------------------------------------------


def test_add_json_reports_a_created_entry_with_target_and_similarity(sample_root: Path) -> None:
    note = sample_root / "bank/project/rules.md"
    before = note.read_text(encoding="utf-8")
    doc = add_json(sample_root, "PR마다 CHANGELOG를 고친다", "--to", "project/rules")
    assert doc["decision"] == "created"
    assert doc["path"] == "bank/project/rules.md" and doc["node"] == "project/rules"
    assert isinstance(doc["similarity"], float) and 0.0 <= doc["similarity"] < 0.5
    assert doc["redacted"] == [] and doc["dry_run"] is False
    after = note.read_text(encoding="utf-8")
    assert after.startswith(before.rstrip("\n")) and "PR마다 CHANGELOG를 고친다" in after[len(before.rstrip()) :]
    assert entry_with_id(note, doc["entry_id"]).content == "PR마다 CHANGELOG를 고친다"


def test_add_prints_the_decision_file_and_similarity(sample_root: Path) -> None:
    result = run("add", "PR마다 CHANGELOG를 고친다", "--to", "project/rules", "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    line = result.stdout.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith("created e-") and "bank/project/rules.md" in line
    assert re.search(r"similarity \d\.\d\d", line), line


def test_the_same_text_twice_is_a_duplicate_and_writes_nothing(sample_root: Path) -> None:
    first = add_json(sample_root, "금요일 오후에는 배포하지 않는다", "--to", "project/rules")
    before = snapshot(sample_root)
    result = run("add", "금요일 오후에는  배포하지 않는다.", "--to", "project/rules", "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("duplicate of " + first["entry_id"]) and "nothing written" in result.stdout
    doc = add_json(sample_root, "금요일 오후에는 배포하지 않는다", "--to", "project/rules")
    assert doc["decision"] == "duplicate" and doc["similarity"] == 1.0 and doc["path"] == "bank/project/rules.md"
    assert snapshot(sample_root) == before


def test_nfd_input_is_a_duplicate_of_the_same_nfc_entry(sample_root: Path) -> None:
    """macOS hands Hangul over decomposed (NFD); it is the same entry."""
    add_json(sample_root, "커밋 메시지는 한국어로 쓴다", "--to", "project/rules")
    before = snapshot(sample_root)
    nfd = unicodedata.normalize("NFD", "커밋 메시지는 한국어로 쓴다")
    doc = add_json(sample_root, "-", "--to", "project/rules", stdin=nfd.encode())
    assert doc["decision"] == "duplicate", doc
    assert snapshot(sample_root) == before


def test_a_restatement_is_merged_into_one_entry(sample_root: Path) -> None:
    first = add_json(sample_root, "배포는 금요일에 하지 않는다", "--to", "project/rules")
    result = run("add", "금요일에는 배포하지 않는다", "--to", "project/rules", "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("merged into ") and "bank/project/rules.md" in result.stdout
    assert re.search(r"similarity 0\.(8|9)\d", result.stdout), result.stdout
    note = (sample_root / "bank/project/rules.md").read_text(encoding="utf-8")
    assert sum("금요일에" in e.content for e in parse_entries(note)) == 1
    assert first["entry_id"] in note


def test_a_close_but_different_entry_is_a_conflict(sample_root: Path) -> None:
    add_json(sample_root, FACT_OLD, "--to", "project/decisions")
    doc = add_json(sample_root, FACT_NEW, "--to", "project/decisions")
    assert doc["decision"] == "conflict"
    assert {"decision", "path", "node", "similarity", "redacted"} <= set(doc)
    assert 0.5 <= doc["similarity"] < 0.8 and doc["path"] == "bank/project/decisions.md"
    assert doc["conflict_id"].startswith("c-") and doc["other"] == FACT_OLD
    note = (sample_root / "bank/project/decisions.md").read_text(encoding="utf-8")
    assert FACT_OLD in note and FACT_NEW in note  # both kept until someone settles it


def test_the_same_statement_with_another_value_supersedes_the_old_entry(sample_root: Path) -> None:
    # Why: issue 30 — a correction opened a conflict, and the old value was served as if current
    old = add_json(sample_root, REDIS_OLD, "--to", "project/decisions")
    doc = add_json(sample_root, REDIS_RAISED, "--to", "project/decisions")
    assert doc["decision"] == "created" and doc["supersedes"] == old["entry_id"] and doc["conflict_id"] is None
    note = sample_root / "bank/project/decisions.md"
    past = entry_with_id(note, old["entry_id"])
    assert past.content == REDIS_OLD  # its text stays
    assert past.meta.extra["by"] == doc["entry_id"] and past.meta.extra["superseded"]
    assert "superseded" not in entry_with_id(note, doc["entry_id"]).meta.extra
    assert json.loads(run("conflicts", "--root", str(sample_root), "--json").stdout) == {"conflicts": []}


# --- add: input and options ----------------------------------------------------------------------


def test_add_reads_stdin_with_a_dash(sample_root: Path) -> None:
    text = "회의록은 매주 금요일에 정리한다\n담당은 돌아가며 맡는다"
    doc = add_json(sample_root, "-", "--to", "project/rules", stdin=text.encode("utf-8"))
    assert doc["decision"] == "created"
    entry = entry_with_id(sample_root / "bank/project/rules.md", doc["entry_id"])
    assert "회의록은 매주 금요일에 정리한다" in entry.content and "담당은 돌아가며 맡는다" in entry.content


def test_add_reads_a_file(sample_root: Path, tmp_path: Path) -> None:
    src = tmp_path / "메모.txt"
    src.write_text("스테이징 DB는 매일 새벽 4시에 초기화된다\n", encoding="utf-8")
    doc = add_json(sample_root, "--file", str(src), "--to", "project/decisions")
    assert doc["decision"] == "created"
    entry = entry_with_id(sample_root / "bank/project/decisions.md", doc["entry_id"])
    assert entry.content == "스테이징 DB는 매일 새벽 4시에 초기화된다"


def test_add_tag_routes_by_tag_routing_case_insensitively(sample_root: Path) -> None:
    doc = add_json(sample_root, "작은 원칙: 모르면 모른다고 말한다", "--tag", "w")
    assert doc["node"] == "identity/values" and doc["path"] == "bank/identity/values.md" and doc["how"] == "tag"
    assert "모르면 모른다고" in (sample_root / "bank/identity/values.md").read_text(encoding="utf-8")


def test_add_to_a_new_bank_path_creates_the_note_and_its_nodes(sample_root: Path) -> None:
    doc = add_json(sample_root, "Redis는 6.2 이상을 쓴다", "--to", "bank/infra/redis.md")
    assert doc["decision"] == "created" and doc["path"] == "bank/infra/redis.md" and doc["node"] == "infra/redis"
    assert "Redis는 6.2 이상을 쓴다" in (sample_root / "bank/infra/redis.md").read_text(encoding="utf-8")
    tree = treemod.load(sample_root)  # validates, node files included
    assert tree.by_id["infra/redis"].path == "bank/infra/redis.md"
    assert tree.by_id["infra"].path is None and "infra/redis" in tree.by_id["infra"].children


def test_add_records_tags_kind_source_and_scope_in_the_entry(sample_root: Path) -> None:
    doc = add_json(
        sample_root,
        "릴리스 노트는 한국어로 먼저 쓴다",
        "--to",
        "project/rules",
        "--tags",
        "릴리스, docs",
        "--kind",
        "decision",
        "--source",
        "auto",
        "--scope",
        "project:memtree",
    )
    entry = entry_with_id(sample_root / "bank/project/rules.md", doc["entry_id"])
    assert entry.meta.tags == ("릴리스", "docs")
    assert (entry.meta.kind, entry.meta.source, entry.meta.scope) == ("decision", "auto", "project:memtree")


def test_add_dry_run_decides_but_writes_nothing(sample_root: Path) -> None:
    before = snapshot(sample_root)
    doc = add_json(sample_root, "새 규칙: 모든 PR에 스크린샷을 붙인다", "--to", "project/rules", "--dry-run")
    assert doc["decision"] == "created" and doc["dry_run"] is True and doc["path"] == "bank/project/rules.md"
    human = run("add", "새 규칙: 모든 PR에 스크린샷을 붙인다", "--dry-run", "--root", str(sample_root))
    assert human.exit_code == 0, human.stderr
    assert human.stdout.startswith("would be created")
    assert snapshot(sample_root) == before


def test_add_redacts_secrets_and_says_so(sample_root: Path) -> None:
    doc = add_json(sample_root, f"배포 봇 토큰은 {GITHUB_TOKEN} 이고 담당은 {EMAIL}", "--to", "project/rules")
    assert set(doc["redacted"]) == {"github-token", "email"}
    written = "".join(p.read_text(encoding="utf-8") for p in (sample_root / "bank").rglob("*.md"))
    assert GITHUB_TOKEN not in written and EMAIL not in written
    assert "[REDACTED:github-token]" in written and "[REDACTED:email]" in written
    human = run("add", f"두 번째 연락처 {EMAIL}", "--to", "project/decisions", "--root", str(sample_root))
    assert human.exit_code == 0 and "redacted: email" in human.stdout


# --- add: refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        (["   "], None, "empty"),
        (["-"], b"  \n\t", "empty"),
        (["가" * 50_001], None, "50,000"),
        (["-"], ("가" * 50_001).encode(), "50,000"),
        (["y" * 10_001, "--source", "auto"], None, "10,000"),
        (["-"], b"\xff\xfe\xc0 broken", "UTF-8"),
        (["-"], "한국어 뒤에 깨진 바이트 ".encode() + b"\xed\xa0\x80", "UTF-8"),
        (["태그 많음", "--tags", ",".join(f"t{i}" for i in range(11))], None, "at most 10"),
        (["어디로", "--to", "bank/nowhere"], None, "no such node"),
        (["어디로", "--to", "technical"], None, "category"),
        (["어디로", "--to", "bank/../../x.md"], None, ".."),
        (["어디로", "--to", "bank/../memory/x.md"], None, ".."),
        (["종류", "--kind", "rumor"], None, "--kind"),
        (["출처", "--source", "gossip"], None, "--source"),
        (["범위", "--scope", "두 단어"], None, "--scope"),
        ([], None, "TEXT"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_is_written(
    sample_root: Path, args: list[str], stdin: bytes | None, needle: str
) -> None:
    before = snapshot(sample_root)
    assert_one_line_error(run("add", *args, "--root", str(sample_root), stdin=stdin), needle)
    assert snapshot(sample_root) == before


def test_an_unknown_tag_lists_the_known_tags(sample_root: Path) -> None:
    before = snapshot(sample_root)
    line = assert_one_line_error(run("add", "무엇이든", "--tag", "Z", "--root", str(sample_root)), "'Z'")
    for tag, node_id in [
        ("W", "identity/values"),
        ("B", "technical/cron-design"),
        ("O", "technical/heartbeat-reflect"),
        ("S", "project/rules"),
    ]:
        assert f"{tag} → {node_id}" in line
    assert snapshot(sample_root) == before


def test_invalid_utf8_in_a_file_is_refused(sample_root: Path, tmp_path: Path) -> None:
    src = tmp_path / "broken.txt"
    src.write_bytes("반쯤 한국어 ".encode()[:-1] + b"\xff")
    before = snapshot(sample_root)
    assert_one_line_error(run("add", "--file", str(src), "--root", str(sample_root)), "UTF-8")
    assert_one_line_error(run("add", "--file", str(tmp_path / "없음.txt"), "--root", str(sample_root)), "cannot read")
    assert_one_line_error(run("add", "글", "--file", str(src), "--root", str(sample_root)), "not both")
    assert snapshot(sample_root) == before


@pytest.mark.parametrize("to", ["bank//x.md", "bank/./x.md", "bank/.hidden.md"])
def test_an_odd_bank_path_is_refused_or_written_where_it_is_found(sample_root: Path, to: str) -> None:
    """`--to` with an empty, '.' or hidden segment must not leave a node no load accepts or no walk finds."""
    before = snapshot(sample_root)
    result = run("add", "이상한 경로로 가는 기억", "--to", to, "--root", str(sample_root), "--json")
    if result.exit_code == 2:
        assert_one_line_error(result)
        assert snapshot(sample_root) == before
        return
    assert result.exit_code == 0, result.stderr
    path = json.loads(result.stdout)["path"]
    tree = treemod.load(sample_root)  # tree-index.json must still load
    assert tree.by_path[path].id == json.loads(result.stdout)["node"]
    checked = run("check", "--root", str(sample_root))
    assert checked.exit_code == 0, checked.stdout  # no second name for the note, no note search never sees
    found = run("search", "이상한 경로로 가는 기억", "--root", str(sample_root), "--json")
    assert found.exit_code == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["path"] == path, f"the note written to {path} is never searched"


def test_add_to_a_symlinked_folder_leading_outside_the_root_writes_nothing_outside(
    sample_root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (sample_root / "bank/link").symlink_to(outside, target_is_directory=True)
    result = run("add", "루트 밖으로 새는 기억", "--to", "bank/link/x.md", "--root", str(sample_root))
    assert list(outside.iterdir()) == [], "add wrote through a symlink to a folder outside the memory root"
    assert_one_line_error(result)


# --- log -----------------------------------------------------------------------------------------


def today_logs() -> set[str]:
    """Today's log path (callers take it before and after a command, in case midnight passes)."""
    return {f"memory/{datetime.now().astimezone():%Y-%m-%d}.md"}


def test_log_creates_todays_file_with_a_heading_then_appends(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "# a\n\n내용\n"})
    expected = today_logs()
    first = run("log", "배포 완료, 에러 없음", "--root", str(root), "--json")
    expected |= today_logs()
    assert first.exit_code == 0, first.stderr
    doc = json.loads(first.stdout)
    assert set(doc) == {"path", "line", "text", "redacted"}
    assert doc["path"] in expected and doc["text"] == "배포 완료, 에러 없음" and doc["redacted"] == []
    day = root / doc["path"]
    body = day.read_text(encoding="utf-8")
    date = doc["path"][len("memory/") : -len(".md")]
    assert body.startswith(f"# {date}\n\n")
    lines = body.rstrip("\n").split("\n")
    assert re.fullmatch(r"- \d\d:\d\d 배포 완료, 에러 없음", lines[-1]), lines[-1]
    assert doc["line"] == len(lines)
    before = day.read_bytes()
    second = run("log", "롤백 없이 마감", "--root", str(root))
    assert second.exit_code == 0, second.stderr
    assert second.stdout.startswith(f"logged to {doc['path']}:{doc['line'] + 1}")
    after = day.read_bytes()
    assert after.startswith(before) and after != before
    assert re.fullmatch(r"- \d\d:\d\d 롤백 없이 마감\n", after[len(before) :].decode())


def test_log_redacts_secrets(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "# a\n"})
    result = run("log", f"연락은 {EMAIL} 으로, 토큰 {GITHUB_TOKEN}", "--root", str(root), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc["redacted"]) == {"email", "github-token"}
    written = (root / doc["path"]).read_text(encoding="utf-8")
    assert EMAIL not in written and GITHUB_TOKEN not in written
    assert "연락은 [REDACTED:email] 으로, 토큰 [REDACTED:github-token]" in written


def test_log_reads_stdin_and_refuses_empty_text(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "# a\n"})
    ok = run("log", "-", "--root", str(root), "--json", stdin="표준입력으로 남긴 줄\n".encode())
    assert ok.exit_code == 0, ok.stderr
    assert "표준입력으로 남긴 줄" in (root / json.loads(ok.stdout)["path"]).read_text(encoding="utf-8")
    before = snapshot(root)
    assert_one_line_error(run("log", "  ", "--root", str(root)), "empty")
    assert_one_line_error(run("log", "-", "--root", str(root), stdin=b"\xff\xfe"), "UTF-8")
    assert snapshot(root) == before


def test_log_never_rewrites_a_log_without_a_final_newline(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "# a\n"})
    rel = next(iter(today_logs()))
    (root / rel).write_text("# 손으로 쓴 줄\n- 09:00 마지막 줄에 개행 없음", encoding="utf-8")
    before = (root / rel).read_bytes()
    result = run("log", "이어 쓰기", "--root", str(root))
    assert result.exit_code == 0, result.stderr
    if rel not in result.stdout:  # midnight passed between the two lines: nothing to compare
        pytest.skip("the day changed during the test")
    after = (root / rel).read_bytes()
    assert after.startswith(before + b"\n")  # the old last line is kept whole, the new one starts a line
    assert re.fullmatch(r"- \d\d:\d\d 이어 쓰기\n", after[len(before) + 1 :].decode())


# --- conflicts -----------------------------------------------------------------------------------


def make_conflict(root: Path) -> tuple[str, str, str]:
    """Add the deploy pair; returns (conflict id, old entry id, new entry id)."""
    old = add_json(root, FACT_OLD, "--to", "project/decisions")
    new = add_json(root, FACT_NEW, "--to", "project/decisions")
    assert new["decision"] == "conflict", new
    return new["conflict_id"], old["entry_id"], new["entry_id"]


def test_no_conflicts_is_said_plainly(sample_root: Path) -> None:
    result = run("conflicts", "--root", str(sample_root))
    assert result.exit_code == 0 and result.stdout.strip() == "no open conflicts"
    as_json = run("conflicts", "--root", str(sample_root), "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == {"conflicts": []}


def test_conflicts_lists_both_texts_similarity_and_files(sample_root: Path) -> None:
    cid, old_id, new_id = make_conflict(sample_root)
    result = run("conflicts", "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert cid in out and FACT_OLD in out and FACT_NEW in out
    assert re.search(r"similarity 0\.[5-7]\d", out) and "bank/project/decisions.md" in out
    assert old_id in out and new_id in out
    assert "negation: 배포는 금요일에 하지 않는다 → 금요일에도 배포한다" in out  # what differs, and why
    (found,) = json.loads(run("conflicts", "--root", str(sample_root), "--json").stdout)["conflicts"]
    assert found["id"] == cid and 0.5 <= found["similarity"] < 0.8
    assert found["cause"].startswith("negation: 배포는 금요일에 하지 않는다 → 금요일에도 배포한다 (similarity 0.")
    assert datetime.fromisoformat(found["created_at"]).tzinfo is not None
    assert found["new"] == {"path": "bank/project/decisions.md", "id": new_id, "text": FACT_NEW}
    assert found["old"] == {"path": "bank/project/decisions.md", "id": old_id, "text": FACT_OLD}


def test_a_conflict_a_merge_left_shows_what_differs_not_a_similarity(sample_root: Path) -> None:
    from memtree.write import clashes
    from memtree.write.merge import FieldClash

    clashes.note_pending(sample_root, [FieldClash("c-0123456789ab", "project/decisions", "weight", 1.5, 2.0)])
    out = run("conflicts", "--root", str(sample_root)).stdout
    assert "c-0123456789ab  node project/decisions: weight 1.5 kept, 2.0 from the merge" in out, out
    assert "similarity" not in out
    (found,) = json.loads(run("conflicts", "--root", str(sample_root), "--json").stdout)["conflicts"]
    assert (
        found["similarity"] is None and found["cause"] == "node project/decisions: weight 1.5 kept, 2.0 from the merge"
    )


@pytest.mark.parametrize(
    ("keep", "kept", "gone"),
    [("new", [FACT_NEW], [FACT_OLD]), ("old", [FACT_OLD], [FACT_NEW]), ("both", [FACT_OLD, FACT_NEW], [])],
)
def test_resolve_keeps_what_was_asked_and_closes_the_conflict(
    sample_root: Path, keep: str, kept: list[str], gone: list[str]
) -> None:
    note = sample_root / "bank/project/decisions.md"
    original = note.read_text(encoding="utf-8")
    cid, _, _ = make_conflict(sample_root)
    assert cid in (sample_root / "conflicts.json").read_text(encoding="utf-8")
    result = run("conflicts", "resolve", cid, "--keep", keep, "--root", str(sample_root), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["conflict"]["id"] == cid and doc["keep"] == keep
    assert doc["outcome"].startswith("marked") if gone else doc["outcome"] == "both entries kept"
    text = note.read_text(encoding="utf-8")
    by_text = {e.content: e for e in parse_entries(text)}
    for t in kept:
        assert "superseded" not in by_text[t].meta.extra
    for t in gone:  # marked superseded, its words kept
        assert by_text[t].meta.extra["superseded"] and by_text[t].meta.extra["by"]
    for line in original.splitlines():  # nothing else in the note was touched
        assert line in text.splitlines()
    assert json.loads(run("conflicts", "--root", str(sample_root), "--json").stdout) == {"conflicts": []}
    store = sample_root / "conflicts.json"
    assert not store.exists() or cid not in store.read_text(encoding="utf-8")


def test_resolving_one_conflict_leaves_the_others_open(sample_root: Path) -> None:
    first, _, _ = make_conflict(sample_root)
    add_json(sample_root, "점심 회식은 금요일에 한다", "--to", "bank/ops/batch.md")
    other = add_json(sample_root, "금요일에는 점심 회식을 하지 않는다", "--to", "bank/ops/batch.md")
    assert other["decision"] == "conflict", other
    human = run("conflicts", "resolve", first, "--keep", "both", "--root", str(sample_root))
    assert human.exit_code == 0 and human.stdout.startswith(f"resolved {first} (kept both)")
    left = json.loads(run("conflicts", "--root", str(sample_root), "--json").stdout)["conflicts"]
    assert [c["id"] for c in left] == [other["conflict_id"]]
    on_disk = json.loads((sample_root / "conflicts.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in on_disk["conflicts"]] == [other["conflict_id"]]


def test_resolve_refuses_an_unknown_id_a_missing_keep_and_a_bad_keep(sample_root: Path) -> None:
    cid, _, _ = make_conflict(sample_root)
    before = snapshot(sample_root)
    line = assert_one_line_error(
        run("conflicts", "resolve", "c-00000000-nope", "--keep", "new", "--root", str(sample_root)), "c-00000000-nope"
    )
    assert cid in line  # names the open ids
    assert_one_line_error(run("conflicts", "resolve", cid, "--root", str(sample_root)), "--keep")
    assert_one_line_error(run("conflicts", "resolve", cid, "--keep", "neither", "--root", str(sample_root)), "--keep")
    assert snapshot(sample_root) == before


@pytest.mark.parametrize(
    ("stale", "rest", "fresh"),
    [
        (
            "PgBouncer max pool size is 50.",
            "Backups run nightly at 02:00 UTC. The replica lives in eu-west-1.",
            "PgBouncer max pool size was raised to 80",
        ),
        (
            "Redis 커넥션 풀은 50개로 둔다.",
            "백업은 매일 새벽 2시에 돈다. 레플리카는 서울 리전에 있다.",
            "Redis 커넥션 풀은 80개로 늘렸다",
        ),
    ],
)
def test_resolve_keep_new_retires_only_the_conflicting_sentence_of_a_hand_written_paragraph(
    make_root: Callable[..., Path], stale: str, rest: str, fresh: str
) -> None:
    # Why: issue 12 — `add` records the whole paragraph it compared with, and resolve deleted it all
    root = make_root({"bank/ops/db.md": f"# DB\n\n{stale} {rest}\n\n- Staging uses one small instance.\n"})
    added = add_json(root, fresh, "--to", "bank/ops/db.md")
    assert added["decision"] == "conflict" and added["other"] == f"{stale} {rest}", added
    before = (root / "bank/ops/db.md").read_text(encoding="utf-8")
    result = run("conflicts", "resolve", added["conflict_id"], "--keep", "new", "--root", str(root), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["outcome"].startswith(f"moved {stale!r} out of bank/ops/db.md:3-3")
    after = (root / "bank/ops/db.md").read_text(encoding="utf-8")
    assert after.startswith(before.replace(f"{stale} ", "").rstrip("\n"))  # the rest byte for byte
    moved = parse_entries(after)[-1]  # the sentence, an entry of its own at the end, marked
    assert moved.content == stale and moved.meta.extra["by"] == added["entry_id"]
    assert json.loads(run("conflicts", "--root", str(root), "--json").stdout) == {"conflicts": []}


def test_resolve_changes_nothing_when_no_sentence_of_a_paragraph_clearly_conflicts(
    make_root: Callable[..., Path],
) -> None:
    from memtree.write import conflicts

    paragraph = "배포는 금요일에 하지 않는다. 회의는 월요일 10시다."
    root = make_root(
        {"bank/ops/rules.md": f"# 규칙\n\n{paragraph}\n\n- 점심은 12시에 먹는다 <!-- memtree: id=e-1 -->\n"}
    )
    new = conflicts.Side("bank/ops/rules.md", "e-1", "점심은 12시에 먹는다")
    old = conflicts.Side("bank/ops/rules.md", "", paragraph)
    conflicts.save(root, [conflicts.OpenConflict("c-1", "2025-03-01T09:00:00+09:00", 0.51, new, old)])
    before = snapshot(root)
    line = assert_one_line_error(run("conflicts", "resolve", "c-1", "--keep", "new", "--root", str(root)))
    assert "2 sentences" in line and "bank/ops/rules.md:3-3" in line and "nothing changed" in line
    assert snapshot(root) == before  # the note untouched, the conflict still open


def test_status_json_counts_open_conflicts(sample_root: Path) -> None:
    doc = json.loads(run("status", "--root", str(sample_root), "--json").stdout)
    assert doc["open_conflict_count"] == 0 and "watcher" in doc and doc["watcher"] is None
    cid, _, _ = make_conflict(sample_root)
    doc = json.loads(run("status", "--root", str(sample_root), "--json").stdout)
    assert doc["open_conflict_count"] == 1
    run("conflicts", "resolve", cid, "--keep", "old", "--root", str(sample_root))
    assert json.loads(run("status", "--root", str(sample_root), "--json").stdout)["open_conflict_count"] == 0


# --- split ---------------------------------------------------------------------------------------


def content_lines(text: str) -> set[str]:
    """Non-blank lines that are not a split index (the marker and its link lines)."""
    return {
        ln
        for ln in text.split("\n")
        if ln.strip() and ln.strip() != MARKER and not re.match(r"^- \[[^\]]*\]\([^)]*\.md>?\)\s*$", ln)
    }


def test_split_cuts_an_oversized_note_into_children_and_nodes(sample_root: Path) -> None:
    note = sample_root / "bank/technical/cron-design.md"
    original = grow(note)
    result = run("split", "--root", str(sample_root), "--json")
    assert result.exit_code == 0, result.stderr
    (done,) = json.loads(result.stdout)["splits"]
    assert done["path"] == "bank/technical/cron-design.md"
    children, nodes = done["children"], done["nodes"]
    assert len(children) >= 2 and len(nodes) == len(children)
    assert note.stat().st_size <= 10_240
    tree = treemod.load(sample_root)  # validates: ids, parents and children agree, files exist
    parent = tree.by_id["technical/cron-design"]
    assert set(parent.children) == set(nodes)
    for child_path, node_id in zip(children, nodes):
        assert child_path.startswith("bank/technical/cron-design/") and (sample_root / child_path).is_file()
        assert tree.by_id[node_id].path == child_path and tree.by_id[node_id].parent == parent.id
    parts = note.read_text(encoding="utf-8") + "".join((sample_root / c).read_text(encoding="utf-8") for c in children)
    assert content_lines(parts) >= content_lines(original)
    hits = json.loads(run("search", "추가 섹션 회고 lock 대기", "--root", str(sample_root), "--json").stdout)["hits"]
    assert hits and hits[0]["path"] in children


def test_split_again_changes_nothing(sample_root: Path) -> None:
    grow(sample_root / "bank/technical/cron-design.md")
    assert run("split", "--root", str(sample_root)).exit_code == 0
    before = snapshot(sample_root)
    again = run("split", "--root", str(sample_root))
    assert again.exit_code == 0, again.stderr
    assert "nothing to split" in again.stdout
    one = run("split", "bank/technical/cron-design.md", "--root", str(sample_root))
    assert one.exit_code == 0 and "within the limit; nothing to split" in one.stdout
    assert snapshot(sample_root) == before


def test_split_a_path_with_a_small_max_bytes_is_idempotent(sample_root: Path) -> None:
    note = sample_root / "bank/identity/values.md"
    original = note.read_text(encoding="utf-8")
    args = ("split", "bank/identity/values.md", "--max-bytes", "1500", "--root", str(sample_root))
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("split bank/identity/values.md into ")
    tree = treemod.load(sample_root)
    kids = tree.by_id["identity/values"].children
    assert len(kids) >= 2
    assert MARKER in note.read_text(encoding="utf-8")
    parts = note.read_text(encoding="utf-8") + "".join(
        (sample_root / tree.by_id[k].path).read_text(encoding="utf-8") for k in kids
    )
    assert content_lines(parts) >= content_lines(original)
    before = snapshot(sample_root)
    assert run(*args).exit_code == 0
    assert run("split", "--max-bytes", "1500", "--root", str(sample_root), "--json").exit_code == 0
    after = snapshot(sample_root)
    assert {k: v for k, v in after.items() if "identity/values" in k} == {
        k: v for k, v in before.items() if "identity/values" in k
    }


def test_split_of_a_note_within_the_limit_says_so_and_writes_nothing(sample_root: Path) -> None:
    before = snapshot(sample_root)
    every = run("split", "--root", str(sample_root))
    assert every.exit_code == 0 and "nothing to split" in every.stdout
    assert json.loads(run("split", "--root", str(sample_root), "--json").stdout) == {"splits": []}
    one = run("split", "bank/project/rules.md", "--root", str(sample_root), "--json")
    assert one.exit_code == 0, one.stderr
    doc = json.loads(one.stdout)
    assert doc == {"splits": [{"path": "bank/project/rules.md", "children": [], "nodes": [], "warnings": []}]}
    assert snapshot(sample_root) == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["memory/2026-11-27.md"], "bank/"),
        (["bank/없는-노트.md"], "no such note"),
        (["bank/project/rules.md", "--max-bytes", "-1"], "max-bytes"),
        (["bank/project/rules.md", "--max-bytes", "0"], "max-bytes"),
    ],
)
def test_split_refusals_are_one_line_and_write_nothing(sample_root: Path, args: list[str], needle: str) -> None:
    before = snapshot(sample_root)
    assert_one_line_error(run("split", *args, "--root", str(sample_root)), needle)
    assert snapshot(sample_root) == before


SECTION = (
    "\n## 추가 섹션 {n}: 배포 회고\n\n"
    "{n}번째 회고에서는 크론 작업이 겹친 원인과 lock 대기 시간을 정리했다. "
    "다음 분기에는 스케줄 표를 다시 검토하고, 실패한 작업의 로그를 한곳에 모은다.\n"
)


def grow(note: Path, past: int = 10_240) -> str:
    """Append Korean sections until the note is over ``past`` bytes; returns the new text."""
    text = grown(note, past, SECTION)
    note.write_text(text, encoding="utf-8")
    return text


def test_watch_json_writes_one_object_a_line_for_each_action(
    sample_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree.serve.watch import Watcher

    def run_once(self: Watcher) -> None:  # the actions a real run logs, without an observer
        self.log(f"watching {self.root} (debounce 0.5 s)")
        self._action("re-indexed bank/identity/values.md")
        self.log("warning: bank/가치관.md: 읽을 수 없음")
        self.log("stopped")

    monkeypatch.setattr(Watcher, "run", run_once)
    result = run("watch", "--json", "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["level"], o["message"]) for o in lines[1:]] == [
        ("info", "re-indexed bank/identity/values.md"),
        ("warning", "bank/가치관.md: 읽을 수 없음"),
        ("info", "stopped"),
    ]
    assert all(datetime.fromisoformat(o["time"]).tzinfo is not None for o in lines)
    plain = run("watch", "--root", str(sample_root))
    assert re.search(r"^\d\d:\d\d:\d\d re-indexed bank/identity/values.md$", plain.stdout, re.MULTILINE)
