"""Speed at scale: memtree against plain BM25 baselines on large synthetic trees (SHARED_BENCH/synth.py).

For each size N, ``synth.py OUT --chunks N --queries Q`` writes a tree of N one-line bullet chunks
(20 per file) and Q known-item queries. Measured for memtree: a fresh full index build in-process
(``MemTree(OUT).index()``) and through the ``memtree index`` CLI, warm in-process ms/query
(cache off), chunk-level hit@1/hit@5 of the known-item queries (same path, overlapping lines, span
<= 30 lines, as in score.py), the time to pick up one changed file (``refresh()``, which stats every
note, and ``refresh(paths=[the note])``, as a watcher does), and a cold ``memtree search``
process. Beside it, over the same chunks (each chunk = its spans.jsonl line, the ideal chunking):
bm25s, SQLite FTS5 (unicode61, OR of the query words, bm25() ranking, in-memory database) and
rank-bm25 BM25Okapi; a baseline whose package is missing is skipped with a note. Baselines tokenize
by lower-cased words (``\\w+``), the same for chunks and queries.

    python bench/scale.py ../shared/bench --chunks 10000,100000 --queries 500
    python bench/scale.py ../shared/bench --results bench/results/scale.json   # the file charts.py draws from
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchlib import (
    SEARCH_OK,
    ResultsRun,
    add_common_args,
    add_results_arg,
    check_shared,
    first_rank,
    fmt,
    hit_to_dict,
    import_memtree,
    load_jsonl,
    md_table,
    memtree_exe,
    progress,
    run,
    summarize_ms,
    supports_kwarg,
)

ENGINES = ("memtree", "bm25s", "fts5", "rank-bm25")
WORD = re.compile(r"\w+", re.UNICODE)
PROBE_WORDS = "zephyrquartzprobe 갱신확인용메모"
TOLD_WORDS = "quillonwatchprobe 감시확인용메모"


@dataclass
class EngineResult:
    engine: str
    build_s: float | None = None
    ms: dict[str, float] = field(default_factory=dict)
    hit1: float | None = None
    hit5: float | None = None
    n_queries: int = 0
    cli_index_s: float | None = None
    refresh_ms: float | None = None
    told_ms: float | None = None  # refresh(paths=[the note]), as a watcher refreshes
    build_cpu_s: float | None = None  # the in-process build's CPU, this process and its helpers
    cold_cli_ms: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Corpus:
    root: Path
    spans: list[dict]  # {"id", "path", "lines"} per chunk, in order
    texts: list[str]  # chunk text (the bullet line without "- ")
    queries: list[dict]  # known-item queries, "relevant": [chunk id]
    target: list[int]  # per query: index of its relevant chunk


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--chunks", default="10000,100000", help="comma-separated sizes (default: %(default)s)")
    ap.add_argument("--queries", type=int, default=500, help="known-item queries (default: %(default)s)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of %(default)s")
    ap.add_argument(
        "--rank-bm25-queries",
        type=int,
        default=None,
        help="queries for rank-bm25 (default: all below 50k chunks, else 50; it is slow)",
    )
    ap.add_argument("--cold-runs", type=int, default=5, help="cold CLI searches (default: %(default)s)")
    ap.add_argument("--json-out", type=Path, help="write all figures to this JSON file")
    add_results_arg(ap)
    args = ap.parse_args(argv)
    try:
        args.chunks = [int(c.replace("_", "")) for c in args.chunks.split(",") if c.strip()]
    except ValueError:
        ap.error(f"--chunks must be comma-separated integers, got {args.chunks!r}")
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown:
        ap.error(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINES)}")
    return args


# ---------------------------------------------------------------- corpus


def generate(shared: Path, out: Path, chunks: int, queries: int) -> None:
    progress(f"synth.py {out} --chunks {chunks} --queries {queries}")
    wall, stdout = run(
        [
            sys.executable,
            str(shared / "synth.py"),
            str(out),
            "--chunks",
            str(chunks),
            "--queries",
            str(queries),
        ]
    )
    progress(f"{stdout.strip()} ({wall:.1f} s)")


def load_corpus(root: Path) -> Corpus:
    """Chunks as spans.jsonl's line ranges of the generated files, and the queries."""
    spans = load_jsonl(root / "spans.jsonl")
    files: dict[str, list[str]] = {}
    texts = []
    for s in spans:
        lines = files.get(s["path"])
        if lines is None:
            lines = files[s["path"]] = (root / s["path"]).read_text(encoding="utf-8").splitlines()
        start, end = s["lines"]
        text = " ".join(lines[start - 1 : end])
        texts.append(text[2:] if text.startswith("- ") else text)
    index_of = {s["id"]: i for i, s in enumerate(spans)}
    queries = load_jsonl(root / "queries.jsonl")
    target = [index_of[q["relevant"][0]] for q in queries]
    return Corpus(root, spans, texts, queries, target)


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def rank_figures(ranked: list[list[int]], target: list[int]) -> tuple[float, float]:
    """hit@1 and hit@5 of ranked chunk indices against each query's known chunk."""
    n = max(1, len(ranked))
    hit1 = sum(bool(r) and r[0] == t for r, t in zip(ranked, target, strict=False)) / n
    hit5 = sum(t in r[:5] for r, t in zip(ranked, target, strict=False)) / n
    return hit1, hit5


def time_queries(search: Callable[[str], list[int]], queries: list[str]) -> tuple[list[float], list[list[int]]]:
    times, ranked = [], []
    for q in queries:
        t0 = time.perf_counter()
        r = search(q)
        times.append(time.perf_counter() - t0)
        ranked.append(r)
    return times, ranked


def finish_baseline(res: EngineResult, search: Callable[[str], list[int]], corpus: Corpus, limit: int) -> None:
    qs = [q["query"] for q in corpus.queries[:limit]]
    time_queries(search, qs[: min(20, len(qs))])  # warm-up
    times, ranked = time_queries(search, qs)
    res.ms = summarize_ms(times)
    res.n_queries = len(qs)
    res.hit1, res.hit5 = rank_figures(ranked, corpus.target[:limit])
    progress(f"{res.engine}: {res.ms['mean']:.2f} ms/query, hit@5 {res.hit5:.3f} over {len(qs)} queries")


# ---------------------------------------------------------------- baselines


def bench_bm25s(corpus: Corpus) -> EngineResult:
    import bm25s

    res = EngineResult("bm25s")
    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index([words(t) for t in corpus.texts], show_progress=False)
    res.build_s = time.perf_counter() - t0

    def search(q: str) -> list[int]:
        docs, scores = retriever.retrieve([words(q) or [""]], k=10, show_progress=False, n_threads=0)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    finish_baseline(res, search, corpus, len(corpus.queries))
    return res


def fts5_match(q: str) -> str:
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words(q)))


def bench_fts5(corpus: Corpus) -> EngineResult:
    res = EngineResult("SQLite FTS5 unicode61")
    db = sqlite3.connect(":memory:")
    try:
        t0 = time.perf_counter()
        db.execute("CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize='unicode61')")
        db.executemany("INSERT INTO chunks(rowid, text) VALUES (?, ?)", enumerate(corpus.texts))
        db.commit()
        res.build_s = time.perf_counter() - t0
    except sqlite3.OperationalError as exc:
        res.notes.append(f"skipped: {exc}")
        progress(f"FTS5 unavailable ({exc}); skipped")
        return res
    sql = "SELECT rowid FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT 10"

    def search(q: str) -> list[int]:
        match = fts5_match(q)
        return [r[0] for r in db.execute(sql, (match,))] if match else []

    finish_baseline(res, search, corpus, len(corpus.queries))
    db.close()
    return res


def bench_rank_bm25(corpus: Corpus, limit: int) -> EngineResult:
    import numpy as np
    from rank_bm25 import BM25Okapi

    res = EngineResult("rank-bm25 BM25Okapi")
    t0 = time.perf_counter()
    bm = BM25Okapi([words(t) for t in corpus.texts])
    res.build_s = time.perf_counter() - t0

    def search(q: str) -> list[int]:
        scores = bm.get_scores(words(q))
        top = np.argpartition(-scores, 10)[:10]
        top = top[np.argsort(-scores[top])]
        return [int(i) for i in top if scores[i] > 0]

    finish_baseline(res, search, corpus, limit)
    if limit < len(corpus.queries):
        res.notes.append(f"first {limit} queries only")
    return res


# ---------------------------------------------------------------- memtree


def wipe_index(root: Path) -> None:
    shutil.rmtree(root / ".memtree", ignore_errors=True)
    (root / "tree-index.json").unlink(missing_ok=True)


def memtree_hits(mt: Any, query: str, kwargs: dict) -> list[dict]:
    result = mt.search(query, **kwargs)
    return [hit_to_dict(h, mt_root(mt)) for h in result.hits]


def mt_root(mt: Any) -> Path:
    return Path(getattr(mt, "root", ".")).resolve()


def safe_search(mt: Any, query: str, kwargs: dict) -> tuple[list[Any], str | None]:
    """mt.search(query).hits, or ([], "ErrorType: message") if it raises."""
    try:
        return list(mt.search(query, **kwargs).hits), None
    except Exception as exc:
        return [], f"{type(exc).__name__}: {exc}"


def memtree_warm(mt: Any, corpus: Corpus, kwargs: dict, res: EngineResult) -> None:
    """Warm-up pass, then a timed pass; hit@1/hit@5 at chunk level against spans.jsonl."""
    qs = [q["query"] for q in corpus.queries]
    root = corpus.root
    for q in qs:
        safe_search(mt, q, kwargs)
    times, ranks, errors = [], [], []
    for q, t in zip(qs, corpus.target, strict=True):
        t0 = time.perf_counter()
        hits, error = safe_search(mt, q, kwargs)
        times.append(time.perf_counter() - t0)
        if error:
            errors.append(error)
            if len(errors) <= 3:
                progress(f"  search raised {error} (query {q!r})")
        ranks.append(first_rank([hit_to_dict(h, root) for h in hits[:10]], [corpus.spans[t]]))
    res.ms = summarize_ms(times)
    res.n_queries = len(qs)
    res.hit1 = sum(r == 1 for r in ranks) / max(1, len(ranks))
    res.hit5 = sum(r is not None and r <= 5 for r in ranks) / max(1, len(ranks))
    empty = sum(r is None for r in ranks)
    if errors:
        res.notes.append(f"{len(errors)} searches raised (counted as misses), e.g. {errors[0]}")
    progress(
        f"memtree warm: {res.ms['mean']:.2f} ms/query (p95 {res.ms['p95']:.2f}), "
        f"hit@1 {res.hit1:.3f}, hit@5 {res.hit5:.3f}, {empty} queries without the chunk in top 10"
    )


def memtree_refresh(mt: Any, corpus: Corpus, kwargs: dict, res: EngineResult) -> None:
    """Append one bullet to one note file; time picking it up; check the new line is found."""
    has_refresh = callable(getattr(mt, "refresh", None))
    if has_refresh:
        t0 = time.perf_counter()
        mt.refresh()
        res.notes.append(f"refresh() with nothing changed {1000 * (time.perf_counter() - t0):.0f} ms")
    rel = corpus.spans[len(corpus.spans) // 2]["path"]
    path = corpus.root / rel
    with path.open("a", encoding="utf-8") as f:
        f.write(f"- {PROBE_WORDS} appended by bench/scale.py\n")
    new_line = len(path.read_text(encoding="utf-8").splitlines())
    t0 = time.perf_counter()
    if has_refresh:
        mt.refresh()
    refresh_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    hits = memtree_hits(mt, PROBE_WORDS, kwargs)
    search_s = time.perf_counter() - t1
    res.refresh_ms = 1000 * (refresh_s if has_refresh else search_s)
    rank = first_rank(hits[:10], [{"path": rel, "lines": [new_line, new_line]}])
    label = "refresh()" if has_refresh else "no refresh(); first search"
    verdict = f"new line found at rank {rank}" if rank else "NEW LINE NOT FOUND"
    res.notes.append(f"one-file change: {label} {res.refresh_ms:.0f} ms, {verdict}")
    progress(f"one-file change: {label} {res.refresh_ms:.0f} ms, next search {1000 * search_s:.1f} ms, {verdict}")
    if not rank:
        progress(f"  top hits for the probe: {hits[:3]}")
    if has_refresh and supports_kwarg(mt.refresh, "paths"):  # as memtree watch / serve refresh: told the note
        with path.open("a", encoding="utf-8") as f:
            f.write(f"- {TOLD_WORDS} appended by bench/scale.py\n")
        told_line = len(path.read_text(encoding="utf-8").splitlines())
        t0 = time.perf_counter()
        mt.refresh(paths=[rel])
        res.told_ms = 1000 * (time.perf_counter() - t0)
        rank = first_rank(memtree_hits(mt, TOLD_WORDS, kwargs)[:10], [{"path": rel, "lines": [told_line, told_line]}])
        verdict = f"new line found at rank {rank}" if rank else "NEW LINE NOT FOUND"
        res.notes.append(f"one-file change, watcher-told: refresh(paths=[note]) {res.told_ms:.0f} ms, {verdict}")
        progress(f"one-file change, watcher-told: refresh(paths=[note]) {res.told_ms:.0f} ms, {verdict}")


def memtree_cold(exe: str, corpus: Corpus, runs: int) -> float:
    walls = []
    for i in range(runs):
        q = corpus.queries[i % len(corpus.queries)]["query"]
        wall, _ = run([exe, "search", "--root", str(corpus.root), q, "--json"], ok=SEARCH_OK)
        walls.append(wall)
    med = 1000 * statistics.median(walls)
    progress(f"cold CLI search: median of {runs} {med:.0f} ms (min {1000 * min(walls):.0f})")
    return med


def bench_memtree(corpus: Corpus, cold_runs: int) -> EngineResult:
    memtree_cls = import_memtree()
    exe = memtree_exe()
    res = EngineResult("memtree")
    root = corpus.root
    wipe_index(root)
    progress("memtree index (CLI, fresh)")
    res.cli_index_s, _ = run([exe, "index", "--root", str(root)])
    progress(f"CLI index {res.cli_index_s:.2f} s")
    wipe_index(root)
    progress("MemTree(root).index() (in-process, fresh)")
    t0, cpu0 = time.perf_counter(), os.times()
    mt = memtree_cls(root)
    report = mt.index()
    res.build_s = time.perf_counter() - t0
    cpu1 = os.times()
    res.build_cpu_s = sum(cpu1[:4]) - sum(cpu0[:4])  # user and system, of this process and its helpers
    own = cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1]
    res.notes.append(f"in-process build CPU {res.build_cpu_s:.2f} s ({own:.2f} s in this process)")
    progress(f"in-process index {res.build_s:.2f} s, CPU {res.build_cpu_s:.2f} s ({type(report).__name__} returned)")
    if supports_kwarg(mt.search, "cache"):
        kwargs: dict = {"k": 10, "cache": False}
    else:
        kwargs = {"k": 10}
        res.notes.append("search() has no cache= keyword: warm pass may hit the result cache")
    memtree_warm(mt, corpus, kwargs, res)
    memtree_refresh(mt, corpus, kwargs, res)
    del mt
    gc.collect()
    res.cold_cli_ms = memtree_cold(exe, corpus, cold_runs)
    return res


# ---------------------------------------------------------------- driver


def run_size(args: argparse.Namespace, shared: Path, chunks: int) -> list[EngineResult]:
    out = (args.work / f"synth-{chunks}").resolve()
    generate(shared, out, chunks, args.queries)
    corpus = load_corpus(out)
    results: list[EngineResult] = []
    if "memtree" in args.engines:
        results.append(bench_memtree(corpus, args.cold_runs))
        gc.collect()
    for engine, module in (("bm25s", "bm25s"), ("fts5", None), ("rank-bm25", "rank_bm25")):
        if engine not in args.engines:
            continue
        if module and importlib.util.find_spec(module) is None:
            progress(f"{engine}: package {module} not installed; skipped")
            results.append(EngineResult(engine, notes=[f"skipped: {module} not installed"]))
            continue
        progress(f"{engine}: building over {len(corpus.texts)} chunks")
        if engine == "bm25s":
            results.append(bench_bm25s(corpus))
        elif engine == "fts5":
            results.append(bench_fts5(corpus))
        else:
            limit = args.rank_bm25_queries or (len(corpus.queries) if chunks < 50_000 else 50)
            results.append(bench_rank_bm25(corpus, min(limit, len(corpus.queries))))
        gc.collect()
    return results


def print_table(chunks: int, n_files: int, results: list[EngineResult]) -> None:
    headers = [
        "engine",
        "build s",
        "CLI index s",
        "ms/query mean",
        "p50",
        "p95",
        "hit@1",
        "hit@5",
        "queries",
        "one-file refresh ms",
        "watcher-told ms",
        "cold CLI ms",
    ]
    rows = []
    for r in results:
        rows.append(
            [
                r.engine,
                fmt(r.build_s, 2),
                fmt(r.cli_index_s, 2),
                fmt(r.ms.get("mean"), 2),
                fmt(r.ms.get("p50"), 2),
                fmt(r.ms.get("p95"), 2),
                fmt(r.hit1),
                fmt(r.hit5),
                r.n_queries or "—",
                fmt(r.refresh_ms, 0),
                fmt(r.told_ms, 0),
                fmt(r.cold_cli_ms, 0),
            ]
        )
    print(f"\n### {chunks:,} chunks in {n_files:,} files\n")
    print(md_table(headers, rows))
    for r in results:
        for note in r.notes:
            print(f"- {r.engine}: {note}")
    print(flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    results_run = ResultsRun(args.results, "scale.py")
    shared = check_shared(args.shared, ["synth.py", "korquad/docs.jsonl", "locomo/docs.jsonl"])
    if "memtree" in args.engines:
        memtree_exe()
        import_memtree()  # fail early, before any long step
    args.work.mkdir(parents=True, exist_ok=True)
    all_results: dict[int, list[EngineResult]] = {}
    n_files: dict[int, int] = {}
    for chunks in args.chunks:
        all_results[chunks] = run_size(args, shared, chunks)
        n_files[chunks] = len({s["path"] for s in load_jsonl(args.work / f"synth-{chunks}" / "spans.jsonl")})
    print("\n## memtree at scale (synthetic known-item queries)\n")
    for chunks, results in all_results.items():
        print_table(chunks, n_files[chunks], results)
    if args.json_out:
        data = {str(c): [asdict(r) for r in rs] for c, rs in all_results.items()}
        args.json_out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        progress(f"wrote {args.json_out}")
    sizes = [
        {"chunks": c, "files": n_files[c], "queries": args.queries, "engines": [asdict(r) for r in rs]}
        for c, rs in all_results.items()
    ]
    results_run.write({"sizes": sizes})


if __name__ == "__main__":
    main()
