#!/usr/bin/env python3
"""A user root beside a project's: how much another root's notes move the project's own answers.

    python bench/roots.py PROJECT_TREE USER_TREE [--k 10]

Both TREEs are memory roots written by ``../shared/bench/materialize.py`` and indexed with ``memtree
index`` (``bench/quality.py`` leaves them in its work folder). Every query of PROJECT_TREE is searched
twice through ``MemTree.search``: with no user root (``home=None``), and with USER_TREE as the user root
(memtree.search.roots merges the two). Printed: chunk-level hit@1 and hit@5 (a hit in the project's
root overlapping a relevant span, at most 30 lines long, as score.py counts), unanswerable questions
left empty, questions whose top hit came from the user root, questions with any user-root hit, and
questions whose project hits are not those of the search alone, in its order (the user-root hits
that join may push the last ones past k).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

MAX_SPAN = 30
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
"""One moment for both searches: decay and recency are judged alike."""


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def ranked(project: Path, home: Path | None, k: int) -> dict[str, list[tuple[str, tuple[int, int], float, str]]]:
    """Query id → its hits (path, lines, score, root), best first; [] when refused."""
    from memtree import MemTree
    from memtree.errors import QueryError

    mt = MemTree(project, home=home, refresh_interval=3600)
    out = {}
    for q in load_jsonl(project / "queries.jsonl"):
        try:
            hits = mt.search(q["query"], k=k, now=NOW, cache=False).hits
        except QueryError:
            hits = ()
        out[q["id"]] = [(h.path, h.lines, h.score, h.root) for h in hits]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("user", type=Path)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    queries = load_jsonl(args.project / "queries.jsonl")
    spans = {s["id"]: s for s in load_jsonl(args.project / "spans.jsonl")}
    alone = ranked(args.project, None, args.k)
    both = ranked(args.project, args.user.resolve(), args.k)

    def relevant(q: dict[str, Any], hit: tuple[str, tuple[int, int], float, str]) -> bool:
        path, (start, end), _, root = hit
        return (
            root == "project"
            and end - start < MAX_SPAN
            and any(
                path == spans[r]["path"] and start <= spans[r]["lines"][1] and end >= spans[r]["lines"][0]
                for r in q["relevant"]
                if r in spans
            )
        )

    answerable = [q for q in queries if q["answerable"]]
    unanswerable = [q for q in queries if not q["answerable"]]
    print(f"{args.project.name} with {args.user.name} as the user root ({len(queries)} questions, k={args.k})")
    print("| search | hit@1 | hit@5 | unanswerable left empty | top hit from the user root | any user-root hit |")
    print("|---|---|---|---|---|---|")
    for name, found in (("project alone", alone), ("project + user root", both)):
        h1 = sum(bool(found[q["id"]]) and relevant(q, found[q["id"]][0]) for q in answerable) / len(answerable)
        h5 = sum(any(relevant(q, h) for h in found[q["id"]][:5]) for q in answerable) / len(answerable)
        empty = sum(not found[q["id"]] for q in unanswerable) / max(1, len(unanswerable))
        top = sum(bool(found[q["id"]]) and found[q["id"]][0][3] == "user" for q in queries)
        some = sum(any(h[3] == "user" for h in found[q["id"]]) for q in queries)
        print(f"| {name} | {h1:.4f} | {h5:.4f} | {empty:.4f} | {top} | {some} |")
    moved = 0
    for q in queries:  # the project's hits in the merged answer: those of the search alone, in order, less any cut
        mine = [h for h in both[q["id"]] if h[3] == "project"]
        moved += mine != alone[q["id"]][: len(mine)]
    print(f"\nquestions whose project hits are not the search alone's, in its order: {moved}")


if __name__ == "__main__":
    main()
