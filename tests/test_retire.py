"""No verb removes an entry's words (issue 30): each one that retires an entry marks it or archives it."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtree import MemTree
from memtree.notes import entries

KST = timezone(timedelta(hours=9))
JAN = datetime(2026, 1, 10, 10, 0, tzinfo=KST)
MAR = datetime(2026, 3, 1, 10, 0, tzinfo=KST)
NOTE = "bank/infra/redis.md"
PARENT = "e-20260110-1a2b3c4d5e6f7a8b"
CLASHED = (
    "# redis\n\n"
    f"- Redis pool size is 20 <!-- memtree: id={PARENT}; created=2026-01-10T10:00:00+09:00 -->\n"
    f"- Redis pool size is 80 <!-- memtree: id={PARENT}.b5172f; created=2026-01-10T10:00:00+09:00; clash=c-1 -->\n"
)
"""A note as memtree's merge driver leaves an entry two clones edited two ways (memtree.write.merge)."""


def _line(mt: MemTree, words: str) -> str:
    note = (mt.root / NOTE).read_text(encoding="utf-8")
    return f"{NOTE}:{next(e.start for e in entries.parse_entries(note) if e.content == words)}"


def _added(mt: MemTree) -> str:
    mt.add("Redis pool size is 50", to="infra/redis", now=JAN)
    mt.add("Redis pool size is 80", to="infra/redis", now=MAR)
    return "Redis pool size is 50"


def _updated(mt: MemTree) -> str:
    mt.add("Redis pool size is 50", to="infra/redis", now=JAN)
    mt.update(_line(mt, "Redis pool size is 50"), "Redis pool size is 80", now=MAR)
    return "Redis pool size is 50"


def _resolved(keep: str) -> Callable[[MemTree], str]:
    def run(mt: MemTree) -> str:
        mt.add("배포는 금요일에 하지 않는다", to="infra/redis", now=JAN)
        added = mt.add("금요일에도 배포한다", to="infra/redis", now=MAR)
        cid = getattr(added, "conflict_id", None)
        assert cid, added  # a negation in other words: a conflict for a person
        mt.resolve_conflict(cid, keep, now=MAR)
        return "배포는 금요일에 하지 않는다" if keep == "new" else "금요일에도 배포한다"

    return run


def _clash(keep: str) -> Callable[[MemTree], str]:
    def run(mt: MemTree) -> str:
        (mt.root / NOTE).parent.mkdir(parents=True, exist_ok=True)
        (mt.root / NOTE).write_text(CLASHED, encoding="utf-8")
        assert [c.id for c in mt.conflicts()] == ["c-1"]
        mt.resolve_conflict("c-1", keep, now=MAR)
        assert mt.conflicts() == []
        return "Redis pool size is 20" if keep == "new" else "Redis pool size is 80"

    return run


def _forgotten(mt: MemTree) -> str:
    mt.add("Redis pool size is 50", to="infra/redis", now=JAN)
    mt.forget(_line(mt, "Redis pool size is 50"), reason="wrong", now=MAR)
    return "Redis pool size is 50"


def _hand(mt: MemTree) -> str:
    mt.add("Redis pool size is 50", to="infra/redis", now=JAN)
    note = mt.root / NOTE
    note.write_text(note.read_text(encoding="utf-8").replace("is 50 ", "is 80 "), encoding="utf-8")
    os.utime(note, (MAR.timestamp(), MAR.timestamp()))
    mt.refresh()
    return "Redis pool size is 50"


VERBS = {
    "add replacing": _added,
    "update": _updated,
    "conflicts resolve --keep new": _resolved("new"),
    "conflicts resolve --keep old": _resolved("old"),
    "clash resolve --keep new": _clash("new"),
    "clash resolve --keep old": _clash("old"),
    "forget": _forgotten,
    "hand edit in place": _hand,
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_that_retires_an_entry_leaves_its_words_on_disk(make_root: Callable[..., Path], verb: str) -> None:
    root = make_root({"bank/readme.md": "# readme\n\nNotes live here.\n"})
    mt = MemTree(root, refresh_interval=0)
    words = VERBS[verb](mt)
    note = (root / NOTE).read_text(encoding="utf-8")
    if verb == "forget":  # moved, with its reason, to the archive search never reads
        assert words not in note and words in (root / "bank/_archive/infra/redis.md").read_text(encoding="utf-8")
        return
    retired = [e for e in entries.parse_entries(note) if e.content == words]
    assert len(retired) == 1, note
    assert entries.is_retired(retired[0].meta) and not entries.held(retired[0].meta, date(2026, 3, 2)), note
    by = retired[0].meta.extra.get(entries.BY)
    current = [e for e in entries.parse_entries(note) if e.meta.id == by]
    assert len(current) == 1 and not entries.is_retired(current[0].meta), note
