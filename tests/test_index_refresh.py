"""memtree.index.chunk_index: a refresh leaves the index a fresh build would make, in memory and on disk,
whatever crashes and whoever reads meanwhile."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memtree.index import chunk_index, manifest, segment_files
from memtree.index.chunk_index import MAX_DELTAS, Index, content_hash
from memtree.text import terms as text

HOUR_NS = 3_600_000_000_000
WORDS = "사과 배 감 망치 드라이버 선반 크론 새벽 색인 점검 해요체 커밋 deploy cron shelf apple hammer review".split()


def live(index: Index) -> dict[str, Any]:
    """Every live note as the index holds it: its entry (bar the segment's name) and each chunk's lines,
    length and term frequencies; checking on the way that each note is live in exactly the segment its
    entry names and that each segment's counts of live chunks agree."""
    out: dict[str, Any] = {}
    for name, seg in index.segments.items():
        tfs: list[dict[str, int]] = [{} for _ in seg.doc_len]
        for t, term in enumerate(seg.terms):
            for j in range(seg.offsets[t], seg.offsets[t + 1]):
                tfs[seg.post_doc[j]][term] = seg.post_tf[j]
        live_docs = 0
        for f, path in enumerate(seg.files):
            entry = index.files.get(path)
            if f in seg.dead_files:
                assert entry is None or entry.segment != name, f"{path} is dead in {name}, which its entry names"
                continue
            assert entry is not None and entry.segment == name, f"{path} is live in {name}, not its entry's segment"
            docs = range(seg.file_start[f], seg.file_start[f + 1])
            assert len(docs) == entry.chunks
            live_docs += len(docs)
            chunks = [(seg.doc_start[d], seg.doc_end[d], seg.doc_len[d], tfs[d]) for d in docs]
            out[path] = (entry.tier, entry.mtime_ns, entry.size, entry.hash, *chunks)
        assert seg.n_live == live_docs == sum(seg.live)
    assert set(out) == set(index.files)
    return out


def fresh(root: Path) -> Index:
    """The index a build from nothing makes of the notes as they are now (in memory: nothing written)."""
    index = Index(root, parallel=False)
    index.persist = False
    index.refresh(force=True)
    return index


def persisted(root: Path) -> Index | None:
    index = Index(root, parallel=False)
    return index if index.load() else None


def assert_like_a_fresh_build(root: Path, index: Index) -> None:
    """The index equals a fresh build, and so does what it left on disk (dead marks and all)."""
    built = fresh(root)
    assert live(index) == live(built)
    assert index.skipped == built.skipped
    saved = persisted(root)
    assert saved is not None, "no persisted index"
    assert live(saved) == live(index)
    assert (saved.version, saved.skipped, saved.base, saved.deltas) == (
        index.version,
        index.skipped,
        index.base,
        index.deltas,
    )
    assert {n: s.dead_files for n, s in saved.segments.items()} == {n: s.dead_files for n, s in index.segments.items()}


def assert_never_silently_wrong(root: Path) -> None:
    """What a reader loads from disk is one whole version: each note it holds at the content on disk is
    indexed as a fresh build indexes it, and each it holds at other content has another stat, so the
    reader's next check reads it again. Then that check brings it to a fresh build."""
    saved = persisted(root)
    if saved is not None:
        built = live(fresh(root))
        for path, held in live(saved).items():
            now = built.get(path)
            if now is not None and now[3] == held[3]:
                assert held[4:] == now[4:], f"{path}: indexed otherwise than its content"
            elif (root / path).is_file():
                st = (root / path).stat()
                assert (held[1], held[2]) != (st.st_mtime_ns, st.st_size), f"{path}: stale with the same stat"
    reader = Index(root, parallel=False)
    reader.refresh()
    assert live(reader) == live(fresh(root))


def write(root: Path, rel: str, text: str | bytes, mtime_ns: int) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


class Clock:
    """mtimes an hour in the past, a second apart: nothing is racily clean unless a test says so."""

    def __init__(self) -> None:
        self.now = time.time_ns() - HOUR_NS

    def tick(self) -> int:
        self.now += 1_000_000_000
        return self.now


def note_text(rng: random.Random, title: str, n: int) -> str:
    body = "\n".join(f"- {' '.join(rng.choices(WORDS, k=rng.randint(2, 6)))}" for _ in range(n))
    return f"# {title}\n\n{body}\n"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Clock, random.Random]:
    root, clock, rng = tmp_path / "root", Clock(), random.Random(7)
    for tier in ("bank", "memory", "recall"):
        (root / tier).mkdir(parents=True)
    (root / "tree-index.json").write_text('{"version": 1, "nodes": []}\n', encoding="utf-8")
    for i in range(10):
        write(root, f"bank/n{i}.md", note_text(rng, f"노트 {i}", 3), clock.tick())
    # a long log keeps a few notes' edits a small delta (under a fifth of all bytes)
    write(root, "memory/2026-11-28.md", note_text(rng, "2026-11-28", 300), clock.tick())
    write(root, "recall/hot.md", note_text(rng, "hot", 2), clock.tick())
    return root, clock, rng


def test_any_mix_of_edits_walked_or_told_leaves_what_a_fresh_build_makes(
    tree: tuple[Path, Clock, random.Random], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, clock, rng = tree
    index = Index(root, parallel=False)
    index.refresh()
    seen = {"merge": 0, "rebuild": 0, "skip": 0, "racy": 0, "removed": 0}
    merge = Index._merge_deltas

    def counted(self: Index) -> Any:
        seen["merge"] += 1
        return merge(self)

    monkeypatch.setattr(Index, "_merge_deltas", counted)
    for step in range(70):
        notes = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
        bank = [p for p in notes if p.startswith("bank/")]
        kind = "big" if step in (40, 60) else rng.choice(["edit", "edit", "add", "remove", "touch", "binary", "racy"])
        rel = rng.choice(bank)
        if kind == "edit":
            write(root, rel, note_text(rng, rel, rng.randint(1, 5)), clock.tick())
        elif kind == "add":
            rel = f"bank/new/n{step}.md"
            write(root, rel, note_text(rng, "새 노트", 2), clock.tick())
        elif kind == "remove" and len(bank) > 4:
            (root / rel).unlink()
            seen["removed"] += 1
        elif kind == "touch":
            os.utime(root / rel, ns=(clock.tick(), clock.now))
        elif kind == "binary":
            write(root, rel, b"caf\xe9 \x00 not text", clock.tick())
            seen["skip"] += 1
        elif kind == "racy":  # same size, same mtime, other bytes, within the racy window
            now = time.time_ns()
            write(root, rel, note_text(rng, rel, 2), now)
            index.refresh(paths=[rel]) if step % 2 else index.refresh()
            text = (root / rel).read_text(encoding="utf-8")
            swapped = text.replace("- ", "* ", 1) if "- " in text else text
            write(root, rel, swapped, now)
            seen["racy"] += 1
        elif kind == "big":  # enough of the log rewritten to pass the delta share: a rebuild
            write(root, "memory/2026-11-28.md", note_text(rng, "2026-11-28", 300), clock.tick())
        # every other step as a watcher does: told which notes its events named
        report = index.refresh(paths=[rel, "memory/2026-11-28.md"]) if step % 2 else index.refresh()
        seen["rebuild"] += report.rebuilt
        assert_like_a_fresh_build(root, index)
        assert len(index.deltas) <= MAX_DELTAS
    assert all(seen.values()), seen


def test_a_told_refresh_rehashes_notes_indexed_lately_as_the_walk_does(
    tree: tuple[Path, Clock, random.Random],
) -> None:
    # Coarse timestamps: a note indexed in the last two seconds can change again without its stat
    # moving; a refresh told of another note still reads it (its hash tells)
    root, clock, rng = tree
    index = Index(root, parallel=False)
    index.refresh()
    now = time.time_ns()
    write(root, "bank/n1.md", "# 과일\n\n사과와 배는 가을 과일이다.\n", now)
    index.refresh(paths=["bank/n1.md"])
    write(root, "bank/n1.md", "# 과일\n\n자두와 배는 가을 과일이다.\n", now)  # 사과 → 자두: same bytes, same mtime
    write(root, "bank/n2.md", note_text(rng, "n2", 2), clock.tick())
    report = index.refresh(paths=["bank/n2.md"])
    assert report.changed == ["bank/n1.md", "bank/n2.md"]
    assert_like_a_fresh_build(root, index)


def test_a_merge_folds_the_newest_deltas_and_an_older_one_only_once_they_outgrow_it(
    tree: tuple[Path, Clock, random.Random], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, clock, rng = tree
    index = Index(root, parallel=False)
    index.refresh()
    folds: list[list[int]] = []  # each merge: the live chunks of the deltas it folds, oldest first
    merge = chunk_index.merge_segments

    def recorded(segments: list[Any]) -> Any:
        folds.append([seg.n_live for seg in segments])
        return merge(segments)

    monkeypatch.setattr(chunk_index, "merge_segments", recorded)
    for i in range(24):  # a new note each time: one more delta, nothing in an older one dies
        write(root, f"bank/new/n{i}.md", note_text(rng, "새 노트", 1 + i % 3), clock.tick())
        assert not index.refresh().rebuilt
        assert len(index.deltas) <= MAX_DELTAS
    assert len(folds) >= 3
    for sizes in folds:
        # the two newest always (one delta too many, plus the new one); an older one only when
        # no larger than all those newer than it
        assert len(sizes) >= 2
        assert all(sizes[i] <= sum(sizes[i + 1 :]) for i in range(len(sizes) - 2)), sizes
    assert any(len(sizes) <= MAX_DELTAS for sizes in folds), folds  # some left the oldest as it was
    assert_like_a_fresh_build(root, index)


@pytest.mark.parametrize(
    "asked",
    [
        "{outside}",
        "../secret.md",
        "bank/../../secret.md",
        "bank/image.png",
        "bank/.hidden.md",
        "tree-index.json",
        "bank",
    ],
)
def test_a_told_path_that_is_no_plain_note_has_every_note_checked_instead(
    tree: tuple[Path, Clock, random.Random], tmp_path: Path, asked: str
) -> None:
    root, clock, rng = tree
    outside = tmp_path / "secret.md"
    write(tmp_path, "secret.md", "# 비밀\n\n- password hunter2\n", clock.tick())
    write(root, "bank/image.png", b"\x89PNG\r\n\x1a\n not a note", clock.tick())
    write(root, "bank/.hidden.md", "# 숨김\n\n- hidden hunter2\n", clock.tick())
    index = Index(root, parallel=False)
    index.refresh()
    write(root, "bank/n1.md", note_text(rng, "n1", 2), clock.tick())  # a change the walk finds
    report = index.refresh(paths=[asked.format(outside=outside)])
    assert report.changed == ["bank/n1.md"]
    assert all(p.startswith(("bank/n", "memory/", "recall/")) for p in index.files), sorted(index.files)
    assert_like_a_fresh_build(root, index)


def test_a_writer_never_writes_a_segment_another_writers_manifest_names(
    tree: tuple[Path, Clock, random.Random], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a reader that loads the committed manifest must find its segments as that writer left them
    root, clock, rng = tree
    a, b = Index(root, parallel=False), Index(root, parallel=False)
    a.refresh()
    b.refresh()
    written: list[str] = []
    real = segment_files.write
    monkeypatch.setattr(
        segment_files, "write", lambda parent, name, seg: (written.append(name), real(parent, name, seg))
    )
    for stale in (lambda: a.refresh(), lambda: a.refresh(force=True), lambda: a.refresh(paths=["bank/n2.md"])):
        write(root, "bank/n1.md", note_text(rng, "n1", 2), clock.tick())
        b.refresh()  # b commits; what a holds is now older than the disk
        write(root, "bank/n2.md", note_text(rng, "n2", 2), clock.tick())
        named = set(manifest.read(a.dir, chunk_index.STAMP).segments)
        written.clear()
        stale()
        assert written and not named & set(written), (named, written)
    assert_like_a_fresh_build(root, a)


class Crash(BaseException):
    """The process dies here: nothing after it reaches the disk."""


@contextlib.contextmanager
def crashing_after(k: int) -> Iterator[list[int]]:
    """Inside, the k-th rename or deletion (0-based) never happens, nor any after it: the process dies
    there. Yields the count of those tried."""
    count = [0]

    def guard(real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            count[0] += 1
            if count[0] > k:
                raise Crash
            return real(*args, **kwargs)

        return call

    with pytest.MonkeyPatch.context() as mp:
        for name in ("replace", "rename", "unlink", "rmdir"):
            mp.setattr(os, name, guard(getattr(os, name)))
        mp.setattr(shutil, "rmtree", guard(shutil.rmtree))
        yield count


def copy_root(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, symlinks=True)  # copy2: mtimes kept, to the nanosecond
    return dst


@pytest.mark.parametrize("case", ["delta", "told", "fold", "merge", "removal", "rebuild"])
def test_a_crash_at_any_step_of_a_refresh_leaves_an_index_never_silently_wrong(
    tree: tuple[Path, Clock, random.Random], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str
) -> None:
    root, clock, rng = tree
    if case == "fold":
        monkeypatch.setattr(manifest, "FOLD_MIN_ROWS", 0)  # every journal of a row or more starts a rows file
    index = Index(root, parallel=False)
    index.refresh()
    for i in range(MAX_DELTAS if case == "merge" else 2):  # deltas already there, so the next one merges them
        write(root, f"bank/n{i}.md", note_text(rng, f"n{i}", 3), clock.tick())
        index.refresh()
    edits = {f"bank/n{i}.md": note_text(rng, "edited", 4) for i in (7, 8)}
    mtime = clock.tick()
    completed = False
    for k in range(100):
        work = copy_root(root, tmp_path / "work")
        for rel, body in edits.items():
            write(work, rel, body, mtime)
        if case == "removal":
            (work / "bank/n9.md").unlink()
        writer = Index(work, parallel=False)
        writer.load()
        with crashing_after(k) as count:
            try:
                if case == "told":
                    writer.refresh(paths=[*edits, "bank/n9.md"])
                else:
                    writer.refresh(force=case == "rebuild")
                completed = True
            except Crash:
                pass
        assert_never_silently_wrong(work)  # read by the next process
        if completed:
            assert count[0] > 0, "the refresh renamed or deleted nothing: no crash was tried"
            break
    assert completed


def test_an_index_of_the_former_layout_is_rebuilt_and_its_files_swept(
    tree: tuple[Path, Clock, random.Random],
) -> None:
    root, _, _ = tree
    folder = root / ".memtree" / "index"
    (folder / "seg-1").mkdir(parents=True)
    (folder / "seg-1" / "terms.txt").write_text("사과\n", encoding="utf-8")
    (folder / ".seg-2.tmp99").mkdir()
    (folder / "version").write_text("1", encoding="utf-8")
    old = {"format": 5, "byteorder": sys.byteorder, "tokenizer": text.TOKENIZER_VERSION, "version": 1}
    old |= {"base": "seg-1", "deltas": [], "segments": ["seg-1"], "skipped": {}, "files": {}}
    (folder / "manifest.json").write_text(json.dumps(old), encoding="utf-8")
    index = Index(root, parallel=False)
    assert index.refresh().rebuilt
    assert sorted(p.name for p in folder.iterdir()) == [f"manifest-{index.seq}.json", index.rows, "seg-1"]
    assert (folder / "seg-1").is_file()
    assert_like_a_fresh_build(root, index)


READER = r"""
import json, sys, time
from bisect import bisect_left
from pathlib import Path
from memtree.index.chunk_index import Index

root, stop, table = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
versions = {p: {h: v for h, v in hv.items()} for p, hv in table["versions"].items()}
tokens = table["tokens"]  # path -> version -> the term of its token
ok = failed = 0
problems = []
while not stop.exists() or ok == 0:
    index = Index(root, max_note_bytes=10**7, parallel=False)
    if not index.load():
        failed += 1
        continue
    ok += 1
    for path, e in index.files.items():
        if path not in versions:
            continue  # a note the test does not edit
        v = versions[path].get(e.hash)
        if v is None:
            problems.append(f"{path}: a hash no version had")
            continue
        for name, seg in index.segments.items():
            f = seg.file_id(path)
            if f is None:
                continue
            if (f in seg.dead_files) != (name != e.segment):
                problems.append(f"{path}: live or dead in the wrong segment ({name}, entry {e.segment})")
        seg = index.segments[e.segment]
        f = seg.file_id(path)
        if f is None:
            problems.append(f"{path}: not in {e.segment}")
            continue
        docs = set(range(seg.file_start[f], seg.file_start[f + 1]))
        for w, token in tokens[path].items():
            t = bisect_left(seg.terms, token)
            there = t < len(seg.terms) and seg.terms[t] == token and any(
                seg.post_doc[j] in docs for j in range(seg.offsets[t], seg.offsets[t + 1])
            )
            if there != (int(w) == v):
                problems.append(f"{path}: version {v} indexed, token of version {w} {'found' if there else 'missing'}")
    if problems:
        break
print(json.dumps({"ok": ok, "failed": failed, "problems": problems[:5]}))
"""


def test_a_reader_in_another_process_sees_one_whole_version_while_refreshes_run(
    tree: tuple[Path, Clock, random.Random], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, clock, rng = tree
    monkeypatch.setattr(manifest, "FOLD_MIN_ROWS", 1)  # rows files come and go too
    paths = [f"bank/n{i}.md" for i in range(10)]
    steps = 60
    texts = {p: [note_text(rng, p, 2) + f"\n- {token(p, v)}\n" for v in range(steps + 1)] for p in paths}
    table = {
        "versions": {p: {content_hash(t.encode()): v for v, t in enumerate(texts[p])} for p in paths},
        "tokens": {p: {v: term(token(p, v)) for v in range(steps + 1)} for p in paths},
    }
    assert len({t for by in table["tokens"].values() for t in by.values()}) == len(paths) * (steps + 1)
    for p in paths:
        write(root, p, texts[p][0], clock.tick())
    version = dict.fromkeys(paths, 0)
    index = Index(root, parallel=False)
    index.refresh()
    (tmp_path / "table.json").write_text(json.dumps(table), encoding="utf-8")
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(root), str(stop), str(tmp_path / "table.json")],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.3)
        for step in range(steps):
            for p in rng.sample(paths, 2):
                version[p] += 1
                write(root, p, texts[p][version[p]], clock.tick())
            if step % 20 == 19:
                index.refresh(force=True)
            elif step % 2:
                index.refresh(paths=paths)
            else:
                index.refresh()
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=120)
    found = json.loads(out)
    assert found["problems"] == [] and found["ok"] > 0, found
    assert_like_a_fresh_build(root, index)


def term(word: str) -> str:
    """The one index term of ``word``."""
    (found,) = text.terms(word)
    return found


def token(path: str, version: int) -> str:
    """A word naming one version of one note (consonants only: one term, which no stemming shortens)."""

    def letters(n: int) -> str:
        return "".join("bcdfghjklm"[int(d)] for d in str(n))

    return f"zq{letters(int(path.removesuffix('.md').split('/n')[-1]))}x{letters(version)}z"
