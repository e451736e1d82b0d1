#!/usr/bin/env python3
"""Where untagged `add`s land: routing rules measured on entries labelled with their note.

    python bench/routing.py [ENTRIES] [--wrong-cost 2] [--errors]

ENTRIES is a JSON-lines file of ``{"text", "node", "lang"}`` objects, ``node`` a note node of the
sample memory (the repository's bank/ and tree-index.json) or ``inbox`` when no note fits (default:
tests/data/routing_labelled.jsonl). The sample is copied to a temp folder; every entry is scored
once (the tree's keyword route and, per note, the share of the entry its best chunk covers:
``memtree.write.verbs.route_signals``) and decided by the shipped rule with ``MemTree.add(text, dry_run=True)``.

The entries are split by line parity: even lines (0, 2, …) choose each rule's threshold and margin,
odd lines report. A wrong note is worse than the inbox (it hides the fact among unrelated ones,
and nobody looks for it there), so a rule's cost is ``wrong-cost × wrong notes + inbox misses``
(an inbox entry sent to a note counts as a wrong note); ties go to fewer wrong notes, then the
larger margin and threshold. Printed as Markdown: per rule, its parameters and, on both halves,
right / wrong note / inbox miss / cost and accuracy; the report half per language; and whether the
shipped rule agrees with its own row. With --errors, every report-half entry the shipped rule gets wrong.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from memtree import MemTree
from memtree.config import ROUTE_MARGIN, ROUTE_THRESHOLD, Settings
from memtree.write.retain import INBOX_NODE, confident_route, route_blend
from memtree.write.verbs import route_signals

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ENTRIES = REPO / "tests" / "data" / "routing_labelled.jsonl"
SAMPLE = ("bank", "memory", "recall", "tree-index.json")
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 11))
MARGINS = (1.1, 1.25, 1.5, 2.0)
"""A margin of 1 would let a tie be settled by name; the grid starts above it."""
OLD_THRESHOLD, OLD_MARGIN = 0.25, 1.25
"""The rule before this benchmark: the tree's keyword score alone, ≥ 0.25 and 25 % over the runner-up."""

Signals = tuple[dict[str, float], dict[str, float]]  # (tree scores, coverage) per note node
Scorer = Callable[[Signals], dict[str, float]]


def load_entries(path: Path) -> list[dict[str, str]]:
    """The labelled entries; stops with one line on a missing file or a bad line."""
    if not path.is_file():
        sys.exit(f"routing.py: no entries file at {path}")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"routing.py: {path}:{n}: not JSON ({e.msg})")
        if not isinstance(row, dict) or not {"text", "node", "lang"} <= row.keys():
            sys.exit(f"routing.py: {path}:{n}: needs text, node and lang")
        rows.append(row)
    return rows


def sample_copy(into: Path) -> Path:
    """A copy of the repository's sample memory."""
    root = into / "sample"
    root.mkdir()
    for part in SAMPLE:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, root / part)
        else:
            shutil.copy2(src, root / part)
    return root


def tally(picks: list[str], labels: list[str], wrong_cost: float) -> dict[str, float]:
    """Right, wrong note, inbox miss, cost and accuracy of some picks."""
    right = sum(p == g for p, g in zip(picks, labels))
    miss = sum(p != g and p == INBOX_NODE for p, g in zip(picks, labels))
    wrong = len(picks) - right - miss
    return {
        "n": len(picks),
        "right": right,
        "wrong": wrong,
        "miss": miss,
        "cost": wrong_cost * wrong + miss,
        "acc": right / len(picks) if picks else 0.0,
    }


def pick(scores: dict[str, float], threshold: float, margin: float) -> str:
    """The shipped decision form: a confident note, else the inbox."""
    return confident_route(scores, threshold, margin) or INBOX_NODE


Rule = Callable[[float, float], Callable[[Signals], str]]  # (threshold, margin) → entry → node


def scored(scorer: Scorer) -> Rule:
    """The shipped decision form over some per-note scores."""
    return lambda t, m: lambda s: pick(scorer(s), t, m)


def tune(rule: Rule, signals: list[Signals], labels: list[str], wrong_cost: float) -> tuple[float, float]:
    """The (threshold, margin) of least cost on the tuning half."""

    def key(tm: tuple[float, float]) -> tuple[float, float, float, float]:
        decide = rule(*tm)
        t = tally([decide(s) for s in signals], labels, wrong_cost)
        return (t["cost"], t["wrong"], -tm[1], -tm[0])

    return min(((t, m) for t in THRESHOLDS for m in MARGINS), key=key)


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def cell(t: dict[str, float]) -> str:
    """right / wrong / miss (cost), accuracy."""
    return f"{t['right']:.0f} / {t['wrong']:.0f} / {t['miss']:.0f} ({t['cost']:g}), {t['acc']:.3f}"


def main() -> None:
    """Score every entry, tune each rule on the even half, report on the odd half."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("entries", nargs="?", type=Path, default=DEFAULT_ENTRIES)
    ap.add_argument("--wrong-cost", type=float, default=2.0, help="cost of a wrong note; an inbox miss costs 1")
    ap.add_argument("--errors", action="store_true", help="list the shipped rule's report-half errors")
    args = ap.parse_args()
    rows = load_entries(args.entries)
    weights = Settings().search
    with tempfile.TemporaryDirectory() as tmp:
        mt = MemTree(sample_copy(Path(tmp)), refresh_interval=0)
        mt.refresh()  # the index the signals read (add refreshes it itself)
        nodes = {n.id for n in mt.state.parsed_tree().nodes if n.path}
        unknown = sorted({r["node"] for r in rows} - nodes - {INBOX_NODE})
        if unknown:
            sys.exit(f"routing.py: labels name no note of the sample: {', '.join(unknown)}")
        signals = [route_signals(mt.state, r["text"]) for r in rows]
        shipped = []
        for r in rows:
            d = mt.add(r["text"], dry_run=True)
            shipped.append(INBOX_NODE if d.how == "inbox" else d.node)
    labels = [r["node"] for r in rows]
    halves = {
        "tune": [i for i in range(len(rows)) if i % 2 == 0],
        "report": [i for i in range(len(rows)) if i % 2 == 1],
    }

    def blend(s: Signals) -> dict[str, float]:
        return route_blend(s[0], s[1], weights.tree_weight, weights.bm25_weight)

    def tree_else_coverage(t: float, m: float) -> Callable[[Signals], str]:
        return lambda s: confident_route(s[0], OLD_THRESHOLD, OLD_MARGIN) or pick(s[1], t, m)

    candidates: list[tuple[str, Rule]] = [
        ("tree keywords only, lower threshold", scored(lambda s: s[0])),
        ("best chunk coverage only", scored(lambda s: s[1])),
        ("tree (as before), else best coverage", tree_else_coverage),
        (f"**blend {weights.tree_weight:g} tree + {weights.bm25_weight:g} coverage**", scored(blend)),
    ]

    def of(idx: list[int], seq: list) -> list:  # type: ignore[type-arg]
        return [seq[i] for i in idx]

    tune_sig, tune_lab = of(halves["tune"], signals), of(halves["tune"], labels)
    rules: list[tuple[str, str, Callable[[Signals], str]]] = [
        (
            "before: tree keywords only",
            f"≥ {OLD_THRESHOLD}, × {OLD_MARGIN}",
            lambda s: pick(s[0], OLD_THRESHOLD, OLD_MARGIN),
        )
    ]
    for name, rule in candidates:
        t, m = tune(rule, tune_sig, tune_lab, args.wrong_cost)
        rules.append((name, f"≥ {t:g}, × {m:g}", rule(t, m)))
    picks = {name: [decide(s) for s in signals] for name, _, decide in rules}
    picks["shipped: `MemTree.add(dry_run=True)`"] = shipped
    params = {name: p for name, p, _ in rules} | {
        "shipped: `MemTree.add(dry_run=True)`": f"≥ {ROUTE_THRESHOLD:g}, × {ROUTE_MARGIN:g}"
    }
    n_inbox = sum(lab == INBOX_NODE for lab in labels)
    print(
        f"{len(rows)} entries ({n_inbox} inbox); tune = even lines ({len(halves['tune'])}), "
        f"report = odd lines ({len(halves['report'])}); cost = {args.wrong_cost:g} × wrong note + inbox miss\n"
    )
    table = []
    for name, p in picks.items():
        t_tune = tally(of(halves["tune"], p), tune_lab, args.wrong_cost)
        t_rep = tally(of(halves["report"], p), of(halves["report"], labels), args.wrong_cost)
        table.append([name, params[name], cell(t_tune), cell(t_rep)])
    header = ["rule", "threshold, margin", "tune: right / wrong / inbox miss (cost), acc", "report: same"]
    print(md_table(header, table))
    print()
    by_lang = []
    for name, p in picks.items():
        cells = []
        for lang in ("ko", "en"):
            idx = [i for i in halves["report"] if rows[i]["lang"] == lang]
            cells.append(cell(tally(of(idx, p), of(idx, labels), args.wrong_cost)))
        by_lang.append([name, *cells])
    print(md_table(["rule (report half)", "Korean", "English"], by_lang))
    chosen = next(name for name in picks if name.startswith("**blend"))
    agree = picks[chosen] == shipped
    print(f"\nshipped rule {'agrees' if agree else 'DISAGREES'} with the tuned blend on every entry")
    if args.errors:
        print()
        for i in halves["report"]:
            if shipped[i] != labels[i]:
                print(f"- line {i + 1}: {labels[i]} → {shipped[i]}: {rows[i]['text']}")


if __name__ == "__main__":
    main()
