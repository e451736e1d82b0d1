"""The cost of links (memtree.notes.links): a scan of every note cold and from its cache, `memtree links`, and
what a note without links costs.

On an existing root (``--root``, e.g. the sample) or on a generated tree of ``--notes`` notes of 20 entries
each, a share ``--linked`` of which hold three links (one typed, one to an entry, one plain). Search never
reads links only for hand-written ``supersedes`` lines, once per index version, and only when the index holds
the word (memtree.search.query.retirements): that is measured too, with and without the word.

    python bench/links.py --root .
    python bench/links.py --notes 5000 --linked 0.05
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memtree import MemTree
from memtree.notes import links, store
from memtree.search import query
from memtree.search.links import graph


def generate(out: Path, notes: int, linked: float) -> None:
    """``notes`` notes under bank/topic-K/, every 1/linked-th with three links; an empty tree."""
    every = max(1, round(1 / linked)) if linked > 0 else 0
    for i in range(notes):
        path = out / "bank" / f"topic-{i % 50}" / f"note-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"# 노트 {i}", ""]
        lines += [
            f"- 사실 {i}-{j}: 배포와 설정에 관한 문장 {j}. <!-- memtree: id=e-{i:05d}{j:05d} -->" for j in range(20)
        ]
        if every and i % every == 0:
            k = (i * 7 + 3) % notes
            lines += [
                f"- supersedes [[topic-{k % 50}/note-{k}#e-{k:05d}00003]]",
                f"- relates_to [[bank/topic-{(i + 1) % 50}/note-{(i + 1) % notes}.md]]",
                f"- 참고: [[topic-{(i + 2) % 50}/note-{(i + 2) % notes}|다음 노트]]",
            ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for tier in ("memory", "recall"):
        (out / tier).mkdir(exist_ok=True)
    (out / "tree-index.json").write_text('{"version": 1, "nodes": []}\n', encoding="utf-8")


def timed(fn, runs: int = 5) -> float:  # type: ignore[no-untyped-def]
    """The median ms of ``runs`` calls."""
    seen = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        seen.append((time.perf_counter() - t0) * 1000)
    return statistics.median(seen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, help="an existing memory root (copied first; nothing of it is changed)")
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--linked", type=float, default=0.05, help="share of generated notes holding links")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        if args.root:
            shutil.copytree(args.root, root, ignore=shutil.ignore_patterns(".git", ".memtree", ".venv"))
        else:
            generate(root, args.notes, args.linked)
        mt = MemTree(root)
        mt.index()
        disk, _ = store.walk(root)
        cache = root / store.STATE_DIR / links.CACHE_FILE

        def cold() -> None:
            cache.unlink(missing_ok=True)
            graph(mt.state)

        cold_ms = timed(cold)
        warm_ms = timed(lambda: graph(mt.state))
        walk_ms = timed(lambda: store.walk(root))
        g = graph(mt.state)
        n_links = sum(len(v) for v in g.links.values())
        target = next(iter(g.links), disk[0].path)
        one_ms = timed(lambda: mt.links(target))
        dangling_ms = timed(lambda: graph(mt.state).dangling())
        plain = [f for f in disk if f.path not in g.links]
        texts = [store.read_note(root / f.path) for f in plain[:2000]]
        t0 = time.perf_counter()
        for text, f in zip(texts, plain, strict=False):
            links.parse(f.path, text)
        per_note_us = (time.perf_counter() - t0) / max(1, len(texts)) * 1e6
        facts = query.decay.note_facts

        def retired() -> None:
            mt.state.retired = None  # as a new process, or the first search after a write, finds it
            query.retirements(mt.state, lambda p: facts(p, mt.state.read_lines(p), 0.0))

        retired_ms = timed(retired)
        found = query.retirements(mt.state, lambda p: facts(p, [], 0.0))
        n_retired = len(found.notes) + len(found.entries) if found else 0
    print(f"notes {len(disk)}, with links {len(g.links)}, links {n_links}")
    print(f"scan, cold (every note read):        {cold_ms:8.1f} ms")
    print(f"scan, from .memtree/links.json:      {warm_ms:8.1f} ms  (of which the walk of the notes {walk_ms:.1f} ms)")
    print(f"memtree links (one note, in-process):{one_ms:8.1f} ms")
    print(f"scan + every link resolved (check):  {dangling_ms:8.1f} ms")
    print(f"parse of a note without links:       {per_note_us:8.2f} µs")
    print(f"search's supersedes retirements:     {retired_ms:8.1f} ms  ({n_retired} retired; once per index version)")


if __name__ == "__main__":
    main()
