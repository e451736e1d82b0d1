#!/usr/bin/env python3
"""A user root beside a project's: how much another root's notes move the project's own answers.

    python bench/roots.py PROJECT_TREE USER_TREE [--k 10] [--rules]

Both TREEs are memory roots written by ``../shared/bench/materialize.py`` and indexed with ``memtree
index`` (``bench/quality.py`` leaves them in its work folder). Every query of PROJECT_TREE is searched
twice through ``MemTree.search``: with no user root (``home=None``), and with USER_TREE as the user root
(memtree.search.roots merges the two). USER_TREE may hold a ``spans.jsonl`` of its own: the questions
whose evidence is there are then counted apart. Printed: chunk-level hit@1 and hit@5 (a hit overlapping
a relevant span of its own root, at most 30 lines long, as score.py counts) of the questions whose
evidence is in the project, and of those whose evidence is in the user root; the questions with no
evidence anywhere left empty; questions whose top hit came from the user root, with any user-root hit; and
questions whose project hits are not those of the search alone, in its order (the user-root hits
that join may push the last ones past k).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from itertools import zip_longest
from pathlib import Path
from typing import Any

MAX_SPAN = 30
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
"""One moment for both searches: decay and recency are judged alike."""


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


RULES: dict[str, Any] = {
    "project first": lambda mine, theirs, k: (mine + theirs)[:k],
    "interleaved by rank": lambda mine, theirs, k: [h for pair in zip_longest(mine, theirs) for h in pair if h][:k],
}
"""``--rules``: merges memtree could have made instead of by score, from each root's hits searched alone."""


Hits = list[tuple[str, tuple[int, int], float, str]]
"""A question's hits: path, lines, score and root, best first."""


def ranked(project: Path, home: Path | None, k: int, queries: Path | None = None) -> dict[str, Hits]:
    """Query id → its hits, [] when refused; ``queries``: another tree's questions, asked of this one as a user root."""
    from memtree import MemTree
    from memtree.errors import QueryError

    mt = MemTree(project, home=home, refresh_interval=3600)
    out = {}
    root = "project" if queries is None else "user"
    for q in load_jsonl(queries or project / "queries.jsonl"):
        try:
            hits = mt.search(q["query"], k=k, now=NOW, cache=False).hits
        except QueryError:
            hits = ()
        out[q["id"]] = [(h.path, h.lines, h.score, h.root if queries is None else root) for h in hits]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("user", type=Path)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rules", action="store_true", help="also the merges by rank: project first, interleaved")
    args = ap.parse_args()
    queries = load_jsonl(args.project / "queries.jsonl")
    spans = {"project": {s["id"]: s for s in load_jsonl(args.project / "spans.jsonl")}}
    if (args.user / "spans.jsonl").is_file():  # a user root holding some questions' evidence
        spans["user"] = {s["id"]: s for s in load_jsonl(args.user / "spans.jsonl")}
    alone = ranked(args.project, None, args.k)
    both = ranked(args.project, args.user.resolve(), args.k)
    modes = {"project alone": alone, "project + user root (by score)": both}
    if args.rules:
        theirs = ranked(args.user, None, args.k, args.project / "queries.jsonl")
        for name, rule in RULES.items():
            modes[f"project + user root ({name})"] = {i: rule(alone[i], theirs[i], args.k) for i in alone}

    def where(q: dict[str, Any]) -> str:
        """The root holding the question's evidence ("project", "user"), or "" for none."""
        return next((root for root, held in spans.items() if any(r in held for r in q["relevant"])), "")

    def relevant(q: dict[str, Any], hit: tuple[str, tuple[int, int], float, str]) -> bool:
        path, (start, end), _, root = hit
        held = spans.get(root, {})
        return end - start < MAX_SPAN and any(
            path == held[r]["path"] and start <= held[r]["lines"][1] and end >= held[r]["lines"][0]
            for r in q["relevant"]
            if r in held
        )

    groups = {name: [q for q in queries if where(q) == name] for name in ("project", "user", "")}
    print(
        f"{args.project.name} with {args.user.name} as the user root ({len(queries)} questions, k={args.k}; "
        f"evidence in the project {len(groups['project'])}, in the user root {len(groups['user'])}, "
        f"nowhere {len(groups[''])})"
    )
    print("| search | hit@1 (project) | hit@5 (project) | hit@1 (user root) | hit@5 (user root) "
          "| no evidence left empty | top hit from the user root | any user-root hit |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, found in modes.items():
        row = [name]
        for group in ("project", "user"):
            asked = groups[group]
            h1 = sum(bool(found[q["id"]]) and relevant(q, found[q["id"]][0]) for q in asked)
            h5 = sum(any(relevant(q, h) for h in found[q["id"]][:5]) for q in asked)
            row += [f"{h1 / len(asked):.4f}", f"{h5 / len(asked):.4f}"] if asked else ["—", "—"]
        empty = sum(not found[q["id"]] for q in groups[""]) / max(1, len(groups[""]))
        top = sum(bool(found[q["id"]]) and found[q["id"]][0][3] == "user" for q in queries)
        some = sum(any(h[3] == "user" for h in found[q["id"]]) for q in queries)
        print("| " + " | ".join([*row, f"{empty:.4f}", str(top), str(some)]) + " |")
    moved = 0
    for q in queries:  # the project's hits in the merged answer: those of the search alone, in order, less any cut
        mine = [h for h in both[q["id"]] if h[3] == "project"]
        moved += mine != alone[q["id"]][: len(mine)]
    print(f"\nquestions whose project hits are not the search alone's, in its order: {moved}")


if __name__ == "__main__":
    main()
