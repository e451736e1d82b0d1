#!/usr/bin/env python3
"""The rejection trade-off: for each threshold τ on query coverage, how many questions are left empty.

    python bench/reject.py TREE [TREE ...] [--thresholds 0.1,0.2,...]
    python bench/reject.py TREE [TREE ...] --semantic [--similarities 0.80,0.82,...]

Each TREE is a memory root written by ``../shared/bench/materialize.py`` and indexed with
``memtree index`` (``bench/quality.py`` leaves them in its work folder). Every query is searched
once with rejection off; the coverage of its best hit (the IDF-weighted share of query terms it
holds, DESIGN §3.5) then decides, for every τ, whether memtree would have answered. Printed per
tree: τ, unanswerable left empty (higher is better), answerable left empty (lower is better) and
chunk-level hit@5 with rejection applied.

With ``--semantic`` (the embedding layer, ``pip install 'memtree[embed]'``) each query also keeps
the best cosine similarity among its hits; a query is then left empty when its best coverage is
under the keyword threshold (search.reject_threshold) *and* its best similarity is under τ_sem,
and the table runs over τ_sem — the calibration of embed.min_similarity.
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


def best_coverages(tree: Path, semantic: bool = False) -> list[tuple[bool, float, bool, float]]:
    """(answerable, best coverage, relevant chunk in the top 5, best cosine) for every query of a tree."""
    from memtree import MemTree
    from memtree.config import load_settings
    from memtree.errors import QueryError

    settings = load_settings(tree)
    search = replace(settings.search, reject_threshold=0.0, reinforce=False)
    embed = replace(settings.embed, min_similarity=-1.0 if semantic else settings.embed.min_similarity)
    mt = MemTree(tree, settings=replace(settings, search=search, embed=embed), refresh_interval=3600)
    spans = {s["id"]: s for s in load_jsonl(tree / "spans.jsonl")}
    out = []
    for q in load_jsonl(tree / "queries.jsonl"):
        try:
            result = mt.search(q["query"], k=10, cache=False, semantic=semantic)
            hits = result.hits
        except QueryError:
            hits = ()
        if semantic and result.warnings and any("semantic search off" in w for w in result.warnings):
            sys.exit(f"{tree}: {result.warnings[-1]}")
        best = max((h.signals["coverage"] for h in hits), default=0.0)
        cos = max((h.signals.get("semantic", 0.0) for h in hits), default=0.0)
        targets = [spans[r] for r in q["relevant"] if r in spans]
        found = any(
            h.path == t["path"]
            and h.lines[1] - h.lines[0] < 30
            and h.lines[0] <= t["lines"][1]
            and h.lines[1] >= t["lines"][0]
            for h in hits[:5]
            for t in targets
        )
        out.append((bool(q["answerable"]) and bool(targets), best, found, cos))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--thresholds", default="0,0.1,0.2,0.25,0.3,0.35,0.4,0.5")
    ap.add_argument("--semantic", action="store_true", help="calibrate τ_sem with the embedding layer on")
    ap.add_argument("--keyword-threshold", type=float, default=0.30, help="with --semantic (default: %(default)s)")
    ap.add_argument("--similarities", default="0.80,0.82,0.84,0.85,0.86,0.87,0.88,0.90,1.01")
    args = ap.parse_args()
    grid = [float(t) for t in (args.similarities if args.semantic else args.thresholds).split(",")]
    for tree in args.trees:
        if not (tree / "queries.jsonl").is_file():
            sys.exit(f"{tree}: not a materialized benchmark tree (no queries.jsonl)")
        rows = best_coverages(tree, args.semantic)
        answerable = [r for r in rows if r[0]]
        unanswerable = [r for r in rows if not r[0]]
        print(f"\n{tree.name}: {len(answerable)} answerable, {len(unanswerable)} unanswerable")
        if args.semantic:
            kw = args.keyword_threshold
            print(f"(keyword threshold {kw:.2f}; a query is left empty when coverage < {kw:.2f} and cosine < τ_sem)")
            print("| τ_sem | unanswerable left empty | answerable left empty | hit@5 |")
        else:
            print("| τ | unanswerable left empty | answerable left empty | hit@5 |")
        print("|---|---|---|---|")
        for tau in grid:
            if args.semantic:

                def empty(row: tuple[bool, float, bool, float], tau: float = tau) -> bool:
                    return row[1] < args.keyword_threshold and row[3] < tau
            else:

                def empty(row: tuple[bool, float, bool, float], tau: float = tau) -> bool:
                    return row[1] < tau

            un_empty = sum(1 for r in unanswerable if empty(r)) / max(1, len(unanswerable))
            an_empty = sum(1 for r in answerable if empty(r)) / max(1, len(answerable))
            hit5 = sum(1 for r in answerable if r[2] and not empty(r)) / max(1, len(answerable))
            print(f"| {tau:.2f} | {un_empty:.3f} | {an_empty:.3f} | {hit5:.3f} |")


if __name__ == "__main__":
    main()
