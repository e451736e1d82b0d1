"""Retrieval quality and latency of memtree on the shared real-data benchmarks (KorQuAD, LoCoMo).

For each dataset: materialize the memory tree with SHARED_BENCH/materialize.py, build memtree's
index with the ``memtree index`` CLI (timed), score the CLI's batch search with SHARED_BENCH/score.py
(hit@1, hit@5, MRR@10, file@5, empty answers), score in-process search per category with
``memtree.search.evaluate`` (what ``memtree eval`` runs; score.py re-scores its hits as a cross-check), time
warm in-process queries through ``MemTree.search`` and a cold ``memtree search`` process, and print
Markdown tables.

    python bench/quality.py ../shared/bench --work /tmp/memtree-bench --datasets korquad,locomo
    python bench/quality.py ../shared/bench --verbose      # and each set's chat-message form (verbose.py)
    python bench/quality.py ../shared/bench --blind        # and each set's blind-framed form (blind.py)
    python bench/quality.py ../shared/bench --results bench/results/quality.json   # the file charts.py draws from
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import (
    SEARCH_OK,
    ResultsRun,
    add_common_args,
    add_results_arg,
    check_shared,
    fail,
    fmt,
    import_memtree,
    load_jsonl,
    md_table,
    memtree_exe,
    progress,
    run,
    summarize_ms,
    supports_kwarg,
)

DATASETS = ("korquad", "locomo")
VERBOSE = "-verbose"  # "<dataset>-verbose": the same tree, its questions rewritten by bench/verbose.py
BLIND = "-blind"  # "<dataset>-blind": the same tree, its questions framed by bench/blind.py
FORMS = (VERBOSE, BLIND)
SCORE_KEYS = ("hit@1", "hit@5", "mrr@10", "file_hit@5")


def base_of(dataset: str) -> str:
    """The dataset a chat form is made from ("korquad-blind" → "korquad")."""
    for suffix in FORMS:
        if dataset.endswith(suffix):
            return dataset.removesuffix(suffix)
    return dataset


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--json-out", type=Path, help="write all figures to this JSON file")
    add_results_arg(ap)
    ap.add_argument("--cold-runs", type=int, default=5, help="cold CLI searches (default: %(default)s)")
    ap.add_argument(
        "--embed",
        action="store_true",
        help="also run `memtree index --embed`: every search then uses the semantic layer (memtree[embed])",
    )
    ap.add_argument(
        "--verbose",
        action="store_true",
        help="also run each dataset's verbose form (<dataset>-verbose: questions rewritten as chat messages "
        "by bench/verbose.py) and print a short-vs-verbose table",
    )
    ap.add_argument(
        "--blind",
        action="store_true",
        help="also run each dataset's blind form (<dataset>-blind: questions framed by bench/blind.py, "
        "phrasings written without reading memtree's message reader)",
    )
    args = ap.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    unknown = [d for d in args.datasets if base_of(d) not in DATASETS]
    if unknown:
        ap.error(
            f"unknown dataset(s) {unknown}; choose from {', '.join(DATASETS)} "
            f"(each also as <name>{VERBOSE}, <name>{BLIND})"
        )
    forms = [f for f, on in ((VERBOSE, args.verbose), (BLIND, args.blind)) if on]
    if forms:
        args.datasets = list(dict.fromkeys(x for d in args.datasets for x in (d, *(base_of(d) + f for f in forms))))
    return args


def materialize(shared: Path, dataset: str, tree: Path) -> None:
    base = base_of(dataset)
    progress(f"{dataset}: materializing into {tree}")
    _, out = run([sys.executable, str(shared / "materialize.py"), str(shared / base), str(tree)])
    if out.strip():
        progress(out.strip())
    if dataset.endswith(VERBOSE):
        from verbose import SHORT_QUERIES, rewrite_tree

        n = rewrite_tree(tree)
        progress(f"{dataset}: {n} questions rewritten as chat messages (short ones kept in {SHORT_QUERIES})")
    elif dataset.endswith(BLIND):
        import blind

        n = blind.rewrite_tree(tree)
        progress(f"{dataset}: {n} questions framed by blind.py (short ones kept in {blind.SHORT_QUERIES})")


def build_index(exe: str, tree: Path) -> float:
    progress(f"memtree index --root {tree}")
    wall, _ = run([exe, "index", "--root", str(tree)])
    progress(f"index built in {wall:.2f} s")
    return wall


def run_score(shared: Path, exe: str, tree: Path, json_out: Path) -> dict:
    """score.py over the CLI's batch mode; prints score.py's own table and returns its JSON."""
    cmd = f"'{exe}' search --root {{root}} --batch --json -k 10"
    progress(f"score.py --cmd {cmd!r}")
    json_out.unlink(missing_ok=True)
    _, out = run([sys.executable, str(shared / "score.py"), str(tree), "--cmd", cmd, "--json-out", str(json_out)])
    print(out.rstrip(), flush=True)
    if not json_out.exists():
        fail(f"score.py wrote no {json_out}")
    return json.loads(json_out.read_text(encoding="utf-8"))


def _timed_pass(mt: Any, queries: list[str], kwargs: dict) -> tuple[list[float], int]:
    """Search each query once; (durations s, errors)."""
    times: list[float] = []
    errors = 0
    for q in queries:
        t0 = time.perf_counter()
        try:
            mt.search(q, **kwargs)
        except Exception as exc:
            errors += 1
            if errors <= 3:
                progress(f"  search raised {type(exc).__name__}: {exc} (query {q!r})")
        times.append(time.perf_counter() - t0)
    return times, errors


def _lifecycle_off(
    memtree_cls: Any, tree: Path, texts: list[str], timed: list[str], kwargs: dict, **off: bool
) -> dict | None:
    """The same warm passes with search settings ``off`` (reinforce, decay), to price them."""
    from dataclasses import fields, replace

    from memtree.config import load_settings

    settings = load_settings(tree)
    if not set(off) <= {f.name for f in fields(settings.search)}:
        return None
    mt = memtree_cls(tree, settings=replace(settings, search=replace(settings.search, **off)))
    _timed_pass(mt, texts, kwargs)
    times, _ = _timed_pass(mt, timed, kwargs)
    return summarize_ms(times)


def warm_timing(tree: Path, queries: list[dict]) -> dict:
    """In-process warm latency of MemTree.search (one warm-up pass, then one timed pass)."""
    memtree_cls = import_memtree()
    texts = [q["query"] for q in queries]
    t0 = time.perf_counter()
    mt = memtree_cls(tree)
    open_s = time.perf_counter() - t0
    has_cache_kw = supports_kwarg(mt.search, "cache")
    note = ""
    if has_cache_kw:
        kwargs: dict = {"k": 10, "cache": False}
        timed_mt, timed_q = mt, texts
    else:
        # no way to bypass the result cache: time a fresh instance on distinct queries only
        kwargs = {"k": 10}
        timed_mt, timed_q = memtree_cls(tree), list(dict.fromkeys(texts))
        timed_mt.search("warm up the index", k=10)
        note = "search() has no cache= keyword: timed on distinct queries with a fresh instance"
        progress(note)
    progress(f"warm-up pass over {len(texts)} queries (in-process, k=10)")
    t1 = time.perf_counter()
    _, warm_errors = _timed_pass(mt, texts, kwargs)
    first_pass_s = time.perf_counter() - t1
    progress(f"timed pass over {len(timed_q)} queries")
    times, errors = _timed_pass(timed_mt, timed_q, kwargs)
    stats = summarize_ms(times)
    progress(f"warm: mean {stats['mean']:.2f} ms, p50 {stats['p50']:.2f}, p95 {stats['p95']:.2f}")
    off = _lifecycle_off(memtree_cls, tree, texts, timed_q, kwargs, reinforce=False)
    if off is not None:
        progress(f"warm with recall reinforcement off: mean {off['mean']:.2f} ms (on: {stats['mean']:.2f})")
    plain = _lifecycle_off(memtree_cls, tree, texts, timed_q, kwargs, reinforce=False, decay=False)
    if plain is not None:
        progress(f"warm with reinforcement and decay off: mean {plain['mean']:.2f} ms (on: {stats['mean']:.2f})")
    return {
        **stats,
        "reinforce_off": off,
        "lifecycle_off": plain,
        "open_s": open_s,
        "warmup_pass_s": first_pass_s,
        "errors": warm_errors + errors,
        "note": note,
    }


def eval_scores(shared: Path, tree: Path, work: Path, dataset: str) -> tuple[dict, dict]:
    """memtree eval in-process (k=10): its report, and score.py's figures on the very same hits.

    The per-query hits go to WORK/<dataset>-eval.jsonl, which score.py reads with --results; the two
    sets of figures must be equal, or one of the scorers is wrong.
    """
    try:
        from memtree import schema
        from memtree.api import clock
        from memtree.errors import MemtreeError
        from memtree.search.evaluate import evaluate as memtree_eval
        from memtree.search.evaluate import outcome_json
    except ImportError as exc:
        fail(f"this memtree has no memtree.search.evaluate ({exc})")
    progress(f"memtree eval {tree / 'queries.jsonl'} -k 10 (in-process)")
    try:
        report, outcomes = memtree_eval(tree / "queries.jsonl", tree, k=10, now=clock())
    except MemtreeError as exc:
        fail(f"memtree eval: {exc}")
    per_query = work / f"{dataset}-eval.jsonl"
    with per_query.open("w", encoding="utf-8") as f:
        for o in outcomes:
            f.write(json.dumps(outcome_json(o), ensure_ascii=False) + "\n")
    json_out = work / f"{dataset}-eval-score.json"
    json_out.unlink(missing_ok=True)
    run([sys.executable, str(shared / "score.py"), str(tree), "--results", str(per_query), "--json-out", str(json_out)])
    if not json_out.exists():
        fail(f"score.py wrote no {json_out}")
    return schema.evaluation(report), json.loads(json_out.read_text(encoding="utf-8"))


def score_shape(report: dict) -> dict[str, Any]:
    """memtree eval's report keyed as score.py's JSON: "all", "unanswerable", categories, "unanswerable: <cat>"."""

    def answerable(m: dict) -> dict:
        return {"n": m["answerable"], **{k: m[k] for k in SCORE_KEYS}, "empty": m["answerable_empty"]}

    def unanswerable(m: dict) -> dict:
        return {"n": m["unanswerable"], "empty": m["unanswerable_empty"]}

    o = report["overall"]
    out: dict[str, Any] = {}
    if o["answerable"]:
        out["all"] = answerable(o)
    if o["unanswerable"]:
        out["unanswerable"] = unanswerable(o)
    for name, m in report["categories"].items():
        if m["answerable"]:
            out[name] = answerable(m)
        if m["unanswerable"]:
            out[f"unanswerable: {name}"] = unanswerable(m)
    out["rejected_share"] = report["rejected_count"] / max(1, o["n"])
    return out


def disagreements(ours: dict, theirs: dict) -> list[str]:
    """Rows both scorers report whose figures differ (score.py rounds to 4 places, and so does eval)."""
    rows = [k for k, v in theirs.items() if isinstance(v, dict) and k in ours]
    return [k for k in rows if ours[k] != theirs[k]]


def cold_cli(exe: str, tree: Path, queries: list[dict], runs: int) -> dict:
    """Wall time of whole `memtree search` processes (index already built), distinct queries."""
    picks = [q["query"] for q in queries if q["answerable"]][:runs] or [queries[0]["query"]]
    walls = []
    for i in range(runs):
        wall, _ = run([exe, "search", "--root", str(tree), picks[i % len(picks)], "--json"], ok=SEARCH_OK)
        walls.append(wall)
    best3 = min(walls[:3])
    med = statistics.median(walls)
    progress(f"cold CLI search: best of 3 {1000 * best3:.0f} ms, median of {runs} {1000 * med:.0f} ms")
    return {"best_of_3_ms": 1000 * best3, "median_ms": 1000 * med, "runs_ms": [1000 * w for w in walls]}


def embed_index(exe: str, tree: Path) -> dict:
    """`memtree index --embed --json`: every chunk embedded; its figures and the wall time."""
    progress(f"memtree index --embed --root {tree}")
    wall, out = run([exe, "index", "--embed", "--json", "--root", str(tree)])
    embedded = json.loads(out)["embedded"]
    per_chunk = 1000 * embedded["seconds"] / max(1, embedded["embedded_count"])
    progress(
        f"embedded {embedded['embedded_count']} chunks in {embedded['seconds']:.1f} s ({per_chunk:.1f} ms per chunk)"
    )
    return {**embedded, "wall_s": wall, "ms_per_chunk": per_chunk}


def evaluate(shared: Path, work: Path, dataset: str, exe: str, cold_runs: int, embed: bool = False) -> dict:
    tree = work / f"{dataset}-tree{'-embed' if embed else ''}"
    materialize(shared, dataset, tree)
    queries = load_jsonl(tree / "queries.jsonl")
    index_s = build_index(exe, tree)
    embedded = embed_index(exe, tree) if embed else None
    figures = run_score(shared, exe, tree, work / f"{dataset}-score.json")
    report, rescored = eval_scores(shared, tree, work, dataset)
    warm = warm_timing(tree, queries)
    cold = cold_cli(exe, tree, queries, cold_runs)
    check = score_shape(report)
    return {
        "dataset": dataset,
        "index_s": index_s,
        "score": figures,
        "warm": warm,
        "in_process": check,
        "eval": report,
        "eval_rescored": rescored,
        "eval_disagrees": disagreements(check, rescored),
        "cold": cold,
        "embedded": embedded,
    }


def categories(figures: dict) -> dict[str, dict]:
    """Per-category entries of a score dict (everything but "all"), unanswerable last."""
    keys = sorted(k for k, v in figures.items() if isinstance(v, dict) and k != "all")
    if keys == ["unanswerable"]:
        return {}
    subs = [k for k in keys if k.startswith("unanswerable: ")]
    if len(subs) == 1:  # one kind of unanswerable only: the split repeats the total
        keys.remove(subs[0])
    return {k: figures[k] for k in sorted(keys, key=lambda k: (k.startswith("unanswerable"), k))}


def print_report(r: dict) -> None:
    s, w, c = r["score"], r["warm"], r["cold"]
    a = s.get("all", {})
    headers = [
        "dataset",
        "hit@1",
        "hit@5",
        "MRR@10",
        "file@5",
        "answerable left empty",
        "unanswerable left empty",
        "warm ms/query mean",
        "p50",
        "p95",
        "cold CLI ms (best of 3 / median of 5)",
        "index build s",
    ]
    row = [
        f"{r['dataset']} (n={a.get('n', 0)})",
        *(fmt(a.get(k)) for k in SCORE_KEYS),
        fmt(a.get("empty")),
        fmt(s.get("unanswerable", {}).get("empty")),
        fmt(w["mean"], 2),
        fmt(w["p50"], 2),
        fmt(w["p95"], 2),
        f"{c['best_of_3_ms']:.0f} / {c['median_ms']:.0f}",
        fmt(r["index_s"], 2),
    ]
    mode = " with the semantic layer" if r.get("embedded") else ""
    print(f"\n### memtree on {r['dataset']}{mode}\n")
    print(md_table(headers, [row]))
    cats = categories(r["in_process"])
    source = "memtree eval: in-process MemTree.search, score.py's rules"
    rows = [[k, v["n"], *(fmt(v.get(m)) for m in SCORE_KEYS), fmt(v.get("empty"))] for k, v in cats.items()]
    print(f"\n{r['dataset']} by category ({source}; unanswerable: only the share left empty)\n")
    print(md_table(["category", "n", "hit@1", "hit@5", "MRR@10", "file@5", "empty"], rows))
    ip = r["in_process"]
    ip_all, ip_un = ip.get("all", {}), ip.get("unanswerable", {})
    print(
        f"\nbatch CLI {s.get('ms_per_query', float('nan')):.2f} ms/query incl. process start "
        f"(score.py wall {s.get('wall_s')} s), missing results {s.get('missing_results')}; "
        f"in-process hit@5 {fmt(ip_all.get('hit@5'))}, unanswerable empty {fmt(ip_un.get('empty'))}, "
        f"rejected share {ip['rejected_share']:.3f}; MemTree() open {w['open_s'] * 1000:.0f} ms; "
        f"search errors {w['errors']}; memtree eval p50 {fmt(r['eval']['latency_ms']['p50'], 2)} ms, "
        f"p95 {fmt(r['eval']['latency_ms']['p95'], 2)} ms"
    )
    priced = [
        (name, w.get(key))
        for name, key in (("reinforcement off", "reinforce_off"), ("reinforcement and decay off", "lifecycle_off"))
    ]
    priced = [(name, off) for name, off in priced if off]
    if priced:
        print(
            f"warm mean {w['mean']:.2f} ms with reinforcement and decay on; "
            + "; ".join(f"{name}: {off['mean']:.2f} ms ({w['mean'] / off['mean'] - 1:+.0%})" for name, off in priced)
        )
    if r.get("embedded"):
        e = r["embedded"]
        print(
            f"semantic layer: {e['model']}; `memtree index --embed` embedded {e['embedded_count']} chunks in "
            f"{e['seconds']:.1f} s ({e['ms_per_chunk']:.1f} ms per chunk incl. model load; wall {e['wall_s']:.1f} s)"
        )
    if w["note"]:
        print(f"note: {w['note']}")
    if r["eval_disagrees"]:
        print(f"note: memtree eval and score.py score the same hits differently: {', '.join(r['eval_disagrees'])}")
    else:
        print("memtree eval's figures equal score.py's on the same hits (overall and unanswerable rows)")
    if abs(ip_all.get("hit@5", 0) - a.get("hit@5", 0)) > 0.002:
        print("note: in-process hit@5 differs from the CLI batch's — the two paths disagree")
    print(flush=True)


def print_verbose_table(results: list[dict]) -> None:
    """Short vs chat forms of each dataset, side by side (only when a chat form was run)."""
    by_name = {r["dataset"]: r for r in results}
    rows = []
    for base in dict.fromkeys(base_of(r["dataset"]) for r in results):
        for form, name in (("short", base), ("verbose", base + VERBOSE), ("blind", base + BLIND)):
            x = by_name.get(name)
            if x is None:
                continue
            a, u = x["score"].get("all", {}), x["score"].get("unanswerable", {})
            rows.append(
                [base, form, fmt(a.get("hit@1")), fmt(a.get("hit@5")), fmt(a.get("mrr@10")),
                 fmt(a.get("file_hit@5")), fmt(a.get("empty")), fmt(u.get("empty")), fmt(x["warm"]["mean"], 2)]
            )  # fmt: skip
    if not any(row[1] != "short" for row in rows):
        return
    print("\n### short questions vs the same questions as chat messages (bench/verbose.py, bench/blind.py)\n")
    headers = ["dataset", "form", "hit@1", "hit@5", "MRR@10", "file@5", "answerable left empty",
               "unanswerable left empty", "warm ms/query"]  # fmt: skip
    print(md_table(headers, rows))
    print(flush=True)


def summary(r: dict) -> dict[str, Any]:
    """One dataset's figures for the results file: score.py's (the CLI's), latency, and eval's categories."""
    a, u, w, c = r["score"].get("all", {}), r["score"].get("unanswerable", {}), r["warm"], r["cold"]
    return {
        "dataset": r["dataset"],
        "semantic": bool(r.get("embedded")),
        "answerable": a.get("n", 0),
        "unanswerable": u.get("n", 0),
        **{k: a.get(k) for k in SCORE_KEYS},
        "answerable_empty": a.get("empty"),
        "unanswerable_empty": u.get("empty"),
        "index_s": r["index_s"],
        "warm_ms": {k: w[k] for k in ("mean", "p50", "p95")},
        "cold_cli_ms": {"best_of_3": c["best_of_3_ms"], "median": c["median_ms"]},
        "categories": {
            name: {k: m[k] for k in ("n", "hit@5", "empty") if k in m}
            for name, m in categories(r["in_process"]).items()
        },
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    results_run = ResultsRun(args.results, "quality.py")
    bases = dict.fromkeys(base_of(d) for d in args.datasets)
    data_files = [f"{d}/{f}" for d in bases for f in ("docs.jsonl", "queries.jsonl")]
    needed = ["materialize.py", "score.py", *data_files]
    shared = check_shared(args.shared, needed)
    exe = memtree_exe()
    import_memtree()  # fail early, before any long step
    args.work.mkdir(parents=True, exist_ok=True)
    results = [evaluate(shared, args.work.resolve(), d, exe, args.cold_runs, args.embed) for d in args.datasets]
    print("\n## memtree retrieval quality and latency\n")
    for r in results:
        print_report(r)
    print_verbose_table(results)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        progress(f"wrote {args.json_out}")
    results_run.write({"datasets": [summary(r) for r in results]})


if __name__ == "__main__":
    main()
