#!/usr/bin/env python3
"""`memtree consolidate` and `memtree add` on look-alike pairs: do they merge distinct facts, lose text?

    python bench/lookalike.py [PAIRS] [--keep DIR]

PAIRS is a JSON-lines file of ``{"a", "b", "same", "why", "lang"}`` objects (default:
tests/data/lookalike_pairs.jsonl): ``same`` is true for two writings of one fact (punctuation,
casing, a particle) and false for two facts that differ in one number, negation, name or date.
Each pair becomes two hand-written entries of one note in a bank of its own (consolidation
merges within a bank), in a fresh memory root; the real ``MemTree.consolidate`` runs once over it.
Printed as Markdown: distinct-fact pairs merged (must be 0), true duplicates merged (recall), per
reason; hand-written texts found in neither the note nor bank/_archive/ afterwards (must be 0);
and, for comparison, what the rule without the guard (bigram Jaccard ≥ 0.85 alone) would merge.
Then the add path: in another fresh root, ``MemTree.add(a)`` then ``MemTree.add(b)`` into a note of
their own; a merge or duplicate answer for a distinct pair drops a fact (must be 0), one for a true
duplicate is recall; a text is lost when no note holds it and the entry that absorbed it lacks one
of its content words (memtree.write.similarity.lost_words; must be 0).
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
from memtree.notes import entries
from memtree.write.retain import Conflict, Created
from memtree.write.similarity import lost_words

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


def add_path(root: Path, pairs: list[dict]) -> tuple[list[bool], int, Counter[str]]:
    """Add a then b to pair i's own note; whether b was merged (or called a duplicate), texts lost, decisions."""
    build(root, [])
    mt = MemTree(root, refresh_interval=0)
    merged, lost, kinds = [], 0, Counter()
    for i, p in enumerate(pairs):
        to = f"add-{i:03d}/note"
        mt.add(p["a"], to=to)
        decision = mt.add(p["b"], to=to)
        kinds[type(decision).__name__] += 1
        merged.append(not isinstance(decision, Created | Conflict))
        note = (root / f"bank/{to}.md").read_text(encoding="utf-8")
        kept = [e.content for e in entries.parse_entries(note)]
        lost += sum(text not in kept and all(lost_words(k, text) for k in kept) for text in (p["a"], p["b"]))
    return merged, lost, kinds


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
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        added, lost_by_add, kinds = add_path(Path(tmp) / "add", pairs)
        add_seconds = time.perf_counter() - started
    print(f"\n## add a, then add b, to one note ({2 * len(pairs)} adds, {add_seconds:.1f} s)\n")
    print("| | pairs | b merged into a, or called a duplicate |")
    print("|---|---|---|")
    print(f"| distinct facts (must stay apart) | {len(distinct)} | {sum(added[i] for i in distinct)} |")
    n_same = sum(added[i] for i in same)
    print(f"| true duplicates (recall) | {len(same)} | {n_same} ({n_same / len(same):.3f}) |")
    print(
        f"\nanswers to the second add: {', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}; "
        f"texts lost (in no entry, and their words not in the one that took them): {lost_by_add}\n"
    )
    print("| why | same | pairs | merged by add |")
    print("|---|---|---|---|")
    for (why, is_same), n in sorted(
        Counter((p["why"], p["same"]) for p in pairs).items(), key=lambda x: (x[0][1], x[0][0])
    ):
        rows = [i for i, p in enumerate(pairs) if (p["why"], p["same"]) == (why, is_same)]
        print(f"| {why} | {is_same} | {n} | {sum(added[i] for i in rows)} |")
    wrong = [i for i in distinct if merged[i] or added[i]] + [i for i in same if not (merged[i] and added[i])]
    if wrong:
        print("\npairs on the wrong side (distinct merged, or duplicates left apart by consolidate / add):\n")
        for i in wrong:
            p = pairs[i]
            by = "/".join(w for w, hit in (("consolidate", merged[i]), ("add", added[i])) if hit != p["same"])
            print(f"- {'same' if p['same'] else 'distinct'} ({p['why']}, {by}): {p['a']} | {p['b']}")
    ok = lost == 0 and lost_by_add == 0 and not any(merged[i] or added[i] for i in distinct)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
