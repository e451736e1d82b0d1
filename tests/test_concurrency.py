"""Concurrent writers lose nothing; a writer killed mid-write leaves the old file or the new one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from multiprocessing import get_context
from pathlib import Path

from helpers import distinct_fact, write_root

from memtree import MemTree
from memtree.notes import tree as treemod
from memtree.notes.entries import parse_entries

WRITERS = 4
ADDS = 100
WRITERS_DEADLINE_S = 300
"""A deadline, not a duration: ~15 s on an idle 2-core machine, a lot more under load."""


def fact(worker: int, i: int) -> str:
    return distinct_fact(worker, i, ADDS)


def _writer(root: str, worker: int) -> None:
    mt = MemTree(root, refresh_interval=3600)
    for i in range(ADDS):
        mt.add(fact(worker, i), to="facts")


def test_four_processes_adding_one_hundred_facts_each_lose_nothing(tmp_path: Path) -> None:
    root = write_root(
        tmp_path / "root",
        {"bank/facts.md": "# facts\n"},
        [{"id": "facts", "path": "bank/facts.md", "keywords": [], "parent": None, "children": [], "weight": 1.0}],
    )
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(root), w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(timeout=WRITERS_DEADLINE_S)
            assert p.exitcode == 0, f"writer exit code {p.exitcode} (None: still running after the deadline)"
    finally:
        for p in procs:  # a failed assertion must not leave writers running into the next test
            if p.is_alive():
                p.kill()
                p.join()
    # the note grew past 10 KB and was split on the way: gather the entries of every bank note
    found = [e.content for p in (root / "bank").rglob("*.md") for e in parse_entries(p.read_text(encoding="utf-8"))]
    expected = {fact(w, i) for w in range(WRITERS) for i in range(ADDS)}
    missing = expected - set(found)
    assert not missing, sorted(missing)[:5]
    assert sum(1 for c in found if c in expected) == WRITERS * ADDS  # each exactly once
    treemod.load(root)  # the tree is still valid, every node's file exists
    hits = MemTree(root, refresh_interval=0).search("w3x99").hits
    assert hits and hits[0].path.startswith("bank/facts")  # the parent or a child it was split into


KILLER = """
import sys
from pathlib import Path
from memtree.notes import store
path = Path(sys.argv[1])
a, b = b"A" * 400_000 + b"\\n", b"B" * 600_000 + b"\\n"
store.atomic_write(path, b)
print("ready", flush=True)  # only now: a kill lands in the write loop, however slow the start was
while True:
    store.atomic_write(path, a)
    store.atomic_write(path, b)
"""


def test_a_writer_killed_at_any_moment_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    target = tmp_path / "bank" / "note.md"
    target.parent.mkdir()
    target.write_bytes(b"A" * 400_000 + b"\n")
    valid = {b"A" * 400_000 + b"\n", b"B" * 600_000 + b"\n"}
    for i in range(12):
        with subprocess.Popen([sys.executable, "-c", KILLER, str(target)], stdout=subprocess.PIPE) as proc:
            try:
                assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"  # in the loop
                # Why a sleep: not a wait for anything, a spread of kill moments over the write cycle;
                # any moment is a valid one, so a loaded machine only shifts where the kills land
                time.sleep(0.005 + 0.013 * i)
            finally:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        assert target.read_bytes() in valid
    leftovers = [p.name for p in target.parent.iterdir() if p.name != "note.md"]
    assert all(name.endswith(".tmp") for name in leftovers)  # at most a stray temp file, never the note
