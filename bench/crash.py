"""Kills and concurrent writers against one memory root: is every acknowledged add there exactly once?

Two attacks (issue 27, "How it is checked"), each on a fresh root whose note splits every few KB:

- ``kill``: again and again a writer — ``add``, ``split`` (adds with splits in between),
  ``update`` (adds and rewrites of its own entries) or the daemon (``memtree serve``, with
  ``memtree add`` forwarded to it) — is SIGKILLed at a random moment. Then ``memtree check --fix``
  runs once; ``memtree check`` must be clean.
- ``concurrent``: WRITERS processes add at once while a person appends lines to the note by hand
  (``open(…, "a")``, as ``echo >>`` does) and a loop runs ``rm -rf .memtree``.

Either way, at the end every add a writer saw acknowledged must be in bank/ exactly once (its entry
id, and for a new entry its text), and every hand line exactly once; the figures are printed and the
exit status is 1 when anything was lost or doubled.

    python bench/crash.py kill [--kills 60] [--max-bytes 3000] [--seed 1]
    python bench/crash.py concurrent [--writers 8] [--adds 40] [--lines 2000] [--interval 0.005]

Standard library only; memtree is run from the interpreter running this.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TREE = {
    "version": 1,
    "nodes": [{"id": "ops", "path": "bank/ops.md", "keywords": ["ops"], "parent": None, "children": [], "weight": 1.0}],
}
WRITER = r"""
import json, random, sys
from datetime import datetime, timedelta, timezone
from memtree import MemTree

root, mode, worker, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
limit = int(sys.argv[5]) if len(sys.argv) > 5 else 0
rng = random.Random(seed)
try:
    mt = MemTree(root, refresh_interval=3600, actor=f"writer-{worker}")
except TypeError:  # memtree before actors
    mt = MemTree(root, refresh_interval=3600)
now = datetime(2026, 3, 2, 10, 0, tzinfo=timezone(timedelta(hours=9)))
mine = []
i = 0

def fact(n):
    # its own words (Hangul syllables drawn from n): dedup never merges two of them
    pick = random.Random(n)
    return " ".join("".join(chr(0xAC00 + pick.randrange(11172)) for _ in range(2)) for _ in range(4)) + f" {n}"

while limit == 0 or i < limit:
    text = f"w{worker}s{seed}x{i}: " + fact(seed * 100_000 + i)
    if mode == "update" and mine and i % 3 == 2:
        eid = rng.choice(mine)
        print(json.dumps({"update": eid}), flush=True)  # before: killed after the write, its text is new
        mt.update(eid, text, now=now)
    else:
        d = mt.add(text, to="ops", now=now)
        kind = type(d).__name__
        print(json.dumps({"text": text, "id": getattr(d, "entry_id", None), "decision": kind}), flush=True)
        if kind == "Created" and d.entry_id:
            mine.append(d.entry_id)
    if mode == "split" and i % 4 == 3:
        mt.split("bank/ops.md", max_bytes=1024)
    i += 1
"""
_ID = re.compile(r"id=([^;\s>]+)")


def fresh_root(tmp: str, max_bytes: int) -> Path:
    root = Path(tmp) / "root"
    for tier in ("bank", "memory", "recall"):
        (root / tier).mkdir(parents=True)
    (root / "tree-index.json").write_text(json.dumps(TREE, indent=2) + "\n", encoding="utf-8")
    (root / "bank/ops.md").write_text("# ops\n\n", encoding="utf-8")
    (root / "memtree.yaml").write_text(f"split:\n  max_bytes: {max_bytes}\n", encoding="utf-8")
    return root


def memtree(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memtree", *args], capture_output=True, text=True, check=False, timeout=timeout
    )


def writer(root: Path, mode: str, worker: int, seed: int, limit: int = 0) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", WRITER, str(root), mode, str(worker), str(seed), str(limit)]
    env = {**os.environ, "MEMTREE_NO_DAEMON": "1"}
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)


def acks(out: str) -> list[dict[str, str]]:
    """The adds a writer printed as done (a line cut by the kill is not one)."""
    done = []
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if "text" in doc:
            done.append(doc)
        elif "update" in doc:  # its text may have changed: found by its id alone
            done.append({"text": "", "id": doc["update"], "decision": "Updated"})
    return done


def bank_text(root: Path) -> str:
    files = [p for p in sorted((root / "bank").rglob("*.md")) if "_archive" not in p.parts]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def verify(root: Path, acked: list[dict[str, str]], hand: int = 0) -> dict[str, int]:
    """Check --fix, check, and count acknowledged adds and hand lines lost or doubled."""
    fix = memtree("check", "--fix", "--root", str(root))
    check = memtree("check", "--root", str(root))
    if check.returncode:
        kept = Path(tempfile.mkdtemp(prefix="crash-kept-")) / "root"
        shutil.copytree(root, kept, symlinks=True)  # the temporary root goes: keep it to find the cause
        print(f"check --fix said:\n{fix.stdout}{fix.stderr}check said:\n{check.stdout}{check.stderr}", file=sys.stderr)
        print(f"the root is kept in {kept}", file=sys.stderr)
    text = bank_text(root)
    ids: dict[str, int] = {}
    for m in _ID.finditer(text):
        ids[m.group(1)] = ids.get(m.group(1), 0) + 1
    lines = text.splitlines()
    lost = doubled = 0
    updated = {a["id"] for a in acked if a["decision"] == "Updated"}
    acked = [a for a in acked if a["decision"] != "Updated"]
    for a in acked:
        n = ids.get(a["id"] or "", 0)
        if a["decision"] == "Created" and a["id"] not in updated:
            n = min(n, sum(1 for ln in lines if a["text"] in ln)) if n else 0
        missing = n == 0 and a["decision"] in ("Created", "Merged")
        if missing or n > 1:
            print(f"{'lost' if missing else 'doubled'}: {a}", file=sys.stderr, flush=True)
        lost += missing
        doubled += n > 1
    found = [text.count(f"- handline {k} ") for k in range(hand)]
    return {
        "acknowledged": len(acked),
        "lost": lost,
        "doubled": doubled,
        "ids_twice": sum(1 for c in ids.values() if c > 1),
        "hand_lines": hand,
        "hand_lost": sum(1 for c in found if c == 0),
        "hand_doubled": sum(1 for c in found if c > 1),
        "check_fix_exit": fix.returncode,
        "check_exit": check.returncode,
        "notes": sum(1 for _ in (root / "bank").rglob("*.md")),
    }


def kill_run(kills: int, max_bytes: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    acked: list[dict[str, str]] = []
    victims: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_root(tmp, max_bytes)
        for k in range(kills):
            mode = rng.choice(["add", "split", "update", "daemon"])
            victims[mode] = victims.get(mode, 0) + 1
            delay = rng.uniform(1.0, 6.0)  # a writer takes a second or more to start on a loaded machine
            if mode == "daemon":
                acked += _daemon_round(root, k, delay)
                continue
            proc = writer(root, mode, k % 4, seed * 1000 + k)
            time.sleep(delay)  # the kill's moment, drawn at random: not a wait on a condition
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate(timeout=60)
            acked += acks(out)
        result = verify(root, acked)
    print(f"victims: {victims}", flush=True)
    return result


def _daemon_round(root: Path, k: int, delay: float) -> list[dict[str, str]]:
    """Start `memtree serve`, forward adds to it from a client loop, SIGKILL the daemon after ``delay``."""
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memtree", "serve", "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    done: list[dict[str, str]] = []
    stop = time.monotonic() + delay
    i = 0
    try:
        while time.monotonic() < stop + 1.5:  # adds go on a while after the kill: the fallback's turn
            if daemon.poll() is None and time.monotonic() >= stop:
                daemon.send_signal(signal.SIGKILL)
            pick = random.Random(k * 100_000 + i)
            words = ("".join(chr(0xAC00 + pick.randrange(11172)) for _ in range(2)) for _ in range(4))
            text = f"d{k}x{i}: " + " ".join(words)
            r = memtree("add", text, "--to", "ops", "--root", str(root), "--json", timeout=120)
            if r.returncode == 0:
                doc = json.loads(r.stdout)
                decision = {"created": "Created", "merged": "Merged"}.get(doc.get("decision"), doc.get("decision"))
                done.append({"text": text, "id": doc.get("entry_id"), "decision": decision})
            i += 1
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=60)
    return done


def concurrent_run(writers: int, adds: int, lines: int, interval: float, max_bytes: int) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_root(tmp, max_bytes)
        note = root / "bank/ops.md"
        stop = threading.Event()

        def person() -> None:
            for n in range(lines):
                with open(note, "a", encoding="utf-8") as f:  # as `echo >> note` would
                    f.write(f"- handline {n} 손으로 적은 줄 {n * 7919 % 104729}\n")
                time.sleep(interval)  # the person's pace

        def wiper() -> None:
            while not stop.is_set():
                shutil.rmtree(root / ".memtree", ignore_errors=True)
                stop.wait(0.05)

        procs = [writer(root, "add", w, w + 1, adds) for w in range(writers)]
        threads = [threading.Thread(target=person), threading.Thread(target=wiper)]
        for t in threads:
            t.start()
        acked: list[dict[str, str]] = []
        for p in procs:
            out, _ = p.communicate(timeout=1800)
            acked += acks(out)
        threads[0].join()
        stop.set()
        threads[1].join()
        return verify(root, acked, lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="attack", required=True)
    k = sub.add_parser("kill", help="SIGKILL writers and the daemon at random moments")
    k.add_argument("--kills", type=int, default=60)
    k.add_argument("--max-bytes", type=int, default=3000, help="the root's split.max_bytes")
    k.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("concurrent", help="writers, a person appending and rm -rf .memtree at once")
    c.add_argument("--writers", type=int, default=8)
    c.add_argument("--adds", type=int, default=40, help="adds per writer")
    c.add_argument("--lines", type=int, default=2000, help="lines the person appends")
    c.add_argument("--interval", type=float, default=0.005, help="seconds between two hand lines")
    c.add_argument("--max-bytes", type=int, default=4000, help="the root's split.max_bytes")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.attack == "kill":
        result = kill_run(args.kills, args.max_bytes, args.seed)
    else:
        result = concurrent_run(args.writers, args.adds, args.lines, args.interval, args.max_bytes)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(json.dumps({**result, "seconds": round(time.perf_counter() - t0, 1), "load": round(load, 1)}), flush=True)
    bad = result["lost"] or result["doubled"] or result["hand_lost"] or result["hand_doubled"] or result["check_exit"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
