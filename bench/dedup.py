#!/usr/bin/env python3
"""Candidate similarities for retain's dedup, measured on labelled duplicate / related / unrelated pairs.

    python bench/dedup.py [PAIRS] [--merge 0.8] [--conflict 0.5] [--errors]

PAIRS is a JSON-lines file of ``{"a", "b", "label", "lang", "note"}`` objects, label one of
duplicate / related / unrelated (default: tests/data/dedup_pairs.jsonl). Every candidate in
``memtree.write.similarity`` scores every pair; a score ≥ MERGE reads as duplicate (merged), one in
[CONFLICT, MERGE) as related (written, flagged as a possible conflict), the rest as unrelated.
Printed as Markdown: per function, 3-way accuracy, per-label recall, the precision of "duplicate"
(a false merge loses information), the share of related pairs flagged (≥ CONFLICT), ROC AUC of
duplicate against the rest, time per pair; the score distribution per label; for the chosen
function, accuracy per language and the sweep of its raw score that placed the calibration knots;
with --errors, every pair the chosen function gets wrong.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memtree.write import similarity as sim

DEFAULT_PAIRS = Path(__file__).resolve().parent.parent / "tests" / "data" / "dedup_pairs.jsonl"
LABELS = ("duplicate", "related", "unrelated")
RAW = "soft term Dice + number cap (raw)"
CHOSEN = "**similarity** (raw, calibrated)"
CANDIDATES: dict[str, Callable[[str, str], float]] = {
    "term Jaccard": sim.term_jaccard,
    "term Dice": sim.term_dice,
    "term overlap (∩ / min)": sim.term_overlap,
    "term TF cosine": sim.term_cosine,
    "char-bigram Jaccard": sim.bigram_jaccard,
    "char-bigram Dice": sim.bigram_dice,
    "max(term Dice, bigram Dice)": sim.max_blend,
    "mean(term Dice, bigram Dice)": sim.mean_blend,
    "soft term Dice (Korean prefix 0.7)": sim.soft_dice,
    RAW: sim.raw_score,
    CHOSEN: sim.similarity,
}
# Two 200-character entries, the size the speed target is stated for.
LONG_A = (
    "배포 파이프라인은 GitHub Actions에서 돌고, 스테이징 배포는 main 브랜치에 머지될 때마다 자동으로 실행된다. "
    "운영 배포는 화요일과 목요일 오후 2시에만 하며, 금요일에는 급한 핫픽스가 아니면 배포하지 않는다. "
    "배포 전에는 반드시 마이그레이션 스크립트를 스테이징에서 먼저 돌려 본다. 롤백은 이전 태그로 다시 배포하고, "
    "롤백한 이유는 팀 채널에 남긴다."
)[:200]
LONG_B = (
    "운영 배포는 화요일과 목요일 오후 2시에만 한다. 스테이징 배포는 main 브랜치에 머지될 때마다 GitHub Actions에서 "
    "자동 실행된다. 금요일에는 급한 핫픽스가 아니면 배포 금지. 배포 전 마이그레이션 스크립트는 스테이징에서 먼저 돌려 "
    "본다. 롤백은 이전 태그를 다시 배포하는 방식으로 한다. 롤백 이유는 팀 채널에 꼭 남기고, 태그는 릴리스 노트와 함께 "
    "관리한다."
)[:200]


def load_pairs(path: Path) -> list[dict[str, str]]:
    """The labelled pairs; stops with one line on a missing file or a bad line."""
    if not path.is_file():
        sys.exit(f"dedup.py: no pairs file at {path}")
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            pair = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"dedup.py: {path}:{n}: not JSON ({e.msg})")
        if not isinstance(pair, dict) or pair.get("label") not in LABELS or not {"a", "b"} <= pair.keys():
            sys.exit(f"dedup.py: {path}:{n}: needs a, b and a label in {LABELS}")
        pairs.append(pair)
    return pairs


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def auc(pos: list[float], neg: list[float]) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg)) if pos and neg else float("nan")


def evaluate(scores: list[float], labels: list[str], merge: float, conflict: float) -> dict[str, float]:
    """Accuracy, recall per label, duplicate precision, related flagged, AUC for one function's scores."""
    predicted = [sim.classify(s, merge, conflict) for s in scores]
    out = {"accuracy": sum(p == t for p, t in zip(predicted, labels)) / len(labels)}
    for label in LABELS:
        mine = [p for p, t in zip(predicted, labels) if t == label]
        out[label] = sum(p == label for p in mine) / len(mine) if mine else float("nan")
    merged = [t for p, t in zip(predicted, labels) if p == "duplicate"]
    out["precision"] = merged.count("duplicate") / len(merged) if merged else float("nan")
    out["merged"] = len(merged)
    related = [s for s, t in zip(scores, labels) if t == "related"]
    out["flagged"] = sum(s >= conflict for s in related) / len(related) if related else float("nan")
    dup = [s for s, t in zip(scores, labels) if t == "duplicate"]
    out["auc"] = auc(dup, [s for s, t in zip(scores, labels) if t != "duplicate"])
    return out


def per_pair_us(fn: Callable[[str, str], object], pairs: list[tuple[str, str]], rounds: int = 5) -> float:
    """Best-of-rounds mean time of one call, in microseconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for a, b in pairs:
            fn(a, b)
        best = min(best, time.perf_counter() - start)
    return best / len(pairs) * 1e6


def pct(x: float) -> str:
    """A share or score with three decimals."""
    return f"{x:.3f}"


def metric_cells(m: dict[str, float]) -> list[str]:
    """The classification figures of one function, in the order of METRIC_HEADER."""
    cells = [pct(m[k]) for k in ("accuracy", *LABELS)]
    return [*cells, f"{pct(m['precision'])} ({m['merged']:.0f})", pct(m["flagged"])]


METRIC_HEADER = [
    "accuracy",
    "dup. recall",
    "rel. recall",
    "unrel. recall",
    "dup. precision (merged)",
    "related flagged",
]


def sweep(raw: list[float], labels: list[str]) -> str:
    """How the raw score's knots were read: merge knot vs duplicate precision/recall, conflict knot vs the rest."""
    dup = [s for s, t in zip(raw, labels) if t == "duplicate"]
    rel = [s for s, t in zip(raw, labels) if t == "related"]
    unrel = [s for s, t in zip(raw, labels) if t == "unrelated"]
    rows = []
    for k in (0.70, 0.75, 0.78, 0.80, 0.81, 0.82, 0.85, 0.90):
        merged, right = sum(s >= k for s in raw), sum(s >= k for s in dup)
        rows.append([f"{k:.2f}", pct(right / merged) if merged else "–", pct(right / len(dup)), str(merged - right)])
    merge = md_table(["raw merge knot", "duplicate precision", "duplicate recall", "false merges"], rows)
    rows = []
    for k in (0.25, 0.30, 0.33, 0.35, 0.38, 0.40, 0.45, 0.50):
        rows.append([f"{k:.2f}", pct(sum(s >= k for s in rel) / len(rel)), pct(sum(s < k for s in unrel) / len(unrel))])
    conflict = md_table(["raw conflict knot", "related flagged (≥ knot)", "unrelated left out (< knot)"], rows)
    return merge + "\n\n" + conflict


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _holds_both(kept: str, pair: dict[str, str]) -> bool:
    return not sim.lost_words(kept, pair["a"]) and not sim.lost_words(kept, pair["b"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="?", type=Path, default=DEFAULT_PAIRS, help="JSON lines (default: %(default)s)")
    ap.add_argument("--merge", type=float, default=0.8, help="duplicate at or above (default: %(default)s)")
    ap.add_argument("--conflict", type=float, default=0.5, help="related at or above (default: %(default)s)")
    ap.add_argument("--errors", action="store_true", help="list the pairs the chosen function gets wrong")
    args = ap.parse_args(argv)
    pairs = load_pairs(args.pairs)
    labels = [p["label"] for p in pairs]
    texts = [(p["a"], p["b"]) for p in pairs]
    langs = sorted({p.get("lang", "?") for p in pairs})
    by_label = ", ".join(f"{labels.count(k)} {k}" for k in LABELS)
    by_lang = ", ".join(f"{sum(p.get('lang', '?') == g for p in pairs)} {g}" for g in langs)
    print(f"# Dedup similarity on {args.pairs.name}\n")
    print(f"{len(pairs)} pairs: {by_label}; {by_lang}.")
    print(f"Read as: ≥ {args.merge} duplicate (merged), {args.conflict}–{args.merge} related (possible conflict).\n")

    scores = {name: [fn(a, b) for a, b in texts] for name, fn in CANDIDATES.items()}
    rows = []
    for name, fn in CANDIDATES.items():
        m = evaluate(scores[name], labels, args.merge, args.conflict)
        rows.append([name, *metric_cells(m), pct(m["auc"]), f"{per_pair_us(fn, texts):.1f}"])
    print("## Classification with the fixed thresholds\n")
    print(md_table(["function", *METRIC_HEADER, "AUC dup vs rest", "µs/pair"], rows) + "\n")

    rows = []
    for name, values in scores.items():
        spread = []
        for label in LABELS:
            mine = [s for s, t in zip(values, labels) if t == label]
            spread.append(f"{min(mine):.2f} / {statistics.median(mine):.2f} / {max(mine):.2f}")
        rows.append([name, *spread])
    print("## Score distribution per label (min / median / max)\n")
    print(md_table(["function", *LABELS], rows) + "\n")

    chosen = scores[CHOSEN]
    rows = []
    for lang in langs:
        idx = [i for i, p in enumerate(pairs) if p.get("lang", "?") == lang]
        m = evaluate([chosen[i] for i in idx], [labels[i] for i in idx], args.merge, args.conflict)
        rows.append([lang, str(len(idx)), *metric_cells(m)])
    print("## similarity per language\n")
    print(md_table(["lang", "pairs", *METRIC_HEADER], rows) + "\n")
    # add merges only when the text it keeps (the longer, else the other) holds every content word of both
    over = [i for i in range(len(pairs)) if scores[CHOSEN][i] >= args.merge]
    kept_apart = [i for i in over if not any(_holds_both(k, pairs[i]) for k in (pairs[i]["a"], pairs[i]["b"]))]
    dups = [i for i, lab in enumerate(labels) if lab == "duplicate"]
    merged = [i for i in dups if i in over and i not in kept_apart]
    print(
        "add's safety net (a merge keeps a text only when it holds every content word of both, "
        f"else both are kept as a conflict): {len(kept_apart)} of {len(over)} pairs over the merge threshold "
        f"kept apart ({sum(labels[i] == 'duplicate' for i in kept_apart)} labelled duplicate); "
        f"duplicates merged by add {len(merged)} of {len(dups)} ({len(merged) / len(dups):.3f}).\n"
    )
    long_pair = [(LONG_A, LONG_B)] * 500
    total = per_pair_us(sim.similarity, long_pair, rounds=15)
    tokens = per_pair_us(lambda a, b: (sim.term_set(a), sim.term_set(b)), long_pair, rounds=15)
    print(f"Two entries of {len(LONG_A)} and {len(LONG_B)} characters: similarity {total:.1f} µs, ", end="")
    print(f"of which {tokens:.1f} µs are the terms of both (memtree.text.terms.terms).\n")

    print(f"## Calibration: the raw score swept (knots: raw {sim.RAW_CONFLICT} → 0.5, raw {sim.RAW_MERGE} → 0.8)\n")
    print(sweep(scores[RAW], labels) + "\n")

    if args.errors:
        rows = []
        for p, s in zip(pairs, chosen):
            got = sim.classify(s, args.merge, args.conflict)
            if got != p["label"]:
                rows.append([p["label"], got, f"{s:.2f}", cell(p["a"]), cell(p["b"]), cell(p.get("note", ""))])
        print("## Pairs similarity gets wrong\n")
        print(md_table(["label", "got", "score", "a", "b", "note"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
