"""Hostile notes: how long memtree takes on notes built to hurt it (issue 9, item 8).

Builds, in a scratch folder, one memory root per case and times whole `memtree` processes on it
(wall seconds and the process's peak RSS):

- ``line-60k``, ``line-600k``, ``line-10m``: a note holding one line of that many bytes, the
  searched word scattered through it: `index`, `search` (human output) and `search --json`
  (with ``index.max_note_bytes`` raised to 20 MB, so that the 10 MB line is indexed and shown);
- ``note-50m``: a 50 MB note of ordinary paragraphs, under the default limit: `index` (the first
  search's cost), `search`, `check`;
- ``list-100k``: a 100,000-line list: `split`, `check`, `check --fix`, `check` again.

Usage: ``.venv/bin/python bench/hostile.py /tmp/hostile [--timeout 120] [--only line-60k,...]``.
A command still running after ``--timeout`` seconds is killed and reported as ``>T``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchlib import md_table, memtree_exe

WORD = "needle"
FILLER = ("alpha", "브라보", "charlie", "델타", "echo", "폭스트롯", "golf", "hotel")


def long_line(size: int) -> str:
    """One line of about ``size`` bytes, WORD every 40 words (so search finds it everywhere)."""
    words, n, i = [], 0, 0
    while n < size:
        w = WORD if i % 40 == 39 else f"{FILLER[i % len(FILLER)]}{i % 997}"
        words.append(w)
        n += len(w.encode()) + 1
        i += 1
    return " ".join(words)


def big_note(size: int) -> str:
    """Ordinary paragraphs up to ``size`` bytes, with headings every 50 paragraphs."""
    parts, n, i = [], 0, 0
    while n < size:
        para = f"Paragraph {i} about {FILLER[i % len(FILLER)]} and {WORD} number {i % 1009}; 메모 {i % 31}.\n\n"
        if i % 50 == 0:
            para = f"## Section {i // 50}\n\n" + para
        parts.append(para)
        n += len(para.encode())
        i += 1
    return "".join(parts)


def long_list(lines: int) -> str:
    return "# A long list\n\n" + "".join(f"- item {i}: {FILLER[i % len(FILLER)]} {WORD}\n" for i in range(lines))


CASES = {
    "line-60k": lambda: "# Long line\n\n" + long_line(60_000) + "\n",
    "line-600k": lambda: "# Long line\n\n" + long_line(600_000) + "\n",
    "line-10m": lambda: "# Long line\n\n" + long_line(10_000_000) + "\n",
    "note-50m": lambda: big_note(50_000_000),
    "list-100k": lambda: long_list(100_000),
}


def timed(cmd: list[str], timeout: float) -> tuple[str, str, int | None, int]:
    """(seconds, peak RSS in MB, exit code or None when killed, stdout bytes) of one process."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=sink, start_new_session=True)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    out = 0  # counted, not kept: the bench's own peak RSS would be inherited by the next fork
    while proc.stdout and (block := proc.stdout.read(1 << 20)):
        out += len(block)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    timer.cancel()
    wall = time.perf_counter() - t0
    rss = usage.ru_maxrss / 1024  # KB on Linux
    if killed.is_set():
        return f">{timeout:.0f}", "—", None, out
    return f"{wall:.2f}", f"{rss:.0f}", proc.returncode, out


def main() -> None:
    if sys.argv[1:2] == ["--write"]:  # the child process that writes one case's note
        Path(sys.argv[3]).write_text(CASES[sys.argv[2]](), encoding="utf-8")
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path, help="scratch folder (a folder per case is made in it)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a command is killed")
    ap.add_argument("--only", default="", help="comma-separated cases (default: all)")
    args = ap.parse_args()
    exe = memtree_exe()
    wanted = [c for c in args.only.split(",") if c] or list(CASES)
    rows = []
    for name in wanted:
        root = args.work / name
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run([exe, "init", str(root)], check=True, capture_output=True)
        note = root / "bank" / "hostile" / f"{name}.md"
        note.parent.mkdir(parents=True)
        # Why a child process: a peak RSS is inherited by forks, so this one must stay small.
        subprocess.run([sys.executable, __file__, "--write", name, str(note)], check=True)
        if name.startswith("line"):
            (root / "memtree.yaml").write_text("index:\n  max_note_bytes: 20000000\n", encoding="utf-8")
        size = note.stat().st_size
        r = ["--root", str(root)]
        if name.startswith("list"):
            steps = [
                ("split", [exe, "split", *r]),
                ("check", [exe, "check", *r]),
                ("check --fix", [exe, "check", "--fix", *r]),
                ("check after fix", [exe, "check", *r]),
            ]
        else:
            steps = [
                ("index", [exe, "index", *r]),
                ("search", [exe, "search", WORD, *r]),
                ("search --json", [exe, "search", WORD, "--json", *r]),
            ]
            if name.startswith("note"):
                steps.append(("check", [exe, "check", *r]))
        for label, cmd in steps:
            seconds, rss, code, out = timed(cmd, args.timeout)
            rows.append((name, f"{size:,}", label, seconds, rss, "killed" if code is None else code, f"{out:,}"))
            print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
        if name.startswith("list"):
            parts = sum(1 for _ in note.parent.rglob("*.md"))
            biggest = max(p.stat().st_size for p in note.parent.rglob("*.md"))
            rows.append((name, "", f"files after: {parts}, largest {biggest:,} B", "", "", "", ""))
    print(md_table(["case", "bytes", "command", "s", "peak MB", "exit", "stdout B"], rows))


if __name__ == "__main__":
    main()
