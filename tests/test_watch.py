"""memtree.serve.watch: relevant(), the Watcher in a background thread, the heartbeat, a read-only
.memtree/, and `memtree watch` stopped by SIGINT (also when started with SIGINT ignored) and SIGTERM.

No timing is asserted: every wait polls for an outcome with a generous deadline.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import DEADLINE_S, bump, grown, wait_for
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.index.chunk_index import Index
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.notes.heartbeat import HEARTBEAT_FILE
from memtree.serve import watch
from memtree.serve.watch import Watcher, relevant, stopping_on_signals


class Log:
    """A thread-safe collector of the watcher's log lines."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)

    @property
    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def actions(self) -> list[str]:
        """Lines that report an action (not the start/stop lines, warnings or errors)."""
        return [ln for ln in self.lines if not ln.startswith(("watching ", "stopped", "warning:", "error:"))]

    def has(self, line: str) -> bool:
        return line in self.lines

    def wait(self, line: str) -> None:
        wait_for(lambda: self.has(line), f"log line {line!r}; got {self.lines}")

    def wait_prefix(self, prefix: str) -> str:
        wait_for(lambda: any(ln.startswith(prefix) for ln in self.lines), f"a line {prefix!r}…; got {self.lines}")
        return next(ln for ln in self.lines if ln.startswith(prefix))


@contextmanager
def watching(root: Path, split: bool = True, heartbeat: bool = True) -> Iterator[tuple[Watcher, Log]]:
    """A Watcher on ``root`` running in a thread (index built first), stopped and joined on exit.

    ``heartbeat=False``: do not wait for the heartbeat file (for a .memtree/ that cannot be written).
    """
    mt = MemTree(root, refresh_interval=0)
    mt.refresh()  # the index exists before the watch starts, so only later edits are actions
    log = Log()
    watcher = Watcher(mt, log, split=split)
    thread = threading.Thread(target=watcher.run, name="memtree-watch", daemon=True)
    thread.start()
    try:
        wait_for(lambda: any(ln.startswith("watching ") for ln in log.lines), "the 'watching' line")
        if heartbeat:
            wait_for(lambda: (root / ".memtree" / HEARTBEAT_FILE).exists(), "the first heartbeat")
        yield watcher, log
    finally:
        watcher.stop()
        thread.join(timeout=DEADLINE_S)
        assert not thread.is_alive(), "the watcher did not stop"
    assert log.lines[-1] == "stopped"


def persisted(root: Path) -> Index:
    """The index as the watcher left it on disk (loaded, not refreshed), read under the index lock.

    Why the lock: a refresh replaces the manifest, then deletes the segments the old one named, so
    a lock-free load that read the old manifest can find its segments gone and fail ("no persisted
    index" in 1 of 10 runs). Writers re-load under this lock; so does this reader.
    """
    index = Index(root)
    with store.locked(index.dir.parent / "index.lock"):
        assert index.load(), "no persisted index"
    return index


def indexed_as_on_disk(root: Path, rel: str) -> bool:
    """Whether the persisted index holds ``rel`` as it is on disk now (same mtime and size)."""
    entry = persisted(root).files.get(rel)
    st = (root / rel).stat()
    return entry is not None and (entry.mtime_ns, entry.size) == (st.st_mtime_ns, st.st_size)


# --- relevant() ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("bank/identity/values.md", True),
        ("bank/기술/크론.md", True),
        ("memory/2026-11-29.md", True),
        ("recall/hot.markdown", True),
        ("tree-index.json", True),
        ("bank/technical", True),  # a folder (a moved folder is one event)
        ("bank", True),
        ("bank/.values.md.swp", False),
        ("bank/values.md~", False),
        ("bank/.#values.md", False),
        ("bank/#values.md#", False),
        ("bank/values.md.tmp", False),
        ("bank/.hidden/x.md", False),
        ("bank/_archive/old.md", False),
        ("bank/image.png", False),
        (".git/index", False),
        (".git/refs/heads/main.md", False),
        (".memtree/index/manifest.json", False),
        (".memtree/watch.json", False),
        ("README.md", False),
        ("conflicts.json", False),
        ("memtree.yaml", False),
        ("notes/x.md", False),
    ],
)
def test_relevant(tmp_path: Path, rel: str, expected: bool) -> None:
    assert relevant(tmp_path, str(tmp_path / rel)) is expected


def test_relevant_refuses_paths_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    assert relevant(root, str(tmp_path / "bank/x.md")) is False
    assert relevant(root, str(root)) is False
    assert relevant(root, str(root / "bank" / ".." / ".." / "bank/x.md")) is False


def test_relevant_accepts_a_root_given_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "bank").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert relevant(link, str(real / "bank/x.md")) is True


# --- the watcher ---------------------------------------------------------------------------------


def test_an_edit_is_re_indexed_with_one_log_line(sample_root: Path) -> None:
    rel = "bank/project/rules.md"
    note = sample_root / rel
    with watching(sample_root) as (watcher, log):
        version = persisted(sample_root).version
        bump(note, note.read_text(encoding="utf-8") + "\n- 화요일에는 배포 대신 회고를 한다\n")
        log.wait(f"re-indexed {rel}")
        wait_for(lambda: indexed_as_on_disk(sample_root, rel), "the persisted index to hold the edit")
        assert persisted(sample_root).version > version
        assert log.actions() == [f"re-indexed {rel}"]
        assert watcher.actions == 1
    hits = MemTree(sample_root).search("화요일 회고", tier="bank").hits
    assert hits and hits[0].path == rel


def test_a_new_note_is_indexed_and_a_deleted_one_dropped(sample_root: Path) -> None:
    new, gone = "bank/ops/배포-체크리스트.md", "bank/identity/personality.md"
    with watching(sample_root) as (_, log):
        (sample_root / "bank/ops").mkdir()
        (sample_root / new).write_text(
            "# 배포 체크리스트\n\n- 마이그레이션을 스테이징에서 먼저 돌린다\n", encoding="utf-8"
        )
        log.wait(f"indexed {new}")
        log.wait("added node ops/배포-체크리스트")
        wait_for(lambda: indexed_as_on_disk(sample_root, new), "the new note in the persisted index")
        (sample_root / gone).unlink()
        log.wait(f"dropped {gone}")
        # Why wait for the node line too: the watcher updates tree-index.json after the index, so on a
        # loaded machine the line may come a moment after the index is persisted
        log.wait(f"dropped node identity/personality ({gone} is gone)")
        wait_for(lambda: gone not in persisted(sample_root).files, "the deleted note gone from the index")
        assert log.actions() == [
            f"indexed {new}",
            "added node ops/배포-체크리스트",  # the watcher keeps tree-index.json in step too
            f"dropped {gone}",
            f"dropped node identity/personality ({gone} is gone)",
        ]


def test_a_renamed_folder_is_dropped_and_indexed_under_its_new_name(sample_root: Path) -> None:
    with watching(sample_root) as (_, log):
        (sample_root / "bank/technical").rename(sample_root / "bank/기술")
        expected = {
            "dropped bank/technical/cron-design.md",
            "dropped bank/technical/heartbeat-reflect.md",
            "indexed bank/기술/cron-design.md",
            "indexed bank/기술/heartbeat-reflect.md",
            "added node 기술/cron-design",
            "added node 기술/heartbeat-reflect",
            "dropped node technical/cron-design (bank/technical/cron-design.md is gone)",
            "dropped node technical/heartbeat-reflect (bank/technical/heartbeat-reflect.md is gone)",
        }
        wait_for(lambda: expected <= set(log.lines), f"{expected}; got {log.lines}")
        files = persisted(sample_root).files
        assert "bank/기술/cron-design.md" in files and "bank/technical/cron-design.md" not in files
        assert sorted(log.actions()) == sorted(expected)
        assert "기술/cron-design" in treemod.load(sample_root).by_id


def test_a_folder_moved_in_from_outside_is_indexed(sample_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "incoming"
    outside.mkdir()
    (outside / "a.md").write_text("# 들어온 노트\n\n밖에서 옮겨 온 노트\n", encoding="utf-8")
    with watching(sample_root) as (_, log):
        shutil.move(str(outside), str(sample_root / "bank/incoming"))
        log.wait("indexed bank/incoming/a.md")
        assert "bank/incoming/a.md" in persisted(sample_root).files


def test_a_note_grown_past_the_limit_is_split(sample_root: Path) -> None:
    rel = "bank/technical/cron-design.md"
    note = sample_root / rel
    with watching(sample_root) as (_, log):
        grow(note)
        line = log.wait_prefix(f"split {rel} into ")
        assert note.stat().st_size <= 10_240
        tree = treemod.load(sample_root)
        kids = tree.by_id["technical/cron-design"].children
        assert kids and line == f"split {rel} into {len(kids)} notes"
        wait_for(
            lambda: all(tree.by_id[k].path in persisted(sample_root).files for k in kids),
            "the children in the persisted index",
        )
        # its own writes (children, parent, tree-index.json) are not reported as edits
        sentinel = "bank/project/decisions.md"
        bump(sample_root / sentinel, (sample_root / sentinel).read_text(encoding="utf-8") + "\n- 센티널\n")
        log.wait(f"re-indexed {sentinel}")
        assert log.actions() == [f"re-indexed {rel}", line, f"re-indexed {sentinel}"]


def test_without_split_a_grown_note_is_only_re_indexed(sample_root: Path) -> None:
    rel = "bank/technical/cron-design.md"
    note = sample_root / rel
    with watching(sample_root, split=False) as (_, log):
        grow(note)
        log.wait(f"re-indexed {rel}")
        sentinel = "bank/project/decisions.md"  # a later action: the first one is over by then
        bump(sample_root / sentinel, (sample_root / sentinel).read_text(encoding="utf-8") + "\n- 센티널\n")
        log.wait(f"re-indexed {sentinel}")
        assert log.actions() == [f"re-indexed {rel}", f"re-indexed {sentinel}"]
    assert note.stat().st_size > 10_240 and not (sample_root / "bank/technical/cron-design").exists()


def test_editor_temp_files_and_git_produce_no_action(sample_root: Path) -> None:
    with watching(sample_root) as (_, log):
        bank = sample_root / "bank/project"
        for name in (".rules.md.swp", "rules.md~", ".#rules.md", "rules.md.tmp", "4913"):
            (bank / name).write_text("임시 파일\n", encoding="utf-8")
        (sample_root / ".git/objects").mkdir(parents=True)
        (sample_root / ".git/objects/ab.md").write_text("# git 내부\n", encoding="utf-8")
        (sample_root / ".git/COMMIT_EDITMSG").write_text("메모 추가\n", encoding="utf-8")
        (sample_root / "README.md").write_text("# 루트 밖 문서\n", encoding="utf-8")
        for name in (".rules.md.swp", "rules.md~", ".#rules.md", "rules.md.tmp", "4913"):
            (bank / name).unlink()
        sentinel = "bank/project/decisions.md"
        bump(sample_root / sentinel, (sample_root / sentinel).read_text(encoding="utf-8") + "\n- 센티널\n")
        log.wait(f"re-indexed {sentinel}")
        assert log.actions() == [f"re-indexed {sentinel}"]
        assert not any(ln.startswith(("warning:", "error:")) for ln in log.lines), log.lines


def test_an_editor_save_by_rename_is_one_re_index(sample_root: Path) -> None:
    """vim and many editors write a temp file and rename it over the note."""
    rel = "bank/identity/values.md"
    note = sample_root / rel
    with watching(sample_root) as (_, log):
        tmp = note.with_name(".values.md.tmp")
        tmp.write_text(note.read_text(encoding="utf-8") + "\n- 새 원칙: 한국어 노트는 NFC로 저장한다\n", "utf-8")
        os.replace(tmp, note)
        log.wait(f"re-indexed {rel}")
        wait_for(lambda: indexed_as_on_disk(sample_root, rel), "the saved note in the persisted index")
        assert log.actions() == [f"re-indexed {rel}"]


def test_an_error_is_logged_and_the_watcher_keeps_going(sample_root: Path) -> None:
    tree_file = sample_root / "tree-index.json"
    good = tree_file.read_bytes()
    with watching(sample_root) as (watcher, log):
        tree_file.write_text('{"version": 1, "nodes": [', encoding="utf-8")
        grow(sample_root / "bank/technical/cron-design.md")  # the split needs the tree: it fails
        log.wait_prefix("error: ")
        tree_file.write_bytes(good)
        rel = "bank/project/rules.md"
        bump(sample_root / rel, (sample_root / rel).read_text(encoding="utf-8") + "\n- 다시 살아남\n")
        log.wait(f"re-indexed {rel}")
        assert watcher.actions >= 2
    assert len([ln for ln in log.lines if ln.startswith("error: ")]) >= 1


def test_the_heartbeat_says_alive_while_running_and_not_after_stop(sample_root: Path) -> None:
    beat_file = sample_root / ".memtree" / HEARTBEAT_FILE
    assert MemTree(sample_root).status().watcher is None
    with watching(sample_root):
        assert beat_file.exists()
        beat = MemTree(sample_root).status().watcher
        assert beat is not None and beat["alive"] is True and beat["running"] is True
        assert beat["pid"] == os.getpid()
        doc = json.loads(CliRunner().invoke(app, ["status", "--root", str(sample_root), "--json"]).stdout)
        assert doc["watcher"]["alive"] is True and doc["open_conflict_count"] == 0
    after = MemTree(sample_root).status().watcher
    assert after is not None and after["alive"] is False and after["running"] is False
    doc = json.loads(CliRunner().invoke(app, ["status", "--root", str(sample_root), "--json"]).stdout)
    assert doc["watcher"]["alive"] is False


def test_a_heartbeat_of_a_dead_process_is_not_alive(sample_root: Path) -> None:
    state = sample_root / ".memtree"
    state.mkdir(exist_ok=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    beat = {"pid": int(dead.stdout), "started": "2026-11-29T09:00:00+09:00", "time": time.time(), "running": True}
    (state / HEARTBEAT_FILE).write_text(json.dumps(beat | {"actions": 0}), encoding="utf-8")
    assert MemTree(sample_root).status().watcher["alive"] is False
    stale = beat | {"pid": os.getpid(), "time": time.time() - 3600, "actions": 0}
    (state / HEARTBEAT_FILE).write_text(json.dumps(stale), encoding="utf-8")
    assert MemTree(sample_root).status().watcher["alive"] is False


def test_a_heartbeat_written_just_after_now_is_zero_seconds_old(tmp_path: Path) -> None:
    from memtree.notes.heartbeat import heartbeat

    (tmp_path / ".memtree").mkdir()
    beat = {"pid": os.getpid(), "time": 1_000.04, "running": True, "actions": 0}
    (tmp_path / ".memtree" / HEARTBEAT_FILE).write_text(json.dumps(beat), encoding="utf-8")
    seen = heartbeat(tmp_path, now=1_000.0)  # the watcher beat between our clock read and our file read
    assert seen is not None and f"{seen['age_s']} s ago" == "0.0 s ago"


# --- `memtree watch` -----------------------------------------------------------------------------

IGNORING_SIGINT = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does to a background job (&, CI)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'memtree', *sys.argv[1:]])\n"
)
"""Runs `python -m memtree ARGS` in the same process (same pid) with SIGINT ignored, as exec keeps it."""


def stop_the_watch_command(root: Path, signum: int, sigint_ignored: bool = False) -> tuple[int, list[str], str]:
    """Start `memtree watch`, wait until it is watching, send ``signum``: its exit code, stdout lines, stderr."""
    args = ["watch", "--root", str(root)]
    command = (
        [sys.executable, "-c", IGNORING_SIGINT, *args] if sigint_ignored else [sys.executable, "-m", "memtree", *args]
    )
    out = Log()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8") as proc:

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                out(line.rstrip("\n"))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            # a cold interpreter importing typer and watchdog on a loaded box: a longer deadline
            wait_for(
                lambda: proc.poll() is not None or any(" watching " in ln for ln in out.lines), "the watching line", 30
            )
            assert proc.poll() is None, (out.lines, proc.poll())
            wait_for(lambda: (root / ".memtree" / HEARTBEAT_FILE).exists(), "the watch command's heartbeat")
            beat = MemTree(root).status().watcher
            assert beat is not None and beat["alive"] is True and beat["pid"] == proc.pid
            proc.send_signal(signum)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(timeout=DEADLINE_S)  # the pipe closes when the process ends
        assert not reader.is_alive()
        assert proc.stderr is not None
        stderr = proc.stderr.read()
    return proc.returncode, out.lines, stderr


def assert_stopped_cleanly(root: Path, code: int, lines: list[str], stderr: str) -> None:
    """Exit 0, "stopped" last (after the observer was joined: no warning), no traceback, heartbeat not alive."""
    assert code == 0, (lines, stderr)
    assert lines and lines[-1].endswith(" stopped"), lines
    assert not any(" warning: " in ln or " error: " in ln for ln in lines), lines
    assert "Traceback" not in stderr, stderr
    beat = MemTree(root).status().watcher
    assert beat is not None and beat["running"] is False and beat["alive"] is False


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["sigint-default", "sigint-ignored-by-the-shell"])
def test_the_watch_command_stops_cleanly_on_sigint(sample_root: Path, sigint_ignored: bool) -> None:
    assert_stopped_cleanly(sample_root, *stop_the_watch_command(sample_root, signal.SIGINT, sigint_ignored))


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["sigint-default", "sigint-ignored-by-the-shell"])
def test_the_watch_command_stops_cleanly_on_sigterm(sample_root: Path, sigint_ignored: bool) -> None:
    assert_stopped_cleanly(sample_root, *stop_the_watch_command(sample_root, signal.SIGTERM, sigint_ignored))


def test_stopping_on_signals_stops_the_watcher_and_restores_the_handlers(sample_root: Path) -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    watcher = Watcher(MemTree(sample_root), Log())
    with stopping_on_signals(watcher):
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
        signal.raise_signal(signal.SIGTERM)  # the handler runs in this (main) thread before the call returns
        assert watcher.stopping
        with pytest.raises(KeyboardInterrupt):  # asked twice: stop now
            signal.raise_signal(signal.SIGINT)
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_state_folder_that_cannot_be_written_is_said_once_and_the_watch_goes_on(
    sample_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """We run as root, where chmod stops nothing: the writers into .memtree/ refuse instead."""
    state = sample_root / store.STATE_DIR
    real_write, real_locked = store.atomic_write, store.locked
    refusing = {"on": True}
    beats = {"tried": 0}

    def refuse(path: Path) -> None:
        if path.name == HEARTBEAT_FILE:
            beats["tried"] += 1
        if refusing["on"] and path.is_relative_to(state):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
        refuse(path)
        real_write(path, data, durable=durable)

    @contextmanager
    def locked(path: Path) -> Iterator[None]:
        refuse(path)
        with real_locked(path):
            yield

    monkeypatch.setattr(store, "atomic_write", atomic_write)
    monkeypatch.setattr(store, "locked", locked)
    monkeypatch.setattr(watch, "HEARTBEAT_S", 0.05)  # the loop reads it from its own module
    rel = "bank/project/rules.md"
    note = sample_root / rel
    line = (
        f"warning: cannot write {state} (Permission denied): "
        "no heartbeat for `memtree status` and no saved index; watching goes on"
    )
    with watching(sample_root, heartbeat=False) as (_, log):
        wait_for(lambda: beats["tried"] >= 5, "five heartbeats tried")
        bump(note, note.read_text(encoding="utf-8") + "\n- 읽기 전용이어도 편집은 보인다\n")
        log.wait(f"re-indexed {rel}")  # the index lives on in the watcher's memory
        tried = beats["tried"]
        wait_for(lambda: beats["tried"] >= tried + 5, "five more heartbeats tried")
        assert [ln for ln in log.lines if ln.startswith(("warning:", "error:"))] == [line]
        refusing["on"] = False  # the folder became writable: the heartbeat is back, the warning re-armed
        wait_for(lambda: (state / HEARTBEAT_FILE).exists(), "the heartbeat once writable")
        refusing["on"] = True
        tried = beats["tried"]
        wait_for(lambda: beats["tried"] >= tried + 5, "five heartbeats tried after it failed again")
    assert [ln for ln in log.lines if ln.startswith(("warning:", "error:"))] == [line, line]
    assert log.actions() == [f"re-indexed {rel}"]


def test_an_event_that_raises_is_logged_and_the_observer_lives_on(
    sample_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = sample_root / "bank/project/rules.md"
    real = Watcher.dispatch
    calls = {"n": 0}

    def flaky(self: Watcher, event: object) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("odd event")
        real(self, event)

    monkeypatch.setattr(Watcher, "dispatch", flaky)
    with watching(sample_root) as (_, log):
        note.write_text(note.read_text(encoding="utf-8") + "\n- 첫 번째 편집\n", encoding="utf-8")
        log.wait_prefix("error: RuntimeError: odd event")
        # the first edit's later events (modified, closed) were still collected: it is indexed
        wait_for(lambda: indexed_as_on_disk(sample_root, "bank/project/rules.md"), "the first edit re-indexed")
        # and an edit made after the error, as a fresh burst, is seen and indexed too
        note.write_text(note.read_text(encoding="utf-8") + "\n- 두 번째 편집 quokka\n", encoding="utf-8")
        wait_for(lambda: indexed_as_on_disk(sample_root, "bank/project/rules.md"), "the second edit re-indexed")


def grow(note: Path, past: int = 10_240) -> None:
    """Append Korean sections until the note is over ``past`` bytes."""
    bump(note, grown(note, past))


# --- a refresh told which notes changed ------------------------------------------------------------


class Event:
    """A watchdog event as Watcher.dispatch reads it."""

    def __init__(self, event_type: str, src: Path, dest: Path | None = None, is_directory: bool = False) -> None:
        self.event_type, self.src_path, self.is_directory = event_type, str(src), is_directory
        self.dest_path = str(dest) if dest else ""


def no_walk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the walks of every note and folder from here on."""
    walks: list[int] = []
    walk = store.walk

    def counted(*args: object, **kwargs: object) -> object:
        walks.append(1)
        return walk(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "walk", counted)
    return walks


def acted(watcher: Watcher) -> None:
    """Run the action the collected events call for, as the loop does once they have been quiet."""
    watcher._last = watcher._first = time.monotonic() - 10
    watcher._maybe_act()


def test_events_naming_notes_refresh_just_those_notes(sample_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mt = MemTree(sample_root, refresh_interval=3600)
    mt.refresh()
    log = Log()
    watcher = Watcher(mt, log, split=False)
    edited = sample_root / "bank/identity/values.md"
    bump(edited, edited.read_text(encoding="utf-8") + "\n- 제퍼쿼츠 확인용 문장\n")
    walks = no_walk(monkeypatch)
    watcher.dispatch(Event("modified", edited))
    watcher.dispatch(Event("modified", edited.parent, is_directory=True))  # says only that a file in it changed
    acted(watcher)
    assert walks == []
    assert log.actions() == ["re-indexed bank/identity/values.md"]
    assert [h.path for h in mt.search("제퍼쿼츠").hits][:1] == ["bank/identity/values.md"]


def test_a_deleted_note_named_by_its_event_is_dropped(sample_root: Path) -> None:
    mt = MemTree(sample_root, refresh_interval=3600)
    mt.index()
    log = Log()
    watcher = Watcher(mt, log, split=False)
    gone = sample_root / "bank/technical/cron-design.md"
    gone.unlink()
    watcher.dispatch(Event("deleted", gone))
    acted(watcher)
    assert log.has("dropped bank/technical/cron-design.md")
    assert "bank/technical/cron-design.md" not in mt.state.index.files
    assert log.has("dropped node technical/cron-design (bank/technical/cron-design.md is gone)")


def test_an_event_on_a_folder_has_every_note_checked(sample_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mt = MemTree(sample_root, refresh_interval=3600)
    mt.refresh()
    watcher = Watcher(mt, Log(), split=False)
    moved = sample_root / "bank/moved"
    (sample_root / "bank/technical").rename(moved)
    walks = no_walk(monkeypatch)
    watcher.dispatch(Event("moved", sample_root / "bank/technical", moved, is_directory=True))
    acted(watcher)
    assert walks  # (a second walk: the node sync the added and dropped notes call for)
    assert any(p.startswith("bank/moved/") for p in mt.state.index.files)


def test_a_named_note_that_is_a_symlink_or_no_file_is_never_read(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mt = MemTree(sample_root, refresh_interval=3600)
    mt.refresh()
    secret = tmp_path / "secret.md"
    secret.write_text("- 외부비밀문장 outside the root\n", encoding="utf-8")
    os.symlink(secret, sample_root / "bank/link.md")
    os.mkfifo(sample_root / "bank/pipe.md")  # opening it to read would wait forever
    mt.refresh(paths=["bank/pipe.md"])
    report = mt.refresh(paths=["bank/link.md", "bank/pipe.md"])
    assert "bank/link.md" not in mt.state.index.files and "bank/pipe.md" not in mt.state.index.files
    assert any("bank/link.md: skipped, a symlink leading outside" in w for w in report.warnings)
    assert mt.search("외부비밀문장").hits == ()


def test_the_daemon_refreshes_the_notes_edited_since_the_last_request(sample_root: Path) -> None:
    from memtree.serve.dispatch import EditWatcher

    mt = MemTree(sample_root, refresh_interval=3600)
    watcher = EditWatcher(mt, Log(), split=False)
    note = sample_root / "bank/identity/values.md"
    watcher.dispatch(Event("modified", note))
    watcher.dispatch(Event("created", sample_root / "bank/new.md", None))
    assert watcher.edited
    assert watcher.edits() == ["bank/identity/values.md", "bank/new.md"]
    assert not watcher.edited and watcher.edits() == []
    watcher.dispatch(Event("created", sample_root / "bank/folder", is_directory=True))
    assert watcher.edits() is None  # every note is checked
