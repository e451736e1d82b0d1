"""Dates in search: a query naming a day finds that day's chunks, in Korean and English."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from memtree import MemTree

KST = timezone.utc  # the day is what matters here; any fixed zone keeps the test date-proof

SESSIONS = {
    "bank/chats/elise.md": (
        "# Elise\n\n"
        "## Session on 14.01.2024\n\n"
        "- Elise: I bought a red scarf at the market.\n"
        "- Elise: The weather was cold.\n\n"
        "## Session on 15.01.2024\n\n"
        "- Elise: I bought a blue scarf online.\n"
    ),
    "bank/work/meetings.md": (
        "# 회의\n\n"
        "## 2026-03-02 주간 회의\n\n"
        "- 배포 주기를 격주로 바꾸기로 정했다.\n\n"
        "## 2026-03-09 주간 회의\n\n"
        "- 배포 주기는 그대로 두기로 정했다.\n"
    ),
    "bank/log/2024-01-08.md": "# 2024-01-08\n\n- 어제 스테이징 배포를 롤백했다.\n",
}


def search(root: Path, query: str, now: datetime) -> list[tuple[str, range]]:
    """The hits' notes and line ranges (chunk boundaries are the chunker's business, not this test's)."""
    result = MemTree(root, refresh_interval=0).search(query, now=now)
    assert result.rejected is None, result.rejected
    return [(h.path, range(h.lines[0], h.lines[1] + 1)) for h in result.hits]


def test_an_english_question_naming_a_day_finds_that_days_session(make_root: Callable[..., Path]) -> None:
    root = make_root(SESSIONS, None)
    hits = search(root, "What did Elise buy on 14 Jan 2024?", datetime(2026, 12, 1, tzinfo=KST))
    path, lines = hits[0]  # that day's lines, above the neighbouring day's scarf
    assert path == "bank/chats/elise.md" and {5, 6} & set(lines) and 10 not in lines
    path, lines = search(root, "What did Elise buy on January 15, 2024?", datetime(2026, 12, 1, tzinfo=KST))[0]
    assert path == "bank/chats/elise.md" and 10 in lines and 5 not in lines


def test_a_korean_question_naming_a_day_without_a_year_finds_that_meeting(make_root: Callable[..., Path]) -> None:
    root = make_root(SESSIONS, None)
    path, lines = search(root, "3월 2일 회의에서 뭘 정했지?", datetime(2026, 12, 1, tzinfo=KST))[0]
    assert path == "bank/work/meetings.md" and 5 in lines and 9 not in lines
    path, lines = search(root, "3월 9일 회의에서 뭘 정했지?", datetime(2026, 12, 1, tzinfo=KST))[0]
    assert path == "bank/work/meetings.md" and 9 in lines and 5 not in lines


def test_a_relative_day_in_a_note_is_read_against_the_notes_own_day(make_root: Callable[..., Path]) -> None:
    root = make_root(SESSIONS, None)
    hits = search(root, "2024년 1월 7일에 무슨 일이 있었지?", datetime(2026, 12, 1, tzinfo=KST))
    assert hits[0][0] == "bank/log/2024-01-08.md"


def test_a_relative_day_in_the_query_is_read_against_now(make_root: Callable[..., Path]) -> None:
    root = make_root(SESSIONS, None)
    hits = search(root, "어제 뭐 롤백했지?", datetime(2024, 1, 8, 9, 0, tzinfo=KST))
    assert hits[0][0] == "bank/log/2024-01-08.md"


def test_a_day_the_memory_has_nothing_on_is_evidence_against(make_root: Callable[..., Path]) -> None:
    root = make_root(SESSIONS, None)
    result = MemTree(root, refresh_interval=0).search("What did Elise buy on 3 June 2019?", now=datetime(2026, 12, 1))
    assert result.rejected or all(h.path != "bank/chats/elise.md" or h.score < 0.5 for h in result.hits)
