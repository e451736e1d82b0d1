"""`memtree decay` (weights, archive candidates, --archive) and `memtree consolidate`."""

from __future__ import annotations

import errno
import itertools
import json
import math
import random
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from helpers import snapshot, write_root, written_now
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.config import CONSOLIDATE_JACCARD
from memtree.errors import MemtreeError
from memtree.lifecycle import aging, consolidate
from memtree.notes import entries
from memtree.write.similarity import distinct_facts, similarity

DAY = 86_400
NOW = 1_780_000_000.0  # a fixed clock for the archive stamp (2026-05-28)


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
    written_now(root / "bank/tools/py.md")  # just rewritten by memtree, as old as the test's clock says
    assert mt.archive() == []  # nothing left to move


def test_an_entry_gone_since_the_survey_is_not_archived_and_nothing_else_moves(tmp_path: Path) -> None:
    root = _root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    from memtree.lifecycle import aging

    found = [a for a in mt.decay() if a.candidate]
    note = root / "bank/tools/py.md"
    lines = note.read_text(encoding="utf-8").split("\n")
    note.write_text("\n".join(ln for ln in lines if "id=e-1" not in ln), encoding="utf-8")
    moved = aging.archive(root, found, time.time())
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
    assert data["bank_entry_count"] == 5 and {e["id"] for e in data["entries"]} == {"e-1", "e-3"}
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


def test_consolidate_merges_near_duplicates_within_a_note(tmp_path: Path) -> None:
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
    assert merge.keep.entry.meta.id == "e-d" and [d.entry.meta.id for d in merge.drop] == ["e-c"]  # the longest
    pool = (root / "bank/infra/pool.md").read_text(encoding="utf-8")
    (kept,) = [ln for ln in pool.splitlines() if "id=e-d" in ln]
    assert set(kept.split("tags=")[1].split(";")[0].split(",")) == {"O", "S"}  # tags united
    assert set(kept.split("merged=")[1].split(" ")[0].split(",")) == {"e-c", "e-old"}
    assert "id=e-c" not in pool
    # the same text in another note of the bank, or in another bank, is that note's own knowledge
    for path in ("bank/infra/redis.md", "bank/other/redis.md"):
        assert (root / path).read_bytes() == before[path]
    state = consolidate.last_run(root)
    assert state is not None and state["merged"] == 1 and state["error"] is None
    assert mt.consolidate().merges == ()  # idempotent


@pytest.mark.parametrize(
    ("rule", "louder"),
    [
        ("배포는 금요일에 하지 않는다.", "배포는 금요일에 하지 않는다!!"),
        ("Never deploy on a Friday.", "Never deploy on a Friday!!"),
    ],
)
def test_a_fact_in_two_notes_stays_in_both_and_merges_within_one(tmp_path: Path, rule: str, louder: str) -> None:
    # Why: issue 12 — the longer copy in meetings.md took the deploy note's rule away
    deploy = f"# 배포\n\n- 스테이징은 매일 배포한다\n- {rule}\n"
    meetings = f"# 회의\n\n- 주간 회의는 월요일 10시\n- {louder}\n- {rule}\n"
    root = write_root(tmp_path, {"bank/work/deploy.md": deploy, "bank/work/meetings.md": meetings})
    dry = MemTree(root, refresh_interval=0).consolidate(dry_run=True)
    report = MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    for r in (dry, report):
        (merge,) = r.merges
        assert {merge.keep.path, *(d.path for d in merge.drop)} == {"bank/work/meetings.md"}
    assert (root / "bank/work/deploy.md").read_text(encoding="utf-8") == deploy
    assert not (root / "bank/_archive/work/deploy.md").exists()
    after = (root / "bank/work/meetings.md").read_text(encoding="utf-8")
    assert f"- {louder}\n" in after and f"- {rule}\n" not in after
    assert f"- {rule}" in (root / "bank/_archive/work/meetings.md").read_text(encoding="utf-8")


def _found_and_brute(texts: list[str]) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """The pairs candidate_pairs finds among ``texts``, and the pairs a comparison of all of them finds."""
    sets = [consolidate.bigrams(t) for t in texts]
    found = {(j, i) for j, i, _ in consolidate.candidate_pairs(sets, CONSOLIDATE_JACCARD)}
    brute = {
        (i, j)
        for i, j in itertools.combinations(range(len(texts)), 2)
        if consolidate.jaccard(sets[i], sets[j]) >= CONSOLIDATE_JACCARD
    }
    return found, brute


def test_prefix_filtering_finds_exactly_the_pairs_brute_force_finds() -> None:
    rng = random.Random(7)
    words = ["redis", "풀", "연결", "배포", "금요일", "테스트", "pytest", "실패", "설정", "값", "50", "10"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) for _ in range(120)]
    texts += [t + "!" for t in texts[:30]] + [t.replace("풀", "풀은") for t in texts[30:60]]
    found, brute = _found_and_brute(texts)
    assert found == brute and len(brute) >= 50  # the planted near-duplicates are there


def test_groups_never_hold_two_facts_even_through_a_chain() -> None:
    from memtree.notes import entries

    texts = ["The API rate limit is 100 requests per minute", "The API rate limit is 100 requests per minute!!"]
    texts += ["The API rate limit is 1000 requests per minute", "The API rate limit is 1000 requests per minute."]
    items = [
        consolidate.Item("bank/x/a.md", entries.Entry(i + 1, i + 1, f"- {t}", entries.EntryMeta(), True))
        for i, t in enumerate(texts)
    ]
    groups = {
        frozenset([g.keep.entry.content, *(d.entry.content for d in g.drop)])
        for g in consolidate._groups(items, CONSOLIDATE_JACCARD)
    }
    assert groups == {frozenset(texts[:2]), frozenset(texts[2:])}


def test_consolidate_is_single_flight(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    with consolidate.single_flight(root), pytest.raises(MemtreeError, match="another `memtree consolidate`"):
        mt.consolidate()
    assert mt.consolidate().merges  # free again


def test_a_failed_run_is_recorded_for_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _dupes(tmp_path)
    mt = MemTree(root, refresh_interval=0)

    def broken(*_: object, **__: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(consolidate, "apply_note", broken)
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
    assert data["dry_run"] and len(data["merges"]) == 1 and len(data["merges"][0]["merged"]) == 1
    done = runner.invoke(app, ["consolidate", "--root", str(root)])
    assert done.exit_code == 0 and "1 entry merged in 1 groups" in done.stdout


# --- never two facts in one: the guard, the labelled look-alikes, the archive, read-only roots ---

REASONS = ("number", "negation", "name", "date", "state", "order", "unit", "region", "environment")
LOOKALIKES = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "lookalike_pairs.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


@pytest.mark.parametrize(
    ("a", "b", "why"),
    [
        ("The API rate limit is 100 requests per minute", "The API rate limit is 1000 requests per minute", "number"),
        ("Redis 연결 풀은 50으로 설정한다", "Redis 연결 풀은 100으로 설정한다", "number"),
        ("Deploys are allowed on Friday afternoons", "Deploys are not allowed on Friday afternoons", "negation"),
        ("The user wants emoji in commits", "The user doesn't want emoji in commits", "negation"),
        ("Merge with a review from the owner", "Merge without a review from the owner", "negation"),
        ("배포는 금요일에 한다", "배포는 금요일에 하지 않는다", "negation"),
        ("주말에는 알림을 보낸다", "주말에는 알림을 안 보낸다", "negation"),
        ("운영 DB에 접근할 수 있다", "운영 DB에 접근할 수 없다", "negation"),
        ("외부 API를 호출한다", "외부 API를 호출하지 못한다", "negation"),
        ("이 설정은 필수다", "이 설정은 필수가 아니다", "negation"),
        ("main에 직접 푸시해도 된다", "main에 직접 푸시하지 마라", "negation"),
        ("회의실 음식 섭취 가능", "회의실 음식 섭취 금지", "negation"),
        ("Alice owns the billing service", "Bob owns the billing service", "name"),
        ("Production logs are shipped to Datadog", "Production logs are shipped to Grafana", "name"),
        ("회의록 작성은 박지훈 님이 맡는다", "회의록 작성은 박지민 님이 맡는다", "name"),
        ("운영 배포 승인은 인프라팀이 한다", "운영 배포 승인은 보안팀이 한다", "name"),
        ("Release freeze starts on 2024-12-16", "Release freeze starts on 2024-12-18", "date"),
        ("The offsite is on March 14", "The offsite is on April 14", "date"),
        ("Rotate the API keys every Monday", "Rotate the API keys every Friday", "date"),
        ("Nightly backups run at 2 am", "Nightly backups run at 2 pm", "date"),
        ("주간 회의는 매주 월요일 오전 10시다", "주간 회의는 매주 화요일 오전 10시다", "date"),
        ("릴리스 동결은 12월 16일부터다", "릴리스 동결은 12월 18일부터다", "date"),
        ("배포 승인은 오늘까지 받아야 한다", "배포 승인은 내일까지 받아야 한다", "date"),
        # issue 27: states, order, units and regions that terms() alone does not see
        ("The checkout feature flag is off in production", "The checkout feature flag is on in production", "state"),
        ("SSO login is enabled for contractors", "SSO login is disabled for contractors", "state"),
        ("The policy allows uploads from partners", "The policy denies uploads from partners", "state"),
        ("결제 기능 플래그는 운영에서 켜짐", "결제 기능 플래그는 운영에서 꺼짐", "state"),
        ("외부 업로드는 허용한다", "외부 업로드는 차단한다", "state"),
        ("Run the migrations before the deploy", "Run the migrations after the deploy", "order"),
        ("마이그레이션은 배포 전에 돌린다", "마이그레이션은 배포 후에 돌린다", "order"),
        ("The search timeout is 500 ms", "The search timeout is 500 s", "unit"),
        ("캐시 만료는 30초다", "캐시 만료는 30분이다", "unit"),
        ("Customer data is stored in the EU", "Customer data is stored in the US", "region"),
        ("고객 데이터는 유럽에 저장한다", "고객 데이터는 미국에 저장한다", "region"),
        ("Use the staging key for load tests", "Use the production key for load tests", "environment"),
        ("부하 테스트는 스테이징에서 한다", "부하 테스트는 운영에서 한다", "environment"),
    ],
)
def test_the_guard_names_the_fact_that_differs(a: str, b: str, why: str) -> None:
    assert distinct_facts(a, b) == why and distinct_facts(b, a) == why
    assert similarity(a, b) < 0.8  # the add path reads the same guard: never merged on retain either


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Deploys are not allowed on Friday afternoons", "Deploys are not allowed on Friday afternoons."),
        ("Never force-push to main", "Never force-push to main!!"),
        ("Use Ruff for linting", "use ruff   for linting"),
        ("Tests don't touch the real database", "Tests do not touch the real database"),
        ("You may deploy on weekdays", "You may deploy on weekdays!"),  # `may` is no month here
        ("배포는 금요일에 하지 않는다", "배포는 금요일에 하지 않는다."),
        ("배포는 금요일에 하지 않는다", "금요일에는 배포하지 않는다"),
        ("사용자는 다크 모드를 선호한다", "사용자가 다크 모드를 선호한다"),
        ("로그는 Datadog으로 보낸다", "로그는 Datadog으로 보냄"),
        ("회의록 작성은 박지훈 님이 맡는다", "회의록 작성을 박지훈 님은 맡는다"),
        ("Redis 풀은 50으로 둔다", "Redis 풀은 50으로 둔다, 확인함"),  # a clause on one side only
        ("The search timeout is 500 ms", "The search timeout is 500 milliseconds"),  # one unit, two spellings
        ("Let us know before the deploy", "Let us know before the deploy to the EU"),  # `us`, no region; an added one
        ("The flag is on in production", "The flag is on in production, off in staging"),  # an added clause
        ("잠금 해제는 관리자만 한다", "잠금 해제는 관리자만 한다."),
    ],
)
def test_the_guard_lets_one_fact_written_twice_through(a: str, b: str) -> None:
    assert distinct_facts(a, b) is None and distinct_facts(b, a) is None


def test_lookalike_pairs_file_is_well_formed_and_balanced() -> None:
    assert len(LOOKALIKES) >= 60
    for p in LOOKALIKES:
        assert set(p) == {"a", "b", "same", "why", "lang"} and isinstance(p["same"], bool), p
        assert p["a"].strip() and p["b"].strip() and p["a"] != p["b"] and p["lang"] in ("en", "ko", "mixed")
        if not p["same"]:
            assert p["why"] in REASONS, p
    distinct = [p for p in LOOKALIKES if not p["same"]]
    assert len(distinct) >= 40 and len(LOOKALIKES) - len(distinct) >= 20
    assert {p["lang"] for p in distinct} >= {"en", "ko"} and {p["lang"] for p in LOOKALIKES if p["same"]} >= {
        "en",
        "ko",
    }
    assert Counter(p["why"] for p in distinct).keys() == set(REASONS)
    for why in ("state", "order", "unit", "region", "environment"):  # issue 27: each kind in both languages
        assert {p["lang"] for p in distinct if p["why"] == why} >= {"en", "ko"}, why


def test_the_guard_separates_every_labelled_lookalike_pair() -> None:
    wrong = [p for p in LOOKALIKES if (distinct_facts(p["a"], p["b"]) is None) != p["same"]]
    assert wrong == []


def _lookalike_root(tmp_path: Path) -> Path:
    files = {f"bank/pair-{i:03d}/note.md": f"# Pair {i}\n\n- {p['a']}\n- {p['b']}\n" for i, p in enumerate(LOOKALIKES)}
    return write_root(tmp_path, files)


def test_consolidate_merges_no_labelled_distinct_pair_and_loses_no_text(tmp_path: Path) -> None:
    root = _lookalike_root(tmp_path)
    report = MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    merged = {m.keep.path for m in report.merges}
    distinct = {f"bank/pair-{i:03d}/note.md" for i, p in enumerate(LOOKALIKES) if not p["same"]}
    assert merged and not merged & distinct
    for i, p in enumerate(LOOKALIKES):
        path = f"bank/pair-{i:03d}/note.md"
        note = (root / path).read_text(encoding="utf-8")
        archive = root / aging.archive_path(path)
        kept = archive.read_text(encoding="utf-8") if archive.exists() else ""
        for text in (p["a"], p["b"]):
            assert f"- {text.rstrip()}" in note or f"- {text.rstrip()}" in kept, text


def test_a_merged_away_text_is_kept_in_bank_archive(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    pool = (root / "bank/_archive/infra/pool.md").read_text(encoding="utf-8")
    assert pool.startswith("# Archived from bank/infra/pool.md\n")
    assert "- Redis 연결 풀은 50으로 올려야 안정적이다. <!-- memtree: id=e-c; tags=S; merged=e-old -->" in pool
    stamp = time.strftime("%Y-%m-%d", time.localtime(NOW))
    assert f"archived={stamp}; from=bank/infra/pool.md:3-3; why=merged into e-d bank/infra/pool.md:4" in pool
    assert "id=e-d" not in pool  # only the merged-away entry moves
    assert not (root / "bank/_archive/infra/redis.md").exists()  # nothing of the other note moved
    hits = MemTree(root, refresh_interval=0).search("Redis 연결 풀 안정적").hits
    assert hits and not [h for h in hits if "_archive" in h.path]  # search never reads bank/_archive/


def test_dry_run_writes_nothing_and_shows_both_texts(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    before = snapshot(root)
    runner = CliRunner()
    human = runner.invoke(app, ["consolidate", "--root", str(root), "--dry-run"])
    assert human.exit_code == 0, human.output
    assert "keep: Redis 연결 풀은 50으로 올려야 안정적이다 확실히" in human.stdout
    assert "drop: Redis 연결 풀은 50으로 올려야 안정적이다.  (→ bank/_archive/infra/pool.md)" in human.stdout
    assert "bank/infra/redis.md" not in human.stdout
    data = json.loads(runner.invoke(app, ["consolidate", "--root", str(root), "--dry-run", "--json"]).stdout)
    (merge,) = data["merges"]
    assert merge["into"]["text"] == "Redis 연결 풀은 50으로 올려야 안정적이다 확실히"
    assert {(d["text"], d["archive"]) for d in merge["merged"]} == {
        ("Redis 연결 풀은 50으로 올려야 안정적이다.", "bank/_archive/infra/pool.md"),
    }
    assert snapshot(root) == before and not (root / "bank/_archive").exists()
    assert not (root / ".memtree/consolidate.json").exists()


def _read_only_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    # Why a stand-in: the tests run as root here, which chmod cannot stop; this is the error a
    # read-only root gives when consolidate creates .memtree/consolidate.lock.
    def refuse(path: Path) -> int:
        raise PermissionError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(consolidate, "_open_lock", refuse)


def test_dry_run_works_on_a_read_only_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _dupes(tmp_path)
    _read_only_lock(monkeypatch)
    before = snapshot(root)
    report = MemTree(root, refresh_interval=0).consolidate(dry_run=True)
    assert len(report.merges) == 1 and snapshot(root) == before


def test_a_real_run_on_a_read_only_root_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _dupes(tmp_path)
    _read_only_lock(monkeypatch)
    before = snapshot(root)
    with pytest.raises(consolidate.ReadOnlyRoot, match="read-only"):
        MemTree(root, refresh_interval=0).consolidate()
    result = CliRunner().invoke(app, ["consolidate", "--root", str(root)])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("memtree: ") and "read-only" in line and "--dry-run" in line
    assert snapshot(root) == before


def test_notes_that_cannot_be_written_stop_with_read_only_and_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dupes(tmp_path)
    before = snapshot(root)

    def refuse(*_: object, **__: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(consolidate.store.tempfile, "mkstemp", refuse)  # every tracked write makes a temp file
    with pytest.raises(consolidate.ReadOnlyRoot, match="read-only"):
        consolidate.apply(
            root, consolidate.plan(root, ["bank/infra/pool.md", "bank/infra/redis.md"], CONSOLIDATE_JACCARD), now=NOW
        )
    assert snapshot(root) == before


# --- issue 27 item 11: consolidate compares near-linearly and lets writes to other notes proceed ---


def test_a_big_note_is_parsed_a_few_times_not_once_per_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [f"- Fact {i} of the payments runbook, step {i} of many" for i in range(400)]
    lines += [line + "." for line in lines[:300]]  # 300 restatements to merge
    root = write_root(tmp_path, {"bank/big/note.md": "# Big\n\n" + "\n".join(lines) + "\n"})
    parse = entries.parse_entries
    parsed: list[int] = []

    def counted(note: str) -> list[entries.Entry]:
        if "payments runbook" in note:
            parsed.append(len(note))
        return parse(note)

    monkeypatch.setattr(entries, "parse_entries", counted)
    report = MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    assert sum(len(m.drop) for m in report.merges) == 300
    assert len(parsed) <= 10  # it was parsed again for every entry merged: 600 times, quadratic in the note


def test_an_add_to_another_note_proceeds_while_consolidate_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    root = _dupes(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    other = MemTree(root, refresh_interval=0)
    added = threading.Event()
    outcome: list[object] = []

    def add() -> None:
        outcome.append(other.add("Deploy windows are on Tuesdays", to="work/other", now=datetime.fromtimestamp(NOW)))
        added.set()

    planning = consolidate.bigrams
    waited: list[bool] = []

    def bigrams_then_wait(text: str, normalized: str | None = None) -> frozenset[str]:
        if not waited:  # the first entry planned: an add to another note must get through now
            threading.Thread(target=add, daemon=True).start()
            waited.append(added.wait(timeout=30))
        return planning(text) if normalized is None else planning(text, normalized)

    monkeypatch.setattr(consolidate, "bigrams", bigrams_then_wait)
    report = mt.consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    assert added.wait(timeout=30)
    assert waited == [True], "the add waited for consolidate's plan"
    assert report.merges and outcome and "Deploy windows" in (root / "bank/work/other.md").read_text(encoding="utf-8")


def test_a_note_changed_between_plan_and_apply_is_planned_again(tmp_path: Path) -> None:
    root = _dupes(tmp_path)
    path = "bank/infra/pool.md"
    text = (root / path).read_text(encoding="utf-8")
    planned = consolidate.plan_note(path, text, CONSOLIDATE_JACCARD)
    assert planned
    with (root / path).open("a", encoding="utf-8") as f:  # a person appends while the plan was made
        f.write("- Redis 연결 풀은 50으로 올려야 안정적이다!\n- 손으로 적은 새 줄\n")
    done = consolidate.apply_note(root, path, text, planned, CONSOLIDATE_JACCARD, NOW)
    after = (root / path).read_text(encoding="utf-8")
    assert "- 손으로 적은 새 줄" in after and "안정적이다!\n" not in after  # kept, and the new copy merged too
    assert sum(len(m.drop) for m in done) == sum(len(m.drop) for m in planned) + 1


def test_consolidate_merges_the_golden_note_exactly_as_before_the_speed_up(tmp_path: Path) -> None:
    """tests/data/consolidate_golden.json was made by the code before the near-linear candidate search
    (tests/data/make_consolidate_golden.py): the same merges, the same note and archive after."""
    import hashlib
    import re

    data = Path(__file__).parent / "data"
    golden = json.loads((data / "consolidate_golden.json").read_text(encoding="utf-8"))
    root = write_root(tmp_path, {"bank/golden/note.md": (data / "consolidate_golden.md").read_text(encoding="utf-8")})
    report = MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    merges = [[m.keep.entry.start, [d.entry.start for d in m.drop], m.similarity] for m in report.merges]
    assert merges == golden["merges"]
    after = (root / "bank/golden/note.md").read_bytes()
    archive = (root / "bank/_archive/golden/note.md").read_bytes()
    archive = re.sub(rb"archived=\d{4}-\d{2}-\d{2}", b"archived=DATE", archive)
    assert hashlib.sha256(after).hexdigest() == golden["note_sha256"]
    assert hashlib.sha256(archive).hexdigest() == golden["archive_sha256"]


def _sentences(n: int, seed: int, vocabulary: int = 400) -> list[str]:
    """N sentences of 4-12 words from a small made-up vocabulary, one in ten a near copy of an earlier one."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 7))) for _ in range(vocabulary)]
    out: list[str] = []
    for i in range(n):
        if i > 5 and rng.random() < 0.1:
            base = rng.choice(out[-10:])
            cut = rng.randrange(len(base))
            out.append(base[:cut] + rng.choice("qrstuvwxyz") + base[cut + 1 :])  # one letter changed
        else:
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))))
    return out


def test_the_bit_mask_bound_never_refuses_a_pair_brute_force_finds() -> None:
    texts = _sentences(500, 3, vocabulary=3000)
    found, brute = _found_and_brute(texts)
    assert found == brute and len(brute) >= 20
    sets = [consolidate.bigrams(t) for t in texts]
    # and the bound itself, on every pair: the bits of A|B never exceed |A∪B|
    width = consolidate.mask_width([len(s) for s in sets])
    masks = [consolidate.bit_mask(s, width) for s in sets]
    assert all(
        (masks[i] | masks[j]).bit_count() <= len(sets[i] | sets[j]) for i, j in itertools.combinations(range(200), 2)
    )


@pytest.mark.parametrize("kind", ["sentences", "numbers"])
def test_candidate_search_work_per_entry_stays_bounded_as_the_note_grows(kind: str) -> None:
    """No timing: the candidates looked at and the sets compared, counted. Each entry looks at most at
    POSTING_SCAN entries per bigram of its prefix, and compares almost none of them set to set:
    comparing all pairs, or posting lists without their cap, breaks both at 8,000 entries."""
    for n in (1_000, 8_000):
        if kind == "numbers":
            rng = random.Random(n)
            texts = [str(rng.randint(0, 10 ** rng.randint(1, 8))) for _ in range(n)]
        else:
            texts = _sentences(n, n)
        words = [entries.normalize(t) for t in texts]
        sets = [consolidate.bigrams(t, w) for t, w in zip(texts, words, strict=True)]
        counts: Counter[str] = Counter()
        pairs = consolidate.candidate_pairs(sets, CONSOLIDATE_JACCARD, words, counts)
        prefixes = sum(len(s) - math.ceil(CONSOLIDATE_JACCARD * len(s)) + 1 for s in sets)
        assert 0 < counts["candidates"] <= consolidate.POSTING_SCAN * prefixes
        assert counts["compared"] <= 2 * len(pairs) + n // 50  # the masks refuse all but the near misses


def test_copying_to_the_archive_does_not_search_the_whole_archive_per_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree.notes import store

    class Counted(str):
        searches = 0

        def __contains__(self, part: object) -> bool:
            Counted.searches += 1
            return super().__contains__(part)  # type: ignore[operator]

    root = write_root(tmp_path, {})
    stamp, path = "2026-05-28", "bank/x/note.md"
    lines = [f"- entry {k}" for k in range(400)]

    def block(k: int) -> str:
        e = entries.Entry(k + 1, k + 1, lines[k], entries.EntryMeta(), True)
        return aging.archive_block(stamp, path, e, f"merged into {k}", lines)

    aging.copy_to_archive(root, path, [block(k) for k in range(300)])
    rewrite = store.rewrite
    monkeypatch.setattr(store, "rewrite", lambda r, rel, fn: rewrite(r, rel, lambda old: fn(Counted(old))))
    aging.copy_to_archive(root, path, [block(k) for k in range(200, 400)])  # 100 there already, 100 new
    assert Counted.searches == 0
    text = (root / "bank/_archive/x/note.md").read_text(encoding="utf-8")
    assert all(text.count(f"- entry {k}\n") == 1 for k in range(400))


def test_consolidate_surveys_the_entries_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtree.lifecycle import verbs

    root = _dupes(tmp_path)
    survey = verbs._survey
    calls: list[float] = []

    def counted(state: object, moment: float) -> list[aging.Aged]:
        calls.append(moment)
        return survey(state, moment)  # type: ignore[arg-type]

    monkeypatch.setattr(verbs, "_survey", counted)
    report = MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
    assert report.merges and len(calls) == 1
