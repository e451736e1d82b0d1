#!/usr/bin/env python3
"""The conflict rule's precision and recall on labelled pairs (issue 30 item 4), before and after.

    python bench/conflicts.py [--merge 0.8] [--conflict 0.5] [--half tune|report|both] [--errors]

The pairs are bench/conflict_pairs.py's (Korean and English: update, contradiction, restatement,
different fact on one topic; half to tune on, half to report on). A pair is *flagged* when the rule
would show it to a person or retire the older text:

    before    main's rule: similarity in [conflict, merge) — written and recorded as a conflict
    after     memtree.write.retain.verdict: "replace" (the newer supersedes the older) or "conflict"
    add path  after, and also a restatement (similarity ≥ merge) that no merge keeps every word of:
              `add` writes both and records that as a conflict too (memtree.write.retain.keep)

Positive pairs are updates and contradictions; restatements and different facts should not be
flagged. Printed as Markdown: precision, recall and F1 per half and rule, then per kind and
language on the report half (or on the one --half names); with --errors, every pair of that half
the new rule gets wrong. Tune with ``--half tune --errors``: it prints nothing of the report half.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conflict_pairs import KINDS, Pair, pairs

from memtree.config import CONFLICT_THRESHOLD, MERGE_STRATEGY, MERGE_THRESHOLD
from memtree.notes.entries import parse_entries
from memtree.write.retain import keep, verdict
from memtree.write.similarity import similarity

Rule = Callable[[Pair], bool]


def before(merge_at: float, conflict_at: float) -> Rule:
    """main's rule: a pair in the conflict band is flagged."""
    return lambda p: conflict_at <= similarity(p.new, p.old) < merge_at


def after(merge_at: float, conflict_at: float) -> Rule:
    """This branch's rule: retain.verdict says replace or conflict."""
    return lambda p: verdict(p.new, p.old, similarity(p.new, p.old), merge_at, conflict_at) in ("replace", "conflict")


def add_path(merge_at: float, conflict_at: float) -> Rule:
    """What `add` does with the default merge strategy: after's flags, and a merge that would lose words."""

    def flagged(p: Pair) -> bool:
        said = verdict(p.new, p.old, similarity(p.new, p.old), merge_at, conflict_at)
        if said == "merge":
            return keep(parse_entries(f"- {p.old}\n")[0], p.new, MERGE_STRATEGY) is None
        return said in ("replace", "conflict")

    return flagged


def scores(rule: Rule, found: list[Pair]) -> tuple[float, float, float, int]:
    """Precision, recall, F1 and the number of pairs flagged."""
    flagged = [p for p in found if rule(p)]
    hits = sum(p.flagged for p in flagged)
    positives = sum(p.flagged for p in found)
    precision = hits / len(flagged) if flagged else 1.0
    recall = hits / positives if positives else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, len(flagged)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--merge", type=float, default=MERGE_THRESHOLD)
    ap.add_argument("--conflict", type=float, default=CONFLICT_THRESHOLD)
    ap.add_argument("--half", choices=("tune", "report", "both"), default="both", help="which half to print")
    ap.add_argument("--errors", action="store_true", help="list the pairs of --half the new rule gets wrong")
    args = ap.parse_args(argv)
    halves = ("tune", "report") if args.half == "both" else (args.half,)
    every = pairs()
    rules = {
        "before (main)": before(args.merge, args.conflict),
        "after": after(args.merge, args.conflict),
        "add path": add_path(args.merge, args.conflict),
    }
    print(f"{len(every)} pairs; merge {args.merge}, conflict {args.conflict}\n")
    print("| half | rule | pairs | flagged | precision | recall | F1 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for half in halves:
        found = [p for p in every if p.half == half]
        for name, rule in rules.items():
            p, r, f, n = scores(rule, found)
            print(f"| {half} | {name} | {len(found)} | {n} | {p:.3f} | {r:.3f} | {f:.3f} |")
    shown = halves[-1]
    report = [p for p in every if p.half == shown]
    print(f"\n{shown} half, share flagged per kind (should be 1 for update/contradiction, 0 for the rest):\n")
    print("| kind | lang | pairs | before | after | add path |")
    print("|---|---|---:|---:|---:|---:|")
    for kind in KINDS:
        for lang in ("ko", "en"):
            found = [p for p in report if p.kind == kind and p.lang == lang]
            shares = [sum(rule(p) for p in found) / len(found) for rule in rules.values()]
            print(f"| {kind} | {lang} | {len(found)} | " + " | ".join(f"{x:.2f}" for x in shares) + " |")
    if args.errors:
        rule = rules["after"]
        print(f"\n{shown}-half pairs the new rule gets wrong:\n")
        for p in report:
            if rule(p) != p.flagged:
                s = similarity(p.new, p.old)
                said = verdict(p.new, p.old, s, args.merge, args.conflict)
                print(f"- {p.kind} ({said}, {s:.2f}): {p.old!r} → {p.new!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
