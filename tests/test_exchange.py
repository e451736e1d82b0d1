"""memtree.write.exchange / `memtree export` and `memtree import`: one JSON document, a backup and a merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import node, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.errors import QueryError
from memtree.notes.root import init
from memtree.write import conflicts
from memtree.write.exchange import IMPORT_MAX_BYTES, dumps, size_warning

WORDS = "사과 배포 크론 설계 원칙 가치관 회의 Redis pool cache tree index note 마감 KST 서버 로그".split()
word = st.sampled_from(WORDS)
sentence = st.lists(word, min_size=2, max_size=8).map(" ".join)
content = st.lists(sentence, min_size=1, max_size=3).map("\n".join)
meta = st.fixed_dictionaries(
    {},
    optional={
        "id": st.from_regex(r"e-2026112[0-9]-[0-9a-f]{8}", fullmatch=True),
        "created": st.just("2026-11-29T14:20:00+09:00"),
        "tags": st.lists(st.sampled_from(["cron", "kst", "ops"]), min_size=1, max_size=2, unique=True),
        "kind": st.sampled_from(["fact", "decision"]),
        "source": st.sampled_from(["manual", "auto"]),
    },
)
entry = st.tuples(st.sampled_from(["bank/a.md", "bank/b/c.md", "bank/b/d.md"]), st.booleans(), content, meta)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(st.lists(entry, min_size=1, max_size=12))
def test_export_import_into_an_empty_root_export_is_identical(
    tmp_path_factory: pytest.TempPathFactory, raw: list
) -> None:
    seen: set[str] = set()
    docs_entries = []
    for path, item, text, m in raw:
        key = " ".join(text.split()).casefold()
        if key in seen:  # dedup is part of import: distinct texts only
            continue
        seen.add(key)
        docs_entries.append({"path": path, "item": item, "text": text, "meta": m})
    source = init(tmp_path_factory.mktemp("source"))[0]
    seed = {"memtree": "export", "version": 1, "bank": None, "nodes": [], "entries": docs_entries}
    MemTree(source).import_(dumps(seed))
    first = MemTree(source).export()
    target = init(tmp_path_factory.mktemp("target"))[0]
    MemTree(target).import_(dumps(first))
    assert dumps(MemTree(target).export()) == dumps(first)


def test_the_sample_memory_round_trips_and_a_second_import_writes_nothing(sample_root: Path, tmp_path: Path) -> None:
    doc = MemTree(sample_root).export()
    assert doc["entries"] and {n["id"] for n in doc["nodes"]} >= {"identity/values", "project/rules"}
    target = init(tmp_path / "empty")[0]
    first = MemTree(target).import_(dumps(doc))
    assert first.written == len(doc["entries"]) and first.nodes_added
    assert dumps(MemTree(target).export()) == dumps(doc)
    before = snapshot(target)
    again = MemTree(target).import_(dumps(doc))
    assert again.written == 0 and again.skipped == len(doc["entries"]) and snapshot(target) == before
    assert MemTree(target).search("가치관이 뭐야?").hits[0].node == "identity/values"


def test_one_bank_only(sample_root: Path) -> None:
    doc = MemTree(sample_root).export(bank="identity")
    assert doc["entries"] and all(e["path"].startswith("bank/identity/") for e in doc["entries"])
    assert {n["id"] for n in doc["nodes"]} == {"identity", "identity/values", "identity/personality"}


def test_import_sanitizes_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    root = init(tmp_path / "r")[0]
    mail = "kim" + "@example.com"
    doc = {
        "memtree": "export",
        "version": 1,
        "nodes": [],
        "entries": [{"path": "bank/a.md", "item": True, "text": f"담당자 {mail}", "meta": {}}],
    }
    before = snapshot(root)
    dry = MemTree(root).import_(dumps(doc), dry_run=True)
    assert dry.written == 1 and dry.dry_run and snapshot(root) == before
    done = MemTree(root).import_(dumps(doc))
    assert done.redacted == 1
    assert mail not in (root / "bank/a.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"memtree": "export", "version": 1, "entries": [', "line"),
        (b'{"version": 1}', "not a memtree export"),
        (
            json.dumps(
                {"memtree": "export", "version": 1, "nodes": [], "entries": [{"path": "x.md", "text": "a"}]}
            ).encode(),
            "bank/",
        ),
        (
            json.dumps(
                {"memtree": "export", "version": 1, "nodes": [], "entries": [{"path": "bank/../../x.md", "text": "a"}]}
            ).encode(),
            "..",
        ),
        (
            json.dumps({"memtree": "export", "version": 1, "nodes": [{"id": "x", "bogus": 1}], "entries": []}).encode(),
            "unknown key",
        ),
        (b" " * (IMPORT_MAX_BYTES + 1), "at most"),
    ],
)
def test_bad_documents_are_refused_whole(tmp_path: Path, data: bytes, needle: str) -> None:
    root = init(tmp_path / "r")[0]
    before = snapshot(root)
    with pytest.raises(QueryError) as err:
        MemTree(root).import_(data)
    assert needle in str(err.value) and snapshot(root) == before


def test_cli_export_and_import(sample_root: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    exported = runner.invoke(app, ["export", "--root", str(sample_root)])
    assert exported.exit_code == 0 and json.loads(exported.stdout)["memtree"] == "export"
    target = init(tmp_path / "t")[0]
    dump = tmp_path / "memory.json"
    dump.write_text(exported.stdout, encoding="utf-8")
    result = runner.invoke(app, ["import", str(dump), "--root", str(target), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["written_count"] > 0
    bad = runner.invoke(app, ["import", "-", "--root", str(target)], input="{nope")
    assert bad.exit_code == 2 and bad.stderr.startswith("memtree: error:") and "Traceback" not in bad.output


# --- a backup: every tracked file back, byte for byte ---------------------------------------------

ids = st.from_regex(r"e-2026112[0-9]-[0-9a-f]{8}", fullmatch=True)
item_text = st.tuples(sentence, st.one_of(st.none(), ids)).map(
    lambda t: t[0] + (f" <!-- memtree: id={t[1]}; kind=fact -->" if t[1] else "")
)
heading = st.tuples(st.integers(1, 4), sentence).map(lambda t: "#" * t[0] + " " + t[1])
bullets = st.lists(st.tuples(st.integers(0, 2), item_text), min_size=1, max_size=5).map(
    lambda items: "\n".join("  " * min(depth, i) + "- " + text for i, (depth, text) in enumerate(items))
)
numbered = st.lists(st.tuples(item_text, st.lists(sentence, max_size=2)), min_size=1, max_size=4).map(
    lambda items: "\n".join(
        f"{n}. {text}" + "".join(f"\n   - {sub}" for sub in subs) for n, (text, subs) in enumerate(items, 1)
    )
)
table = st.lists(st.tuples(word, sentence), min_size=1, max_size=3).map(
    lambda rows: "| 항목 | note |\n|---|:---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
)
code = st.tuples(st.sampled_from(["", "python", "bash"]), st.lists(sentence, min_size=1, max_size=3)).map(
    lambda t: f"```{t[0]}\n" + "\n".join(f"# {line}" for line in t[1]) + "\n```"
)
frontmatter = st.tuples(sentence, st.lists(st.sampled_from(["cron", "kst", "ops"]), max_size=2)).map(
    lambda t: f"---\ntitle: {t[0]}\ntags: [{', '.join(t[1])}]\n---"
)
body = st.lists(st.one_of(heading, bullets, numbered, table, code, sentence), min_size=1, max_size=6)
note_text = st.tuples(
    st.one_of(st.none(), frontmatter), body, st.sampled_from(["\n", "", "\n\n"]), st.sampled_from(["\n", "\r\n"])
).map(lambda t: ("\n\n".join(([t[0]] if t[0] else []) + t[1]) + t[2]).replace("\n", t[3]))
BANK_NOTES = ["bank/a.md", "bank/b/c.md", "bank/b/d.md", "bank/메모/배포.md"]
LOGS = ["memory/2026-11-27.md", "memory/2026-11-28.md"]
tracked = st.fixed_dictionaries(
    {BANK_NOTES[0]: note_text},
    optional={
        **{p: note_text for p in [*BANK_NOTES[1:], *LOGS, "bank/_archive/a.md"]},
        "recall/hot.md": st.just("# hot\n\n- 크론 설계 <!-- memtree: from=bank/a.md:3-3 -->\n"),
    },
)


def _source_root(root: Path, files: dict[str, str], with_conflict: bool) -> None:
    """A memory root holding exactly ``files``, a hand-formatted tree and maybe an open conflict."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    nodes = [node(p[5:-3], p) for p in files if p.startswith("bank/") and not p.startswith("bank/_archive/")]
    # 4 spaces, not memtree's 2: a person's formatting comes back too
    (root / "tree-index.json").write_text(json.dumps({"version": 1, "nodes": nodes}, indent=4), encoding="utf-8")
    if with_conflict:
        side = conflicts.Side("bank/a.md", "e-20261120-0000aaaa", "크론 설계 원칙")
        other = conflicts.Side("bank/a.md", "e-20261121-0000bbbb", "크론 설계 원칙 아님")
        found = conflicts.OpenConflict("c-20261121-0001", "2026-11-29T14:20:00+09:00", 0.6, side, other)
        (root / "conflicts.json").write_bytes(conflicts.dumps([found]))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(tracked, st.booleans())
def test_export_then_import_into_an_empty_root_restores_every_tracked_file_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, str], with_conflict: bool
) -> None:
    source = init(tmp_path_factory.mktemp("source"))[0]
    _source_root(source, files, with_conflict)
    doc = MemTree(source).export()
    assert doc["version"] == 2 and doc["entries"] is not None
    target = init(tmp_path_factory.mktemp("target"))[0]
    result = MemTree(target).import_(dumps(doc))
    assert result.redacted == 0 and set(result.restored) == set(doc["files"])
    assert snapshot(target) == snapshot(source)
    assert dumps(MemTree(target).export()) == dumps(doc)


def test_an_import_into_a_root_with_notes_merges_and_replaces_no_file(sample_root: Path, tmp_path: Path) -> None:
    doc = MemTree(sample_root).export()
    assert {"memory/2026-11-27.md", "memory/2026-11-28.md", "tree-index.json"} <= set(doc["files"])
    side = conflicts.Side("bank/project/rules.md", "e-1", "크론은 KST 기준")
    found = conflicts.OpenConflict("c-1", "2026-11-29T14:20:00+09:00", 0.6, side, replace_text(side))
    doc["files"]["conflicts.json"] = conflicts.dumps([found]).decode()
    doc["files"]["recall/hot.md"] = "# hot\n\n- planted\n"
    target = init(tmp_path / "t")[0]
    mine = "# 내 노트\n\n- 사람이 쓴 줄\n"
    (target / "bank/project").mkdir(parents=True)
    (target / "bank/project/rules.md").write_text(mine, encoding="utf-8")
    (target / "memory/2026-11-27.md").write_text("- 09:00 내 로그\n", encoding="utf-8")
    result = MemTree(target).import_(dumps(doc))
    rules = (target / "bank/project/rules.md").read_text(encoding="utf-8")
    assert rules.startswith(mine) and len(rules) > len(mine)  # the person's lines kept, entries appended
    assert (target / "memory/2026-11-27.md").read_text(encoding="utf-8") == "- 09:00 내 로그\n"
    assert (target / "memory/2026-11-28.md").read_bytes() == (sample_root / "memory/2026-11-28.md").read_bytes()
    assert not (target / "recall/hot.md").exists()
    assert result.restored == ("memory/2026-11-28.md",) and result.conflicts_added == 1
    assert [c.id for c in conflicts.load(target)] == ["c-1"]
    before = snapshot(target)
    again = MemTree(target).import_(dumps(doc))
    assert again.written == again.conflicts_added == 0 and not again.restored and snapshot(target) == before


def replace_text(side: conflicts.Side) -> conflicts.Side:
    return conflicts.Side(side.path, "e-2", "크론은 UTC 기준")


def test_a_secret_in_a_restored_file_is_redacted_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    mail = "kim" + "@example.com"
    note = f"---\ntitle: 담당\n---\n\n1. 담당자 {mail}\n"
    doc = {"memtree": "export", "version": 2, "nodes": [], "entries": [], "files": {"bank/a.md": note}}
    root = init(tmp_path / "r")[0]
    before = snapshot(root)
    dry = MemTree(root).import_(dumps(doc), dry_run=True)
    assert dry.restored == ("bank/a.md",) and dry.written == 1 and snapshot(root) == before
    done = MemTree(root).import_(dumps(doc))
    text = (root / "bank/a.md").read_text(encoding="utf-8")
    assert done.redacted == 1 and mail not in text and text.startswith("---\ntitle: 담당\n---\n\n1. 담당자 ")


def test_version_1_documents_still_merge_into_an_empty_root(tmp_path: Path) -> None:
    doc = {"memtree": "export", "version": 1, "nodes": [], "entries": [{"path": "bank/a.md", "text": "사과 배포"}]}
    root = init(tmp_path / "r")[0]
    result = MemTree(root).import_(dumps(doc))
    assert result.written == 1 and not result.restored
    assert (root / "bank/a.md").read_text(encoding="utf-8") == "# a\n\n- 사과 배포\n"


@pytest.mark.parametrize(
    ("path", "text", "needle"),
    [
        (".git/hooks/pre-commit", "#!/bin/sh\n", "Markdown note under"),
        ("memtree.yaml", "split: {}\n", "Markdown note under"),
        (".gitignore", "*\n", "Markdown note under"),
        ("bank/.hidden.md", "x\n", "hidden"),
        ("memory/.git/x.md", "x\n", "hidden"),
        ("memory/../x.md", "x\n", ".."),
        ("memory/_archive/x.md", "x\n", "archive"),
        ("bank/b/_archive/x.md", "x\n", "archive"),
        ("notes/x.md", "x\n", "Markdown note under"),
        ("bank/x.txt", "x\n", "Markdown note under"),
        ("tree-index.json", '{"version": 1, "nodes": [{"id": "x", "parent": "y"}]}', "unknown parent"),
        ("conflicts.json", '{"version": 1, "conflicts": [{"id": "c"}]}', "not a memtree conflicts file"),
    ],
)
def test_a_file_that_is_not_a_tracked_note_is_refused_whole(tmp_path: Path, path: str, text: str, needle: str) -> None:
    doc = {"memtree": "export", "version": 2, "nodes": [], "entries": [], "files": {"bank/ok.md": "- ok\n", path: text}}
    root = init(tmp_path / "r")[0]
    before = snapshot(root)
    with pytest.raises(QueryError) as err:
        MemTree(root).import_(dumps(doc))
    assert needle in str(err.value) and snapshot(root) == before


def test_an_export_too_big_to_import_says_so(sample_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert size_warning(b"{}") is None
    monkeypatch.setattr("memtree.write.exchange.IMPORT_MAX_BYTES", 100)
    result = CliRunner().invoke(app, ["export", "--root", str(sample_root)])
    assert result.exit_code == 0 and json.loads(result.stdout)["version"] == 2
    assert "over the 100 an import takes" in result.stderr and "--bank" in result.stderr


@pytest.mark.parametrize("bank", ["nope", "../..", "..", "_archive", ".memtree", ""])
def test_an_unknown_bank_is_an_error_naming_the_banks(sample_root: Path, bank: str) -> None:
    from helpers import assert_one_line_error

    from memtree.errors import QueryError

    with pytest.raises(QueryError, match="unknown bank"):
        MemTree(sample_root).export(bank)
    result = CliRunner().invoke(app, ["export", "--root", str(sample_root), "--bank", bank])
    assert_one_line_error(result, "unknown bank", "identity, project, technical")
    assert MemTree(sample_root).export("identity/")["bank"] == "identity"
