#!/usr/bin/env python3
"""The rejection trade-off: for each threshold τ on query coverage, how many questions are left empty.

    python bench/reject.py TREE [TREE ...] [--thresholds 0.1,0.2,...]

Each TREE is a memory root written by ``../shared/bench/materialize.py`` and indexed with
``memtree index`` (``bench/quality.py`` leaves them in its work folder). Every query is searched
once with rejection off; the coverage of its best hit (the IDF-weighted share of query terms it
holds, DESIGN §3.5) then decides, for every τ, whether memtree would have answered. Printed per
tree: τ, unanswerable left empty (higher is better), answerable left empty (lower is better) and
chunk-level hit@5 with rejection applied.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def best_coverages(tree: Path) -> list[tuple[bool, float, bool]]:
    """(answerable, best coverage, relevant chunk in the top 5) for every query of a tree."""
    from memtree import MemTree
    from memtree.config import load_settings
    from memtree.errors import QueryError

    settings = load_settings(tree)
    settings = replace(settings, search=replace(settings.search, reject_threshold=0.0))
    mt = MemTree(tree, settings=settings, refresh_interval=3600)
    spans = {s["id"]: s for s in load_jsonl(tree / "spans.jsonl")}
    out = []
    for q in load_jsonl(tree / "queries.jsonl"):
        try:
            hits = mt.search(q["query"], k=10, cache=False).hits
        except QueryError:
            hits = ()
        best = max((h.signals["coverage"] for h in hits), default=0.0)
        targets = [spans[r] for r in q["relevant"] if r in spans]
        found = any(
            h.path == t["path"]
            and h.lines[1] - h.lines[0] < 30
            and h.lines[0] <= t["lines"][1]
            and h.lines[1] >= t["lines"][0]
            for h in hits[:5]
            for t in targets
        )
        out.append((bool(q["answerable"]) and bool(targets), best, found))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--thresholds", default="0,0.1,0.2,0.25,0.3,0.35,0.4,0.5")
    args = ap.parse_args()
    grid = [float(t) for t in args.thresholds.split(",")]
    for tree in args.trees:
        if not (tree / "queries.jsonl").is_file():
            sys.exit(f"{tree}: not a materialized benchmark tree (no queries.jsonl)")
        rows = best_coverages(tree)
        answerable = [r for r in rows if r[0]]
        unanswerable = [r for r in rows if not r[0]]
        print(f"\n{tree.name}: {len(answerable)} answerable, {len(unanswerable)} unanswerable")
        print("| τ | unanswerable left empty | answerable left empty | hit@5 |")
        print("|---|---|---|---|")
        for tau in grid:
            un_empty = sum(1 for _, c, _ in unanswerable if c < tau) / max(1, len(unanswerable))
            an_empty = sum(1 for _, c, _ in answerable if c < tau) / max(1, len(answerable))
            hit5 = sum(1 for _, c, f in answerable if f and c >= tau) / max(1, len(answerable))
            print(f"| {tau:.2f} | {un_empty:.3f} | {an_empty:.3f} | {hit5:.3f} |")


if __name__ == "__main__":
    main()
