"""memtree.exchange / `memtree export` and `memtree import`: one JSON document, a lossless round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli import app
from memtree.errors import QueryError
from memtree.exchange import IMPORT_MAX_BYTES, dumps
from memtree.root import init

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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    assert result.exit_code == 0 and json.loads(result.stdout)["written"] > 0
    bad = runner.invoke(app, ["import", "-", "--root", str(target)], input="{nope")
    assert bad.exit_code == 2 and bad.stderr.startswith("memtree: error:") and "Traceback" not in bad.output
