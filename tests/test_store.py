"""memtree.notes.store: tier walking with ignore rules, safe reads, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memtree.notes import store


def test_walk_lists_notes_of_the_tiers_and_skips_noise(tmp_path: Path) -> None:
    files = [
        "bank/a.md",
        "bank/sub/b.markdown",
        "memory/2026-11-28.md",
        "recall/hot.md",
        "bank/.hidden.md",
        "bank/a.md~",
        "bank/.a.md.swp",
        "bank/#a.md#",
        "bank/_archive/old.md",
        "bank/notes.txt",
        "elsewhere/c.md",
    ]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n", encoding="utf-8")
    found, warnings = store.walk(tmp_path)
    assert [(f.path, f.tier) for f in found] == [
        ("bank/a.md", "bank"),
        ("bank/sub/b.markdown", "bank"),
        ("memory/2026-11-28.md", "memory"),
        ("recall/hot.md", "recall"),
    ]
    assert warnings == []
    assert all(f.size == 2 and f.mtime_ns > 0 for f in found)


def test_walk_skips_a_symlink_loop_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "bank/topic").mkdir(parents=True)
    (tmp_path / "bank/topic/a.md").write_text("가치관\n", encoding="utf-8")
    (tmp_path / "bank/topic/back").symlink_to(tmp_path / "bank", target_is_directory=True)
    found, warnings = store.walk(tmp_path)
    assert [f.path for f in found] == ["bank/topic/a.md"]
    assert len(warnings) == 1 and warnings[0].startswith("bank/topic/back: skipped")


def _tree_with_links(root: Path) -> None:
    for rel in [
        "bank/a.md",
        "bank/sub/b.md",
        "bank/sub/deep/c.md",
        "bank/.hidden.md",
        "memory/2024-01-07.md",
        "shared/d.md",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("가치관\n", encoding="utf-8")
    (root / "bank/linked").symlink_to(root / "shared", target_is_directory=True)
    (root / "bank/sub/out").symlink_to(root.parent, target_is_directory=True)


def _quiet_listings() -> store.Listings:
    listings = store.Listings()
    listings.quiet_before = 2**62  # every folder counts as long still: listings are kept
    return listings


def test_a_walk_with_listings_finds_what_a_plain_walk_finds(tmp_path: Path) -> None:
    _tree_with_links(tmp_path)
    listings = _quiet_listings()
    plain = store.walk(tmp_path)
    assert store.walk(tmp_path, listings=listings) == plain  # listing every folder
    assert store.walk(tmp_path, listings=listings) == plain  # from the kept listings
    assert [f.path for f in plain[0]] == [
        "bank/a.md",
        "bank/linked/d.md",
        "bank/sub/b.md",
        "bank/sub/deep/c.md",
        "memory/2024-01-07.md",
    ]
    assert len(plain[1]) == 1 and plain[1][0].startswith("bank/sub/out: skipped, a symlink leading outside")


def test_kept_listings_spare_listing_unchanged_folders_but_every_note_is_stated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree_with_links(tmp_path)
    listings = _quiet_listings()
    store.walk(tmp_path, listings=listings)
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(store.os, "scandir", lambda path: listed.append(str(path)) or scandir(path))
    (tmp_path / "bank/sub/deep/c.md").write_text("가치관 배포\n", encoding="utf-8")  # an edit: no folder changes
    found, _ = store.walk(tmp_path, listings=listings)
    # only the folders holding a symlink are listed again; the edit is seen through the note's own stat
    assert sorted(listed) == [str(tmp_path / "bank"), str(tmp_path / "bank/sub")]
    assert {f.path: f.size for f in found}["bank/sub/deep/c.md"] == len("가치관 배포\n".encode())


def test_a_folder_that_changed_since_listed_is_listed_again(tmp_path: Path) -> None:
    _tree_with_links(tmp_path)
    deep = tmp_path / "bank/sub/deep"
    os.utime(deep, ns=(10**18, 10**18))  # why: a new file then moves the folder's mtime, whatever the clock's grain
    listings = _quiet_listings()
    store.walk(tmp_path, listings=listings)
    (deep / "new.md").write_text("새 노트\n", encoding="utf-8")
    (deep / "c.md").unlink()
    found, _ = store.walk(tmp_path, listings=listings)
    assert [f.path for f in found] == [
        "bank/a.md",
        "bank/linked/d.md",
        "bank/sub/b.md",
        "bank/sub/deep/new.md",
        "memory/2024-01-07.md",
    ]


def test_a_folder_changed_within_the_racy_window_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bank").mkdir()
    (tmp_path / "bank/a.md").write_text("x\n", encoding="utf-8")
    listings = store.Listings()
    listings.quiet_before = os.stat(tmp_path / "bank").st_ctime_ns  # changed at that very moment: not still yet
    store.walk(tmp_path, listings=listings)
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(store.os, "scandir", lambda path: listed.append(str(path)) or scandir(path))
    store.walk(tmp_path, listings=listings)
    assert listed == [str(tmp_path / "bank")]


def test_read_upto_reads_the_file_as_it_is_now_never_past_the_limit(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes("가치관 ".encode() * 10)
    whole = note.read_bytes()
    for expect in (0, 10, len(whole) - 1, len(whole), len(whole) + 1, 10_000):  # the size a stat saw
        assert store.read_upto(note, 1000, expect) == whole
        assert store.read_upto(note, 20, expect) == whole[:20]
    note.write_bytes(b"")
    assert store.read_upto(note, 1000, 10) == b""
    with pytest.raises(FileNotFoundError):
        store.read_upto(tmp_path / "gone.md", 1000, 0)


def test_read_note_drops_a_bom_and_refuses_binary(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes("\ufeff가치관\n".encode())
    assert store.read_note(note) == "가치관\n"
    note.write_bytes(b"abc\x00def")
    with pytest.raises(UnicodeDecodeError):
        store.read_note(note)
    note.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):
        store.read_note(note)


def test_atomic_write_replaces_the_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "tree-index.json"
    store.atomic_write(target, b"one")
    store.atomic_write(target, "둘".encode())
    assert target.read_bytes() == "둘".encode()
    assert [p.name for p in target.parent.iterdir()] == ["tree-index.json"]


def try_lock(path: Path) -> bool:
    """Take the lock without waiting from a second file description; True when it was free."""
    fcntl = pytest.importorskip("fcntl")
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_locked_holds_an_exclusive_lock_until_exit(tmp_path: Path) -> None:
    lock = tmp_path / ".memtree" / "index.lock"
    with store.locked(lock):
        assert lock.exists()
        assert not try_lock(lock)
    assert try_lock(lock)


def test_atomic_write_keeps_the_replaced_files_mode_and_gives_new_files_the_usual_one(tmp_path: Path) -> None:
    note = tmp_path / "bank" / "a.md"
    note.parent.mkdir()
    note.write_text("old\n", encoding="utf-8")
    note.chmod(0o640)
    store.atomic_write(note, b"new\n")
    assert note.read_bytes() == b"new\n"
    assert note.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "tree-index.json"
    old_mask = os.umask(0o022)
    try:
        store.atomic_write(fresh, b"{}\n")
    finally:
        os.umask(old_mask)
    assert fresh.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("bank/identity/가치관.md", True),
        ("memory/2026-11-28.md", True),
        ("recall/hot.markdown", True),
        ("bank/x.png", False),
        ("bank", False),
        ("notes/x.md", False),
        ("tree-index.json", False),
        ("/etc/passwd.md", False),
        ("bank/../../x.md", False),
        ("bank/./x.md", False),
        ("bank//x.md", False),
        ("bank/.hidden/x.md", False),
        ("bank/_archive/old.md", False),
        ("bank/x.md~", False),
    ],
)
def test_a_note_path_has_the_shape_of_a_note_the_walk_lists(rel: str, expected: bool) -> None:
    assert store.note_path(rel) is expected
