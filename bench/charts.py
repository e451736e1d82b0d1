"""Draw the benchmark page's charts from the bench scripts' own results files.

    python bench/charts.py                      # bench/results/*.json → docs/img/bench-*.svg
    python bench/charts.py --results DIR --out DIR

Each chart is drawn from the results files it names in CHARTS, written by a script's ``--results``
option (``quality.json`` by bench/quality.py, ``scale.json`` by bench/scale.py, ``serve.json`` by
bench/serve.py) or, for the other tools' figures, transcribed with their source (``peers.json``).
A chart whose files are missing is skipped with a line. Nothing here measures anything.

The SVGs are drawn to change only when their inputs do: text stays text (``svg.fonttype: none``),
element ids come from a fixed salt (``svg.hashsalt``) and no date is written, so drawing again from
the same results changes no byte. Each SVG's description names its inputs and their digest
(``inputs_digest``: the files and this script), which tests/test_bench_charts.py compares with the
committed results. Labels are English: the fonts matplotlib measures with have no Hangul.

Needs matplotlib, the ``bench`` extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
OUT = REPO / "docs" / "img"
INSTALL = "pip install -e '.[bench]'"

# Why fixed: the same results must give the same bytes (a redraw without new figures is no diff).
STYLE = {
    "svg.fonttype": "none",  # text as <text>, not glyph paths: small, diffable, searchable
    "svg.hashsalt": "memtree-bench",  # clip-path and glyph ids from a fixed salt, not a random one
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 72,
}
MEMTREE = "#2563eb"  # memtree's own bars and lines
BASELINE = "#9ca3af"  # libraries measured side by side
PRODUCT = "#f59e0b"  # tools a user might pick instead
ENGINE_COLOURS = {"bm25s": "#10b981", "SQLite FTS5 unicode61": "#f59e0b", "rank-bm25 BM25Okapi": "#9ca3af"}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of results files (default: bench/results)")
    ap.add_argument("--out", type=Path, default=OUT, help="folder the SVGs are written to (default: docs/img)")
    args = ap.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"error: bench/charts.py draws with matplotlib, which is not installed: {INSTALL}", file=sys.stderr)
        sys.exit(2)
    try:
        said = draw_all(args.results, args.out)
    except (ValueError, KeyError, TypeError) as exc:  # a results file that is not JSON, or not a script's shape
        print(f"error: cannot draw from {args.results}: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)
    for line in said:
        print(line)


def draw_all(results: Path, out: Path) -> list[str]:
    """Draw every chart whose inputs are in ``results`` into ``out``; one line per chart said."""
    from matplotlib import __version__, rc_context

    said = []
    out.mkdir(parents=True, exist_ok=True)
    for chart in CHARTS:
        missing = [name for name in chart.inputs if not (results / name).is_file()]
        if missing:
            said.append(f"{chart.file}: skipped, no {', '.join(missing)} in {results}")
            continue
        data = {name: json.loads((results / name).read_text(encoding="utf-8")) for name in chart.inputs}
        with rc_context(STYLE):
            figure = chart.draw(data)
            digest = inputs_digest(results, chart)
            sources = ", ".join(chart.inputs)
            description = f"Drawn by bench/charts.py from {sources}; inputs digest {digest}; matplotlib {__version__}"
            figure.savefig(
                out / chart.file,
                format="svg",
                metadata={"Date": None, "Creator": "bench/charts.py (matplotlib)", "Description": description},
            )
        said.append(f"{chart.file}: drawn from {sources}")
    return said


def inputs_digest(results: Path, chart: Chart) -> str:
    """SHA-256 (16 hex digits) of this script and the chart's results files: what the SVG was drawn from."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    for name in chart.inputs:
        h.update(name.encode())
        h.update((results / name).read_bytes())
    return h.hexdigest()[:16]


def footer(figure: Any, run: dict, extra: str = "") -> None:
    """The run a chart comes from, under it: script, date, commit, machine load."""
    load = run.get("load", {})
    before, after = (load.get("before") or [None])[0], (load.get("after") or [None])[0]
    parts = [run.get("script", "?"), (run.get("started") or "?")[:10], f"commit {run.get('commit') or '?'}"]
    if before is not None and after is not None:
        parts.append(f"load {before:.1f} → {after:.1f} on {run.get('machine', {}).get('cpus', '?')} cores")
    text = " · ".join(parts) + (f" · {extra}" if extra else "")
    figure.supxlabel(text, x=0.01, ha="left", fontsize=7, color="#6b7280")  # the layout keeps room for it


# ---------------------------------------------------------------- quality against the other tools


def quality_bars(quality: dict, peers: dict) -> list[tuple[str, list[tuple[str, float, str]]]]:
    """The panels of the quality chart: (title, [(label, value, kind)]), best first; kind colours the bar."""
    ours = {d["dataset"]: d for d in quality["figures"]["datasets"] if not d.get("semantic")}
    panels = [  # the keys are quality.py's (benchlib's results file) and peers.json's alike
        ("KorQuAD: hit@5, chunk level", "korquad", "hit@5"),
        ("LoCoMo: hit@5, chunk level (a turn)", "locomo", "hit@5"),
        ("LoCoMo: hit@5, session level", "locomo", "file_hit@5"),
        ("KorQuAD: unanswerable left empty", "korquad", "unanswerable_empty"),
    ]
    out = []
    for title, dataset, key in panels:
        bars = []
        if dataset in ours and ours[dataset].get(key) is not None:
            bars.append(("memtree", float(ours[dataset][key]), "memtree"))
        for peer in peers["engines"]:
            value = peer.get(dataset, {}).get(key)
            if value is not None:
                bars.append((peer["label"], float(value), peer["kind"]))
        out.append((title, sorted(bars, key=lambda b: -b[1])))
    return out


def draw_quality(data: dict[str, dict]) -> Any:
    from matplotlib.figure import Figure

    quality, peers = data["quality.json"], data["peers.json"]
    panels = quality_bars(quality, peers)
    figure = Figure(figsize=(10, 6.8), layout="constrained")
    figure.suptitle("Retrieval quality on the dev sets: memtree and the other tools (higher is better)", fontsize=11)
    colours = {"memtree": MEMTREE, "baseline": BASELINE, "product": PRODUCT, "published": "white"}
    rows = [max(len(bars) for _, bars in panels[i : i + 2]) for i in (0, 2)]  # bars in a row's fuller panel
    grid = figure.subplots(2, 2, gridspec_kw={"height_ratios": [r + 1.5 for r in rows]})  # every bar as thick
    for i, (ax, (title, bars)) in enumerate(zip(grid.flat, panels, strict=True)):
        slots = rows[i // 2]
        labels = [b[0] for b in bars]
        values = [b[1] for b in bars]
        ys = range(len(bars))
        ax.barh(
            ys,
            values,
            color=[colours[b[2]] for b in bars],
            edgecolor=[PRODUCT if b[2] == "published" else "none" for b in bars],
        )
        for y, (_, value, kind) in zip(ys, bars, strict=True):
            weight = "bold" if kind == "memtree" else "normal"
            ax.text(value + 0.01, y, f"{value:.3f}", va="center", fontsize=8, fontweight=weight)
        ax.set_yticks(list(ys), labels)
        ax.set_ylim(slots - 0.5, -0.5)  # best on top
        ax.set_xlim(0, 1.12)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
        ax.set_title(title, loc="left")
        for tick, (_, _, kind) in zip(ax.get_yticklabels(), bars, strict=True):
            if kind == "memtree":
                tick.set_fontweight("bold")
    from matplotlib.patches import Patch

    legend = [("memtree (measured now)", MEMTREE), ("library, measured by others", BASELINE)]
    legend += [("product, measured by others", PRODUCT), ("published by the tool itself", "white")]
    handles = [Patch(facecolor=c, edgecolor=PRODUCT if c == "white" else "none", label=t) for t, c in legend]
    grid.flat[2].legend(handles=handles, loc="lower right", frameon=False, fontsize=8)  # the panel with room
    footer(figure, quality, f"others: {peers['source_short']}")
    return figure


# ---------------------------------------------------------------- time against memory size


def scale_series(scale: dict) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per measure, per engine: [(chunks, value)] in order of size; missing figures left out."""
    measures: dict[str, dict[str, list[tuple[int, float]]]] = {"build": {}, "warm": {}, "memtree": {}}

    def add(measure: str, name: str, chunks: int, value: Any) -> None:
        if value is not None:
            measures[measure].setdefault(name, []).append((chunks, float(value)))

    for size in sorted(scale["figures"]["sizes"], key=lambda s: s["chunks"]):
        n = size["chunks"]
        for e in size["engines"]:
            name = e["engine"]
            label = "memtree (in-process)" if name == "memtree" else name
            add("build", label, n, e.get("build_s"))
            add("warm", name, n, (e.get("ms") or {}).get("mean"))
            if name == "memtree":
                add("build", "memtree index (a process)", n, e.get("cli_index_s"))
                add("memtree", "cold CLI search (a process)", n, e.get("cold_cli_ms"))
                add("memtree", "refresh() after one changed note", n, e.get("refresh_ms"))
                add("memtree", "refresh told the note (watcher)", n, e.get("told_ms"))
    return measures


def draw_scale(data: dict[str, dict]) -> Any:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    scale = data["scale.json"]
    series = scale_series(scale)
    sizes = sorted({s["chunks"] for s in scale["figures"]["sizes"]})
    figure = Figure(figsize=(11, 5), layout="constrained")
    figure.suptitle(
        "Time against memory size (synth.py trees, 20 one-line chunks a note, known-item queries)", fontsize=11
    )
    panels = [
        ("build", "Index build from scratch (s)"),
        ("warm", "Warm search, mean ms per query"),
        ("memtree", "memtree: a CLI search, a changed note (ms)"),
    ]
    styles = {
        "memtree": (MEMTREE, "-", "o"),
        "memtree (in-process)": (MEMTREE, "-", "o"),
        "memtree index (a process)": (MEMTREE, "--", "s"),
        "cold CLI search (a process)": (MEMTREE, "-", "o"),
        "refresh() after one changed note": ("#7c3aed", "-", "s"),
        "refresh told the note (watcher)": ("#7c3aed", "--", "^"),
    }
    chunks_label = FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x >= 1000 else f"{x:g}")
    for ax, (key, title) in zip(figure.subplots(1, 3).flat, panels, strict=True):
        for name, points in series[key].items():
            colour, line, marker = styles.get(name, (ENGINE_COLOURS.get(name, BASELINE), "-", "o"))
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, line, color=colour, marker=marker, markersize=4, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.xaxis.set_major_formatter(chunks_label)
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda x, _: ""))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.set_xlabel("chunks in memory")
        ax.set_title(title, loc="left")
        ax.grid(True, which="major", color="#e5e7eb", linewidth=0.6)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(0, -0.16))  # under, off the lines
    footer(figure, scale)
    return figure


# ---------------------------------------------------------------- a CLI call


CLI_ROWS = (
    ("bare", "python -c pass (the interpreter's own start)", BASELINE),
    ("in_process", "memtree --no-daemon search (a cold process)", "#93c5fd"),
    ("daemon", "memtree search through the daemon", MEMTREE),
    ("pip", "… through pip's console-script wrapper (reference)", "#1e3a8a"),
)


def tree_title(name: str) -> str:
    """serve.py's tree folder as a title: serve-korquad → KorQuAD dev tree."""
    if name == "serve-korquad":
        return "KorQuAD dev tree"
    if name.startswith("serve-synth-"):
        n = int(name.removeprefix("serve-synth-"))
        return f"synthetic tree, {n:,} chunks ({n // 20:,} notes)"
    return name


def draw_cli(data: dict[str, dict]) -> Any:
    from matplotlib.figure import Figure

    serve = data["serve.json"]
    trees = serve["figures"]["trees"]
    figure = Figure(figsize=(10, 1.0 + 1.5 * len(trees)), layout="constrained")
    figure.suptitle("A CLI search, whole process, median ms (dot: best of the runs)", fontsize=11)
    axes = figure.subplots(len(trees), 1, sharex=True, squeeze=False)[:, 0]
    top = max(t[key]["median_ms"] for t in trees for key, _, _ in CLI_ROWS if key in t)
    for ax, tree in zip(axes, trees, strict=True):
        rows = [(key, label, colour) for key, label, colour in CLI_ROWS if key in tree]
        ys = range(len(rows))
        medians = [tree[key]["median_ms"] for key, _, _ in rows]
        bests = [tree[key]["best_ms"] for key, _, _ in rows]
        ax.barh(ys, medians, color=[c for _, _, c in rows])
        ax.plot(bests, ys, "o", color="black", markersize=3)
        for y, median, best in zip(ys, medians, bests, strict=True):
            ax.text(median + top * 0.01, y, f"{median:.0f} (best {best:.0f})", va="center", fontsize=8)
        ax.set_yticks(list(ys), [label for _, label, _ in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.25)
        load = tree.get("load") or []
        during = f", load {load[0]:.1f} → {load[-1]:.1f}" if load else ""
        n = tree["bare"].get("n", "?")
        ax.set_title(f"{tree_title(tree['tree'])}: {n} runs of each, taken in turn{during}", loc="left")
    axes[-1].set_xlabel("ms")
    footer(figure, serve)
    return figure


@dataclass(frozen=True)
class Chart:
    """One SVG: its file name in the output folder, the results files it is drawn from, how."""

    file: str
    inputs: tuple[str, ...]
    draw: Callable[[dict[str, dict]], Any]


CHARTS = (
    Chart("bench-quality.svg", ("quality.json", "peers.json"), draw_quality),
    Chart("bench-scale.svg", ("scale.json",), draw_scale),
    Chart("bench-cli.svg", ("serve.json",), draw_cli),
)


if __name__ == "__main__":
    main()
