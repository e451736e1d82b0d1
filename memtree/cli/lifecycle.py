"""The lifecycle commands: `distill`, `export`, `import`, `banks`, `decay`, `consolidate`, `recall`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memtree import schema
from memtree.cli.common import JsonOption, RootOption, _dump, _errors, _fail, _from_group, _open, app, print_proposals
from memtree.cli.render import printable, say


@app.command()
@_errors
def distill(
    files: Annotated[list[str] | None, typer.Argument(help="Logs to read (default: every memory/ log).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only logs dated on or after YYYY-MM-DD.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Detect and decide; write nothing.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Find knowledge in memory/ logs (error→fix, retry→success, config change, first use, chores) and add it."""
    from datetime import date

    try:
        day = date.fromisoformat(since) if since else None
    except ValueError:
        raise _fail(f"error: --since {since!r} is not a date (YYYY-MM-DD)") from None
    report = _open(root).distill(files or None, day, dry_run)
    for notice in report.notices:
        say(notice)
    if json:
        _dump(schema.distilled(report))
        return
    print_proposals(report.proposals)
    print(
        f"{report.written} entr{'y' if report.written == 1 else 'ies'} written from {len(report.proposals)} candidates"
    )


@app.command()
@_errors
def export(
    bank: Annotated[str | None, typer.Option("--bank", help="Only this bank (a top-level folder of bank/).")] = None,
    root: RootOption = None,
    json: Annotated[  # every command takes --json; this one's output is JSON either way
        bool, typer.Option("--json", help="Accepted like everywhere: the export is always one JSON document.")
    ] = False,
) -> None:
    """Print the memory as one JSON document: every bank entry with its metadata, the tree's nodes,
    and the whole text of every tracked note, tree-index.json and conflicts.json (a backup)."""
    from memtree.write.exchange import dumps, size_warning

    data = dumps(_open(root).export(bank))
    sys.stdout.buffer.write(data)
    warning = size_warning(data)
    if warning:
        sys.stderr.write(f"memtree: warning: {warning}\n")


@app.command("import")
@_errors
def import_(
    file: Annotated[str, typer.Argument(help="An export document; '-' reads stdin.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and count; write nothing.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Import an export document (≤ 10 MB): validated whole, sanitized; into an empty root every file
    comes back as it was, into any other the entries merge (deduplicated, metadata kept)."""
    if file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise _fail(f"error: cannot read {file}: {exc.strerror}") from None
    result = _open(root).import_(data, dry_run=dry_run)
    if json:
        _dump(schema.imported(result))
        return
    verb = "would write" if dry_run else "wrote"
    print(
        f"{verb} {result.written} entries ({result.skipped} already there) into {len(result.notes)} notes; "
        f"{len(result.nodes_added)} nodes added"
        + (f"; {len(result.restored)} files restored whole" if result.restored else "")
        + (f"; {result.conflicts_added} open conflicts added" if result.conflicts_added else "")
        + (f"; {result.redacted} redactions" if result.redacted else "")
    )


banks_app = typer.Typer(
    help="Banks: the top-level folders of bank/. List them, or disable/enable one for search and context.",
    invoke_without_command=True,
)
app.add_typer(banks_app, name="banks")


@banks_app.callback()
@_errors
def banks(ctx: typer.Context, root: RootOption = None, json: JsonOption = False) -> None:
    """List banks: notes, entries, bytes, and whether search sees them."""
    if ctx.invoked_subcommand is not None:
        return

    found = _open(root).banks()
    if json:
        _dump(schema.banks(found))
        return
    if not found:
        print("no banks: bank/ has no folders")
    for b in found:
        state = "enabled" if b.enabled else "disabled"
        print(printable(f"{b.name:<24} {b.notes:>5} notes {b.entries:>6} entries {b.bytes:>10,} bytes  {state}"))


def _switch(ctx: typer.Context, name: str, root: Path | None, json: bool, enabled: bool) -> None:

    root, json = _from_group(ctx, "root", root), _from_group(ctx, "json", json)
    disabled = _open(root).set_bank(name, enabled)
    if json:
        _dump(schema.bank_switch(name, enabled, disabled))
        return
    state = "enabled" if enabled else "disabled"
    print(printable(f"bank {name} {state}; disabled banks: {', '.join(disabled) or 'none'}"))


@banks_app.command("disable")
@_errors
def disable(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The bank to leave out.")],
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Leave a bank out of search and context (written to memtree.yaml)."""
    _switch(ctx, name, root, json, False)


@banks_app.command("enable")
@_errors
def enable(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The bank to search again.")],
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Search a disabled bank again (written to memtree.yaml)."""
    _switch(ctx, name, root, json, True)


@app.command("decay")
@_errors
def decay_(
    archive: Annotated[
        bool, typer.Option("--archive", help="Move the archive candidates to bank/_archive/ (never deleted).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --archive: list what would move.")] = False,
    every: Annotated[bool, typer.Option("--all", help="List every bank entry, weakest first.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Entry weights today (halved every decay.half_life_days, raised by recalls) and archive candidates
    (weight under decay.archive_below, or auto entries past consolidate.prune_days rarely recalled)."""
    mt = _open(root)
    if archive:
        moved = mt.archive(dry_run=dry_run)
        if json:
            _dump(schema.archived(moved, dry_run))
            return
        verb = "would move" if dry_run else "moved"
        for a in moved:
            print(printable(f"{verb} {a.path}:{a.lines[0]}-{a.lines[1]} → bank/_archive/ ({a.why}): {a.preview}"))
        print(f"{len(moved)} entr{'y' if len(moved) == 1 else 'ies'} {verb} to bank/_archive/")
        return
    aged = sorted(mt.decay(), key=lambda a: (a.weight, a.path, a.lines))
    candidates = [a for a in aged if a.candidate]
    if json:
        _dump(schema.decay(aged if every else candidates, len(aged)))
        return
    shown = aged if every else candidates
    for a in shown:
        mark = "archive" if a.candidate else ""
        print(
            printable(
                f"{a.weight:6.3f}  {a.age_days:6.1f} d ({a.dated:<11}) {a.recalls:>3} recalls  "
                f"{a.path}:{a.lines[0]}-{a.lines[1]}  {mark:<7} {a.preview[:60]}"
            )
        )
    protected = sum(1 for a in aged if a.weight >= 1.0)
    print(
        f"{len(aged)} bank entries: {protected} at full weight, {len(candidates)} archive candidates"
        + (" (memtree decay --archive moves them)" if candidates else "")
    )


@app.command()
@_errors
def consolidate(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the merges; write nothing.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Merge near-duplicates within each note (bigram Jaccard ≥ consolidate.jaccard, never two facts); list stale ones.

    A merged-away entry's text is kept in bank/_archive/; --dry-run shows both texts of every merge.

    Another state, order, unit, region or environment (on/off, before/after, 500 ms/500 s, EU/US) is another fact.

    Notes are planned without the write lock (adds go on meanwhile); each note's merges are one change.
    """
    from memtree.lifecycle.aging import archive_path

    report = _open(root).consolidate(dry_run=dry_run)
    if json:
        _dump(schema.consolidated(report))
        return
    verb = "would merge" if dry_run else "merged"
    for m in report.merges:  # every text in full: a user checks each merge before running it
        where = ", ".join(f"{d.path}:{d.entry.start}" for d in m.drop)
        print(printable(f"{verb} {where} into {m.keep.path}:{m.keep.entry.start} ({m.similarity:.2f})"))
        print(printable(f"  keep: {m.keep.entry.content}"))
        for d in m.drop:
            print(printable(f"  drop: {d.entry.content}  (→ {archive_path(d.path)})"))
    for a in report.candidates:
        print(printable(f"archive candidate {a.path}:{a.lines[0]}-{a.lines[1]} ({a.why}): {a.preview[:60]}"))
    folded = sum(len(m.drop) for m in report.merges)
    print(
        f"{folded} entr{'y' if folded == 1 else 'ies'} {'would be merged' if dry_run else 'merged'} "
        f"in {len(report.merges)} groups; "
        f"{len(report.candidates)} archive candidates ({report.seconds:.2f} s)"
    )


recall_app = typer.Typer(
    help="The recall/ tier: excerpts of the entries search finds most, searched first. List them, or sync.",
    invoke_without_command=True,
)
app.add_typer(recall_app, name="recall")


@recall_app.callback()
@_errors
def recall(ctx: typer.Context, root: RootOption = None, json: JsonOption = False) -> None:
    """List recall/ excerpts with their sources, and the token budget."""
    if ctx.invoked_subcommand is not None:
        return
    from memtree.lifecycle import recall as rc

    mt = _open(root)
    found = mt.recall()
    state = rc.status(mt.root, mt.settings.recall.budget_tokens)
    if json:
        _dump(schema.recall(found, state))
        return
    for ex in found:
        print(printable(f"{ex.path}:{ex.lines[0]}-{ex.lines[1]}  {ex.text[:80]}"))
    print(f"{state['excerpts']} excerpts, {state['tokens']} of {state['budget']} tokens")


@recall_app.command("sync")
@_errors
def recall_sync(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Drop stale excerpts, promote entries recalled ≥ recall.promote_after times, evict past the budget."""
    root, json = _from_group(ctx, "root", root), _from_group(ctx, "json", json)
    sync = _open(root).recall_sync(dry_run=dry_run)
    if json:
        _dump(schema.recall_sync(sync, dry_run))
        return
    for ex in sync.promoted:
        print(printable(f"promoted {ex.path}:{ex.lines[0]}-{ex.lines[1]} ({ex.recalls} recalls): {ex.text[:60]}"))
    for ex, why in sync.dropped:
        print(printable(f"dropped  {ex.path}:{ex.lines[0]}-{ex.lines[1]} ({why}): {ex.text[:60]}"))
    for ex in sync.evicted:
        print(
            printable(
                f"evicted  {ex.path}:{ex.lines[0]}-{ex.lines[1]} (over the {sync.budget}-token budget): {ex.text[:60]}"
            )
        )
    prefix = "would keep" if dry_run else "recall/ keeps"
    print(f"{prefix} {len(sync.kept) + len(sync.promoted)} excerpts, {sync.tokens} of {sync.budget} tokens")
