"""memtree on Milvus Lite beside the local engine: sync time, query latency, disk, and quality.

``scale``: for each size N, a SHARED_BENCH/synth.py tree (N one-line chunks, 20 per note, known-item
queries) indexed twice in-process — ``index.backend: local`` and ``milvus`` (Milvus Lite in
``.memtree/milvus.db``) — then per backend: the full index (for Milvus: the local build plus the
sync of every chunk), a warm query pass (hit@1/hit@5 at chunk level, ms/query), one changed note
(refresh + sync), a fresh process's first search (Milvus: opening the Lite file and loading the
collection) and the disk each takes.

``quality``: both dev trees (bench/quality.py's, materialized by SHARED_BENCH/materialize.py) through
``memtree.search.evaluate`` at k = 10 with a fixed moment and reinforcement off, local and Milvus
(for each ``--candidates``), hit@1, hit@5, MRR@10 and the share of unanswerable questions left empty.
``--embed`` indexes each tree as `memtree index --embed` does (the default model; the Milvus copies
take the local copy's vector cache, so each tree is embedded once): the local engine then scans
its vectors, Milvus searches the vectors its rows carry (hybrid).

    python bench/milvus.py ../shared/bench scale --chunks 100000
    python bench/milvus.py ../shared/bench quality --candidates 50,100,200
    python bench/milvus.py ../shared/bench quality --embed
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchlib import add_common_args, check_shared, first_rank, hit_to_dict, load_jsonl, md_table, progress, run
from benchlib import summarize_ms as ms_summary

NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
QUALITY_SETS = ("korquad", "locomo")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("mode", choices=("scale", "quality"))
    ap.add_argument("--chunks", default="100000", help="scale: comma-separated sizes (default: %(default)s)")
    ap.add_argument("--queries", type=int, default=500, help="scale: known-item queries (default: %(default)s)")
    ap.add_argument(
        "--cold", type=int, default=3, help="scale: fresh processes timed for the first search (default: %(default)s)"
    )
    ap.add_argument(
        "--candidates", default="200", help="quality: index.milvus.candidates to try (default: %(default)s)"
    )
    ap.add_argument(
        "--embed", action="store_true", help="quality: index with `memtree index --embed` (the semantic layer on)"
    )
    ap.add_argument("--json-out", type=Path, help="write the figures to this JSON file")
    return ap.parse_args(argv)


def du(path: Path) -> int:
    """Bytes under ``path`` (files only)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def settings_yaml(backend: str, candidates: int | None = None) -> str:
    text = "search:\n  reinforce: false\n"
    if backend == "milvus":
        text += "index:\n  backend: milvus\n"
        if candidates:
            text += f"  milvus:\n    candidates: {candidates}\n"
    return text


def fresh_copy(src: Path, dst: Path, yaml: str) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".memtree", "tree-index.json", "memtree.yaml"))
    (dst / "memtree.yaml").write_text(yaml, encoding="utf-8")
    return dst


FIRST_SEARCH = """
import sys, time
t0 = time.perf_counter()
from memtree import MemTree
mt = MemTree(sys.argv[1])
r = mt.search(sys.argv[2], k=10)
print(r.warnings)
print(time.perf_counter() - t0)
"""
FIRST_QUERY = "zanzibar quokka marmalade"


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (``VmHWM``: its peak) in MB, from /proc (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def heartbeat(root: Path, backend: str, every: float = 60.0) -> threading.Event:
    """Say every ``every`` seconds how long the run has taken, its memory and how far the sync got
    (the ledger's size), until the returned event is set: a 1M run is long and otherwise silent."""
    stop = threading.Event()
    t0 = time.perf_counter()

    def beat() -> None:
        while not stop.wait(every):
            ledger = (
                sum(p.stat().st_size for p in (root / ".memtree" / "milvus").glob("*.json"))
                if backend == "milvus"
                else 0
            )
            progress(
                f"{backend}: {time.perf_counter() - t0:.0f} s, RSS {rss_mb():.0f} MB"
                + (f", ledger {ledger / 1e6:.1f} MB" if ledger else "")
            )

    threading.Thread(target=beat, daemon=True).start()
    return stop


def scale_one(tree: Path, work: Path, backend: str) -> dict[str, Any]:
    from memtree import MemTree
    from memtree.errors import MemtreeError

    root = fresh_copy(tree, work / f"{tree.name}-{backend}", settings_yaml(backend))
    beating = heartbeat(root, backend)
    queries = load_jsonl(root / "queries.jsonl")
    spans = {s["id"]: s for s in load_jsonl(root / "spans.jsonl")}
    out: dict[str, Any] = {"backend": backend}
    mt = MemTree(root)
    t0 = time.perf_counter()
    built = mt.index()
    out["index_s"] = round(time.perf_counter() - t0, 2)
    out["chunks"] = built.chunks
    engine = mt.state.index
    out["rows_sent"] = getattr(engine, "sent", None)
    progress(f"{backend}: index {out['index_s']} s, {built.chunks} chunks, rows sent {out['rows_sent']}")
    texts = [q["query"] for q in queries]

    def search(text: str) -> list[Any]:
        try:
            return list(mt.search(text, k=10, cache=False, now=NOW).hits)
        except MemtreeError:  # a query of function words only: a miss, as the batch protocol counts it
            return []

    for q in texts[: min(20, len(texts))]:
        search(q)
    times, ranks = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = search(q["query"])
        times.append(time.perf_counter() - t0)
        ranks.append(first_rank([hit_to_dict(h, root) for h in hits], [spans[q["relevant"][0]]]))
    out["ms"] = {k: round(v, 2) for k, v in ms_summary(times).items()}
    out["hit@1"] = round(sum(r == 1 for r in ranks) / len(ranks), 3)
    out["hit@5"] = round(sum(r is not None and r <= 5 for r in ranks) / len(ranks), 3)
    progress(f"{backend}: {out['ms']['mean']} ms/query mean (p95 {out['ms']['p95']}), hit@5 {out['hit@5']}")
    note = sorted((root / "bank").rglob("*.md"))[0]
    with note.open("a", encoding="utf-8") as f:
        f.write("- zanzibar quokka marmalade appended for the refresh timing\n")
    t0 = time.perf_counter()
    mt.refresh()
    out["changed_note_ms"] = round(1000 * (time.perf_counter() - t0), 1)
    found = search("zanzibar quokka marmalade")
    out["changed_found"] = bool(found) and found[0].path == note.relative_to(root).as_posix()
    out["disk_local_index"] = du(root / ".memtree" / "index")
    if backend == "milvus":
        out["disk_milvus"] = du(root / ".memtree" / "milvus.db") + du(root / ".memtree" / "milvus")
    out["peak_rss_mb"] = round(rss_mb("VmHWM"))
    progress(f"{backend}: changed note {out['changed_note_ms']} ms, peak RSS {out['peak_rss_mb']} MB")
    beating.set()
    if backend == "milvus":  # close the Milvus Lite file before this process ends
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_all()
    out["root"] = str(root)
    return out


def first_search(row: dict[str, Any], times: int) -> None:
    """A fresh process's first search, ``times`` times (the best kept), once the process that built
    the index has ended: Milvus Lite holds its file, and the memory of a large one, until then."""
    cold = []
    stdout = ""
    for _ in range(times):
        _, stdout = run([sys.executable, "-c", FIRST_SEARCH, row["root"], FIRST_QUERY])
        cold.append(float(stdout.strip().splitlines()[-1]))
    row["first_search_s"] = round(min(cold), 2)
    progress(f"{row['backend']}: first search in a fresh process {cold}")
    if row["backend"] == "milvus":
        row["first_search_fell_back"] = "local engine" in stdout


def scale(shared: Path, work: Path, sizes: list[int], n_queries: int, cold: int) -> list[dict[str, Any]]:
    results = []
    for n in sizes:
        tree = work / f"synth-{n}"
        if not (tree / "queries.jsonl").exists():
            progress(f"synth.py {tree} --chunks {n}")
            subprocess.run(
                [sys.executable, str(shared / "synth.py"), str(tree), "--chunks", str(n), "--queries", str(n_queries)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        for backend in ("local", "milvus"):
            # Why a process each: Milvus Lite serves from threads of the process that opened it
            proc = subprocess.run(
                [sys.executable, __file__, "--work", str(work), "_scale_one", str(tree), backend],
                check=True,
                stdout=subprocess.PIPE,
                text=True,
            )
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["size"] = n
            first_search(row, cold)
            results.append(row)
    rows = [
        [
            r["size"],
            r["backend"],
            r["index_s"],
            r["ms"]["mean"],
            r["ms"]["p50"],
            r["ms"]["p95"],
            r["hit@5"],
            r["changed_note_ms"],
            r["first_search_s"],
            f"{r['disk_local_index'] / 1e6:.1f}" + (f" + {r['disk_milvus'] / 1e6:.1f}" if "disk_milvus" in r else ""),
        ]
        for r in results
    ]
    head = ["chunks", "backend", "index s", "ms/query mean", "p50", "p95", "hit@5", "changed note ms", "first search s"]
    print(
        md_table(
            [*head, "disk MB (local index + Milvus)", "peak RSS MB"],
            [[*r, x["peak_rss_mb"]] for r, x in zip(rows, results)],
        )
    )
    return results


def quality(shared: Path, work: Path, candidates: list[int], embed: bool = False) -> list[dict[str, Any]]:
    from memtree import MemTree
    from memtree.search.evaluate import evaluate

    check_shared(shared, ["materialize.py", *QUALITY_SETS])
    results = []
    for name in QUALITY_SETS:
        source = work / f"{name}-tree"
        if not (source / "queries.jsonl").exists():
            run([sys.executable, str(shared / "materialize.py"), str(shared / name), str(source)])
        local_root = None
        for backend, cand in [("local", None)] + [("milvus", c) for c in candidates]:
            root = fresh_copy(
                source, work / f"{name}-{backend}-{cand or 0}{'-embed' if embed else ''}", settings_yaml(backend, cand)
            )
            if embed and local_root is not None:  # the vectors the local copy embedded: each tree embedded once
                shutil.copytree(local_root / ".memtree" / "vectors", root / ".memtree" / "vectors")
            t0 = time.perf_counter()
            built = MemTree(root).index(embed=embed)
            index_s = time.perf_counter() - t0
            local_root = local_root or root
            report, _ = evaluate(root / "queries.jsonl", root, k=10, now=NOW)
            o = report.overall
            label = backend if cand is None else f"milvus, {cand} candidates"
            row = {
                "set": name,
                "backend": label + (" + vectors" if embed else ""),
                "index s": index_s,
                "embedded": (built.embedded or {}).get("embedded"),
                "hit@1": o.hit_at_1,
                "hit@5": o.hit_at_5,
                "mrr@10": o.mrr_at_10,
                "unanswerable empty": o.unanswerable_empty,
                "ms/query": report.latency.mean,
            }
            progress(json.dumps(row))
            results.append(row)
    keys = ["hit@1", "hit@5", "mrr@10", "unanswerable empty", "ms/query", "index s"]
    print(
        md_table(["set", "backend", *keys], [[r["set"], r["backend"], *(f"{r[k]:.3f}" for k in keys)] for r in results])
    )
    return results


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "_scale_one" in argv:  # the child process of one backend's scale run
        at = argv.index("_scale_one")
        work = Path(argv[argv.index("--work") + 1])
        with contextlib.redirect_stdout(sys.stderr):  # progress on stderr, as it happens; the figures on stdout
            row = scale_one(Path(argv[at + 1]), work, argv[at + 2])
        print(json.dumps(row))
        return
    args = parse_args(argv)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    if args.mode == "scale":
        figures: Any = scale(args.shared, work, [int(n) for n in args.chunks.split(",")], args.queries, args.cold)
    else:
        figures = quality(args.shared, work, [int(n) for n in args.candidates.split(",")], args.embed)
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
