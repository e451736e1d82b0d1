#!/usr/bin/env python3
"""Warm search speed: in-process CPU time per query of MemTree.search on materialized trees.

    python bench/warm.py TREE [TREE ...] [--passes 3] [--hits-out hits.json] [--same-as hits.json]

Each TREE is a materialized, indexed benchmark tree with its ``queries.jsonl`` (``bench/quality.py``
leaves them in its work folder: ``korquad-tree``, ``locomo-tree``, and with ``--verbose`` their
``-verbose`` forms). One ``MemTree`` per tree, recall reinforcement off (a search then writes
nothing, so every pass answers the same), ``now`` fixed, the result cache bypassed; one warm-up
pass, then ``--passes`` timed passes over every query, each query timed with ``time.process_time``
(CPU time: the machine may be shared, and another process's load adds wall time, not ours).
Printed per tree: ms per query of the best pass (mean), and p50 / p95 of each query's best time.

``--hits-out`` writes every query's hits (path, lines, score, signals) and rejection to a JSON
file; ``--same-as`` compares this run's with such a file and lists the queries that differ (exit
1 if any), so two versions of the code can be shown to answer alike. To compare versions, run
this script from each checkout in turn (``PYTHONPATH=CHECKOUT``), alternating, on trees built by
that checkout's ``memtree index``. Code older than ``search(now=...)`` is timed at the clock's now.

``--search KEY=VALUE`` (repeatable) runs with a search setting changed, as memtree.yaml's ``search:``
block would (``--search adjacency_weight=0`` prices adjacency); reinforcement stays off.

``--instructions LO:N`` counts instructions instead of timing (valgrind's callgrind, which must be
installed): the script runs itself under callgrind, makes one whole warm pass over every query of
each TREE, then queries LO to LO+N − 1 with counting on, and prints M instructions per query. Unlike
CPU time, the count does not move with the machine's load or speed, so two versions compare to a
few tenths of a percent; it does not see what memory and caches cost.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from benchlib import load_jsonl, md_table, percentile, rel_path, supports_kwarg

DEFAULT_NOW = "2026-12-01T12:00:00+00:00"
SCORE_TOLERANCE = 1e-9  # scores are sums of floats: the same sum in another order may differ in the last bits


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", type=Path, nargs="+", metavar="TREE", help="a materialized, indexed tree")
    ap.add_argument("--passes", type=int, default=3, help="timed passes over every query (default: %(default)s)")
    ap.add_argument("-k", type=int, default=10, help="hits per query (default: %(default)s)")
    ap.add_argument("--now", default=DEFAULT_NOW, help="the moment searched at, ISO 8601 (default: %(default)s)")
    ap.add_argument(
        "--refresh-interval",
        type=float,
        default=3600.0,
        help="seconds between checks of the notes on disk (default: %(default)s, so no pass includes one; "
        "memtree's own default is 1)",
    )
    ap.add_argument("--hits-out", type=Path, help="write every query's hits to this JSON file")
    ap.add_argument("--same-as", type=Path, help="compare every query's hits with this --hits-out file")
    ap.add_argument(
        "--instructions",
        metavar="LO:N",
        help="count instructions of queries LO..LO+N-1 after a warm pass, under valgrind's callgrind",
    )
    ap.add_argument(
        "--search",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a search setting to run with, as in memtree.yaml's search: block (say adjacency_weight=0); repeatable",
    )
    ap.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)  # the run callgrind watches
    args = ap.parse_args(argv)
    args.overrides = search_overrides(ap, args.search)
    return args


def search_overrides(ap: argparse.ArgumentParser, pairs: list[str]) -> dict[str, Any]:
    """``--search KEY=VALUE`` pairs as settings: each value read as YAML (0, 0.5, false)."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            ap.error(f"--search wants KEY=VALUE (say adjacency_weight=0), not {pair!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def sample(spec: str) -> tuple[int, int]:
    """LO and N of ``--instructions LO:N``."""
    lo, _, n = spec.partition(":")
    if not (lo.isdigit() and n.isdigit() and int(n) > 0):
        sys.exit(f"error: --instructions wants LO:N (say 1000:300), not {spec!r}")
    return int(lo), int(n)


def counted_run(tree: Path, args: argparse.Namespace) -> None:
    """The part callgrind watches: a whole warm pass, then the sample inside ``eval`` — its C function
    ``builtin_eval`` is what counting is toggled on."""
    from memtree.errors import QueryError

    lo, n = sample(args.instructions)
    queries = [q["query"] for q in load_jsonl(tree / "queries.jsonl")]
    mt = open_tree(tree, args.refresh_interval, args.overrides)
    kwargs: dict[str, Any] = {"k": args.k, "cache": False}
    if supports_kwarg(mt.search, "now"):
        kwargs["now"] = datetime.fromisoformat(args.now)

    def run(part: list[str]) -> None:
        for query in part:
            with contextlib.suppress(QueryError):
                mt.search(query, **kwargs)

    run(queries)  # the IDF cache as a long-running process holds it
    part = queries[lo : lo + n]
    if len(part) < n:
        sys.exit(f"error: {tree}: {len(queries)} queries, no {n} from the {lo}th")
    eval("run(part)", {"run": run, "part": part})
    print(f"[bench] {tree.name}: {len(queries)} queries warm, then {len(part)} counted", file=sys.stderr)


def count_instructions(tree: Path, args: argparse.Namespace) -> float:
    """M instructions per query of the sample, from callgrind's own count."""
    if shutil.which("valgrind") is None:
        sys.exit("error: --instructions needs valgrind (apt-get install valgrind)")
    cmd = [
        "valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=builtin_eval",
        "--callgrind-out-file=/dev/null", sys.executable, str(Path(__file__).resolve()), str(tree),
        "--instructions", args.instructions, "--counted", "-k", str(args.k), "--now", args.now,
        *(f"--search={pair}" for pair in args.search),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = re.search(r"Collected\s*:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"error: callgrind on {tree} failed:\n{done.stderr[-2000:]}")
    return int(found[1].replace(",", "")) / sample(args.instructions)[1] / 1e6


def hit_record(hit: Any, root: Path) -> dict[str, Any]:
    """What must not change when only the speed does: place, score and signals of a hit."""
    return {
        "path": rel_path(hit.path, root),
        "lines": list(hit.lines),
        "score": hit.score,
        "signals": dict(sorted(hit.signals.items())),
    }


def open_tree(tree: Path, refresh_interval: float, overrides: dict[str, Any] | None = None) -> Any:
    """A MemTree on ``tree`` with recall reinforcement off (and ``overrides`` of its search settings)."""
    from dataclasses import fields

    from memtree import MemTree
    from memtree.config import load_settings

    settings = load_settings(tree)
    known = {f.name for f in fields(settings.search)}
    unknown = sorted(set(overrides or {}) - known)
    if unknown:
        sys.exit(f"error: --search {', '.join(unknown)}: no such search setting (known: {', '.join(sorted(known))})")
    settings = replace(settings, search=replace(settings.search, **{**(overrides or {}), "reinforce": False}))
    return MemTree(tree, settings=settings, refresh_interval=refresh_interval)


def time_tree(tree: Path, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(timing figures, per-query hits) of every query of ``tree``."""
    from memtree.errors import QueryError

    queries = [q for q in load_jsonl(tree / "queries.jsonl")]
    mt = open_tree(tree, args.refresh_interval, args.overrides)
    kwargs: dict[str, Any] = {"k": args.k, "cache": False}
    if supports_kwarg(mt.search, "now"):
        kwargs["now"] = datetime.fromisoformat(args.now)
    searchable = []
    hits: dict[str, Any] = {}
    for q in queries:  # the warm-up pass, and the answers
        try:
            result = mt.search(q["query"], **kwargs)
        except QueryError:  # no searchable term: nothing to time
            hits[q["id"]] = {"error": "QueryError"}
            continue
        searchable.append(q["query"])
        hits[q["id"]] = {
            "rejected": result.rejected,
            "hits": [hit_record(h, tree) for h in result.hits],
        }
    best = [math.inf] * len(searchable)
    totals = []
    for _ in range(args.passes):
        total = 0.0
        for i, query in enumerate(searchable):
            t0 = time.process_time()
            mt.search(query, **kwargs)
            took = time.process_time() - t0
            total += took
            best[i] = min(best[i], took)
        totals.append(total)
    ms = [1000 * t for t in best]
    figures = {
        "tree": str(tree),
        "queries": len(searchable),
        "passes_ms": [1000 * t / len(searchable) for t in totals],
        "mean": 1000 * min(totals) / len(searchable),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "best_each_mean": statistics.fmean(ms),
    }
    return figures, hits


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Query ids (with the first difference) whose answers differ between two --hits-out maps."""
    out = []
    for qid in sorted(set(ours) | set(theirs)):
        a, b = ours.get(qid), theirs.get(qid)
        why = _first_difference(a, b)
        if why:
            out.append(f"{qid}: {why}")
    return out


def _first_difference(a: Any, b: Any) -> str:
    if a is None or b is None:
        return "missing in one run"
    if a.get("error") != b.get("error") or a.get("rejected") != b.get("rejected"):
        return f"error/rejected {a.get('error') or a.get('rejected')!r} vs {b.get('error') or b.get('rejected')!r}"
    ha, hb = a.get("hits", []), b.get("hits", [])
    if len(ha) != len(hb):
        return f"{len(ha)} hits vs {len(hb)}"
    for rank, (x, y) in enumerate(zip(ha, hb, strict=True), 1):
        if (x["path"], x["lines"]) != (y["path"], y["lines"]):
            return f"rank {rank}: {x['path']}:{x['lines']} vs {y['path']}:{y['lines']}"
        if not math.isclose(x["score"], y["score"], rel_tol=0, abs_tol=SCORE_TOLERANCE):
            return f"rank {rank}: score {x['score']!r} vs {y['score']!r}"
        if x["signals"].keys() != y["signals"].keys():
            return f"rank {rank}: signals {sorted(x['signals'])} vs {sorted(y['signals'])}"
        for name, value in x["signals"].items():
            if not math.isclose(value, y["signals"][name], rel_tol=0, abs_tol=SCORE_TOLERANCE):
                return f"rank {rank}: signal {name} {value!r} vs {y['signals'][name]!r}"
    return ""


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    for tree in args.trees:
        if not (tree / "queries.jsonl").is_file():
            sys.exit(f"error: {tree}: not a materialized benchmark tree (no queries.jsonl)")
    if args.instructions:
        sample(args.instructions)
        if args.counted:
            counted_run(args.trees[0].resolve(), args)
            return
        rows = []
        for tree in args.trees:
            per_query = count_instructions(tree.resolve(), args)
            print(f"[bench] {tree.name}: {per_query:.3f} M instructions/query", file=sys.stderr, flush=True)
            rows.append([tree.name, args.instructions, f"{per_query:.3f}"])
        print(f"\nwarm MemTree.search, instructions (callgrind) after a warm pass, k={args.k}\n")
        print(md_table(["tree", "queries LO:N", "M instructions/query"], rows))
        return
    rows, all_hits = [], {}
    for tree in args.trees:
        figures, hits = time_tree(tree.resolve(), args)
        all_hits[tree.name] = hits
        passes = " / ".join(f"{t:.3f}" for t in figures["passes_ms"])
        rows.append(
            [tree.name, figures["queries"], f"{figures['mean']:.3f}", f"{figures['p50']:.3f}",
             f"{figures['p95']:.3f}", passes]
        )  # fmt: skip
        print(f"[bench] {tree.name}: {figures['mean']:.3f} ms/query (passes {passes})", file=sys.stderr, flush=True)
    headers = ["tree", "queries", "ms/query (best pass)", "p50", "p95", "every pass"]
    print(f"\nwarm MemTree.search, in-process CPU time, k={args.k}, best of {args.passes} passes\n")
    print(md_table(headers, rows))
    if args.hits_out:
        args.hits_out.write_text(json.dumps(all_hits, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.same_as:
        before = json.loads(args.same_as.read_text(encoding="utf-8"))
        diffs = [f"{name}/{d}" for name in all_hits for d in differences(all_hits[name], before.get(name, {}))]
        n = sum(len(h) for h in all_hits.values())
        print(f"\nhits compared with {args.same_as}: {n} queries, {len(diffs)} differ")
        for line in diffs[:20]:
            print(f"  {line}")
        if diffs:
            sys.exit(1)


if __name__ == "__main__":
    main()
