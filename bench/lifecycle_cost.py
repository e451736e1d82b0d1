#!/usr/bin/env python3
"""What recall reinforcement and decay cost a warm search: alternating passes, one MemTree per setting.

    python bench/lifecycle_cost.py TREE [TREE ...] [--rounds 3]

Each TREE is a materialized, indexed benchmark tree (``bench/quality.py`` leaves them in its work
folder). Three ``MemTree`` instances search every query of the tree — as shipped, with
``search.reinforce`` off, and with reinforcement and ``search.decay`` off — one warm-up pass each,
then ``--rounds`` timed passes taken in turn, so the machine's drift hits all three alike. Prints
ms per query for every pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from memtree import MemTree
    from memtree.config import load_settings
    from memtree.text import terms as text

    for tree in args.trees:
        path = tree / "queries.jsonl"
        if not path.is_file():
            sys.exit(f"{tree}: not a materialized benchmark tree (no queries.jsonl)")
        queries = [json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line]
        queries = [q for q in queries if text.query_terms(q)]  # synth.py can write stop-word-only queries
        st = load_settings(tree)
        variants = {
            "as shipped": MemTree(tree),
            "reinforce off": MemTree(tree, settings=replace(st, search=replace(st.search, reinforce=False))),
            "reinforce and decay off": MemTree(
                tree, settings=replace(st, search=replace(st.search, reinforce=False, decay=False))
            ),
        }
        for mt in variants.values():
            for q in queries:
                mt.search(q, k=10, cache=False)
        passes: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, mt in variants.items():
                t0 = time.perf_counter()
                for q in queries:
                    mt.search(q, k=10, cache=False)
                passes[name].append(1000 * (time.perf_counter() - t0) / len(queries))
        print(f"\n{tree.name}: {len(queries)} queries, k=10, ms per query per pass")
        for name, times in passes.items():
            print(f"  {name:<24} " + "  ".join(f"{t:.3f}" for t in times))


if __name__ == "__main__":
    main()
