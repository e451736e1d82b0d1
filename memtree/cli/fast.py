"""`memtree context` and `memtree search --json` without the CLI framework (memtree.cli.entry runs them).

Why: an agent runs `memtree context` before every prompt and `memtree search --json` for every
question, and importing typer, click and rich costs a cold process ~40 ms of its ~100 ms budget. A
fast path reads the same options as the typer command; anything it does not recognise (``--help``, a
typo, a second query, human output) falls through to typer, which answers exactly as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple


class ContextArgs(NamedTuple):
    query: str
    root: Path | None = None
    budget: int = 2000
    k: int = 10
    json: bool = False
    scope: str | None = None


class SearchArgs(NamedTuple):
    query: str
    root: Path | None = None
    k: int | None = None
    tier: str = "default"
    budget: int | None = None
    scope: str | None = None
    semantic: bool | None = None


_CONTEXT_OPTIONS = {"--root": "root", "--budget": "budget", "-k": "k", "--k": "k", "--scope": "scope"}
_SEARCH_OPTIONS = {**_CONTEXT_OPTIONS, "--tier": "tier"}
_NUMBERS = ("budget", "k")


def run(argv: list[str], one_shot: bool = True) -> int | None:
    """Run ``argv`` on a fast path; its exit code, or None when typer is to parse (and answer) it.

    ``one_shot``: this process answers this one command and exits (the console script), so the cycle
    collector may stay off; the daemon, which runs forwarded commands here too, passes False.
    """
    if argv[:1] == ["context"]:
        options = parse_context(argv[1:])
        if options is not None:
            from memtree.cli.context import run_context

            if one_shot:
                _one_shot()
            return run_context(*options)
    if argv[:1] == ["search"]:
        found = parse_search(argv[1:])
        if found is not None:
            from memtree.cli.search import run_search_json

            if one_shot:
                _one_shot()
            return run_search_json(*found)
    return None


def _one_shot() -> None:
    """The cycle collector off for the rest of a fast path's process: it answers one question and exits.

    Why: a cold search allocates the tree, the index and the keyword table, all kept to the end; the
    collector walked them ~180 times, 45-75 ms of a search at 100k chunks, and the ~350 objects in
    cycles it would free are freed at exit anyway. Never for typer's commands: `watch` and `serve` run for days.
    """
    import gc

    gc.disable()


def parse_context(args: list[str]) -> ContextArgs | None:
    """`memtree context` arguments → run_context's, or None to let typer parse (and answer) them."""
    found = _parse(args, _CONTEXT_OPTIONS, {"--json": ("json", True)})
    return None if found is None else ContextArgs(found[0], **found[1])


def parse_search(args: list[str]) -> SearchArgs | None:
    """`memtree search ... --json` arguments → run_search_json's, or None to let typer parse (and
    answer) them: without --json (rich output), with --batch, --explain or anything else."""
    flags = {"--json": ("json", True), "--semantic": ("semantic", True), "--no-semantic": ("semantic", False)}
    found = _parse(args, _SEARCH_OPTIONS, flags)
    if found is None or not found[0] or not found[1].pop("json", False):
        return None
    return SearchArgs(found[0], **found[1])


def _parse(
    args: list[str], names: dict[str, str], flags: dict[str, tuple[str, bool]]
) -> tuple[str, dict[str, Any]] | None:
    """One query, options ``names`` (each followed by a value) and ``flags``, or None for anything else."""
    out: dict[str, Any] = {}
    query = None
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg in flags:
            key, flag = flags[arg]
            out[key] = flag
        elif name in names:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                return None
            key = names[name]
            if key in _NUMBERS:
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
    return query, out
