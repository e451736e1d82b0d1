"""The daemon's speed: a CLI search through `memtree serve` beside a bare interpreter and an in-process search.

Side by side in one run, on the KorQuAD tree (SHARED_BENCH/materialize.py) and a 100k-chunk synthetic
tree (SHARED_BENCH/synth.py), each indexed first:

- the venv's bare ``python -c pass`` (the floor any CLI call pays), each run taken in turn with a
  search through the daemon, so that both see the same load;
- ``memtree --no-daemon search Q --json`` (a cold process: imports, index load, search);
- ``memtree search Q --json`` with a daemon serving the tree (the console script forwards it);
- the same through the console-script wrapper pip would write (a reference: memtree installs its own
  bin/memtree on POSIX, setup.py says why): pip's imports ``re`` before memtree's code runs, so this
  shows what the own launcher saves;
- throughput, searches per second, with 1, 4 and 8 concurrent clients, each a process: through the
  JSON API on one connection (a program or agent), and as CLI processes (a shell).

Then a semantic search through the daemon on the LoCoMo tree after ``memtree index --embed``
(skipped, with a line, when the embed extra is missing): the JSON API round trip, warm, and a CLI
process. Every search is a different query (the daemon's query cache would answer a repeat in
microseconds). Targets (issue 13): a CLI search through the daemon ≤ 2× the bare interpreter; a
semantic search through it ≤ 25 ms warm. The machine's load average is printed beside each tree's
paired series: the ratio of two medians means little on a machine busy with other work.

    python bench/serve.py ../shared/bench [--runs 20] [--seconds 3] [--results bench/results/serve.json]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchlib import (
    SEARCH_OK,
    ResultsRun,
    add_common_args,
    add_results_arg,
    check_shared,
    load_jsonl,
    md_table,
    memtree_exe,
    progress,
    run,
)

CLIENTS = (1, 4, 8)
START_S = 600.0  # a daemon warms up before it listens: loading a 100k-chunk index (or the model) takes a while

API_CLIENT = """
import json, sys, time
from memtree.serve.client import Client, DaemonError
root, seconds, offset, step = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
queries = json.loads(open(sys.argv[5], encoding="utf-8").read())
done, refused, i = 0, 0, offset
with Client(root) as c:
    t0 = time.perf_counter()
    while i < len(queries) and time.perf_counter() - t0 < seconds:
        try:
            c.call("search", query=queries[i], k=5)
        except DaemonError:  # a query with no searchable term: answered all the same
            refused += 1
        done, i = done + 1, i + step
print(done, refused, time.perf_counter() - t0)
"""

CLI_CLIENT = """
import json, subprocess, sys, time
exe, root, seconds, offset, step = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
queries = json.loads(open(sys.argv[6], encoding="utf-8").read())
done, refused, i = 0, 0, offset
t0 = time.perf_counter()
while i < len(queries) and time.perf_counter() - t0 < seconds:
    run = subprocess.run([exe, "search", "--root", root, queries[i], "--json"], capture_output=True)
    refused += run.returncode == 2
    done, i = done + 1, i + step
print(done, refused, time.perf_counter() - t0)
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--runs", type=int, default=20, help="timed processes per measure (default: %(default)s)")
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each throughput run (default: %(default)s)")
    ap.add_argument("--chunks", type=int, default=100_000, help="synthetic tree size (default: %(default)s)")
    ap.add_argument("--no-embed", action="store_true", help="skip the semantic search on LoCoMo")
    add_results_arg(ap)
    return ap.parse_args(argv)


def timed(cmd: list[str], ok: tuple[int, ...] = (0,)) -> float:
    """Wall seconds of one process."""
    wall, _ = run(cmd, ok=ok)
    return wall


def best_median(walls: list[float]) -> dict[str, float]:
    ms = [1000 * w for w in walls]
    return {"best_ms": min(ms), "median_ms": statistics.median(ms), "n": len(ms)}


def ping(tree: Path) -> dict[str, Any] | None:
    from memtree.serve.client import Client, DaemonUnavailable

    try:
        with Client(tree) as c:
            return c.call("ping")
    except DaemonUnavailable:
        return None


@contextlib.contextmanager
def daemon(exe: str, tree: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`memtree serve` on ``tree`` (never idle-stopped), ready; SIGTERM on exit."""
    log = tree.parent / f"{tree.name}-serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [exe, "serve", "--root", str(tree), "--idle-timeout", "0"], stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        end = time.monotonic() + START_S
        while ping(tree) is None:
            if proc.poll() is not None or time.monotonic() > end:
                sys.exit(f"error: the daemon did not start; see {log}")
            time.sleep(0.05)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def queries_of(tree: Path) -> list[str]:
    return [q["query"] for q in load_jsonl(tree / "queries.jsonl") if q.get("answerable", True)]


def cli_search(exe: str, tree: Path, queries: list[str], runs: int, offset: int, no_daemon: bool) -> dict[str, float]:
    head = [exe, "--no-daemon"] if no_daemon else [exe]
    picks = [queries[(offset + i * 7) % len(queries)] for i in range(runs)]
    # exit 2 is a query with no searchable term (a few synthetic ones): answered all the same
    return best_median([timed([*head, "search", "--root", str(tree), q, "--json"], (*SEARCH_OK, 2)) for q in picks])


PIP_WRAPPER = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from memtree.cli.entry import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
"""The console-script wrapper pip writes for an entry point (distlib's template), for reference."""


def pip_wrapper(work: Path) -> str:
    """pip's console-script wrapper for memtree in ``work``, for reference beside memtree's own launcher."""
    path = work / "memtree-pip-wrapper"
    path.write_text(PIP_WRAPPER.format(python=sys.executable), encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def paired(exe: str, pip: str, tree: Path, queries: list[str], runs: int, offset: int) -> dict[str, Any]:
    """Bare ``python -c pass`` runs and CLI searches through the daemon (the installed `memtree`, and
    pip's console-script wrapper), taken in turn; the load average before and after.

    Why in turn: on a shared machine the load moves by the second; two series measured one after the
    other compare the load of two moments, a pair taken together compares the commands.
    """
    series: dict[str, list[float]] = {"bare": [], "daemon": [], "pip": []}
    load = [os.getloadavg()[0]]
    for i in range(runs):
        q = queries[(offset + i * 7) % len(queries)]
        series["bare"].append(timed([sys.executable, "-c", "pass"]))
        series["daemon"].append(timed([exe, "search", "--root", str(tree), q, "--json"], (*SEARCH_OK, 2)))
        series["pip"].append(timed([pip, "search", "--root", str(tree), q + " ", "--json"], (*SEARCH_OK, 2)))
    load.append(os.getloadavg()[0])
    return {key: best_median(walls) for key, walls in series.items()} | {"load": load}


def throughput(exe: str, tree: Path, queries: list[str], clients: int, seconds: float, cli: bool) -> float:
    """Searches per second, ``clients`` processes at once, each for ``seconds`` or until the distinct queries
    run out (every query is searched once: a repeat would be a cache hit)."""
    listed = tree.parent / f"{tree.name}-queries.json"
    listed.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    procs = []
    for k in range(clients):  # all started before any is waited for: they run at once
        if cli:
            args = [sys.executable, "-c", CLI_CLIENT, exe, str(tree), str(seconds), str(k), str(clients), str(listed)]
        else:
            args = [sys.executable, "-c", API_CLIENT, str(tree), str(seconds), str(k), str(clients), str(listed)]
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
    done, walls = 0, []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"error: a throughput client failed ({proc.returncode})")
        n, _, wall = out.split()
        done += int(n)
        walls.append(float(wall))
    return done / max(walls)


def measure_tree(exe: str, pip: str, tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    queries = queries_of(tree)
    progress(f"{tree.name}: {len(queries)} answerable queries; in-process CLI searches")
    out: dict[str, Any] = {"tree": tree.name}
    out["in_process"] = cli_search(exe, tree, queries, args.runs, 0, no_daemon=True)
    with daemon(exe, tree):
        before = (ping(tree) or {}).get("request_count", 0)
        progress(f"{tree.name}: CLI searches through the daemon, each beside a bare interpreter")
        out |= paired(exe, pip, tree, queries, args.runs, 1)
        forwarded = (ping(tree) or {}).get("request_count", 0) - before - 1
        if forwarded != 2 * args.runs:
            sys.exit(f"error: only {forwarded} of {2 * args.runs} searches reached the daemon")
        out["api"] = {}
        out["cli"] = {}
        for n in CLIENTS:
            progress(f"{tree.name}: throughput, {n} client(s)")
            out["api"][n] = throughput(exe, tree, queries, n, args.seconds, cli=False)
            out["cli"][n] = throughput(exe, tree, queries, n, args.seconds, cli=True)
    out["ratio"] = out["daemon"]["median_ms"] / out["bare"]["median_ms"]
    out["pip_ratio"] = out["pip"]["median_ms"] / out["bare"]["median_ms"]
    return out


def semantic(exe: str, shared: Path, work: Path, runs: int) -> dict[str, Any] | None:
    if not all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers")):
        progress("semantic: skipped (the embed extra is not installed: pip install 'memtree[embed]')")
        return None
    tree = work / "serve-locomo"
    run([sys.executable, str(shared / "materialize.py"), str(shared / "locomo"), str(tree)])
    progress("locomo: memtree index --embed (every turn embedded once)")
    wall, _ = run([exe, "index", "--embed", "--json", "--root", str(tree)])
    progress(f"locomo: embedded in {wall:.1f} s")
    queries = queries_of(tree)
    from memtree.serve.client import Client, DaemonError

    with daemon(exe, tree), Client(tree) as c:
        semantic_hits = 0
        walls = []
        for i in range(runs):
            t0 = time.perf_counter()
            try:
                found = c.call("search", query=queries[(i * 11) % len(queries)], k=5)
            except DaemonError:  # no searchable term: not a search
                continue
            walls.append(time.perf_counter() - t0)
            semantic_hits += any("semantic" in h["signals"] for h in found["hits"])
        if not semantic_hits:
            sys.exit("error: no hit carried a semantic signal: the layer is not on")
        cli = cli_search(exe, tree, queries, runs, 5, no_daemon=False)
    return {"api": best_median(walls), "cli": cli, "semantic_hit_share": semantic_hits / max(1, len(walls))}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    results_run = ResultsRun(args.results, "serve.py")
    shared = check_shared(args.shared, ["materialize.py", "synth.py", "korquad/docs.jsonl", "locomo/docs.jsonl"])
    work = args.work.expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    exe = memtree_exe()
    kq = work / "serve-korquad"
    run([sys.executable, str(shared / "materialize.py"), str(shared / "korquad"), str(kq)])
    synth = work / f"serve-synth-{args.chunks}"
    progress(f"synth.py {synth} --chunks {args.chunks}")
    run([sys.executable, str(shared / "synth.py"), str(synth), "--chunks", str(args.chunks), "--queries", "2000"])
    for tree in (kq, synth):
        progress(f"memtree index --root {tree}")
        run([exe, "index", "--root", str(tree)])
    pip = pip_wrapper(work)
    results = []
    for tree in (kq, synth):
        results.append(measure_tree(exe, pip, tree, args))
    sem = None if args.no_embed else semantic(exe, shared, work, args.runs)
    report(results, sem, args)
    results_run.write({"trees": results, "semantic": sem})


def report(results: list[dict[str, Any]], sem: dict[str, Any] | None, args: argparse.Namespace) -> None:
    print()
    rows = []
    for r in results:
        for label, key in (("bare `python -c pass`", "bare"), ("`--no-daemon search`", "in_process")):
            rows.append([r["tree"], label, f"{r[key]['best_ms']:.1f}", f"{r[key]['median_ms']:.1f}"])
        for label, key in (("`search` via the daemon", "daemon"), ("… through pip's console-script wrapper", "pip")):
            rows.append([r["tree"], label, f"{r[key]['best_ms']:.1f}", f"{r[key]['median_ms']:.1f}"])
    print(md_table(["tree", f"process (n={args.runs})", "best ms", "median ms"], rows))
    print()
    for r in results:
        verdict = "meets" if r["ratio"] <= 2 else "misses"
        print(
            f"{r['tree']}: daemon CLI search / bare python = {r['ratio']:.2f}× (median; {verdict} the ≤ 2× target); "
            f"pip's wrapper {r['pip_ratio']:.2f}×; load average {r['load'][0]:.1f} → {r['load'][1]:.1f}"
        )
    print()
    head = ["tree", "clients"] + [f"{n} client{'s' if n > 1 else ''}" for n in CLIENTS]
    rows = []
    for r in results:
        rows.append([r["tree"], "JSON API, searches/s", *(f"{r['api'][n]:.0f}" for n in CLIENTS)])
        rows.append([r["tree"], "CLI processes, searches/s", *(f"{r['cli'][n]:.0f}" for n in CLIENTS)])
    print(md_table(head, rows))
    if sem is not None:
        print()
        api, cli = sem["api"], sem["cli"]
        verdict = "meets" if api["median_ms"] <= 25 else "misses"
        print(
            f"locomo, semantic (index --embed), through the daemon: JSON API {api['best_ms']:.1f} ms best, "
            f"{api['median_ms']:.1f} ms median ({verdict} the ≤ 25 ms target); CLI process {cli['best_ms']:.1f} / "
            f"{cli['median_ms']:.1f} ms; {sem['semantic_hit_share']:.0%} of searches had semantic hits"
        )


if __name__ == "__main__":
    main()
