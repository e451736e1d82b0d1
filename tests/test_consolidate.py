"""`memtree decay` (weights, archive candidates, --archive) and `memtree consolidate`."""

from __future__ import annotations

import itertools
import json
import random
import time
from pathlib import Path

import pytest
from helpers import snapshot, write_root
from typer.testing import CliRunner

from memtree import MemTree, consolidate
from memtree.cli import app
from memtree.errors import MemtreeError

DAY = 86_400


def _iso(days_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - days_ago * DAY))


def _entry(text: str, eid: str, days_ago: float, **extra: str) -> str:
    fields = "; ".join([f"id={eid}", f"created={_iso(days_ago)}", *(f"{k}={v}" for k, v in extra.items())])
    return f"- {text} <!-- memtree: {fields} -->"


def _root(tmp_path: Path) -> Path:
    note = "\n".join(
        [
            "# Tools",
            "",
            _entry("pytest -x 는 첫 실패에서 멈춘다", "e-1", 200),
            _entry("새로 배운 rg --files 사용법", "e-2", 1),
            _entry("distill 이 뽑은 오래된 팁", "e-3", 100, source="auto"),
            _entry("distill 이 뽑은 새 팁", "e-4", 10, source="auto"),
            "- 손으로 쓴 메모",
            "",
        ]
    )
    return write_root(tmp_path, {"bank/tools/py.md": note, "memory/2026-11-28.md": "- 로그\n"})


def test_decay_lists_each_entry_with_its_weight_and_why_it_is_a_candidate(tmp_path: Path) -> None:
    mt = MemTree(_root(tmp_path), refresh_interval=0)
    aged = {a.preview: a for a in mt.decay()}
    assert set(aged) == {
        "pytest -x 는 첫 실패에서 멈춘다",
        "새로 배운 rg --files 사용법",
        "distill 이 뽑은 오래된 팁",
        "distill 이 뽑은 새 팁",
        "손으로 쓴 메모",
    }
    old = aged["pytest -x 는 첫 실패에서 멈춘다"]
    assert old.weight == pytest.approx(2 ** (-200 / 30), rel=1e-3) and old.candidate and "weight" in old.why
    assert aged["새로 배운 rg --files 사용법"].weight == 1.0 and not aged["새로 배운 rg --files 사용법"].candidate
    stale = aged["distill 이 뽑은 오래된 팁"]
    assert stale.weight > 0.02 and stale.candidate and "auto entry" in stale.why  # consolidation's rule
    assert not aged["distill 이 뽑은 새 팁"].candidate
    assert aged["손으로 쓴 메모"].dated == "modified"


def test_recalls_save_a_stale_auto_entry(tmp_path: Path) -> None:
    mt = MemTree(_root(tmp_path), refresh_interval=0)
    for _ in range(3):
        mt.search("오래된 팁", cache=False)
    stale = next(a for a in mt.decay() if a.id == "e-3")
    assert stale.recalls >= 3 and not stale.candidate


def test_archive_moves_candidates_to_bank_archive_and_search_stops_finding_them(tmp_path: Path) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    assert mt.search("pytest 실패").hits
    before = snapshot(root)
    assert {a.id for a in mt.archive(dry_run=True)} == {"e-1", "e-3"}
    assert snapshot(root) == before
    moved = mt.archive()
    assert {a.id for a in moved} == {"e-1", "e-3"}
    note = (root / "bank/tools/py.md").read_text(encoding="utf-8")
    kept = (root / "bank/_archive/tools/py.md").read_text(encoding="utf-8")
    assert "e-1" not in note and "e-3" not in note and "e-2" in note and "손으로 쓴 메모" in note
    assert "pytest -x 는 첫 실패에서 멈춘다" in kept and "id=e-3" in kept and "archived=" in kept
    assert "\n\n\n" not in note
    assert not mt.search("pytest 실패").hits
    assert mt.archive() == []  # nothing left to move


def test_an_entry_gone_since_the_survey_is_not_archived_and_nothing_else_moves(tmp_path: Path) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    from memtree import aging

    found = [a for a in mt.decay() if a.candidate]
    note = root / "bank/tools/py.md"
    lines = note.read_text(encoding="utf-8").split("\n")
    note.write_text("\n".join(ln for ln in lines if "id=e-1" not in ln), encoding="utf-8")
    moved = aging.archive(root, found)
    assert {a.id for a in moved} == {"e-3"}
    left = note.read_text(encoding="utf-8")
    assert all(f"id=e-{i}" in left for i in (2, 4)) and "손으로 쓴 메모" in left
    assert "e-1" not in (root / "bank/_archive/tools/py.md").read_text(encoding="utf-8")


def test_decay_cli_json_and_human(tmp_path: Path) -> None:
    root = _root(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["decay", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total"] == 5 and {e["id"] for e in data["entries"]} == {"e-1", "e-3"}
    assert all(e["candidate"] for e in data["entries"])
    every = runner.invoke(app, ["decay", "--root", str(root), "--all"])
    assert every.exit_code == 0 and "5 bank entries" in every.stdout and "2 archive candidates" in every.stdout
    moved = runner.invoke(app, ["decay", "--root", str(root), "--archive"])
    assert moved.exit_code == 0 and "2 entries moved to bank/_archive/" in moved.stdout


def _dupes(tmp_path: Path) -> Path:
    a = "\n".join(
        [
            "# Redis",
            "",
            "- Redis 연결 풀은 50으로 올려야 안정적이다 <!-- memtree: id=e-a; tags=B -->",
            "- 전혀 다른 이야기: 배포는 금요일에 하지 않는다 <!-- memtree: id=e-b -->",
            "",
        ]
    )
    b = "\n".join(
        [
            "# Redis pool",
            "",
            "- Redis 연결 풀은 50으로 올려야 안정적이다. <!-- memtree: id=e-c; tags=S; merged=e-old -->",
            "- Redis 연결 풀은 50으로 올려야 안정적이다 확실히 <!-- memtree: id=e-d; tags=O -->",
            "",
        ]
    )
    return write_root(
        tmp_path,
        {
            "bank/infra/redis.md": a,
            "bank/infra/pool.md": b,
            "bank/other/redis.md": "- Redis 연결 풀은 50으로 올려야 안정적이다\n",
        },
    )


def test_consolidate_merges_near_duplicates_within_a_bank(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    before = snapshot(root)
    dry = mt.consolidate(dry_run=True)
    assert snapshot(root) == before  # --dry-run writes nothing
    assert not (root / ".memtree/consolidate.json").exists()
    report = mt.consolidate()
    assert [(m.keep.entry.meta.id, sorted(d.entry.meta.id for d in m.drop)) for m in report.merges] == [
        (m.keep.entry.meta.id, sorted(d.entry.meta.id for d in m.drop)) for m in dry.merges
    ]
    (merge,) = report.merges
    assert merge.keep.entry.meta.id == "e-d"  # the longest content is kept
    pool = (root / "bank/infra/pool.md").read_text(encoding="utf-8")
    redis = (root / "bank/infra/redis.md").read_text(encoding="utf-8")
    assert "id=e-a" not in redis and "배포는 금요일" in redis
    (kept,) = [ln for ln in pool.splitlines() if "id=e-d" in ln]
    assert set(kept.split("tags=")[1].split(";")[0].split(",")) == {"O", "B", "S"}  # tags united
    assert set(kept.split("merged=")[1].split(" ")[0].split(",")) == {"e-a", "e-c", "e-old"}
    assert "id=e-c" not in pool
    # another bank's copy is its own knowledge
    assert "Redis 연결 풀" in (root / "bank/other/redis.md").read_text(encoding="utf-8")
    state = consolidate.last_run(root)
    assert state is not None and state["merged"] == 2 and state["error"] is None
    assert mt.consolidate().merges == ()  # idempotent


def test_prefix_filtering_finds_exactly_the_pairs_brute_force_finds() -> None:
    rng = random.Random(7)
    words = ["redis", "풀", "연결", "배포", "금요일", "테스트", "pytest", "실패", "설정", "값", "50", "10"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) for _ in range(120)]
    texts += [t + "!" for t in texts[:30]] + [t.replace("풀", "풀은") for t in texts[30:60]]
    from memtree import entries

    items = [
        consolidate.Item("bank/x.md", entries.Entry(i + 1, i + 1, f"- {t}", entries.EntryMeta(), True))
        for i, t in enumerate(texts)
    ]
    groups = consolidate._groups(items)
    found = {frozenset([g.keep.entry.start, *(d.entry.start for d in g.drop)]) for g in groups}
    sets = [consolidate.bigrams(t) for t in texts]
    parent = list(range(len(texts)))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, j in itertools.combinations(range(len(texts)), 2):
        if consolidate.jaccard(sets[i], sets[j]) >= consolidate.JACCARD_MIN:
            parent[find(j)] = find(i)
    brute: dict[int, set[int]] = {}
    for i in range(len(texts)):
        brute.setdefault(find(i), set()).add(i + 1)
    assert found == {frozenset(g) for g in brute.values() if len(g) > 1}
    assert found  # the planted near-duplicates are there


def test_consolidate_is_single_flight(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    with consolidate.single_flight(root), pytest.raises(MemtreeError, match="another `memtree consolidate`"):
        mt.consolidate()
    assert mt.consolidate().merges  # free again


def test_a_failed_run_is_recorded_for_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _dupes(tmp_path)
    mt = MemTree(root, refresh_interval=0)

    def broken(*_: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(consolidate, "apply", broken)
    with pytest.raises(OSError):
        mt.consolidate()
    state = consolidate.last_run(root)
    assert state is not None and "disk full" in state["error"] and "disk full" in state["last_error"]
    status = mt.status()
    assert status.consolidation is not None and "disk full" in status.consolidation["error"]


def test_consolidate_cli(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    runner = CliRunner()
    dry = runner.invoke(app, ["consolidate", "--root", str(root), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    data = json.loads(dry.stdout)
    assert data["dry_run"] and len(data["merges"]) == 1 and len(data["merges"][0]["merged"]) == 2
    done = runner.invoke(app, ["consolidate", "--root", str(root)])
    assert done.exit_code == 0 and "2 entries merged in 1 groups" in done.stdout
