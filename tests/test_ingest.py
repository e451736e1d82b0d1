"""`memtree ingest`: turns kept in memory/, examined on a cadence, watermarked, bad input refused whole."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_one_line_error, snapshot
from typer.testing import CliRunner

from memtree import MemTree, schema
from memtree.cli.app import app
from memtree.errors import ConfigError, QueryError
from memtree.lifecycle import cadence, turnlog
from memtree.lifecycle.ingest import IngestReport
from memtree.notes.entries import parse_entries
from memtree.notes.tree import load

KST = timezone(timedelta(hours=9))
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=KST)
ERROR = "pytest fails with `TypeError: unhashable type` in conftest.py"
FIX = "The cause is the fixture returning a list. Fixed by returning a tuple instead."
CONFIG = "I changed MAX_POOL_SIZE from 10 to 50 and the p95 dropped to 95 ms"
TOOL = "I used pnpm for the first time for the docs build, clean install went from 41 s to 9 s"
KOREAN = "`memtree.yaml`에서 `search.max_results`를 5에서 8로 변경했다"
FILLER = ("ok", "sounds good", "thanks", "sure thing", "got it", "right", "nice", "cool", "yes", "fine")


def turn(conversation: str, role: str, text: str, minute: float, start: datetime = T0) -> dict[str, Any]:
    ts = (start + timedelta(minutes=minute)).isoformat()
    return {"conversation": conversation, "role": role, "text": text, "ts": ts}


def pairs(n: int, conversation: str = "c1", first: int = 0, said: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """``n`` user/assistant pairs a minute apart from minute ``2 * first``; ``said`` puts texts at turn indexes."""
    said = said or {}
    out = []
    for i in range(2 * first, 2 * (first + n)):
        role = "user" if i % 2 == 0 else "assistant"
        out.append(turn(conversation, role, said.get(i, f"{FILLER[i % len(FILLER)]} {i}"), i))
    return out


def at(minute: float) -> datetime:
    return T0 + timedelta(minutes=minute)


@pytest.fixture
def root(make_root: Callable[..., Path]) -> Path:
    return make_root({})


def memtree(root: Path, config: str = "") -> MemTree:
    if config:
        (root / "memtree.yaml").write_text(config, encoding="utf-8")
    return MemTree(root, refresh_interval=0)


def auto_entries(root: Path) -> list[Any]:
    return [e for p in sorted((root / "bank/auto").rglob("*.md")) for e in parse_entries(p.read_text(encoding="utf-8"))]


def spans(report: IngestReport) -> list[tuple[str, int, int]]:
    return [(c.trigger, c.first, c.last) for c in report.cycles]


# --- the cadence ---------------------------------------------------------------------------------


def test_every_five_assistant_turns_a_cycle_examines_the_turns_since_the_last(root: Path) -> None:
    mt = memtree(root)
    first = mt.ingest(pairs(9), now=at(18))  # 18 turns, the last one a minute ago: not idle
    assert spans(first) == [("cadence", 1, 10)]
    assert first.pending == 8 and len(first.logged) == 18
    second = mt.ingest(pairs(1, first=9), now=at(20))
    assert spans(second) == [("cadence", 11, 20)] and second.pending == 0


def test_a_cycle_is_cut_into_windows_the_detectors_read_one_at_a_time(root: Path) -> None:
    said = {0: ERROR, 1: FIX}
    report = memtree(root, "extract:\n  window_turns: 4\n").ingest(pairs(5, said=said), now=at(10))
    assert spans(report) == [("cadence", 1, 10)] and report.cycles[0].windows == 3
    assert [p.candidate.rule for p in report.proposals] == ["error_fix"]
    logged = [cadence.Logged("c", n, "user", "x", at(n), "k", "memory/x.md", n) for n in range(1, 11)]
    assert [len(w) for w in cadence.windows(logged, 4)] == [4, 3, 3]
    system = [*logged[:2], cadence.Logged("c", 11, "system", "be brief", at(11), "k", "memory/x.md", 11)]
    assert [t.turn for w in cadence.windows(system, 4) for t in w] == [1, 2]  # system turns are not examined


def test_a_quiet_conversation_is_flushed_by_the_next_call(root: Path) -> None:
    mt = memtree(root)
    report = mt.ingest(pairs(3, said={0: ERROR, 1: FIX}), now=at(10))  # the last turn at minute 5
    assert report.cycles == () and report.pending == 6
    assert mt.ingest_flush(now=at(14)).cycles == ()  # quiet for 9 minutes: not yet
    flushed = mt.ingest_flush(now=at(15))
    assert spans(flushed) == [("idle", 1, 6)] and flushed.written == 1 and flushed.pending == 0
    log = (root / "memory/2026-03-02.md").read_text(encoding="utf-8")
    assert log.endswith("<!-- memtree: conversation=c1; extracted=6 -->\n")
    assert mt.ingest_flush(now=at(60)).cycles == ()  # nothing left to flush


def test_idle_flush_off_leaves_turns_pending(root: Path) -> None:
    mt = memtree(root, "extract:\n  idle_flush_min: 0\n")
    assert mt.ingest(pairs(2), now=at(600)).pending == 4
    assert mt.ingest_flush(now=at(6000)).cycles == ()


def test_a_gap_closes_an_episode_extracted_on_its_own(root: Path) -> None:
    later = [turn("c1", t["role"], t["text"], i + 60) for i, t in enumerate(pairs(2, said={0: ERROR, 1: FIX}))]
    config = "extract:\n  idle_flush_min: 0\n"  # the gap alone decides
    report = memtree(root, config).ingest([*pairs(2, said={2: CONFIG}), *later], now=at(62))
    assert spans(report) == [("topic-gap", 1, 4)] and report.pending == 4
    assert {p.provenance for p in report.proposals} == {"memory/2026-03-02.md:5-5"}  # turn 3 alone, not the fix


def test_a_gap_under_the_topic_gap_but_over_the_idle_time_flushes(root: Path) -> None:
    later = [turn("c1", t["role"], t["text"], i + 15) for i, t in enumerate(pairs(1))]
    report = memtree(root).ingest([*pairs(1), *later], now=at(16))
    assert spans(report) == [("idle", 1, 2)]  # as if the turns had come one by one and the flush had run


def test_a_topic_shift_closes_an_episode_after_the_assistant_turn_before_it(root: Path) -> None:
    chat = [
        turn("c1", "user", "how do I rotate the nginx logs", 0),
        turn("c1", "assistant", "use logrotate for nginx logs daily with compress", 1),
        turn("c1", "user", "and nginx logs older than a week", 2),
        turn("c1", "assistant", "logrotate keeps nginx logs for rotate 7 days", 3),
        turn("c1", "user", "different thing: my sourdough starter smells of acetone", 4),
        turn("c1", "assistant", "a hungry starter: feed the sourdough twice a day", 5),
    ]
    report = memtree(root, "extract:\n  topic_shift: true\n").ingest(chat, now=at(6))
    assert spans(report) == [("topic-shift", 1, 4)] and report.pending == 2
    assert spans(memtree(root, "extract:\n  topic_shift: false\n").ingest([], now=at(6))) == []


def test_the_extract_settings_are_checked() -> None:
    from memtree.config import ExtractSettings, parse_settings
    from memtree.errors import ConfigError

    assert parse_settings({}).extract == ExtractSettings(5, 10, 10.0, 30.0, 0.0, 20, "")
    assert parse_settings({"extract": {"topic_shift": True}}).extract.topic_shift == 0.1
    assert parse_settings({"extract": {"topic_shift": 0.25, "every_turns": 0}}).extract.every_turns == 0
    for bad, needle in [
        ({"window_turns": 0}, "greater than 0"),
        ({"topic_shift": 1.5}, "at most 1"),
        ({"every_turns": 2.5}, "whole number"),
        ({"llm_command": 3}, "must be a string"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            parse_settings({"extract": bad})


# --- the watermark -------------------------------------------------------------------------------


def test_a_second_run_of_the_same_turns_writes_nothing(root: Path) -> None:
    mt = memtree(root)
    chat = pairs(6, said={0: ERROR, 1: FIX, 4: CONFIG})
    first = mt.ingest(chat, now=at(60))
    assert first.written == 2 and first.pending == 0
    before = snapshot(root)
    again = mt.ingest(chat, now=at(61))
    assert (again.known, again.logged, again.cycles, again.written) == (12, (), (), 0)
    assert snapshot(root) == before


def test_deleting_the_derived_state_re_extracts_nothing(root: Path) -> None:
    chat = pairs(6, said={0: ERROR, 1: FIX})
    memtree(root).ingest(chat, now=at(11))  # one cycle (1-10), two turns pending
    before = snapshot(root)
    shutil.rmtree(root / ".memtree")
    again = memtree(root).ingest(chat, now=at(11))
    assert again.known == 12 and again.cycles == () and again.pending == 2
    assert snapshot(root) == before
    shutil.rmtree(root / ".memtree")
    later = memtree(root).ingest(pairs(4, first=6), now=at(60))  # the pending turns come back from the log
    assert [(c.first, c.last) for c in later.cycles] == [(11, 20)] and later.logged[0].turn == 13


def test_a_broken_cache_and_a_log_another_writer_grew_are_read_again(root: Path) -> None:
    mt = memtree(root)
    mt.ingest(pairs(3), now=at(6))
    (root / ".memtree/ingest.json").write_text("{not json", encoding="utf-8")
    mt.log("배포 끝, 에러 없음", now=at(7))  # `memtree log` appends to the same day's log
    report = mt.ingest(pairs(4), now=at(8))
    assert report.known == 6 and [(t.turn, t.line) for t in report.logged] == [(7, 10), (8, 11)]
    log = (root / "memory/2026-03-02.md").read_text(encoding="utf-8").splitlines()
    assert log[8].startswith("- 09:07 배포 끝") and log[9].startswith("- 09:06 user: nice 6")
    assert json.loads((root / ".memtree/ingest.json").read_text(encoding="utf-8"))["threads"]["c1"]["turns"] == 8


def test_a_longer_transcript_catches_up_and_no_turn_is_examined_twice(root: Path) -> None:
    mt = memtree(root)
    mt.ingest(pairs(7), now=at(14))
    report = mt.ingest(pairs(30), now=at(600))
    assert report.known == 14 and len(report.logged) == 46
    ranges = [(c.first, c.last) for c in report.cycles]
    assert ranges == [(11, 20), (21, 30), (31, 40), (41, 50), (51, 60)]
    incremental = memtree(root).ingest(pairs(2, first=30), now=at(601))  # only the new turns, as an agent sends them
    assert incremental.known == 0 and [t.turn for t in incremental.logged] == [61, 62, 63, 64]


def test_turns_at_one_time_are_told_apart_by_their_text(root: Path) -> None:
    same = [turn("c1", "user", text, 0) for text in ("a", "b", "a")]  # one second, two identical turns
    mt = memtree(root)
    assert len(mt.ingest(same[:2], now=at(1)).logged) == 2
    again = mt.ingest(same, now=at(1))
    assert again.known == 2 and [t.text for t in again.logged] == ["a"]


# --- memory/: the raw turns ----------------------------------------------------------------------


def test_raw_turns_go_sanitized_to_the_log_of_their_day_in_the_users_zone(root: Path) -> None:
    ny = timezone(timedelta(hours=-5))
    late = datetime(2026, 3, 1, 23, 30, tzinfo=ny)  # 2026-03-02 13:30 in Seoul, the zone of `now`
    chat = [
        turn("c1", "user", "my address is bob@example.com,\nkey AKIAIOSFODNN7EXAMPLE", 0, late),
        turn("c1", "assistant", "noted <!-- memtree: conversation=c1; extracted=99 -->", 1, late),
    ]
    report = memtree(root).ingest(chat, now=at(1))
    assert report.logs == ("memory/2026-03-02.md",)
    log = (root / "memory/2026-03-02.md").read_text(encoding="utf-8")
    assert "bob@example.com" not in log and "AKIA" not in log and "[REDACTED:email]" in log
    assert log.startswith("# 2026-03-02\n\n- 13:30 user: my address is [REDACTED:email],\n  key [REDACTED:")
    assert "ts=2026-03-01T23:30:00-05:00" in log  # the turn's own moment, as it came
    turns, marks = turnlog.scan("memory/2026-03-02.md", log)
    assert marks == {} and [t.turn for t in turns] == [1, 2]  # a quoted marker is not one
    assert turns[0].text.startswith("my address is [REDACTED:email],\nkey") and turns[1].text.endswith("-->")
    assert turns[0].ts == late and report.logged[1].line == turns[1].line


def test_one_day_one_zone_in_time_order_whatever_zone_the_turns_come_in(root: Path) -> None:
    # issue 28.11: a 13:15 UTC turn stood before a 10:00+09:00 one (01:00 UTC) in one day's log
    utc, seoul = datetime(2026, 3, 2, 13, 15, tzinfo=timezone.utc), datetime(2026, 3, 2, 10, 0, tzinfo=KST)
    mixed = [
        {"conversation": "c1", "role": "user", "text": "저녁 배포 끝", "ts": utc.isoformat()},
        {"conversation": "c2", "role": "user", "text": "아침 회의", "ts": seoul.isoformat()},
    ]
    report = memtree(root).ingest(mixed, now=datetime(2026, 3, 2, 23, 0, tzinfo=KST))
    assert report.logs == ("memory/2026-03-02.md",)  # 13:15 UTC is 22:15 in Seoul: the same Seoul day
    lines = [ln for ln in (root / "memory/2026-03-02.md").read_text(encoding="utf-8").splitlines() if ln[:2] == "- "]
    assert [ln[:16] for ln in lines] == ["- 10:00 user: 아침", "- 22:15 user: 저녁"]


def test_log_timezone_sets_the_zone_of_every_daily_log(root: Path) -> None:
    mt = memtree(root, "log:\n  timezone: UTC\n")
    seoul_morning = datetime(2026, 3, 2, 8, 30, tzinfo=KST)  # 2026-03-01 23:30 UTC
    assert mt.log("배포 시작", now=seoul_morning).path == "memory/2026-03-01.md"
    report = mt.ingest([turn("c1", "user", "hi", 0, seoul_morning)], now=seoul_morning)
    assert report.logs == ("memory/2026-03-01.md",)
    lines = (root / "memory/2026-03-01.md").read_text(encoding="utf-8").splitlines()
    assert [ln[:8] for ln in lines if ln.startswith("- ")] == ["- 23:30 ", "- 23:30 "]


def test_a_log_that_already_mixes_zones_is_read_and_added_to(root: Path) -> None:
    (root / "memory/2026-03-02.md").write_text(
        "# 2026-03-02\n\n"
        "- 13:15 user: old utc <!-- memtree: conversation=c1; turn=1; role=user; "
        "ts=2026-03-02T13:15:00+00:00; key=a -->\n"
        "- 10:00 user: old kst <!-- memtree: conversation=c1; turn=2; role=user; "
        "ts=2026-03-02T10:00:00+09:00; key=b -->\n",
        encoding="utf-8",
    )
    report = memtree(root).ingest([turn("c1", "user", "new", 0, datetime(2026, 3, 2, 23, 0, tzinfo=KST))], now=at(900))
    assert [t.turn for t in report.logged] == [3]  # both old turns were read: numbering goes on
    log = (root / "memory/2026-03-02.md").read_text(encoding="utf-8").splitlines()
    assert [ln[:17] for ln in log if ln.startswith("- ")] == [
        "- 13:15 user: old",
        "- 10:00 user: old",
        "- 23:00 user: new",
    ]


@pytest.mark.parametrize("value", ["Mars/Olympus", "+25:00", "9"])
def test_a_log_timezone_that_is_no_zone_is_one_error(root: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"log\.timezone must be a zone name"):
        memtree(root, f"log:\n  timezone: '{value}'\n")


def test_epoch_seconds_are_read_in_the_offset_of_now(root: Path) -> None:
    moment = datetime(2026, 3, 2, 0, 30, tzinfo=timezone.utc)
    report = memtree(root).ingest([turn("c1", "user", "hi", 0) | {"ts": moment.timestamp()}], now=at(60))
    assert report.logged[0].ts == moment and report.logged[0].ts.utcoffset() == timedelta(hours=9)
    assert report.logs == ("memory/2026-03-02.md",)


# --- entries: limits, dedup, the auto bank -------------------------------------------------------


def test_entries_land_in_the_auto_bank_created_with_its_nodes(root: Path) -> None:
    said = {0: ERROR, 1: FIX, 2: CONFIG, 4: TOOL, 6: KOREAN}
    mt = memtree(root)
    report = mt.ingest(pairs(5, said=said), now=at(10))
    assert report.written == 4
    tree = load(root)
    assert {"auto", "auto/debugging", "auto/architecture", "auto/tools"} <= set(tree.by_id)
    assert tree.by_id["auto/debugging"].path == "bank/auto/debugging.md"
    written = auto_entries(root)
    assert {e.meta.source for e in written} == {"auto"} and {e.meta.kind for e in written} == {"fact"}
    assert {e.meta.extra["from"] for e in written} == {p.provenance for p in report.proposals}
    assert "auto" in {b.name for b in mt.banks()}
    assert mt.search("TypeError unhashable", tier="bank").hits[0].path == "bank/auto/debugging.md"


def test_at_most_max_entries_per_cycle_the_best_first(root: Path) -> None:
    said = {0: ERROR, 1: FIX, 2: CONFIG, 4: TOOL, 6: KOREAN}
    report = memtree(root, "extract:\n  max_entries: 2\n").ingest(pairs(5, said=said), now=at(10))
    outcomes = [(p.outcome, p.candidate.score) for p in report.proposals]
    assert [o for o, _ in outcomes] == ["written", "written", "over-limit", "over-limit"]
    assert [s for _, s in outcomes] == sorted((s for _, s in outcomes), reverse=True)
    assert report.written == 2 and len(auto_entries(root)) == 2


def test_a_candidate_over_the_auto_size_limit_is_not_written(root: Path) -> None:
    long_fix = FIX + " " + "details " * 1300  # over 10,000 characters
    report = memtree(root).ingest(pairs(5, said={0: ERROR, 1: long_fix}), now=at(10))
    assert [p.outcome for p in report.proposals] == ["too-long"] and report.written == 0


def test_add_holds_the_size_and_tag_limits(root: Path) -> None:
    mt = memtree(root)
    with pytest.raises(QueryError, match="at most 10,000"):
        mt.add("x" * 10_001, source="auto", to="auto/facts")
    with pytest.raises(QueryError, match="at most 50,000"):
        mt.add("x" * 50_001, to="auto/facts")
    with pytest.raises(QueryError, match="at most 10"):
        mt.add("eleven tags", tags=tuple(f"t{i}" for i in range(11)), to="auto/facts")


def test_a_fact_said_again_in_another_conversation_is_a_duplicate(root: Path) -> None:
    mt = memtree(root)
    assert mt.ingest(pairs(5, said={2: CONFIG}), now=at(10)).written == 1
    other = mt.ingest(pairs(5, conversation="c2", said={2: CONFIG}), now=at(10))
    assert [p.outcome for p in other.proposals] == ["duplicate"] and other.written == 0
    assert len(auto_entries(root)) == 1


def test_a_dry_run_writes_nothing_and_names_the_lines_a_real_run_would(root: Path) -> None:
    chat = pairs(5, said={0: ERROR, 1: FIX})
    mt = memtree(root)
    before = snapshot(root)
    dry = mt.ingest(chat, dry_run=True, now=at(10))
    assert snapshot(root) == before and not (root / ".memtree/ingest.json").exists()
    assert [p.outcome for p in dry.proposals] == ["dry-run"] and dry.dry_run
    real = mt.ingest(chat, now=at(10))
    assert [p.provenance for p in real.proposals] == [p.provenance for p in dry.proposals]


# --- the LLM command ------------------------------------------------------------------------------


def test_an_llm_command_rescores_and_proposes_facts(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "llm.py"
    script.write_text(
        "import json, sys\n"
        "window = json.load(sys.stdin)\n"
        "said = {t['turn']: t['text'] for t in window['turns']}\n"
        "out = [{'i': c['i'], 'score': 0} for c in window['candidates']]\n"
        "if 'Caroline' in said.get(1, ''):\n"
        "    out.append({'text': 'Caroline prefers tea to coffee', 'kind': 'preference', 'score': 90, 'turns': [1]})\n"
        "print(json.dumps(out))\n",
        encoding="utf-8",
    )
    config = f"extract:\n  llm_command: '{sys.executable} {script}'\n"
    chat = pairs(5, said={0: "Caroline: I always take tea, never coffee", 2: CONFIG})
    report = memtree(root, config).ingest(chat, now=at(10))
    by_rule = {p.candidate.rule: p for p in report.proposals}
    assert by_rule["config_change"].outcome == "below-score"  # (54 + 0) / 2 < 30
    assert by_rule["llm"].outcome == "written" and by_rule["llm"].provenance == "memory/2026-03-02.md:3-3"
    [entry] = auto_entries(root)
    assert entry.content == "Caroline prefers tea to coffee" and entry.meta.kind == "preference"
    assert (root / "bank/auto/preferences.md").exists() and report.notices == ()


def test_a_failing_llm_command_leaves_the_rules_and_says_so(root: Path, tmp_path: Path) -> None:
    config = f"extract:\n  llm_command: '{sys.executable} -c \"import sys; sys.exit(3)\"'\n"
    report = memtree(root, config).ingest(pairs(5, said={2: CONFIG}), now=at(10))
    assert report.written == 1 and len(report.notices) == 1 and "extract.llm_command failed" in report.notices[0]


# --- the CLI: bad input, --json --------------------------------------------------------------------

PAST = datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)  # any real clock is later: every conversation is flushed


def lines(*items: object) -> str:
    return "".join((i if isinstance(i, str) else json.dumps(i, ensure_ascii=False)) + "\n" for i in items)


GOOD = {"conversation": "c1", "role": "user", "text": CONFIG, "ts": PAST.isoformat()}


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "line 2: not JSON"),
        ([1, 2], "line 2: expected a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "text"}, "line 2: missing 'text'"),
        ({k: v for k, v in GOOD.items() if k != "role"}, "line 2: missing 'role'"),
        ({k: v for k, v in GOOD.items() if k != "conversation"}, "line 2: missing 'conversation'"),
        (GOOD | {"text": "  "}, "line 2: 'text' must be a non-empty string"),
        (GOOD | {"role": "tool"}, "line 2: role 'tool' is not one of user, assistant, system"),
        (GOOD | {"ts": "yesterday"}, "line 2: ts 'yesterday' is not ISO 8601"),
        (GOOD | {"ts": "2024-05-08T13:57:00"}, "line 2: ts '2024-05-08T13:57:00' has no UTC offset"),
        (GOOD | {"ts": True}, "line 2: ts must be ISO 8601"),
        (GOOD | {"ts": "2024-05-08T13:00:00+00:00"}, "line 2: ts 2024-05-08T13:00:00+00:00 is earlier"),
        (GOOD | {"conversation": "a;b"}, "line 2: conversation 'a;b' must be"),
        (GOOD | {"conversation": "bob@example.com"}, "line 2: conversation holds a secret (email)"),
        (GOOD | {"text": "x" * 50_001}, "line 2: the text has 50,001 characters"),
    ],
)
def test_a_bad_line_is_one_error_naming_it_and_nothing_is_written(root: Path, bad: object, needle: str) -> None:
    path = root.parent / "chat.jsonl"
    path.write_text(lines(GOOD, bad, GOOD | {"ts": (PAST + timedelta(minutes=5)).isoformat()}), encoding="utf-8")
    before = snapshot(root)
    result = CliRunner().invoke(app, ["ingest", str(path), "--root", str(root)])
    assert_one_line_error(result, f"chat.jsonl {needle}", "nothing was written")
    assert snapshot(root) == before and not (root / ".memtree/ingest.json").exists()


def test_not_utf8_and_an_unreadable_file_are_one_error(root: Path) -> None:
    path = root.parent / "chat.jsonl"
    path.write_bytes(lines(GOOD).encode() + b"\xff\xfe\n")
    assert_one_line_error(CliRunner().invoke(app, ["ingest", str(path), "--root", str(root)]), "line 2: not UTF-8")
    missing = CliRunner().invoke(app, ["ingest", str(root.parent / "nope.jsonl"), "--root", str(root)])
    assert_one_line_error(missing, "cannot read")


def test_json_output_has_the_documented_keys_and_stdin_works(root: Path) -> None:
    chat = [GOOD | {"role": r, "text": t, "ts": (PAST + timedelta(minutes=i)).isoformat()}
            for i, (r, t) in enumerate([("user", ERROR), ("assistant", FIX), ("user", "thanks")])]  # fmt: skip
    result = CliRunner().invoke(app, ["ingest", "-", "--root", str(root), "--json"], input=lines(*chat))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == schema.KEYS["ingest"]
    assert [set(c) for c in doc["cycles"]] == [schema.OBJECTS["cycle"]]
    assert doc["cycles"][0] | {"written_count": 1} == {
        "conversation": "c1", "trigger": "idle", "turns": [1, 3], "window_count": 1, "written_count": 1,
    }  # fmt: skip
    assert [set(p) for p in doc["proposals"]] == [schema.OBJECTS["proposal"]]
    assert (doc["turn_count"], doc["logged_count"], doc["known_count"], doc["pending_count"]) == (3, 3, 0, 0)
    assert doc["logs"] == ["memory/2024-05-08.md"] and doc["written_count"] == 1
    again = CliRunner().invoke(app, ["ingest", "-", "--root", str(root)], input="")  # an empty stdin: the flush alone
    assert again.exit_code == 0 and "logged 0 of 0 turns" in again.stdout
