"""memtree.index.survey: what a refresh sees on disk, and what it decides to read, drop or leave skipped."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memtree.index import survey
from memtree.index.manifest import FileEntry, FileTable
from memtree.notes import store

OLD_NS = 1_600_000_000 * 10**9  # long before the racy window


def note(root: Path, rel: str, text: str = "가치관\n", mtime_ns: int = OLD_NS) -> store.FileStat:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return store.FileStat(rel, rel.split("/", 1)[0], mtime_ns, path.stat().st_size)


def known(*stats: store.FileStat) -> FileTable:
    files = FileTable()
    for f in stats:
        files[f.path] = FileEntry(f.tier, f.mtime_ns, f.size, "hash", "seg-1", 1)
    return files


def test_a_walk_sees_every_note_and_a_comparison_finds_new_changed_gone_and_racy(tmp_path: Path) -> None:
    same = note(tmp_path, "bank/same.md")
    edited = note(tmp_path, "bank/edited.md")
    racy = note(tmp_path, "bank/racy.md", mtime_ns=time.time_ns())  # just written: may change unseen
    gone = store.FileStat("bank/gone.md", "bank", OLD_NS, 3)
    files = known(same, edited, racy, gone)
    note(tmp_path, "bank/edited.md", "가치관 원칙\n")  # a new size
    note(tmp_path, "memory/2024-01-07.md")  # new
    note(tmp_path, "bank/.hidden.md")
    note(tmp_path, "bank/notes.txt")
    look = survey.look_at(tmp_path, store.Listings(), None)
    assert look.complete and [f.path for f in look.stats] == [
        "bank/edited.md",
        "bank/racy.md",
        "bank/same.md",
        "memory/2024-01-07.md",
    ]
    changes = survey.changes(look, files, {}, force=False)
    assert [f.path for f in changes.suspects] == ["bank/edited.md", "bank/racy.md", "memory/2024-01-07.md"]
    assert changes.removed == ["bank/gone.md"] and not changes.none


def test_a_skipped_note_stays_skipped_until_its_stat_moves(tmp_path: Path) -> None:
    big = note(tmp_path, "bank/big.md")
    look = survey.look_at(tmp_path, store.Listings(), None)
    skipped = {"bank/big.md": (big.mtime_ns, big.size, "too big"), "bank/was.md": (OLD_NS, 1, "not UTF-8")}
    changes = survey.changes(look, FileTable(), skipped, force=False)
    assert changes.still_skipped == ["bank/big.md"] and changes.skipped_gone == ["bank/was.md"]
    assert not changes.suspects
    note(tmp_path, "bank/big.md", "작아졌다\n")
    changes = survey.changes(survey.look_at(tmp_path, store.Listings(), None), FileTable(), skipped, force=False)
    assert [f.path for f in changes.suspects] == ["bank/big.md"] and not changes.still_skipped


def test_a_told_look_stats_plain_notes_only_and_leaves_the_rest_to_the_walk(tmp_path: Path) -> None:
    a = note(tmp_path, "bank/a.md")
    (tmp_path / "outside.md").write_text("비밀\n", encoding="utf-8")
    (tmp_path / "bank/link.md").symlink_to(tmp_path / "outside.md")
    look = survey.told(tmp_path, ["bank/a.md", "bank/deleted.md"])
    assert look is not None and not look.complete and look.stats == [a]
    assert look.asked == {"bank/a.md", "bank/deleted.md"}
    for hostile in (["bank/link.md"], ["/etc/passwd"], ["bank/../outside.md"], ["bank/.a.md"], ["outside.md"]):
        assert survey.told(tmp_path, hostile) is None, hostile
    changes = survey.changes(look, known(a, store.FileStat("bank/deleted.md", "bank", OLD_NS, 2)), {}, force=False)
    assert changes.removed == ["bank/deleted.md"] and not changes.suspects


def reference(look: survey.Look, files: FileTable, skipped: survey.Skipped) -> survey.Changes:
    """What a walk's comparison must find, note by note: read what is new, changed or racy."""
    racy_after = time.time_ns() - survey.RACY_NS
    on_disk = {f.path for f in look.stats}
    suspects, still = [], []
    for f in look.stats:
        e = files.get(f.path)
        skip = skipped.get(f.path)
        if e is None and skip is not None and (skip[0], skip[1]) == (f.mtime_ns, f.size):
            still.append(f.path)
        elif e is None or (e.mtime_ns, e.size) != (f.mtime_ns, f.size) or f.mtime_ns >= racy_after:
            suspects.append(f)
    removed = [p for p in files if p not in on_disk]
    return survey.Changes(suspects, removed, [p for p in skipped if p not in on_disk], still)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from("same edited racy new gone skip skipmoved".split()))))
def test_a_walks_comparison_finds_what_note_by_note_would(notes: list[tuple[int, str]]) -> None:
    soon = time.time_ns() + 3_600 * 10**9  # inside the racy window on any clock
    files, skipped, stats = FileTable(), {}, []
    for n, kind in dict(notes).items():
        path = f"bank/n{n:02d}.md"
        indexed = store.FileStat(path, "bank", soon if kind == "racy" else OLD_NS, 10 + n)
        if kind in ("skip", "skipmoved"):
            skipped[path] = (OLD_NS, 10 + n, "too big")
        elif kind != "new":
            files[path] = FileEntry("bank", indexed.mtime_ns, indexed.size, "hash", "seg-1", 1)
        if kind != "gone":
            moved = kind in ("edited", "skipmoved")
            stats.append(store.FileStat(path, "bank", indexed.mtime_ns, indexed.size + (1 if moved else 0)))
    stats.sort()
    files.stats()  # made now, then kept in step:
    files.pop(next(iter(files), ""), None)  # a removal ...
    for p in list(files)[-1:]:  # ... a replaced entry ...
        files[p] = files[p]._replace(size=files[p].size + 2)
    if stats and stats[0].path not in files and stats[0].path not in skipped:  # ... and a new entry
        f = stats[0]
        files[f.path] = FileEntry("bank", f.mtime_ns, f.size + 1, "hash", "seg-1", 1)
    assert files.stats() == {(p, e.tier, e.mtime_ns, e.size) for p, e in files.items()}
    look = survey.Look(stats, True, [])
    assert survey.changes(look, files, skipped, force=False) == reference(look, files, skipped)
