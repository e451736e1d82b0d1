"""index.backend: milvus against a real Milvus Lite (memtree[milvus]): sync, search, failure, rebuild.

Nothing is mocked at the engine boundary: every test writes notes, lets memtree sync them into a
Milvus Lite file under tmp_path, and reads back what Milvus holds or what search returns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from cachetools import LRUCache
from helpers import node, wait_for, write_root

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from memtree import MemTree
from memtree.errors import MemtreeError
from memtree.index.milvus import forms as milvus_forms
from memtree.index.milvus.index import MilvusIndex
from memtree.text.match import Match, match

NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
MILVUS = "index:\n  backend: milvus\n  milvus:\n    timeout_s: 60\nsearch:\n  reinforce: false\n"
NOTES = {
    "bank/identity/values.md": (
        "# 가치관\n\n- 우리의 가치관에서 데이터 손실은 가장 심각한 사고다\n\n- 판단기준은 로컬 우선이다\n"
    ),
    "bank/ops/deploy.md": (
        "# 배포\n\n- 무중단배포는 금요일에 하지 않는다\n\n- Rollback takes five minutes with the blue green switch\n"
    ),
    "memory/2026-11-28.md": "- 09:00 회의에서 분산데이터베이스 이전을 논의했다\n",
}
NODES = [
    node("identity", children=["identity/values"]),
    node("identity/values", "bank/identity/values.md", keywords=["가치관"], parent="identity"),
]


def milvus_root(tmp_path: Path, name: str = "root", notes: dict[str, str] | None = None) -> Path:
    root = write_root(tmp_path / name, notes or NOTES, NODES)
    (root / "memtree.yaml").write_text(MILVUS, encoding="utf-8")
    return root


def rows(root: Path) -> dict[str, dict]:
    """What the collection holds, by row id, read through a client of its own."""
    from pymilvus import MilvusClient

    mt = MemTree(root, refresh_interval=3600)
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex)
    name = engine.name
    del mt, engine
    client = MilvusClient(str(root / ".memtree" / "milvus.db"))
    client.load_collection(name)
    found = client.query(name, filter="", output_fields=["path", "start", "end", "tier", "bank", "terms"], limit=16384)
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(root / ".memtree" / "milvus.db"))
    return {r["id"]: r for r in found}


def spans(found: dict[str, dict]) -> set[tuple[str, int, int]]:
    return {(r["path"], r["start"], r["end"]) for r in found.values()}


def local_spans(root: Path) -> set[tuple[str, int, int]]:
    mt = MemTree(root, refresh_interval=3600)
    mt.refresh()
    return {(w.path, w.start, w.end) for _, w in mt.state.index.chunks()}


def release(mt: MemTree) -> None:
    """Let another MemTree (or process) open the Milvus Lite file this one holds."""
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(mt.root / ".memtree" / "milvus.db"))


def test_forms_reach_what_the_matching_rule_reaches() -> None:
    vocab = [
        "가치관",
        "가치관이",
        "무중단배포",
        "분산데이터베이스",
        "국회의원",
        "집에",
        "회의",
        "deploy",
        "태어난",
        "태어",
    ]
    vocab += ["기르고", "아시아"]
    queries = [
        "가치관",
        "가치",
        "가치관에서",
        "배포",
        "데이터베이스",
        "회의",
        "집",
        "deploy",
        "태어났",
        "기르던",
        "아시안",
    ]
    for q in queries:
        qdims = milvus_forms.query_vector([q], [1.0], 0.7, 0.5)
        for t in vocab:
            tdims = milvus_forms.doc_vector([t], 1.2, 0.75, 1.0)
            reached = bool(set(qdims) & set(tdims))
            assert reached == (match(q, t) is not Match.NONE), (q, t)


def test_sync_search_and_explain_match_the_local_engine(tmp_path: Path) -> None:
    root = milvus_root(tmp_path)
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex) and engine.in_step
    local_root = write_root(tmp_path / "local", NOTES, NODES)
    (local_root / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    local = MemTree(local_root, refresh_interval=3600)
    local.index()
    for query in ("가치관이 뭐야?", "배포", "데이터베이스 회의", "rollback switch"):
        ours = mt.search(query, k=5, cache=False, now=NOW, tier="all")
        theirs = local.search(query, k=5, cache=False, now=NOW, tier="all")
        assert [(h.path, h.lines) for h in ours.hits] == [(h.path, h.lines) for h in theirs.hits], query
        assert [h.score for h in ours.hits] == pytest.approx([h.score for h in theirs.hits], rel=1e-9)
        assert [h.signals for h in ours.hits] == [h.signals for h in theirs.hits]
        assert not ours.warnings
    engine.df_cache = LRUCache(1)  # a cache that keeps one term: every other df is found again, alike
    for query in ("배포", "데이터베이스 회의", "배포"):
        ours = mt.search(query, k=5, cache=False, now=NOW, tier="all")
        theirs = local.search(query, k=5, cache=False, now=NOW, tier="all")
        assert [(h.path, h.lines, h.signals) for h in ours.hits] == [(h.path, h.lines, h.signals) for h in theirs.hits]
    assert len(engine.df_cache) == 1
    release(mt)
    found = rows(root)
    assert spans(found) == local_spans(root)
    values = next(r for r in found.values() if "데이터" in r["terms"])
    assert values["tier"] == "bank" and values["bank"] == "identity"


def test_incremental_sync_sends_only_changed_chunks_and_deletes_gone_ones(tmp_path: Path) -> None:
    root = milvus_root(tmp_path)
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex)
    first = engine.sent
    assert first == len(local_spans(root))
    deploy = root / "bank/ops/deploy.md"
    added = "\n- 배포 전에는 반드시 스테이징에서 검증한다\n"
    deploy.write_text(deploy.read_text(encoding="utf-8") + added, encoding="utf-8")
    mt.refresh()
    assert engine.sent == 1 and engine.deleted == 0  # the new item only: the note's other chunks kept their rows
    hits = mt.search("스테이징 검증", k=1, cache=False, now=NOW).hits
    assert hits and hits[0].path == "bank/ops/deploy.md"
    (root / "memory/2026-11-28.md").unlink()
    mt.refresh()
    assert engine.sent == 0 and engine.deleted == 1
    mt.refresh()
    assert engine.sent == 0 and engine.deleted == 0  # nothing changed: nothing sent
    release(mt)
    assert spans(rows(root)) == local_spans(root)


def test_collection_deleted_or_ledger_lost_is_rebuilt_from_the_notes(tmp_path: Path) -> None:
    root = milvus_root(tmp_path)
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex) and engine.collection is not None
    total = engine.sent
    engine.collection.client.drop_collection(engine.name)
    engine.collection = None  # as a new process finds it
    mt.index(force=True)
    assert engine.sent == total
    for ledger in (root / ".memtree" / "milvus").glob("*.json"):
        ledger.unlink()
    mt.index(force=True)
    assert engine.sent == 0  # every row is still there: compared with the collection, nothing re-sent
    release(mt)
    assert spans(rows(root)) == local_spans(root)


def test_another_analyzer_version_is_rebuilt_never_mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = milvus_root(tmp_path)
    (root / "memtree.yaml").write_text(MILVUS.replace("timeout_s: 60", "timeout_s: 60\n    collection: shared"))
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    release(mt)
    monkeypatch.setattr(milvus_forms, "FORMS_VERSION", milvus_forms.FORMS_VERSION + 1)
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex) and engine.collection is not None
    props = engine.collection.client.describe_collection("shared")["properties"]
    assert props["memtree.analyzer"] == engine.signature and f"-v{milvus_forms.FORMS_VERSION}-" in engine.signature
    assert engine.sent == len(local_spans(root))  # every row sent again into a new collection
    release(mt)
    assert spans(rows(root)) == local_spans(root)


def test_unreachable_milvus_is_one_notice_then_the_local_engine(tmp_path: Path) -> None:
    root = milvus_root(tmp_path)
    (root / "memtree.yaml").write_text(
        "index:\n  backend: milvus\n  milvus:\n    uri: http://127.0.0.1:9\n    timeout_s: 2\n", encoding="utf-8"
    )
    mt = MemTree(root, refresh_interval=0)
    first = mt.search("배포", k=3, cache=False, now=NOW)
    assert first.hits and first.hits[0].path == "bank/ops/deploy.md"
    notices = [w for w in first.warnings if "Milvus" in w]
    assert len(notices) == 1 and "local engine" in notices[0] and "127.0.0.1:9" in notices[0]
    again = mt.search("배포", k=3, cache=False, now=NOW)
    assert [(h.path, h.lines) for h in again.hits] == [(h.path, h.lines) for h in first.hits]
    assert not [w for w in again.warnings if "Milvus" in w]  # said once


def test_required_milvus_unreachable_is_one_error_exit_2(tmp_path: Path) -> None:
    root = milvus_root(tmp_path)
    (root / "memtree.yaml").write_text(
        "index:\n  backend: milvus\n  milvus:\n    uri: http://127.0.0.1:9\n    timeout_s: 2\n    required: true\n",
        encoding="utf-8",
    )
    with pytest.raises(MemtreeError, match="required"):
        MemTree(root).search("배포", now=NOW)
    done = subprocess.run(
        [sys.executable, "-m", "memtree", "search", "배포", "--root", str(root)], capture_output=True, text=True
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:9" in lines[0] and "required" in lines[0]


def test_a_lite_file_held_by_another_process_waits_then_falls_back(tmp_path: Path) -> None:
    root = milvus_root(tmp_path)
    (root / "memtree.yaml").write_text(MILVUS.replace("timeout_s: 60", "timeout_s: 1"), encoding="utf-8")
    holder = MemTree(root, refresh_interval=3600)
    holder.index()  # this process holds .memtree/milvus.db
    code = (
        "import sys, json; from memtree import MemTree\n"
        "r = MemTree(sys.argv[1]).search('배포', k=1)\n"
        "print(json.dumps([list(r.warnings), [h.path for h in r.hits]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    warnings, paths = json.loads(done.stdout)
    assert paths == ["bank/ops/deploy.md"]
    assert len(warnings) == 1 and "Milvus Lite" in warnings[0] and "local engine" in warnings[0]
    release(holder)


SYNC = """
import sys
from memtree import MemTree
mt = MemTree(sys.argv[1], refresh_interval=3600)
mt.index()
assert mt.state.index.in_step, mt.state.index.warnings
"""


def test_concurrent_syncs_end_with_exactly_the_chunks_on_disk(tmp_path: Path) -> None:
    notes = dict(NOTES)
    for i in range(30):
        notes[f"bank/many/n{i}.md"] = "".join(f"- 항목 {i}-{j} 배포 기록 entry {j}\n\n" for j in range(5))
    root = milvus_root(tmp_path, notes=notes)
    first = [subprocess.Popen([sys.executable, "-c", SYNC, str(root)]) for _ in range(3)]
    # while they run, the notes change: the last sync must still leave exactly what is on disk
    (root / "bank/many/n0.md").unlink()
    (root / "bank/many/n1.md").write_text("- 바뀐 내용 하나\n", encoding="utf-8")
    assert [p.wait(timeout=300) for p in first] == [0, 0, 0]
    last = [subprocess.Popen([sys.executable, "-c", SYNC, str(root)]) for _ in range(2)]
    assert [p.wait(timeout=300) for p in last] == [0, 0]
    assert spans(rows(root)) == local_spans(root)


SYNC_STOPPING_AFTER_A_BATCH = """
import sys
from pathlib import Path
from memtree import MemTree
from memtree.index.milvus.store import Ledger
save = Ledger.save
def save_then_stop(self):
    save(self)
    if self.notes:  # a first batch is in the ledger: say so, then wait to be killed mid-sync
        Path(sys.argv[2]).write_text(str(len(self.notes)))
        sys.stdin.read()
Ledger.save = save_then_stop
MemTree(sys.argv[1], refresh_interval=3600).index()
"""
CHILD_BUDGET_S = 300
"""What a sync child may take under load (as the sibling tests' ``wait(timeout=300)``): it starts Python,
pymilvus and a milvus-lite server before its first batch, 6 s idle and 22 s with two busy loops here."""


def test_an_interrupted_sync_resumes(tmp_path: Path) -> None:
    notes = {f"bank/many/n{i}.md": "".join(f"- 기록 {i}-{j} 내용\n\n" for j in range(60)) for i in range(40)}
    root = milvus_root(tmp_path, notes=notes)
    said = tmp_path / "first-batch"
    # Why the child stops itself: killed at a moment the test picks, it may have finished (a fast
    # machine) or not started (a loaded one: a 10 s wait for a first batch failed under load).
    command = [sys.executable, "-c", SYNC_STOPPING_AFTER_A_BATCH, str(root), str(said)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    try:
        wait_for(lambda: said.exists() or child.poll() is not None, "the sync child's first batch", CHILD_BUDGET_S)
        assert said.exists(), f"the sync child ended (exit {child.returncode}) before its first batch"
    finally:
        child.kill()
        child.wait()
    landed = len(json.loads(next((root / ".memtree" / "milvus").glob("*.json")).read_bytes())["notes"])
    assert 0 < landed < 40
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    engine = mt.state.index
    assert isinstance(engine, MilvusIndex) and engine.in_step
    assert 0 < engine.sent <= 60 * (40 - landed)  # the notes already recorded are not sent again
    release(mt)
    assert spans(rows(root)) == local_spans(root)


def test_semantic_layer_fuses_with_milvus_candidates(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    root = milvus_root(tmp_path)
    (root / "memtree.yaml").write_text(MILVUS + 'embed:\n  enabled: "on"\n', encoding="utf-8")
    mt = MemTree(root, refresh_interval=3600)
    mt.index()
    try:
        mt.index(embed=True)
    except MemtreeError as exc:
        pytest.skip(f"the embedding model cannot load here: {exc}")
    result = mt.search("데이터를 잃는 것이 느린 것보다 나쁘다", k=3, cache=False, now=NOW)
    assert "semantic" in result.hits[0].signals
    assert result.hits[0].path == "bank/identity/values.md"
    assert isinstance(mt.state.index, MilvusIndex) and mt.state.index.in_step
