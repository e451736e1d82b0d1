"""Changing and undoing: `update`, `forget`, `promote`, `history`, `undo` (on memtree.cli.common's app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memtree import schema
from memtree.cli.common import JsonOption, RootOption, _dump, _errors, _open, _warn, app
from memtree.cli.render import printable
from memtree.cli.write import _read_text

EntryArgument = Annotated[
    str,
    typer.Argument(
        help="The entry: its id (e-…, as a search hit's ids) or PATH:LINE, any line of it.", show_default=False
    ),
]


@app.command()
@_errors
def update(
    entry: EntryArgument,
    text: Annotated[str | None, typer.Argument(help="The entry's new words; '-' reads stdin.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Read the new words from this file.")] = None,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Replace one entry's words: sanitized, checked for duplicates and conflicts, metadata kept, updated= set.

    The old words stay in the note just above, marked superseded by the entry (same id): search
    serves them only for the past (`--as-of DATE`)."""
    done = _open(root).update(entry, _read_text(text, file))
    if json:
        _dump(schema.updated(done))
        return
    where = f"{done.path}:{done.lines[0]}-{done.lines[1]}"
    name = done.entry_id or "the hand-written entry"
    if done.decision == "unchanged":
        line = f"{name} at {where} already says that; nothing written"
    elif done.decision == "duplicate":
        line = (
            f"duplicate of {done.existing} in {done.path} (similarity {done.similarity:.2f}): nothing written; "
            f"`memtree forget {done.entry_id or where.split('-')[0]}` if {name} no longer holds"
        )
    elif done.decision == "conflict":
        other = (done.other or "")[:80]
        line = (
            f"updated {name} at {where}, but similar ({done.similarity:.2f}) to another entry: «{other}»"
            f" — conflict {done.conflict_id} (see `memtree conflicts`)"
        )
    else:
        line = f"updated {name} at {where}; its old words are kept just above it, marked superseded"
        if done.replaced:
            line += f"; it also replaces {done.replaced} («{(done.other or '')[:60]}»), marked superseded"
    if done.redacted:
        line += f"; redacted: {', '.join(done.redacted)}"
    print(printable(line))


@app.command()
@_errors
def forget(
    entry: EntryArgument,
    reason: Annotated[str, typer.Option("--reason", help="Why it no longer holds (kept with it in the archive).")] = "",
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Move one entry, metadata and all, to the same path under bank/_archive/ with the reason (never deleted)."""
    gone = _open(root).forget(entry, reason)
    if json:
        _dump(schema.forgotten(gone))
        return
    name = gone.entry_id or f"{gone.path}:{gone.lines[0]}"
    print(printable(f"forgot {name} ({gone.preview[:60]}): moved to {gone.archive}; `memtree undo` brings it back"))


@app.command()
@_errors
def promote(
    entry: Annotated[
        str,
        typer.Argument(
            help="The entry: its id (e-…) or PATH:LINE in the root it leaves (the project's for --to user).",
            show_default=False,
        ),
    ],
    to: Annotated[
        str, typer.Option("--to", help="user: up into your own root ($MEMTREE_HOME); project: down into this one.")
    ] = "user",
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Move one entry with its history between the project's root and your own (see `memtree init --user`).

    Its id, created time and older versions move with it to the note of the same path. It is written
    to the other root first, then removed here, so a crash between leaves it in both: run it again."""
    done = _open(root).promote(entry, to)
    if json:
        _dump(schema.promoted(done))
        return
    name = done.entry_id or f"{done.path}:{done.lines[0]}"
    older = len(done.moved) - 1
    with_older = f" with {older} older version{'s' if older != 1 else ''}" if older else ""
    state = "; it was there already (an earlier promote stopped halfway), removed here now" if done.already else ""
    where = f"{done.to_root}/{done.path}:{done.lines[0]}"
    print(printable(f"moved {name}{with_older} to the {done.to} root: {where}{state}"))


@app.command()
@_errors
def history(
    ref: Annotated[
        str | None,
        typer.Argument(help="A node id, note path or entry id (default: the whole memory).", show_default=False),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Changes (and commits) shown at most (default 20).")
    ] = None,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """What memtree changed, when and by which command (newest first); with git, the commits too.

    For an entry id, first its chain: the versions it replaced and what replaced it, oldest first."""
    found = _open(root).history(ref, limit)
    _warn(found.warnings)
    if json:
        _dump(schema.history(found))
        return
    if found.chain:
        print(printable(f"chain of {found.target} (oldest first):"))
        for v in found.chain:
            when = f"superseded {v.superseded}" if v.superseded else "current"
            if v.valid_until and not v.superseded:
                when += f" until {v.valid_until}"
            print(printable(f"  {v.created[:10] or '(undated)'}  {v.id}  {when}: {v.text}"))
    if not found.changes:
        print("no memtree change journaled" + (f" for {found.target}" if found.target else ""))
    for c in found.changes:
        what = f"  {c.summary}" if c.summary else ""
        print(printable(f"{c.time}  {c.id}  {c.command:<17} {', '.join(c.paths)}{what}"))
    if found.commits:
        print("git:")
        for g in found.commits:
            print(printable(f"{g.time}  {g.commit[:10]}  {g.author}: {g.subject}"))


@app.command()
@_errors
def undo(
    count: Annotated[int, typer.Argument(help="How many of your last memtree writes to revert, newest first.")] = 1,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and list what would be reverted; write nothing.")
    ] = False,
    change_id: Annotated[
        str | None, typer.Option("--id", help="Revert this change (an id `memtree history` lists), whoever made it.")
    ] = None,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Revert your last N memtree writes ($MEMTREE_ACTOR, else user@host), keeping others' later ones.

    Refused, with one line and nothing written, when a file was edited by hand since, or a later
    change by someone else touched the same lines or entries.
    """
    done = _open(root).undo(count, dry_run=dry_run, change_id=change_id)
    if json:
        _dump(schema.undone(done))
        return
    verb = "would revert" if done.dry_run else "reverted"
    for c in done.undone:
        what = f": {c.summary}" if c.summary else ""
        print(printable(f"{verb} {c.id} ({c.command}, {c.time}){what}"))
    if done.paths:
        print(printable(f"{'would write' if done.dry_run else 'wrote'} back {', '.join(done.paths)}"))
    if done.change_id:
        print(printable(f"journaled as {done.change_id}; `memtree undo` again redoes it"))
