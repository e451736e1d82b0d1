"""The `memtree` console script: first the daemon, then `memtree context` without the CLI framework, then typer.

When a `memtree serve` daemon serves the root, a command that names no local file is sent to it
and its answer printed (memtree.serve.forward, which imports nothing heavy): the process then costs
little more than starting Python. Otherwise, why the fast path: an agent runs `memtree context`
before every prompt, and importing typer, click and rich costs a cold process ~40 ms of its
~100 ms budget. The fast path reads the same options as the typer command; anything it does not
recognise (``--help``, a typo, a second query) falls through to typer, which answers exactly as before.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple


class ContextArgs(NamedTuple):
    query: str
    root: Path | None = None
    budget: int = 2000
    k: int = 10
    json: bool = False
    scope: str | None = None


def main() -> None:
    """Console entry point."""
    argv = sys.argv[1:]
    from memtree.serve.forward import forward

    code = forward(argv)
    if code is not None:
        sys.exit(code)
    if argv[:1] == ["context"]:
        options = parse_context(argv[1:])
        if options is not None:
            from memtree.cli.context import run_context

            sys.exit(run_context(*options))
    from memtree.cli.app import main as full

    full()


def parse_context(args: list[str]) -> ContextArgs | None:
    """`memtree context` arguments → run_context's, or None to let typer parse (and answer) them."""
    out: dict[str, Any] = {}
    query = None
    names = {"--root": "root", "--budget": "budget", "-k": "k", "--k": "k", "--scope": "scope"}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg == "--json":
            out["json"] = True
        elif name in names:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                return None
            key = names[name]
            if key in ("budget", "k"):
                if not value.lstrip("-").isdigit():
                    return None
                out[key] = int(value)
            else:
                out[key] = Path(value) if key == "root" else value
        elif arg.startswith("-") or query is not None:
            return None
        else:
            query = arg
        i += 1
    if query is None:
        return None
    return ContextArgs(query, **out)
