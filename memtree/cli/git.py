"""Commands for a memory shared through git: `merge-driver` (git runs it) and `git setup`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memtree.cli.common import JsonOption, RootOption, _dump, _errors, _open, app
from memtree.cli.render import printable

git_app = typer.Typer(help="A memory shared through git: set this clone up to merge memory by its structure.")
app.add_typer(git_app, name="git")


@app.command("merge-driver")
def merge_driver(
    base: Annotated[Path, typer.Argument(help="%O: the common ancestor's version (a temp file).")],
    ours: Annotated[Path, typer.Argument(help="%A: our version; the result is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: their version.")],
    path: Annotated[str, typer.Argument(help="%P: the path in the repository (tells the file's kind).")] = "",
) -> None:
    """git's merge driver for memory (set by `memtree git setup`): merges by structure, never writes markers."""
    from memtree.write.driver import main

    code = main([str(base), str(ours), str(theirs), *([path] if path else [])])
    if code:
        raise typer.Exit(code)


@git_app.command("setup")
@_errors
def setup(root: RootOption = None, json: JsonOption = False) -> None:
    """Set this clone's git to merge memory with `memtree merge-driver` (and write .gitattributes)."""
    from memtree.notes import git
    from memtree.notes.root import find_root, write_attributes

    found = find_root(root)
    written = write_attributes(found)
    changed = git.setup(found, sys.executable)
    if json:
        _dump({"root": str(found), "attributes": written, "config": changed})
        return
    done = [*(["wrote .gitattributes"] if written else []), *(f"set {k}" for k in changed)]
    print(printable(f"memtree git setup: {', '.join(done) if done else 'already set up'}"))


@app.command("sync")
@_errors
def sync(
    merge: Annotated[bool, typer.Option("--merge", help="Pull with a merge commit instead of a rebase.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Commit memory's changes (message naming them), pull, push; retried while the remote moves. One line."""
    mt = _open(root)
    done = mt.sync(rebase=not merge)
    if json:
        _dump({"outcome": done.outcome, "message": done.message, "commit": done.commit, "attempts": done.attempts})
    else:
        print(printable(f"memtree sync: {done.outcome}: {done.message}"))
    if done.outcome in ("waiting", "failed"):
        raise typer.Exit(1 if done.outcome == "waiting" else 2)
