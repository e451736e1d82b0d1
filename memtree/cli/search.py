"""`memtree search --json` itself, free of the CLI framework: the console script's fast path and the
typer command both answer through ``answer_json``, so the two print byte for byte alike.

Why: an agent runs `memtree search --json` in a fresh process for every question, and importing
typer, click and rich, and building every command's options, cost a cold search ~50 ms of its ~400.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.cli.render import say

if TYPE_CHECKING:
    from memtree.search.result import SearchResult


def run_search_json(
    query: str,
    root: Path | None,
    k: int | None,
    tier: str,
    budget: int | None,
    scope: str | None,
    semantic: bool | None,
) -> int:
    """`memtree search --json`: the exit code (0 found, 1 rejected, 2 a data error, 130 interrupted)."""
    from memtree.errors import MemtreeError

    try:
        from memtree.cli.warm import open_memtree  # the daemon's warm MemTree when it runs this

        result = open_memtree(root).search(query, k=k, tier=tier, budget=budget, scope=scope, semantic=semantic)
    except MemtreeError as exc:
        say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    return answer_json(result)


def answer_json(result: SearchResult) -> int:
    """Print a search's warnings (stderr) and its JSON (stdout); the exit code: 1 when rejected, else 0."""
    from memtree import schema  # result shapes and orjson only: no rich or typer on the fast path

    for w in result.warnings:
        say(f"warning: {w}")
    sys.stdout.buffer.write(schema.dumps(schema.search(result, with_text=True)))
    return 1 if result.rejected else 0
