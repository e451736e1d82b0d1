"""`memtree context` itself, free of the CLI framework: the console script's fast path and the typer
command both run ``run_context``, so the two answer byte for byte alike."""

from __future__ import annotations

import sys
from pathlib import Path


def run_context(
    query: str, root: Path | None, budget: int, k: int, json: bool, scope: str | None, as_of: str | None = None
) -> int:
    """`memtree context`: the block on stdout, or nothing and a warning on stderr; always exit 0."""
    try:
        from memtree.cli.warm import open_memtree  # the daemon's warm MemTree when it runs this

        if as_of is None:
            ctx = open_memtree(root).context(query, budget=budget, k=k, scope=scope)
        else:
            from memtree.search.query import as_of_day

            ctx = open_memtree(root).context(query, budget=budget, k=k, scope=scope, as_of=as_of_day(as_of))
    except Exception as exc:  # whatever went wrong, the chat goes on without memory
        sys.stderr.write(f"memtree: warning: no memory context ({exc})\n")
        return 0
    if not ctx.markdown and ctx.left_out:
        found = f"{ctx.left_out} chunk{'s' if ctx.left_out > 1 else ''} found"
        sys.stderr.write(f"memtree: warning: no memory context: {found}, none fits in {budget} tokens\n")
    if json:
        from memtree import schema  # result shapes and orjson only: no rich or typer on the fast path

        sys.stdout.buffer.write(schema.dumps(schema.context(ctx)))
    else:
        from memtree.cli.render import printable  # re, text, entries only: no rich or typer on the fast path

        sys.stdout.write(printable(ctx.markdown))  # a note or the query may hold ESC sequences
    sys.stdout.flush()
    return 0
