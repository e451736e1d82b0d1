"""memtree.write.journal (`memtree log`): the time a log line carries."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import write_root

from memtree import MemTree
from memtree.errors import QueryError
from memtree.lifecycle.distill import parse_log
from memtree.write.journal import leading_time

KST = timezone(timedelta(hours=9))
LATER = datetime(2026, 11, 29, 14, 47, tzinfo=KST)


@pytest.fixture
def mt(tmp_path: Path) -> MemTree:
    return MemTree(write_root(tmp_path / "root", {}), refresh_interval=0)


def logged_lines(mt: MemTree) -> list[str]:
    return (mt.root / "memory/2026-11-29.md").read_text(encoding="utf-8").splitlines()[2:]


def test_a_leading_time_is_the_entrys_time_not_a_second_one(mt: MemTree) -> None:
    logged = mt.log("14:20 배포 끝", now=LATER)
    assert logged_lines(mt) == ["- 14:20 배포 끝"] and logged.text == "배포 끝"
    [line] = parse_log(logged.path, (mt.root / logged.path).read_text(encoding="utf-8"))
    assert (line.time, line.text) == ("14:20", "배포 끝")
    # text that does not start with a clock time gets now's
    mt.log("배포 끝, 14:20 시작분", now=LATER)
    mt.log("14:20~14:40 회의", now=LATER)  # a range is text, not the entry's time
    mt.log("25:10 is not a time", now=LATER)
    assert logged_lines(mt)[1:] == [
        "- 14:47 배포 끝, 14:20 시작분",
        "- 14:47 14:20~14:40 회의",
        "- 14:47 25:10 is not a time",
    ]


def test_an_hour_without_its_zero_is_written_as_hh_mm(mt: MemTree) -> None:
    mt.log("9:05\tstand-up 끝", now=LATER)
    assert logged_lines(mt) == ["- 09:05 stand-up 끝"]


def test_a_time_alone_is_nothing_to_log(mt: MemTree) -> None:
    with pytest.raises(QueryError, match="only a time"):
        mt.log("  14:20  ", now=LATER)
    assert not (mt.root / "memory/2026-11-29.md").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("14:20 배포 끝", ("14:20", "배포 끝")),
        ("0:00 자정", ("00:00", "자정")),
        ("23:59", ("23:59", "")),
        ("14:20배포", (None, "14:20배포")),
        ("24:00 x", (None, "24:00 x")),
        ("14:60 x", (None, "14:60 x")),
        ("배포 14:20", (None, "배포 14:20")),
    ],
)
def test_leading_time(text: str, expected: tuple[str | None, str]) -> None:
    assert leading_time(text) == expected
