"""memtree.write.retain (via MemTree.add): sanitize → route → dedup/conflict → write, and its refusals."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import snapshot

from memtree import MemTree
from memtree.errors import QueryError
from memtree.notes import tree as treemod
from memtree.notes.entries import parse_entries
from memtree.write.retain import Conflict, Created, Duplicate, Merged, verdict, with_nodes
from memtree.write.similarity import similarity

KST = timezone(timedelta(hours=9))
NOW = datetime(2026, 11, 29, 14, 20, tzinfo=KST)


@pytest.fixture
def mt(sample_root: Path) -> MemTree:
    return MemTree(sample_root, refresh_interval=0)


def test_a_tagged_entry_is_appended_to_its_node_with_invisible_metadata(mt: MemTree) -> None:
    note = mt.root / "bank/technical/cron-design.md"
    before = note.read_text(encoding="utf-8")
    decision = mt.add("consolidate 작업은 매주 일요일 04:30 KST에 돈다", tag="B", tags=("cron",), now=NOW)
    assert isinstance(decision, Created)
    assert decision.node == "technical/cron-design" and decision.how == "tag"
    after = note.read_text(encoding="utf-8")
    assert after.startswith(before.rstrip("\n"))  # appended, nothing above it touched
    added = after[len(before.rstrip("\n")) :].strip().splitlines()
    assert len(added) == 1 and added[0].startswith("- consolidate 작업은")
    assert f"id={decision.entry_id}" in added[0] and "<!-- memtree:" in added[0] and "tags=cron" in added[0]
    hits = mt.search("consolidate 일요일").hits
    assert hits and hits[0].path == "bank/technical/cron-design.md"
    assert "memtree" not in {t for h in hits for t in h.matched}  # the comment is not indexed


def test_the_same_text_again_is_a_duplicate_and_writes_nothing(mt: MemTree) -> None:
    mt.add("Redis MAX_POOL_SIZE는 50으로 운영한다", to="project/decisions", now=NOW)
    before = snapshot(mt.root)
    again = mt.add("redis  max_pool_size는 50으로 운영한다.", to="project/decisions", now=NOW)
    assert isinstance(again, Duplicate) and again.similarity == 1.0
    assert snapshot(mt.root) == before


def test_a_hand_written_entry_counts_for_dedup(mt: MemTree) -> None:
    note = mt.root / "bank/project/rules.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n- 금요일 오후에는 배포하지 않는다\n", encoding="utf-8")
    decision = mt.add("금요일 오후에는 배포하지 않는다", to="project/rules", now=NOW)
    assert isinstance(decision, Duplicate) and decision.existing.startswith("lines ")


def test_untagged_text_is_routed_by_the_tree_or_goes_to_the_inbox(mt: MemTree) -> None:
    routed = mt.add("크론 스케줄은 crontab에 KST 기준으로 적는다", now=NOW)
    assert routed.how == "tree" and routed.node == "technical/cron-design"
    lost = mt.add("점심 메뉴는 김치찌개가 제일 무난하다", now=NOW)
    assert lost.how == "inbox" and lost.path == "bank/inbox/inbox.md" and lost.new_nodes == ("inbox",)
    tree = treemod.load(mt.root)
    assert tree.by_id["inbox"].path == "bank/inbox/inbox.md"
    assert "김치찌개" in (mt.root / "bank/inbox/inbox.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "node"),
    [
        ("nightly distill은 매일 00:40 KST에 돈다", "technical/cron-design"),
        ("커밋 메시지는 72자 이내로 쓰고 마침표를 붙이지 않는다", "project/rules"),
        ("The server runs in UTC, so crontab entries use CRON_TZ=Asia/Seoul", "technical/cron-design"),
        ("Every PR must pass ruff check and ruff format --check", "project/rules"),
        ("Weekly consolidate runs on Sunday at 04:00", "technical/cron-design"),  # no node keyword at all
    ],
)
def test_text_sharing_words_with_a_note_goes_to_it_not_to_the_inbox(mt: MemTree, text: str, node: str) -> None:
    # Why: each holds at most one node keyword (tree score 0–0.18, under the old 0.25), but its
    # words are the note's own; bench/routing.py measures the rule on 114 labelled entries
    decision = mt.add(text, dry_run=True, now=NOW)
    assert (decision.how, decision.node) == ("tree", node)


@pytest.mark.parametrize("text", ["회의록은 매주 금요일에 정리한다", "Lunch on Thursdays is usually team ramen"])
def test_text_no_note_fits_still_goes_to_the_inbox(mt: MemTree, text: str) -> None:
    decision = mt.add(text, dry_run=True, now=NOW)
    assert (decision.how, decision.path) == ("inbox", "bank/inbox/inbox.md")


def test_the_route_threshold_is_a_setting(mt: MemTree) -> None:
    (mt.root / "memtree.yaml").write_text("retain:\n  route_threshold: 0.9\n", encoding="utf-8")
    strict = MemTree(mt.root, refresh_interval=0)
    assert strict.settings.retain.route_threshold == 0.9
    assert strict.add("nightly distill은 매일 00:40 KST에 돈다", dry_run=True, now=NOW).how == "inbox"


def test_a_root_made_before_keeps_its_inbox_note(mt: MemTree) -> None:
    old = mt.root / "bank/inbox.md"
    old.write_text("# inbox\n\n- 예전 메모\n", encoding="utf-8")
    treemod.update(mt.root, lambda t: with_nodes(t, (treemod.Node("inbox", "bank/inbox.md", ("inbox",), None),)))
    decision = mt.add("Lunch on Thursdays is usually team ramen", now=NOW)
    assert decision.path == "bank/inbox.md" and decision.new_nodes == ()
    assert "예전 메모" in old.read_text(encoding="utf-8") and not (mt.root / "bank/inbox/inbox.md").exists()


@pytest.mark.parametrize("ref", ["work/meetings", "bank/work/meetings.md", "work/meetings/"])
def test_to_a_node_id_or_a_path_that_does_not_exist_yet_creates_both(mt: MemTree, ref: str) -> None:
    decision = mt.add("주간 회의는 월요일 10시에 한다 (weekly sync)", to=ref, now=NOW)
    assert isinstance(decision, Created)
    assert (decision.node, decision.path, decision.how) == ("work/meetings", "bank/work/meetings.md", "to")
    assert decision.new_nodes == ("work", "work/meetings")
    tree = treemod.load(mt.root)
    assert tree.by_id["work/meetings"].path == "bank/work/meetings.md" and tree.by_id["work"].path is None
    again = mt.add(
        "Weekly sync moved to Tuesday", to="work/meetings" if ref != "work/meetings" else "bank/work/meetings.md"
    )
    assert again.node == "work/meetings" and again.new_nodes == ()


def test_a_tag_whose_note_does_not_exist_says_it_created_it(make_root: Callable[..., Path]) -> None:
    root = make_root({})
    decision = MemTree(root, refresh_interval=0).add("신뢰는 근거에서 나온다", tag="W", now=NOW)
    assert (decision.how, decision.path) == ("tag", "bank/identity/values.md")
    assert decision.new_nodes == ("identity", "identity/values")
    assert MemTree(root).add("Trust comes from evidence", tag="W", now=NOW).new_nodes == ()


def test_an_unknown_tag_is_an_error_listing_the_known_ones(mt: MemTree) -> None:
    before = snapshot(mt.root)
    with pytest.raises(QueryError) as err:
        mt.add("무엇이든", tag="Z", now=NOW)
    message = str(err.value)
    assert "'Z'" in message and all(f"{t} →" in message for t in "WBOS")
    assert snapshot(mt.root) == before


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"text": "   "}, "empty"),
        ({"text": "x" * 50_001}, "50,000"),
        ({"text": "y" * 10_001, "source": "auto"}, "10,000"),
        ({"text": "태그 많음", "tags": tuple(f"t{i}" for i in range(11))}, "at most 10"),
        ({"text": "어디로", "to": "bank/nowhere"}, "no such node"),
        ({"text": "어디로", "to": "memory/2026-11-28.md"}, "no such node"),
        ({"text": "어디로", "to": "technical"}, "category"),
        ({"text": "어디로", "to": "bank/technical.md"}, "category"),
        ({"text": "where", "to": "../etc/passwd"}, ".."),
        ({"text": "어디로", "to": "bank/../../etc/passwd.md"}, ".."),
        ({"text": "종류", "kind": "rumor"}, "--kind"),
        ({"text": "출처", "source": "gossip"}, "--source"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(mt: MemTree, kwargs: dict, needle: str) -> None:
    before = snapshot(mt.root)
    text = kwargs.pop("text")
    with pytest.raises(QueryError) as err:
        mt.add(text, now=NOW, **kwargs)
    assert needle in str(err.value)
    assert snapshot(mt.root) == before


def test_secrets_never_reach_disk(mt: MemTree) -> None:
    secret_key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    mail = "kim.minsu@example.co.kr"
    decision = mt.add(f"배포 봇 키는 {secret_key} 이고 담당자는 {mail}", to="project/rules", now=NOW)
    assert set(decision.redacted) >= {"email"} and decision.redacted
    written = "".join(p.read_text(encoding="utf-8") for p in (mt.root / "bank").rglob("*.md"))
    assert secret_key not in written and mail not in written
    assert "[REDACTED:" in written


def test_a_dry_run_decides_but_writes_nothing(mt: MemTree) -> None:
    before = snapshot(mt.root)
    decision = mt.add("새 규칙: PR마다 CHANGELOG를 고친다", to="project/rules", dry_run=True, now=NOW)
    assert isinstance(decision, Created) and decision.dry_run
    assert snapshot(mt.root) == before


def test_a_restatement_merges_into_one_entry(mt: MemTree) -> None:
    first = mt.add("search cache TTL is 30 minutes for every MemTree instance", to="project/decisions", now=NOW)
    again = mt.add("The search cache TTL is 30 minutes for every MemTree instance.", to="project/decisions", now=NOW)
    assert isinstance(first, Created)
    assert isinstance(again, (Merged, Duplicate))
    note = (mt.root / "bank/project/decisions.md").read_text(encoding="utf-8")
    assert note.count("30 minutes for every MemTree") == 1


def test_a_close_but_different_entry_is_written_and_recorded_as_a_conflict(mt: MemTree) -> None:
    mt.add("Redis 커넥션 풀은 10개면 충분하다", to="project/decisions", now=NOW)
    decision = mt.add("Redis 연결 풀은 필요 없다", to="project/decisions", now=NOW)
    assert isinstance(decision, Conflict), decision
    assert 0.5 <= decision.similarity < 0.8
    open_ = mt.conflicts()
    assert [c.id for c in open_] == [decision.conflict_id]
    assert "충분" in open_[0].old.text and "필요 없다" in open_[0].new.text
    settled, outcome = mt.resolve_conflict(decision.conflict_id, "new", now=NOW)
    assert settled.id == decision.conflict_id and outcome.startswith("marked")
    note = (mt.root / "bank/project/decisions.md").read_text(encoding="utf-8")
    past = next(e for e in parse_entries(note) if e.content == "Redis 커넥션 풀은 10개면 충분하다")
    assert past.meta.extra == {"superseded": "2026-11-29", "by": decision.entry_id}  # marked, its words kept
    assert mt.conflicts() == []


def test_entries_written_by_add_parse_back_with_their_metadata(mt: MemTree) -> None:
    decision = mt.add("kst 기준 타임존 규칙", to="project/rules", tags=("tz", "kst"), kind="decision", now=NOW)
    note = (mt.root / "bank/project/rules.md").read_text(encoding="utf-8")
    entry = next(e for e in parse_entries(note) if e.meta.id == decision.entry_id)
    assert entry.content == "kst 기준 타임존 규칙"
    assert entry.meta.tags == ("tz", "kst") and entry.meta.kind == "decision" and entry.meta.source == "manual"
    assert entry.meta.created == "2026-11-29T14:20:00+09:00"


def test_log_appends_and_never_rewrites(mt: MemTree) -> None:
    day = mt.root / "memory/2026-11-29.md"
    first = mt.log("14:20 배포 완료, 에러 없음", now=NOW)
    assert first.path == "memory/2026-11-29.md" and day.read_text(encoding="utf-8").startswith("# 2026-11-29\n")
    before = day.read_bytes()
    second = mt.log("연락은 lee@example.com 으로", now=NOW + timedelta(minutes=5))
    after = day.read_bytes()
    assert after.startswith(before)
    assert b"lee@example.com" not in after and "email" in second.redacted
    assert after.decode().rstrip().endswith("[REDACTED:email] 으로")
    assert second.line == first.line + 1
    assert "memory/2026-11-29.md" in {h.path for h in mt.search("배포 완료 에러", tier="memory").hits}


def test_a_merge_records_the_merged_id_and_keeps_a_hand_written_paragraph_a_paragraph(mt: MemTree) -> None:
    note = mt.root / "bank/project/rules.md"
    para = "Release notes are written in English and in Korean for every tagged version"
    note.write_text(note.read_text(encoding="utf-8") + f"\n{para}\n", encoding="utf-8")
    decision = mt.add("Release notes are written in English and Korean for every tagged version", to="project/rules")
    assert isinstance(decision, Merged), decision
    text = note.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("Release notes"))
    assert not line.startswith("- ")  # still a paragraph, as its author wrote it
    entry = next(e for e in parse_entries(text) if e.content.startswith("Release notes"))
    assert entry.meta.merged == (decision.merged_id,) and decision.merged_id not in (entry.meta.id, "")


# --- text never becomes metadata (issue 28, item 3) ---------------------------------------------------

FORGED = "<!-- memtree: id=e-20200101-feedface; created=2020-01-01 -->"


@pytest.mark.parametrize("how", ["add", "update", "log", "import", "ingest"])
def test_a_metadata_comment_in_text_never_becomes_metadata(mt: MemTree, how: str) -> None:
    import json

    from memtree import schema
    from memtree.notes import entries

    first = mt.add("Redis 풀 크기 메모 처음 내용", to="project/forge")
    assert isinstance(first, Created)
    text = f"Redis 풀 크기 메모 {FORGED}"
    if how == "add":
        made = mt.add(text, to="project/forge2")
        assert isinstance(made, Created)
        expected, path = made.entry_id, made.path
    elif how == "update":
        mt.update(first.entry_id, text)
        expected, path = first.entry_id, first.path
    elif how == "log":
        path = mt.log(text).path
        expected = ""
    elif how == "ingest":
        turn = {"conversation": "c", "role": "user", "text": text, "ts": "2026-11-30T10:00:00+09:00"}
        path = mt.ingest([turn]).logs[0]
        expected = ""
    else:
        doc = {"memtree": "export", "version": 2, "bank": None, "nodes": [], "files": {}}
        entry = {"path": "bank/project/forge3.md", "item": True, "text": text, "meta": {"id": "e-20261130-0a0b0c0d"}}
        doc["entries"] = [entry]
        mt.import_(json.dumps(doc).encode())
        expected, path = "e-20261130-0a0b0c0d", "bank/project/forge3.md"
    written = "\n".join(p.read_text(encoding="utf-8") for p in (mt.root).glob("**/*.md"))
    assert "e-20200101-feedface" in written  # the words were kept, as text
    assert "e-20200101-feedface" not in set(entries.iter_ids(written))
    if path:
        note = (mt.root / path).read_text(encoding="utf-8")
        ids = [e.meta.id for e in entries.parse_entries(note)]
        assert "e-20200101-feedface" not in ids and (not expected or expected in ids), ids
    hits = mt.search("Redis 풀 크기 메모", tier="all").hits
    assert hits and all("e-20200101-feedface" not in schema.entry_ids(h.text) for h in hits)


def test_the_parser_reads_only_the_comment_memtree_places_last() -> None:
    from memtree.notes import entries

    note = f"# n\n\n- 사실 {FORGED} <!-- memtree: id=e-20261201-00000001; kind=fact -->\n"
    (entry,) = entries.parse_entries(note)
    assert entry.meta.id == "e-20261201-00000001" and entry.meta.kind == "fact"
    wrapped = f"# n\n\n- 첫 줄 {FORGED}\n  둘째 줄 <!-- memtree: id=e-20261201-00000002 -->\n"
    assert entries.parse_entries(wrapped)[0].meta.id == "e-20261201-00000002"
    assert entries.parse_entries(f"# n\n\n- 첫 줄 {FORGED}\n  둘째 줄\n")[0].meta.id == ""


def test_an_add_that_fails_on_an_unreadable_conflicts_file_has_written_nothing(mt: MemTree) -> None:
    from helpers import snapshot

    from memtree.errors import MemtreeError

    mt.add("Redis 커넥션 풀은 10개면 충분하다", to="project/decisions", now=NOW)
    (mt.root / "conflicts.json").write_text('{"version": 1, "conflicts": [', encoding="utf-8")  # markers stripped
    before = snapshot(mt.root)
    changes = (mt.root / ".memtree/changes.jsonl").read_bytes()
    with pytest.raises(MemtreeError, match=r"conflicts\.json: unreadable"):
        mt.add("Redis 연결 풀은 필요 없다", to="project/decisions", now=NOW)
    assert snapshot(mt.root) == before
    assert (mt.root / ".memtree/changes.jsonl").read_bytes() == changes  # nothing journaled either
    assert isinstance(mt.add("배포 창은 화요일 오후다", to="project/decisions", now=NOW), Created)  # no conflict: fine


# --- issue 27: no add makes a user's text vanish; dedup reads a split note's parts ---


def _texts_under(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "bank").rglob("*.md")))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The new-checkout feature flag is off in production", "The new-checkout feature flag is on in production"),
        ("Run the database migrations before the deploy", "Run the database migrations after the deploy"),
        ("The search API request timeout is 500 ms", "The search API request timeout is 500 s"),
        ("User data for the app is stored in the EU region", "User data for the app is stored in the US region"),
        ("결제 기능 플래그는 운영에서 켜짐", "결제 기능 플래그는 운영에서 꺼짐"),
        ("사내망에서 SSH 접속은 허용한다", "사내망에서 SSH 접속은 차단한다"),
        ("캐시 만료 시간은 30초로 둔다", "캐시 만료 시간은 30분으로 둔다"),
        ("사용자 데이터는 유럽 리전에 저장한다", "사용자 데이터는 미국 리전에 저장한다"),
        # no guard row: the safety net (a merge may not drop a content word of either text)
        (
            "Finance and platform leads review the quarterly cloud budget report in the first week of each month",
            "Platform leads review the quarterly cloud budget report in the first week of each month with legal",
        ),
        (
            "분기별 클라우드 예산 보고서는 재무팀과 플랫폼 리드가 매달 첫 주에 함께 검토한다",
            "분기별 클라우드 예산 보고서는 플랫폼 리드가 매달 첫 주에 함께 검토하고 법무팀에 보낸다",
        ),
    ],
)
def test_an_opposite_fact_is_kept_as_a_conflict_never_merged_away(mt: MemTree, first: str, second: str) -> None:
    old = mt.add(first, to="p/x", now=NOW)
    assert isinstance(old, Created)
    decision = mt.add(second, to="p/x", now=NOW)
    texts = _texts_under(mt.root)
    assert f"- {first} " in texts and f"- {second} " in texts  # both kept, whatever the rule saw
    if isinstance(decision, Created):  # issue 30: the same statement with another value replaces the old
        assert decision.supersedes == old.entry_id and mt.conflicts() == []
        past = next(e for e in parse_entries(_texts_under(mt.root)) if e.meta.id == old.entry_id)
        assert past.meta.extra["by"] == decision.entry_id
        return
    assert isinstance(decision, Conflict), decision
    assert [c.id for c in mt.conflicts()] == [decision.conflict_id]


def _verdict(old: str, new: str) -> str:
    return verdict(new, old, similarity(new, old), 0.8, 0.5)


# issue 30 item 4: a replacement differs in one value and agrees on the rest (pairs not in bench/conflict_pairs.py)
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("릴리스 노트는 매주 금요일에 작성한다", "릴리스 노트는 매주 금요일에 쓴다"),  # only the closing verb
        ("배포 전 점검은 QA팀이 진행한다", "배포 전 점검은 QA팀이 한다"),
        ("Invoices are stored for seven years", "We keep invoices for seven years"),  # the words moved
        ("Standup is held on Tuesdays at 9 am", "Standup is held on Tuesday at 9 am"),  # a weekday's plural
    ],
)
def test_a_restatement_is_neither_a_replacement_nor_a_conflict(old: str, new: str) -> None:
    assert _verdict(old, new) in ("merge", "distinct")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("릴리스 노트는 매주 금요일에 작성한다", "릴리스 노트는 매주 월요일에 작성한다"),
        ("릴리스 노트는 지은이가 작성한다", "릴리스 노트는 민호가 작성한다"),
        ("릴리스 담당은 박서연이다", "릴리스 담당은 최현우다"),  # a copula: the value closes the sentence
        ("Our issue tracker is Jira", "Our issue tracker is Linear"),
        ("Dana is the release manager", "Evan is the release manager"),  # a bare name opens it: the value
        ("Alice owns the billing service", "Bob owns the billing service"),
        ("김민수가 결제 서비스를 맡는다", "이지우가 결제 서비스를 맡는다"),
    ],
)
def test_one_value_changed_in_the_same_statement_replaces(old: str, new: str) -> None:
    assert _verdict(old, new) == "replace"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The billing worker runs on a c5.large instance", "The search worker runs on a c5.large instance"),
        ("결제 워커는 c5.large 인스턴스를 쓴다", "검색 워커는 c5.large 인스턴스를 쓴다"),  # another topic
        ("The search API is written in Python", "The search API runs on Lambda"),  # another relation
        ("The primary database is Postgres", "The analytics database is Postgres"),
        ("Redis 커넥션 풀은 50개로 둔다", "Memcached 커넥션 풀은 50개로 둔다"),
        ("릴리스는 매주 금요일에 한다", "릴리스 승인은 팀장이 한다"),  # no other day: another fact
    ],
)
def test_a_different_fact_on_the_same_topic_is_neither_a_replacement_nor_a_conflict(old: str, new: str) -> None:
    assert _verdict(old, new) == "distinct"


def test_a_different_fact_on_the_same_topic_is_written_beside_the_old_one(mt: MemTree) -> None:
    old = mt.add("The billing worker runs on a c5.large instance", to="p/x", now=NOW)
    new = mt.add("The search worker runs on a c5.large instance", to="p/x", now=NOW)
    assert isinstance(old, Created) and isinstance(new, Created) and new.supersedes == ""
    assert mt.conflicts() == []
    assert not any(e.meta.extra for e in parse_entries(_texts_under(mt.root)))  # nothing marked superseded


def test_a_restatement_still_merges_when_nothing_would_be_lost(mt: MemTree) -> None:
    mt.add("The new-checkout feature flag is on in production", to="p/x", now=NOW)
    again = mt.add("The new-checkout feature flag is ON in production, as of the launch", to="p/x", now=NOW)
    assert isinstance(again, Merged)
    assert "as of the launch" in _texts_under(mt.root)


def _split_note(mt: MemTree) -> tuple[str, str]:
    """bank/p/big.md split into parts under bank/p/big/; the text of one entry now in a part, and that part."""
    lines = [f"- Fact {i} about the payments deploy pipeline and its many moving parts number {i}" for i in range(80)]
    body = "# big\n\n## Alpha\n\n" + "\n".join(lines[:40]) + "\n\n## Beta\n\n" + "\n".join(lines[40:]) + "\n"
    mt.add("The big note starts here", to="p/big", now=NOW)
    note = mt.root / "bank/p/big.md"
    note.write_text(body + "\n- The big note starts here\n", encoding="utf-8")
    assert mt.split("bank/p/big.md", max_bytes=4_000, now=NOW)
    parts = sorted(p for p in (mt.root / "bank/p/big").rglob("*.md"))
    part = next(p for p in parts if "Fact 50 about" in p.read_text(encoding="utf-8"))
    assert "Fact 50 about" not in note.read_text(encoding="utf-8")
    return lines[50][2:], part.relative_to(mt.root).as_posix()


def test_the_same_text_added_after_a_split_is_a_duplicate_of_the_part(mt: MemTree) -> None:
    text, part = _split_note(mt)
    before = snapshot(mt.root)
    again = mt.add(text, to="p/big", now=NOW)
    assert isinstance(again, Duplicate), again
    assert again.path == part and again.node == part[len("bank/") : -len(".md")]
    assert snapshot(mt.root) == before


def test_a_restatement_after_a_split_merges_into_the_part_that_holds_it(mt: MemTree) -> None:
    text, part = _split_note(mt)
    merged = mt.add(text + ", checked twice", to="p/big", now=NOW)
    assert isinstance(merged, Merged) and merged.path == part
    assert _texts_under(mt.root).count("Fact 50 about") == 1
    assert text + ", checked twice" in (mt.root / part).read_text(encoding="utf-8")
