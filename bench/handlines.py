"""Hand edits against memtree's own writes: does any line a script appends get lost?

A script appends ``- handline N`` to one bank note every INTERVAL seconds while ``memtree watch``
runs on the root (it re-indexes and splits the note each time it grows past the limit) and,
optionally, ``memtree add`` writes entries to the same note. At the end every hand line must be
in some bank note, exactly once.

    python bench/handlines.py [--lines 2500] [--interval 0.02] [--adds 20] [--runs 3]

Standard library only; memtree is run as ``python -m memtree`` from the interpreter running this.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = {
    "version": 1,
    "nodes": [{"id": "ops", "path": "bank/ops.md", "keywords": ["ops"], "parent": None, "children": [], "weight": 1.0}],
}


def memtree(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memtree", *args], capture_output=True, text=True, check=False)


def one_run(lines: int, interval: float, adds: int) -> dict[str, int]:
    """One attack on a fresh root; returns how many hand lines were written, lost and doubled."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        for tier in ("bank", "memory", "recall"):
            (root / tier).mkdir(parents=True)
        (root / "tree-index.json").write_text(json.dumps(TREE, indent=2) + "\n", encoding="utf-8")
        note = root / "bank/ops.md"
        note.write_text("# ops\n\n", encoding="utf-8")
        watch = subprocess.Popen(
            [sys.executable, "-m", "memtree", "watch", "--root", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert watch.stdout is not None
            watch.stdout.readline()  # "watching …": the observer is up
            every = max(1, lines // adds) if adds else 0
            added = 0
            for n in range(lines):
                with open(note, "a", encoding="utf-8") as f:  # as `echo >> note` would
                    f.write(f"- handline {n} 손으로 적은 줄 {n * 7919 % 104729}\n")
                if every and n % every == every - 1 and added < adds:
                    memtree("add", f"자동 항목 {added}: 배포 점검 {added * 31}", "--to", "ops", "--root", str(root))
                    added += 1
                time.sleep(interval)  # the attack's pace, not a wait on a condition
        finally:
            watch.send_signal(signal.SIGINT)
            watch.wait(timeout=60)
        text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "bank").rglob("*.md")))
        found = [text.count(f"- handline {n} ") for n in range(lines)]
        return {
            "written": lines,
            "lost": sum(1 for c in found if c == 0),
            "doubled": sum(1 for c in found if c > 1),
            "files": sum(1 for _ in (root / "bank").rglob("*.md")),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=2500)
    ap.add_argument("--interval", type=float, default=0.02, help="seconds between two appended lines")
    ap.add_argument("--adds", type=int, default=20, help="`memtree add`s to the same note during the run")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    total_lost = 0
    for i in range(args.runs):
        result = one_run(args.lines, args.interval, args.adds)
        total_lost += result["lost"]
        print(f"run {i + 1}: {result}", flush=True)
    print(f"lost {total_lost} of {args.lines * args.runs} hand lines")
    sys.exit(1 if total_lost else 0)


if __name__ == "__main__":
    main()
