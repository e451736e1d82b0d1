"""memtree.index.manifest: a journal over a rows file, committed by one rename, read whole or not at all."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memtree.index import manifest
from memtree.index.manifest import FileEntry, FileTable, Manifest
from memtree.notes import store

STAMP = {"format": 5, "byteorder": "little", "tokenizer": 2}


def entry(i: int, segment: str = "seg-1") -> FileEntry:
    return FileEntry("bank", 1_700_000_000_000_000_000 + i, 100 + i, f"{i:032x}", segment, 1 + i % 3)


def table(n: int) -> FileTable:
    return FileTable({f"bank/노트-{i:03d}.md": entry(i) for i in range(n)})


def committed(folder: Path, files: FileTable, after: Manifest | None = None, fold: bool = False) -> Manifest:
    """Write the manifest that follows ``after`` (the first, when None)."""
    m = Manifest(1, "seg-1", [], ["seg-1"], {"bank/bad.md": (1, 2, "not UTF-8 text")}, files)
    if after is not None:
        m.version, m.rows, m.seq = after.version + 1, after.rows, after.seq
    manifest.write(folder, m, STAMP, fold)
    return m


def newest_doc(folder: Path) -> dict[str, object]:
    doc: dict[str, object] = orjson.loads((folder / manifest.newest(folder)[1]).read_bytes())
    return doc


def same(a: Manifest, b: Manifest) -> bool:
    return (dict(a.files), a.version, a.base, a.deltas, a.segments, a.skipped, a.rows, a.seq) == (
        dict(b.files),
        b.version,
        b.base,
        b.deltas,
        b.segments,
        b.skipped,
        b.rows,
        b.seq,
    )


def test_every_change_to_a_file_table_is_journaled(tmp_path: Path) -> None:
    files = table(3)
    assert files.changed == {}
    files["bank/new.md"] = entry(9)
    del files["bank/노트-000.md"]
    assert files.pop("bank/노트-001.md") == entry(1)
    assert files.pop("bank/none.md", None) is None
    assert files.changed == {"bank/new.md": entry(9), "bank/노트-000.md": None, "bank/노트-001.md": None}
    for refused in (lambda: files.update({}), lambda: files.setdefault("x", entry(1)), files.popitem, files.clear):
        with pytest.raises(TypeError):
            refused()
    with pytest.raises(AttributeError):
        entry(1).size = 5  # type: ignore[misc]  # entries are immutable: a change is a new entry, journaled


def test_racy_paths_are_those_set_lately_and_recent_enough() -> None:
    files = table(4)  # all four were just set: candidates
    assert sorted(files.racy(entry(2).mtime_ns)) == ["bank/노트-002.md", "bank/노트-003.md"]
    assert files.recent == {"bank/노트-002.md", "bank/노트-003.md"}  # the older ones are dropped for good
    files["bank/노트-000.md"] = entry(7)
    del files["bank/노트-003.md"]
    assert sorted(files.racy(entry(2).mtime_ns)) == ["bank/노트-000.md", "bank/노트-002.md"]


def test_a_journal_round_trips_over_its_rows_file(tmp_path: Path) -> None:
    files = table(200)
    first = committed(tmp_path, files)  # no rows file yet: one is written
    assert first.rows and files.changed == {}
    files["bank/노트-005.md"] = entry(5, "seg-2")
    del files["bank/노트-006.md"]
    files["memory/2026-12-01.md"] = entry(300, "seg-2")
    second = committed(tmp_path, files, after=first)
    assert second.rows == first.rows  # three rows changed: written as a journal
    assert sorted(p.name for p in tmp_path.glob("manifest-*")) == ["manifest-2.json"]
    doc = newest_doc(tmp_path)
    assert set(doc["changed"]) == {"bank/노트-005.md", "bank/노트-006.md", "memory/2026-12-01.md"}  # type: ignore[arg-type]
    back = manifest.read(tmp_path, STAMP)
    assert same(back, second) and (back.seq, back.committed) == manifest.committed(tmp_path)
    assert back.files.changed == files.changed  # what the next write carries on


def test_a_journal_past_the_fold_limit_starts_a_new_rows_file(tmp_path: Path) -> None:
    files = table(100)
    m = committed(tmp_path, files)
    for i in range(manifest.fold_limit(len(files)) + 1):
        files[f"bank/노트-{i:03d}.md"] = entry(i, "seg-2")
    m.version += 1
    assert manifest.write(tmp_path, m, STAMP)
    assert files.changed == {}
    assert newest_doc(tmp_path)["changed"] == {}
    assert dict(manifest.read(tmp_path, STAMP).files) == dict(files)


def test_the_newest_manifest_is_the_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = table(5)
    first = committed(tmp_path, files)
    kept = (tmp_path / "manifest-1.json").read_bytes()
    files["bank/new.md"] = entry(9, "seg-2")
    second = committed(tmp_path, files, after=first)
    (tmp_path / "manifest-1.json").write_bytes(kept)  # a crash before the older one was deleted
    (tmp_path / "manifest.json").write_bytes(b'{"format": 5}')  # the former layout's, never read
    assert same(manifest.read(tmp_path, STAMP), second)
    # a reader that listed the folder just before a writer replaced the newest looks again
    listed = manifest.newest
    stale = iter([(1, "manifest-0.json")])
    monkeypatch.setattr(manifest, "newest", lambda folder: next(stale, None) or listed(folder))
    assert same(manifest.read(tmp_path, STAMP), second)


def test_a_crash_before_the_manifest_is_replaced_leaves_the_previous_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = table(50)
    committed(tmp_path, files)
    before = manifest.read(tmp_path, STAMP)
    files["bank/노트-001.md"] = entry(1, "seg-2")
    real = store.atomic_write

    def dies_at_the_manifest(path: Path, data: bytes, durable: bool = True) -> None:
        if manifest.MANIFEST_NAME.fullmatch(path.name):
            raise OSError(28, "No space left on device")
        real(path, data, durable)

    monkeypatch.setattr(store, "atomic_write", dies_at_the_manifest)
    m = Manifest(2, "seg-1", [], ["seg-1"], {}, files, before.rows, before.seq)
    with pytest.raises(OSError):
        manifest.write(tmp_path, m, STAMP, fold=True)  # the new rows file is written, the manifest is not
    assert (m.rows, m.seq) == (before.rows, before.seq)  # the writer still knows what is committed
    assert len(list(tmp_path.glob("rows-*.json"))) == 2
    assert same(manifest.read(tmp_path, STAMP), before)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rows", "../../etc/passwd"),
        ("rows", "/etc/passwd"),
        ("rows", "rows-1-abc.json/../../x"),
        ("segments", ["../seg-1"]),
        ("segments", ["seg-1/../../x"]),
        ("segments", [7]),
        ("format", 4),
    ],
)
def test_a_manifest_naming_anything_but_its_own_files_is_refused(tmp_path: Path, key: str, value: object) -> None:
    committed(tmp_path, table(3))
    doc = newest_doc(tmp_path)
    doc[key] = value
    (tmp_path / "manifest-1.json").write_bytes(orjson.dumps(doc))
    with pytest.raises((ValueError, OSError)):
        manifest.read(tmp_path, STAMP)


def test_a_rows_file_that_is_not_the_one_named_or_has_short_rows_is_refused(tmp_path: Path) -> None:
    m = committed(tmp_path, table(3))
    rows = tmp_path / m.rows
    good = rows.read_bytes()
    doc = orjson.loads(good)
    doc["name"] = "rows-9-0.json"
    rows.write_bytes(orjson.dumps(doc))
    with pytest.raises(ValueError):
        manifest.read(tmp_path, STAMP)
    doc = orjson.loads(good)
    doc["files"]["bank/노트-000.md"] = doc["files"]["bank/노트-000.md"][:5]
    rows.write_bytes(orjson.dumps(doc))
    with pytest.raises(ValueError):
        manifest.read(tmp_path, STAMP)
    rows.write_bytes(good[: len(good) // 2])  # torn
    with pytest.raises(ValueError):
        manifest.read(tmp_path, STAMP)


def test_the_same_rows_give_the_same_bytes(tmp_path: Path) -> None:
    # an index build is byte for byte reproducible (bench/same_index.py, tests/test_helper.py)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    committed(tmp_path / "a", table(20))
    committed(tmp_path / "b", table(20))
    for name in ("manifest-1.json", *(p.name for p in (tmp_path / "a").glob("rows-*"))):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
