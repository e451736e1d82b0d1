"""Nothing lost, nothing outside the root: the attacks of issue 9 (lock, symlinks, hand edits, leftovers).

Each test here failed before its fix: the write lock lived in .memtree/ (deletable), symlinks were
followed out of the root, read-then-replace dropped lines appended meanwhile, temp files of a killed
writer stayed forever, and a read-only root raised tracebacks.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from multiprocessing import get_context
from pathlib import Path

import pytest
from helpers import assert_one_line_error, snapshot, write_root
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.errors import ChangedOnDisk, MemtreeError, OutsideRoot, ReadOnlyRoot
from memtree.notes import store
from memtree.notes.entries import parse_entries

FACTS = [{"id": "facts", "path": "bank/facts.md", "keywords": ["facts"], "parent": None, "children": [], "weight": 1.0}]


def facts_root(tmp_path: Path) -> Path:
    return write_root(tmp_path / "root", {"bank/facts.md": "# facts\n"}, FACTS)


def all_entries(root: Path) -> list[str]:
    return [e.content for p in (root / "bank").rglob("*.md") for e in parse_entries(p.read_text(encoding="utf-8"))]


# --- the write lock survives `rm -rf .memtree` ---------------------------------------------------

WRITERS = 3
ADDS = 60


def fact(worker: int, i: int) -> str:
    words = "사과 바다 기차 연필 구름 책상 bridge candle meadow rocket violin harbor".split()
    n = worker * ADDS + i
    return f"w{worker}x{i}: {words[n % len(words)]} {words[(n * 5 + 3) % len(words)]} {n * 7919 % 104729}"


def _writer(root: str, worker: int) -> None:
    mt = MemTree(root, refresh_interval=3600)
    for i in range(ADDS):
        mt.add(fact(worker, i), to="facts")


def test_deleting_the_state_folder_while_writers_run_loses_nothing(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(root), w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    deletions = 0
    # Why a loop and not a timer: .memtree/ is deleted as often as the machine allows until every writer is done
    while any(p.is_alive() for p in procs):
        shutil.rmtree(root / ".memtree", ignore_errors=True)
        deletions += 1
        procs[0].join(timeout=0.005)
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    found = all_entries(root)
    expected = {fact(w, i) for w in range(WRITERS) for i in range(ADDS)}
    assert expected <= set(found), sorted(expected - set(found))[:5]
    assert sum(1 for c in found if c in expected) == len(expected)  # none twice
    assert deletions > 1


def test_the_lock_holds_across_processes_even_when_the_state_folder_is_gone(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('free')\n"
        "except BlockingIOError:\n    print('held')\n"
    )
    with store.write_lock(root):
        shutil.rmtree(root / ".memtree", ignore_errors=True)
        out = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "held"
    out = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "free"


def test_the_write_lock_is_reentrant_within_a_thread(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    with store.write_lock(root), store.write_lock(root):
        assert store.holding(root)
    assert not store.holding(root)


# --- symlinks never lead out of the root ----------------------------------------------------------


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A root whose bank/ holds links out: a folder (bank/ext), a file (bank/passwd.md), /usr-like (bank/usr)."""
    outside = tmp_path / "outside"
    (outside / "many").mkdir(parents=True)
    (outside / "planted.md").write_text("# planted\n\n- zebracorn 비밀 outside text\n" + "x" * 12_000 + "\n")
    (outside / "secret.md").write_text("- passwordish zanzibar-line root:x:0:0\n")
    for i in range(20):
        (outside / "many" / f"sys{i}.md").write_text(f"- system file {i}\n")
    root = write_root(tmp_path / "root", {"bank/facts.md": "# facts\n\n- 배포는 금요일에 하지 않는다.\n"}, FACTS)
    os.symlink(outside, root / "bank" / "ext")
    os.symlink(outside / "secret.md", root / "bank" / "passwd.md")
    os.symlink(outside / "many", root / "bank" / "usr")
    return root, outside


def test_search_context_export_and_check_never_read_through_a_link_out(planted: tuple[Path, Path]) -> None:
    root, outside = planted
    before = snapshot(outside)
    mt = MemTree(root, refresh_interval=0)
    mt.index()
    tree_text = (root / "tree-index.json").read_text(encoding="utf-8")
    assert "bank/ext" not in tree_text and "bank/usr" not in tree_text and "passwd" not in tree_text
    for word in ("zebracorn", "zanzibar", "system"):
        result = mt.search(word)
        assert not result.hits, word
    assert any("outside the memory root" in w for w in mt.search("배포").warnings)
    assert "zanzibar" not in str(mt.export())
    runner = CliRunner()
    out = runner.invoke(app, ["check", "--root", str(root)])
    assert "sys1" not in out.output and "planted" not in out.output
    assert snapshot(outside) == before


def test_no_write_goes_through_a_link_out(planted: tuple[Path, Path]) -> None:
    root, outside = planted
    before = snapshot(outside)
    mt = MemTree(root, refresh_interval=0)
    with pytest.raises(OutsideRoot):
        mt.add("a new fact about zebras", to="bank/ext/new.md")
    with pytest.raises(MemtreeError):
        mt.split("bank/ext/planted.md", 2048)
    mt.decay()
    mt.consolidate()
    assert snapshot(outside) == before
    assert not (outside / "new.md").exists()


def test_a_log_folder_linked_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = write_root(tmp_path / "root", {"bank/facts.md": "# facts\n"}, FACTS)
    shutil.rmtree(root / "memory")
    os.symlink(outside, root / "memory")
    with pytest.raises(OutsideRoot):
        MemTree(root).log("14:20 배포 끝")
    assert list(outside.iterdir()) == []


def test_inside_resolves_links_for_missing_files_too(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    os.symlink(tmp_path, root / "bank" / "up")
    assert store.inside(root, "bank/facts.md") == (root / "bank/facts.md").resolve()
    for bad in ("bank/up/x.md", "../x.md", "/etc/passwd", "bank/../../x.md"):
        with pytest.raises(OutsideRoot):
            store.inside(root, bad)


# --- a write never replaces bytes it did not see ----------------------------------------------------


def test_save_refuses_a_file_changed_since_it_was_read(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    note = root / "bank/facts.md"
    with store.write_lock(root):
        snap = store.read(root, "bank/facts.md")
        note.write_text("# facts, retitled by hand\n", encoding="utf-8")  # an edit, not an append
        with pytest.raises(ChangedOnDisk):
            store.save(root, snap, b"# facts\n- memtree's version\n")
        assert note.read_text(encoding="utf-8") == "# facts, retitled by hand\n"
        assert store.rewrite(root, "bank/facts.md", lambda t: t + "- memtree's line\n")
    assert note.read_text(encoding="utf-8") == "# facts, retitled by hand\n- memtree's line\n"


def test_an_entry_added_after_a_hand_append_keeps_both(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    note = root / "bank/facts.md"
    with store.write_lock(root):
        snap = store.read(root, "bank/facts.md")
        with open(note, "a", encoding="utf-8") as f:
            f.write("- a hand line\n")
        store.save(root, snap, b"# facts\n- memtree's entry\n")  # memtree's change is an append: done in place
    assert note.read_text(encoding="utf-8") == "# facts\n- a hand line\n- memtree's entry\n"


def test_an_edit_carries_lines_appended_since_the_read(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    note = root / "bank/facts.md"
    note.write_text("# facts\n- pool size 50\n", encoding="utf-8")
    with store.write_lock(root):
        snap = store.read(root, "bank/facts.md")
        with open(note, "a", encoding="utf-8") as f:
            f.write("- a hand line\n")
        store.save(root, snap, b"# facts\n- pool size 80\n")  # a rewrite: the appended line follows it
    assert note.read_text(encoding="utf-8") == "# facts\n- pool size 80\n- a hand line\n"


def test_an_append_is_not_carried_into_a_json_file(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    with store.write_lock(root):
        snap = store.read(root, "tree-index.json")
        with open(root / "tree-index.json", "a", encoding="utf-8") as f:
            f.write("\n")
        with pytest.raises(ChangedOnDisk):
            store.save(root, snap, b"{}\n")


def test_adds_while_a_script_appends_to_the_same_note_lose_no_hand_line(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    # Why no split here: an add is an append, done in place; the split's rename is tested on its own below
    (root / "memtree.yaml").write_text("split:\n  max_bytes: 10000000\n", encoding="utf-8")
    note = root / "bank/facts.md"
    done = threading.Event()
    written: list[str] = []

    def appender() -> None:
        n = 0
        while not done.is_set() or n < 5:
            line = f"- handline {n} 손으로 쓴 줄\n"
            with open(note, "a", encoding="utf-8") as f:
                f.write(line)
            written.append(line.strip())
            n += 1
            done.wait(0.001)  # pacing only: the test ends when the adds end, not on a timer

    thread = threading.Thread(target=appender)
    thread.start()
    mt = MemTree(root, refresh_interval=3600)
    try:
        for i in range(25):
            mt.add(fact(9, i), to="facts")
    finally:
        done.set()
        thread.join()
    text = "\n".join(p.read_text(encoding="utf-8") for p in (root / "bank").rglob("*.md"))
    lost = [line for line in written if line not in text]
    assert not lost, lost[:5]
    assert all(fact(9, i) in text for i in range(25))


# --- crash leftovers ---------------------------------------------------------------------------------


def test_a_write_sweeps_its_folders_leftover_temp_files_and_sweep_cleans_the_root(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    bank_left = root / "bank" / ".facts.md.memtree-k3j4h5.tmp"
    old_style = root / ".tree-index.json.k3j4h5g6.tmp"
    mine = root / "bank" / ".my-own.tmp"  # not memtree's: never touched
    for p in (bank_left, old_style, mine):
        p.write_text("half a file")
    MemTree(root).add("배포는 화요일 오전에 한다", to="facts")
    assert not bank_left.exists()
    assert old_style.exists()
    assert store.sweep(root) == [".tree-index.json.k3j4h5g6.tmp"]
    assert mine.exists()


def test_init_ignores_memtree_temp_files_in_git(tmp_path: Path) -> None:
    root = __import__("memtree.notes.root", fromlist=["init"]).init(tmp_path / "fresh")[0]
    assert ".*.memtree-*.tmp" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()


# --- a read-only root: one line, exit 2 ---------------------------------------------------------------


def _refuse(*_: object, **__: object) -> None:
    raise OSError(errno.EROFS, "Read-only file system")


def test_a_write_to_a_read_only_root_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = facts_root(tmp_path)
    before = snapshot(root)
    monkeypatch.setattr(store.tempfile, "mkstemp", _refuse)
    with pytest.raises(ReadOnlyRoot, match="read-only"):
        MemTree(root).add("배포는 화요일 오전에 한다", to="bank/deploy.md")
    args = ["add", "배포는 화요일 오전에 한다", "--to", "bank/deploy.md", "--root", str(root)]
    result = CliRunner().invoke(app, args)
    assert_one_line_error(result, "read-only", "nothing was written")
    assert snapshot(root) == before


# --- imports plant nothing outside bank/ notes -------------------------------------------------------


def export_doc(entries: list[dict[str, object]], nodes: list[dict[str, object]] | None = None) -> bytes:
    import json

    return json.dumps({"memtree": "export", "version": 1, "entries": entries, "nodes": nodes or []}).encode()


def node_at(path: str, node_id: str = "planted") -> dict[str, object]:
    return {"id": node_id, "path": path, "keywords": [], "parent": None, "children": [], "weight": 1.0}


@pytest.mark.parametrize(
    "path",
    [
        ".git/hooks/pre-commit",
        "memtree.yaml",
        "recall/hot.md",
        "tree-index.json",
        "bank/_archive/x.md",
        "bank/.hidden/x.md",
        "bank/a\x00b.md",
        "bank/" + "가" * 100 + ".md",  # 300 bytes: over the file system's name limit
        "bank/" + "x/" * 600 + "y.md",
    ],
)
def test_an_import_naming_anything_but_a_bank_note_is_one_line_and_writes_nothing(tmp_path: Path, path: str) -> None:
    root = facts_root(tmp_path)
    before = snapshot(root)
    for doc in (export_doc([], [node_at(path)]), export_doc([{"path": path, "text": "planted", "meta": {}}])):
        source = tmp_path / "doc.json"
        source.write_bytes(doc)
        result = CliRunner().invoke(app, ["import", str(source), "--root", str(root)])
        assert_one_line_error(result)
        assert snapshot(root) == before


def test_an_import_through_a_file_used_as_a_folder_is_one_line(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    before = snapshot(root)
    source = tmp_path / "doc.json"
    source.write_bytes(export_doc([{"path": "bank/facts.md/inner.md", "text": "planted", "meta": {}}]))
    result = CliRunner().invoke(app, ["import", str(source), "--root", str(root)])
    assert_one_line_error(result, "is a file, not a folder")
    assert snapshot(root) == before


def test_an_import_through_a_link_out_writes_nothing_outside(planted: tuple[Path, Path]) -> None:
    root, outside = planted
    before = snapshot(outside)
    source = root.parent / "doc.json"
    source.write_bytes(export_doc([{"path": "bank/ext/planted.md", "text": "planted by import", "meta": {}}]))
    result = CliRunner().invoke(app, ["import", str(source), "--root", str(root)])
    assert_one_line_error(result, "outside the memory root")
    assert snapshot(outside) == before


def test_check_reports_leftovers_and_notes_without_a_node_and_fix_repairs_both(tmp_path: Path) -> None:
    root = facts_root(tmp_path)
    (root / "bank" / ".facts.md.memtree-dead01.tmp").write_text("half")
    (root / "bank" / "imported.md").write_text("# imported\n\n- 들여온 사실 하나\n", encoding="utf-8")
    runner = CliRunner()
    first = runner.invoke(app, ["check", "--root", str(root)])
    assert first.exit_code == 1
    assert "leftover" in first.stdout and "no-node" in first.stdout
    fixed = runner.invoke(app, ["check", "--fix", "--root", str(root)])
    assert fixed.exit_code == 0, fixed.stdout
    assert not (root / "bank" / ".facts.md.memtree-dead01.tmp").exists()
    assert runner.invoke(app, ["check", "--root", str(root)]).exit_code == 0


# --- a note deleted in an editor never stops search (issue 12) ---------------------------------------


def test_a_deleted_note_is_skipped_with_a_warning_and_the_watcher_drops_its_node(sample_root: Path) -> None:
    from memtree.notes import tree as treemod
    from memtree.serve.watch import Watcher

    mt = MemTree(sample_root, refresh_interval=0)
    assert mt.search("크론 스케줄").hits
    (sample_root / "bank/technical/cron-design.md").unlink()
    result = mt.search("가치관")
    assert result.hits and all(h.path != "bank/technical/cron-design.md" for h in result.hits)
    assert [w for w in result.warnings if "cron-design" in w and "gone" in w]
    context = mt.context("가치관")
    assert context.markdown.strip()
    lines: list[str] = []
    Watcher(mt, lines.append, split=False).act()
    assert "technical/cron-design" not in treemod.load(sample_root).by_id
    assert any("dropped node technical/cron-design" in line for line in lines)
    assert not [w for w in mt.search("가치관").warnings if "cron-design" in w]


def test_entries_of_two_scopes_in_one_small_note_neither_hide_nor_conflict(tmp_path: Path) -> None:
    # issue 12 item 7: scope visibility is per entry; messages quote the words typed
    root = facts_root(tmp_path)
    mt = MemTree(root, refresh_interval=0)
    mt.add("API deploys use blue-green", to="facts", scope="project:api")
    decision = mt.add("Web deploys use blue-green", to="facts", scope="project:web")
    assert type(decision).__name__ == "Created"  # another scope's entry is no duplicate, no conflict
    assert not mt.conflicts()
    hits = mt.search("blue-green deploys", scope="project:api").hits
    assert hits and "API deploys" in hits[0].text and all("Web deploys" not in h.text for h in hits)
    result = CliRunner().invoke(app, ["search", "web", "--scope", "project:api", "--root", str(root)])
    assert result.exit_code == 1 and "outside the current scope" in result.stderr and "web" in result.stderr


# --- NFD file names (macOS) compare as NFC everywhere (issue 12 item 2) ---------------------------


def test_an_nfd_named_note_is_found_and_written_by_its_nfc_name(tmp_path: Path) -> None:
    import unicodedata

    from memtree.notes import tree as treemod

    root = write_root(tmp_path / "root", {}, [])
    nfd = unicodedata.normalize("NFD", "쿠버네티스")
    (root / "bank/work").mkdir(parents=True)
    (root / "bank/work" / f"{nfd}.md").write_text("# 쿠버네티스\n\n- 파드는 세 개로 시작한다.\n", encoding="utf-8")
    mt = MemTree(root, refresh_interval=0)
    mt.index()
    ids = [n.id for n in treemod.load(root).nodes if n.path]
    assert ids == ["work/쿠버네티스"] and unicodedata.is_normalized("NFC", ids[0])
    assert "파드" in mt.get("work/쿠버네티스").text
    mt.add("노드 풀은 오토스케일한다", to="work/쿠버네티스")
    mt.add("서비스 메시는 쓰지 않는다", to="bank/work/쿠버네티스.md")  # typed in NFC
    files = sorted(p.name for p in (root / "bank/work").iterdir())
    assert files == [f"{nfd}.md"]  # no second file that looks the same
    text = (root / "bank/work" / f"{nfd}.md").read_text(encoding="utf-8")
    assert "오토스케일" in text and "서비스 메시" in text
    assert len([n for n in treemod.load(root).nodes if n.path]) == 1


def test_check_reports_two_names_that_differ_only_in_normalization(tmp_path: Path) -> None:
    import unicodedata

    root = write_root(tmp_path / "root", {"bank/배포.md": "# 배포\n\n- 화요일에 한다.\n"}, [])
    (root / "bank" / f"{unicodedata.normalize('NFD', '배포')}.md").write_text("# 배포\n\n- 금요일엔 안 한다.\n")
    out = CliRunner().invoke(app, ["check", "--root", str(root)])
    assert out.exit_code == 1 and out.stdout.count("nfc-twin") == 2
