#!/usr/bin/env python3
"""How `memtree consolidate` scales with a note's size, and how long an add to another note waits.

    python bench/consolidate_scale.py [--sizes 500,1000,2000,4000,10000,100000] [--numbers 4000]
                                      [--timeout 600] [--seed 7]

Each size N is one bank note of N generated lines, in a fresh memory root: random sentences of
4-12 words (4-6 from 20,000 lines on, so that the note stays under index.max_note_bytes, 5 MB)
drawn from 3,000 made-up English and Korean words, one line in twenty a near-duplicate of an
earlier one (a full stop added) so that there is something to merge. A run is
``MemTree.consolidate()`` in a child process, timed there, and given up after --timeout seconds
(printed as "> T s"); its CPU seconds are printed beside, the figure a loaded machine disturbs
least. Then the lock test: a note of --numbers number-only lines (the worst case of bigram
blocking: ten digits make a hundred bigrams) is consolidated while another process adds one entry
to another note, started once consolidate has begun; printed are the add's own time and
consolidate's. Figures, with the command, in bench/README.md ("consolidate_scale.py").
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SYLLABLES = "가 나 다 라 마 바 사 아 자 차 카 타 파 하 배 포 설 정 서 버 운 영 테 스 트".split()
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def vocabulary(rng: random.Random, size: int = 3_000) -> list[str]:
    """Made-up words: half Latin (3-9 letters), half Hangul (2-4 syllables)."""
    words = {"".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 9))) for _ in range(size // 2)}
    words |= {"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(size // 2)}
    return sorted(words)


def lines_of(n: int, rng: random.Random, most_words: int = 12) -> list[str]:
    """N note lines: random sentences, one in twenty a restatement of an earlier line."""
    words = vocabulary(rng)
    out: list[str] = []
    for i in range(n):
        if i > 20 and rng.random() < 0.05:
            out.append(rng.choice(out[-20:]).rstrip(".") + ".")
        else:
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(4, most_words))).capitalize())
    return out


def number_lines(n: int, rng: random.Random) -> list[str]:
    return [str(rng.randint(0, 10 ** rng.randint(1, 8))) for _ in range(n)]


def build(root: Path, notes: dict[str, list[str]]) -> None:
    for tier in ("bank", "memory", "recall"):
        (root / tier).mkdir(parents=True, exist_ok=True)
    (root / "tree-index.json").write_text('{"version": 1, "nodes": []}\n', encoding="utf-8")
    for rel, lines in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Note\n\n" + "".join(f"- {ln}\n" for ln in lines), encoding="utf-8")


CONSOLIDATE = """
import json, sys, time
from memtree import MemTree
t, cpu = time.perf_counter(), time.process_time()
report = MemTree(sys.argv[1], refresh_interval=0).consolidate()
seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "merged": sum(len(m.drop) for m in report.merges)}))
"""
ADD = """
import json, sys, time
from memtree import MemTree
mt = MemTree(sys.argv[1], refresh_interval=0)
t = time.perf_counter()
mt.add("The deploy window for the other note is on Tuesdays", to="other/note")
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def run(code: str, root: Path, timeout: float) -> dict | None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=timeout, check=True
        )
    except subprocess.TimeoutExpired:  # run() kills the child
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="500,1000,2000,4000,10000,100000", help="note sizes in lines, comma-separated"
    )
    parser.add_argument("--numbers", type=int, default=4_000)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print("# consolidate: one note of N lines\n")
    print("| lines | MB | seconds | CPU s | merged |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            rng = random.Random(args.seed * 1_000_003 + n)  # a size's note is the same whatever sizes run with it
            root = Path(tmp) / f"n{n}"
            build(root, {"bank/big/note.md": lines_of(n, rng, 12 if n < 20_000 else 6)})
            size = (root / "bank/big/note.md").stat().st_size / 1e6
            got = run(CONSOLIDATE, root, args.timeout)
            shown = f"> {args.timeout:g} | -" if got is None else f"{got['seconds']:.2f} | {got['cpu']:.2f}"
            print(f"| {n:,} | {size:.1f} | {shown} | {'-' if got is None else got['merged']} |", flush=True)
        root = Path(tmp) / "lock"
        rng = random.Random(args.seed)
        build(root, {"bank/big/note.md": number_lines(args.numbers, rng), "bank/other/note.md": ["An other note"]})
        with tempfile.TemporaryFile("w+") as out:
            started = time.perf_counter()
            con = subprocess.Popen([sys.executable, "-c", CONSOLIDATE, str(root)], stdout=out, text=True)
            lock = root / ".memtree" / "consolidate.lock"
            while not lock.exists() and con.poll() is None:  # begun: its single-flight lock is made
                time.sleep(0.01)
            add = run(ADD, root, args.timeout)
            try:
                con.wait(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                con.kill()
                con.wait()
                print(f"consolidate did not end in {args.timeout:g} s")
                return 1
            wall = time.perf_counter() - started
            out.seek(0)
            result = json.loads(out.read().strip().splitlines()[-1])
    print(f"\n# an add to another note while consolidate runs on {args.numbers:,} number-only lines\n")
    print(
        f"consolidate {result['seconds']:.2f} s, {result['cpu']:.2f} s CPU ({wall:.2f} s wall with its start); ", end=""
    )
    print(f"the add took {'> ' + str(args.timeout) if add is None else format(add['seconds'], '.2f')} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
