"""memtree.index.segment_files: a segment is one file, read back whole or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree.index import segment_files
from memtree.index.segment import Segment, build_segment

NOTES = [
    ("bank/가치관.md", [(1, 1, ["가치관이", "원칙"]), (3, 4, ["판단기준", "원칙", "원칙"])]),
    ("memory/2026-11-28.md", [(2, 2, ["deploy", "cron", "배포"])]),
    ("bank/empty.md", []),
]


def columns(seg: Segment) -> tuple[object, ...]:
    return (seg.terms, seg.files, *(getattr(seg, col).tolist() for col in segment_files.COLUMNS))


@pytest.mark.parametrize("notes", [NOTES, []])
def test_a_segment_round_trips(tmp_path: Path, notes: list) -> None:
    seg = build_segment(notes)
    segment_files.write(tmp_path, "seg-3", seg)
    assert (tmp_path / "seg-3").is_file()
    assert columns(segment_files.read(tmp_path / "seg-3")) == columns(seg)


def test_a_torn_or_foreign_segment_is_refused(tmp_path: Path) -> None:
    segment_files.write(tmp_path, "seg-1", build_segment(NOTES))
    whole = (tmp_path / "seg-1").read_bytes()
    for bad in (whole[:-1], whole + b"\0", whole[: len(whole) // 2], b"PK\x03\x04" + whole[4:], b""):
        (tmp_path / "seg-1").write_bytes(bad)
        with pytest.raises(ValueError):
            segment_files.read(tmp_path / "seg-1")


def test_a_segment_folder_of_the_former_layout_is_replaced_and_removed(tmp_path: Path) -> None:
    old = tmp_path / "seg-1"
    old.mkdir()
    (old / "terms.txt").write_text("x", encoding="utf-8")
    with pytest.raises(OSError):
        segment_files.read(old)  # the caller then rebuilds
    segment_files.write(tmp_path, "seg-1", build_segment(NOTES))
    assert old.is_file()
    (tmp_path / "seg-2").mkdir()
    segment_files.remove(tmp_path / "seg-2")
    segment_files.remove(tmp_path / "seg-1")
    segment_files.remove(tmp_path / "seg-9")  # gone already: nothing to do
    assert list(tmp_path.iterdir()) == []
