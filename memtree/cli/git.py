"""Commands for a memory shared through git: `merge-driver` (git runs it) and `git setup`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memtree.cli.common import JsonOption, RootOption, _dump, _errors, _open, app
from memtree.cli.render import printable

git_app = typer.Typer(
    help="A memory shared through git: whether this clone merges memory by its structure; `setup` sets it.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(git_app, name="git")


@git_app.callback()
@_errors
def git_status(ctx: typer.Context, root: RootOption = None, json: JsonOption = False) -> None:
    """Whether .gitattributes routes memory to the driver and this clone's git config runs it."""
    if ctx.invoked_subcommand is not None:
        return
    from memtree.notes import git
    from memtree.notes.root import find_root

    found = find_root(root)
    attributes = (found / ".gitattributes").read_text(encoding="utf-8") if (found / ".gitattributes").is_file() else ""
    ready = not git.attributes_missing(attributes)
    driver = git.configured_driver(found)
    if json:
        _dump({"root": str(found), "attributes": ready, "driver": driver})
        return
    said = "set up" if ready and driver else "not set up: run `memtree git setup`"
    print(
        printable(f"memtree git: {said} (.gitattributes {'ok' if ready else 'incomplete'}, driver {driver or 'unset'})")
    )


@app.command("merge-driver")
def merge_driver(
    base: Annotated[Path, typer.Argument(help="%O: the common ancestor's version (a temp file).")],
    ours: Annotated[Path, typer.Argument(help="%A: our version; the result is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: their version.")],
    path: Annotated[str, typer.Argument(help="%P: the path in the repository (tells the file's kind).")] = "",
    json: JsonOption = False,
) -> None:
    """git's merge driver for memory (set by `memtree git setup`): merges by structure, never writes markers."""
    from memtree.write.driver import main, run

    if not json:
        code = main([str(base), str(ours), str(theirs), *([path] if path else [])])
        if code:
            raise typer.Exit(code)
        return
    merged, clean = run(base, ours, theirs, path or str(ours))
    _dump({"path": path, "clean": clean, "clashes": list(merged.clashes)})
    if not clean:
        raise typer.Exit(1)


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
