"""What every ``memtree`` command shares: the typer app, common options, one-line errors, JSON output.

The command modules (app, write, lifecycle, eval) register on ``app``; memtree.cli.app imports
them all and runs it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from memtree import schema
from memtree.cli.render import printable, say
from memtree.errors import MemtreeError

app = typer.Typer(
    name="memtree",
    help="Local, file-based long-term memory for AI agents: Markdown notes, a routing tree and "
    "Korean-aware hybrid search. `--root DIR` goes after the command or before it. Exit codes: 0 ok, "
    "1 nothing found, 2 usage or data error.",
    no_args_is_help=True,
    # --install-completion / --show-completion: typer imports its completion code anyway, and
    # adding the two options costs a cold start ~0.3 ms
    add_completion=True,
    pretty_exceptions_enable=False,
)

RootOption = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="Memory root (default: $MEMTREE_ROOT, else the nearest parent with tree-index.json).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
ScopeOption = Annotated[
    str | None,
    typer.Option(
        "--scope",
        help="Current scope: global, project:NAME, workspace:NAME or a chain project:NAME/workspace:NAME; "
        "entries of scopes above are visible, below are not, its own are boosted (default: search.scope).",
        show_default=False,
    ),
]
AsOfOption = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="Answer with the facts that held on this day (YYYY-MM-DD): written by then, not yet superseded "
        "or expired (default: today's current facts).",
        show_default=False,
    ),
]
F = TypeVar("F", bound=Callable[..., Any])


def _version(value: bool) -> None:
    if value:
        from memtree import __version__

        print(f"memtree {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    no_daemon: Annotated[
        bool,
        typer.Option(
            "--no-daemon",
            help="Run in this process even when a `memtree serve` daemon serves the root (also MEMTREE_NO_DAEMON=1).",
        ),
    ] = False,
) -> None:
    """Options that come before the command."""
    # --no-daemon is acted on before typer runs (memtree.serve.client sees it first and forwards nothing)


def _fail(message: str, code: int = 2) -> typer.Exit:
    say(message)
    return typer.Exit(code)


def _errors(fn: F) -> F:
    """Turn MemtreeError (and interrupts) into one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemtreeError as exc:
            raise _fail(f"error: {exc}") from None
        except KeyboardInterrupt:
            raise _fail("interrupted", 130) from None

    return wrapper  # type: ignore[return-value]


def _dump(doc: dict[str, Any]) -> None:
    """A --json result on stdout: one object, built by memtree.schema."""
    sys.stdout.buffer.write(schema.dumps(doc))


def _warn(warnings: Any) -> None:
    for w in warnings:
        say(f"warning: {w}")


def _from_group(ctx: typer.Context, name: str, value: Any) -> Any:
    """An option given to the group (``banks --json disable x``) counts for its subcommand too."""
    if value in (None, False) and ctx.parent is not None:
        return ctx.parent.params.get(name, value)
    return value


def _open(root: Path | None) -> Any:
    """The command's MemTree: the daemon's warm one when `memtree serve` runs the command (memtree.cli.warm)."""
    from memtree.cli.warm import open_memtree

    return open_memtree(root)


def _open_user(root: Path | None) -> Any:
    """The user's own root beside the command's (its MemTree); with no project root here, the user root alone."""
    from memtree.errors import RootNotFound

    try:
        mt = _open(root)
    except RootNotFound:
        if root is not None:
            raise
        from memtree.api import MemTree
        from memtree.notes.root import user_home, user_root

        home = user_home()
        found = user_root(home)
        if found is None:
            raise RootNotFound(f"no user root at {home} (create it with `memtree init --user`)") from None
        return MemTree(found, home=False)
    return mt.user_or_fail()


def print_proposals(proposals: Any) -> None:
    """One line per distill or ingest proposal: outcome, score, rule, where it came from and went, its text."""
    for p in proposals:
        where = f" → {p.decision.path}" if p.decision is not None else ""
        print(
            printable(
                f"{p.outcome:<11} {p.candidate.score:>3}  {p.candidate.rule:<14} {p.provenance}{where}: "
                f"{p.candidate.text}"
            )
        )
