"""Charts for docs/benchmarks.md from bench/quality.py's own results (``--json-out``).

    python bench/quality.py ../shared/bench --datasets korquad,locomo --json-out /tmp/quality.json
    python bench/charts.py /tmp/quality.json --out docs/charts     # pip install -e '.[bench]' (matplotlib)

Draws, as SVG:

- ``quality.svg``: hit@5 per data set, memtree (from the results file) beside the peers measured on the
  same trees with the same scorer (``../shared/bench/README.md``, copied into ``PEERS`` below with
  where each figure comes from);
- ``latency.svg``: one search per data set — warm in-process (median ms) and a whole cold
  ``memtree search`` process (median ms), from the same results file.

Time against memory size (bench/scale.py) and the daemon's forwarded call (bench/serve.py) are not drawn
here yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PEERS: dict[str, dict[str, float]] = {
    # ../shared/bench/README.md, "What other tools score": hit@5, dev trees as materialized, chunk level
    "rank-bm25 (whitespace)": {"korquad": 0.912, "locomo": 0.441},
    "SQLite FTS5 trigram": {"korquad": 0.884, "locomo": 0.484},
    "Kiwi + BM25": {"korquad": 0.990, "locomo": 0.417},
    "basic-memory 0.24.1": {"korquad": 0.024, "locomo": 0.382},
    "QMD 2.8.3": {"korquad": 0.025, "locomo": 0.158},
}


def hit5(result: dict[str, Any]) -> float:
    """memtree's chunk-level hit@5 over all questions of one data set, as score.py reports it."""
    return float(result["score"]["all"]["hit@5"])


def warm_ms(result: dict[str, Any]) -> float:
    """Median ms of a warm in-process search (quality.py's timed pass)."""
    return float(result["warm"]["p50"])


def draw(results: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write the charts into ``out``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "memtree"  # the same results draw the same bytes
    matplotlib.rcParams["svg.fonttype"] = "none"
    out.mkdir(parents=True, exist_ok=True)
    sets = [r["dataset"] for r in results]
    tools = {"memtree": {r["dataset"]: hit5(r) for r in results}, **PEERS}
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(tools)
    for i, (tool, scores) in enumerate(tools.items()):
        xs = [j + i * width for j in range(len(sets))]
        ax.bar(xs, [scores.get(s, 0.0) for s in sets], width, label=tool)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sets))], sets)
    ax.set_ylabel("hit@5 (chunk level)")  # memtree: all questions; peers: as measured in ../shared/bench
    ax.set_ylim(0, 1)
    ax.set_title("Retrieval quality, same trees and scorer")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    quality = out / "quality.svg"
    fig.savefig(quality, metadata={"Date": None})
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(sets))
    ax.bar([x - 0.2 for x in xs], [warm_ms(r) for r in results], 0.4, label="warm, in-process (median)")
    ax.bar([x + 0.2 for x in xs], [r["cold"]["median_ms"] for r in results], 0.4, label="cold CLI process (median)")
    ax.set_xticks(list(xs), sets)
    ax.set_ylabel("ms per search")
    ax.set_yscale("log")
    ax.set_title("One search")
    ax.legend(fontsize=8)
    fig.tight_layout()
    latency = out / "latency.svg"
    fig.savefig(latency, metadata={"Date": None})
    plt.close(fig)
    return [quality, latency]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="bench/quality.py --json-out file")
    ap.add_argument("--out", type=Path, default=Path("docs/charts"), help="folder for the SVGs (default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("bench/charts.py: matplotlib is missing: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    results = json.loads(args.results.read_text(encoding="utf-8"))
    for path in draw(results, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
