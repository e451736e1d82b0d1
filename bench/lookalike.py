#!/usr/bin/env python3
"""`memtree consolidate` on look-alike pairs: does it merge distinct facts, and does it lose text?

    python bench/lookalike.py [PAIRS] [--keep DIR]

PAIRS is a JSON-lines file of ``{"a", "b", "same", "why", "lang"}`` objects (default:
tests/data/lookalike_pairs.jsonl): ``same`` is true for two writings of one fact (punctuation,
casing, a particle) and false for two facts that differ in one number, negation, name or date.
Each pair becomes two hand-written entries of one note in a bank of its own (consolidation
merges within a bank), in a fresh memory root; the real ``MemTree.consolidate`` runs once over it.
Printed as Markdown: distinct-fact pairs merged (must be 0), true duplicates merged (recall), per
reason; hand-written texts found in neither the note nor bank/_archive/ afterwards (must be 0);
and, for comparison, what the rule without the guard (bigram Jaccard ≥ 0.85 alone) would merge.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from memtree import MemTree
from memtree.config import CONSOLIDATE_JACCARD
from memtree.lifecycle import aging, consolidate

DEFAULT_PAIRS = Path(__file__).resolve().parent.parent / "tests" / "data" / "lookalike_pairs.jsonl"


def build(root: Path, pairs: list[dict]) -> None:
    """A memory root with pair i as the two entries of bank/pair-i/note.md."""
    for tier in ("bank", "memory", "recall"):
        (root / tier).mkdir(parents=True, exist_ok=True)
    (root / "tree-index.json").write_text('{"version": 1, "nodes": []}\n', encoding="utf-8")
    for i, p in enumerate(pairs):
        note = root / "bank" / f"pair-{i:03d}" / "note.md"
        note.parent.mkdir()
        note.write_text(f"# Pair {i}\n\n- {p['a']}\n- {p['b']}\n", encoding="utf-8")


def survives(root: Path, i: int, text: str) -> tuple[bool, bool]:
    """Whether ``text`` is still an entry of pair i's note, and whether bank/_archive/ holds it."""
    path = f"bank/pair-{i:03d}/note.md"
    archive = root / aging.archive_path(path)
    lines = {ln.rstrip() for ln in (root / path).read_text(encoding="utf-8").split("\n")}
    kept = {ln.rstrip() for ln in archive.read_text(encoding="utf-8").split("\n")} if archive.exists() else set()
    entry = f"- {text}".rstrip()  # a rewritten entry loses trailing spaces only
    return entry in lines, entry in kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="?", type=Path, default=DEFAULT_PAIRS)
    parser.add_argument("--keep", type=Path, help="build the root here and leave it (default: a temp folder)")
    args = parser.parse_args()
    if not args.pairs.is_file():
        print(f"lookalike.py: {args.pairs} not found", file=sys.stderr)
        return 2
    pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "root"
        build(root, pairs)
        started = time.perf_counter()
        report = MemTree(root, refresh_interval=0).consolidate()
        seconds = time.perf_counter() - started
        folded = {m.keep.path for m in report.merges}
        merged = [f"bank/pair-{i:03d}/note.md" in folded for i in range(len(pairs))]
        lost = sum(not any(survives(root, i, p[side])) for i, p in enumerate(pairs) for side in ("a", "b"))
        archived = sum(len(m.drop) for m in report.merges)
    unguarded = [
        consolidate.jaccard(consolidate.bigrams(p["a"]), consolidate.bigrams(p["b"])) >= CONSOLIDATE_JACCARD
        for p in pairs
    ]
    distinct = [i for i, p in enumerate(pairs) if not p["same"]]
    same = [i for i, p in enumerate(pairs) if p["same"]]
    print(f"# consolidate on {len(pairs)} look-alike pairs ({args.pairs.name})\n")
    print("| | pairs | merged by consolidate | merged by bigram Jaccard ≥ 0.85 alone |")
    print("|---|---|---|---|")
    print(
        f"| distinct facts (must stay apart) | {len(distinct)} | {sum(merged[i] for i in distinct)} "
        f"| {sum(unguarded[i] for i in distinct)} |"
    )
    print(
        f"| true duplicates (recall) | {len(same)} | {sum(merged[i] for i in same)} "
        f"({sum(merged[i] for i in same) / len(same):.3f}) "
        f"| {sum(unguarded[i] for i in same)} ({sum(unguarded[i] for i in same) / len(same):.3f}) |"
    )
    print(
        f"\nhand-written texts: {2 * len(pairs)}; lost (in neither the note nor bank/_archive/): {lost}; "
        f"merged away and archived: {archived} ({seconds:.2f} s for the run)\n"
    )
    print("| why | same | pairs | merged | merged by Jaccard alone |")
    print("|---|---|---|---|---|")
    for (why, is_same), n in sorted(
        Counter((p["why"], p["same"]) for p in pairs).items(), key=lambda x: (x[0][1], x[0][0])
    ):
        rows = [i for i, p in enumerate(pairs) if (p["why"], p["same"]) == (why, is_same)]
        print(f"| {why} | {is_same} | {n} | {sum(merged[i] for i in rows)} | {sum(unguarded[i] for i in rows)} |")
    wrong = [i for i in distinct if merged[i]] + [i for i in same if not merged[i]]
    if wrong:
        print("\npairs on the wrong side (distinct merged, or duplicates left apart):\n")
        for i in wrong:
            p = pairs[i]
            print(f"- {'same' if p['same'] else 'distinct'} ({p['why']}): {p['a']} | {p['b']}")
    return 0 if lost == 0 and not any(merged[i] for i in distinct) else 1


if __name__ == "__main__":
    raise SystemExit(main())
