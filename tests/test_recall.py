"""The recall/ tier: promotion after N recalls, excerpts that name their source, staleness, budget."""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers import snapshot, write_root
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.config import ConsolidateSettings, DecaySettings
from memtree.lifecycle import recall

NOTE = "\n".join(
    [
        "# Infra",
        "",
        "- Redis 연결 풀은 50으로 올려야 안정적이다 <!-- memtree: id=e-redis -->",
        "",
        "Postgres 백업은 매일 새벽 3시에 pg_dump 로 한다.",
        "",
        "- 배포는 금요일에 하지 않는다 <!-- memtree: id=e-deploy -->",
        "",
    ]
)


def _root(tmp_path: Path, yaml: str = "") -> Path:
    files = {"bank/infra/ops.md": NOTE}
    if yaml:
        files["memtree.yaml"] = yaml
    return write_root(tmp_path, files)


def _recall(mt: MemTree, query: str, times: int) -> None:
    for _ in range(times):
        mt.search(query, cache=False)


def test_an_entry_recalled_n_times_is_promoted_and_searched_first_under_its_source(tmp_path: Path) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 2)
    assert mt.recall_sync().promoted == ()  # 2 < 3
    _recall(mt, "Redis 연결 풀", 1)
    sync = mt.recall_sync()
    (ex,) = sync.promoted
    assert (ex.path, ex.lines, ex.key) == ("bank/infra/ops.md", (3, 3), "e-redis")
    hot = (root / recall.HOT_FILE).read_text(encoding="utf-8")
    assert "from=bank/infra/ops.md:3-3" in hot and f"sha={ex.sha}" in hot and "Redis 연결 풀은 50" in hot
    hits = mt.search("Redis 연결 풀").hits
    assert (hits[0].tier, hits[0].path, hits[0].lines, hits[0].via) == (
        "recall",
        "bank/infra/ops.md",
        (3, 3),
        "recall/hot.md:1",
    )
    assert [h for h in hits if h.tier == "bank" and h.lines == (3, 3)] == []  # not shown twice
    assert mt.recall_sync().promoted == ()  # already there: kept, not promoted again


def test_a_hand_written_paragraph_is_promoted_too(tmp_path: Path) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Postgres 백업 pg_dump", 3)
    (ex,) = mt.recall_sync().promoted
    assert ex.path == "bank/infra/ops.md" and ex.lines == (5, 5) and ex.key.startswith("bank/infra/ops.md#")


def test_a_recall_hit_counts_for_its_source(tmp_path: Path) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 3)
    mt.recall_sync()
    before = mt.usage()["e-redis"][0]
    _recall(mt, "Redis 연결 풀", 2)
    assert mt.usage()["e-redis"][0] == before + 2


def test_a_changed_or_vanished_source_drops_its_excerpt(tmp_path: Path) -> None:
    root = _root(tmp_path, "recall:\n  promote_after: 1\n")
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 1)
    _recall(mt, "배포 금요일", 1)
    assert len(mt.recall_sync().promoted) == 2
    note = root / "bank/infra/ops.md"
    # an entry that only moves is followed
    note.write_text("# Infra\n\n- 새 항목\n\n" + NOTE.split("\n", 2)[2], encoding="utf-8")
    moved = mt.recall_sync(dry_run=True)
    assert {ex.lines for ex in moved.kept} == {(5, 5), (9, 9)} and moved.dropped == ()
    note.write_text(NOTE.replace("50으로 올려야", "50으로 꼭 올려야"), encoding="utf-8")
    sync = mt.recall_sync()
    assert [(ex.key, why) for ex, why in sync.dropped] == [("e-redis", "source changed")]
    # a value edited in place: the old words stay, superseded (issue 30), and recall/ no longer serves them
    note.write_text(NOTE.replace("50으로", "100으로"), encoding="utf-8")
    sync = mt.recall_sync()
    assert [why for _, why in sync.dropped] == ["source superseded"]
    note.unlink()
    gone = mt.recall_sync()
    assert {why for _, why in gone.dropped} == {"source gone"}
    assert (root / recall.HOT_FILE).read_text(encoding="utf-8") == ""


def test_the_budget_evicts_the_weakest_and_status_says_so(tmp_path: Path) -> None:
    root = _root(tmp_path, "recall:\n  promote_after: 1\n  budget_tokens: 15\n")
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 4)
    _recall(mt, "배포 금요일", 1)
    sync = mt.recall_sync()
    assert [ex.key for ex in sync.promoted] == ["e-redis"]
    assert [ex.key for ex in sync.evicted] == ["e-deploy"] and sync.tokens <= 15
    st = mt.status()
    assert st.recall is not None and st.recall["evicted"] == ["bank/infra/ops.md:7"]
    assert st.recall["excerpts"] == 1 and st.recall["budget"] == 15


def test_dry_run_and_cli(tmp_path: Path) -> None:
    root = _root(tmp_path, "recall:\n  promote_after: 1\n")
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 1)
    mt.state.usage().flush()
    before = snapshot(root)
    runner = CliRunner()
    dry = runner.invoke(app, ["recall", "sync", "--root", str(root), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert [p["path"] for p in json.loads(dry.stdout)["promoted"]] == ["bank/infra/ops.md"]
    assert snapshot(root) == before
    done = runner.invoke(app, ["recall", "sync", "--root", str(root)])
    assert done.exit_code == 0 and "promoted bank/infra/ops.md:3-3" in done.stdout
    listed = runner.invoke(app, ["recall", "--root", str(root), "--json"])
    data = json.loads(listed.stdout)
    assert len(data["excerpts"]) == 1 and data["excerpts"][0]["lines"] == [3, 3]


def test_the_listing_counts_recalls_as_sync_and_decay_do(tmp_path: Path) -> None:
    # the entry counts the recalls of an id merged into it too: 3 under e-redis, 4 under e-old
    merged = NOTE.replace("id=e-redis", "id=e-redis; merged=e-old")
    root = write_root(tmp_path, {"bank/infra/ops.md": merged})
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 3)
    mt.state.usage().retrieved(["e-old"], time.time())  # a search bumps both ids; e-old once more
    mt.state.usage().flush()
    runner = CliRunner()
    synced = json.loads(runner.invoke(app, ["recall", "sync", "--root", str(root), "--json"]).stdout)
    assert [(p["lines"], p["recall_count"]) for p in synced["promoted"]] == [([3, 3], 4)]
    kept = json.loads(runner.invoke(app, ["recall", "sync", "--root", str(root), "--json"]).stdout)["kept"]
    decayed = json.loads(runner.invoke(app, ["decay", "--all", "--root", str(root), "--json"]).stdout)["entries"]
    listed = json.loads(runner.invoke(app, ["recall", "--root", str(root), "--json"]).stdout)["excerpts"]
    assert [x["recall_count"] for x in listed] == [x["recall_count"] for x in kept] == [4]
    assert [a["recall_count"] for a in decayed if a["id"] == "e-redis"] == [4]
    assert [x["lines"] for x in listed] == [[3, 3]]


def test_an_excerpt_whose_source_changed_counts_under_its_key_and_a_foreign_path_is_not_read(tmp_path: Path) -> None:
    root = _root(tmp_path, "recall:\n  promote_after: 1\n")
    mt = MemTree(root, refresh_interval=0)
    _recall(mt, "Redis 연결 풀", 2)
    mt.recall_sync()
    hot = root / recall.HOT_FILE
    hot.write_text(
        hot.read_text(encoding="utf-8") + "- 밖의 파일 <!-- memtree: from=../outside.md:1-1; sha=abc; key=e-x -->\n",
        encoding="utf-8",
    )
    (root / "bank/infra/ops.md").write_text(NOTE.replace("50으로", "100으로"), encoding="utf-8")
    counts = {"e-redis": 2, "e-x": 7}
    found = recall.read(
        root, time.time(), DecaySettings(), ConsolidateSettings(), lambda keys: max(counts.get(k, 0) for k in keys)
    )
    assert [(ex.path, ex.key, ex.recalls) for ex in found] == [
        ("bank/infra/ops.md", "e-redis", 2),
        ("../outside.md", "e-x", 7),
    ]
