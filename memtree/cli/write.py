"""The writing commands: `add`, `log`, `conflicts`, `split`, `check`, `watch` (on memtree.cli.common's app)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from memtree import schema
from memtree.cli.common import (
    JsonOption,
    RootOption,
    _dump,
    _errors,
    _fail,
    _from_group,
    _open,
    _open_user,
    _warn,
    app,
)
from memtree.cli.render import printable, say
from memtree.errors import QueryError

conflicts_app = typer.Typer(
    help="Entries that may contradict each other: list them, or settle one with `resolve`.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(conflicts_app, name="conflicts")


def _read_text(text: str | None, file: Path | None) -> str:
    """TEXT, or stdin for '-', or --file; invalid UTF-8 is refused, never guessed."""
    if file is not None:
        if text is not None:
            raise QueryError("give TEXT or --file, not both")
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise QueryError(f"cannot read {file}: {exc.strerror}") from None
    elif text == "-":
        data = sys.stdin.buffer.read()
    elif text is None:
        raise QueryError("give the TEXT to remember, '-' to read it from stdin, or --file FILE")
    else:
        return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QueryError(f"the input is not UTF-8 text (byte {exc.start}); nothing was written") from None


@app.command()
@_errors
def add(
    text: Annotated[str | None, typer.Argument(help="What to remember; '-' reads stdin.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Read the text from this file.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Route by TAG_ROUTING (W, B, O, S, …).")] = None,
    to: Annotated[str | None, typer.Option("--to", help="Write to this node (or bank/….md).")] = None,
    tags: Annotated[str, typer.Option("--tags", help="Labels for the entry, comma-separated (≤ 10).")] = "",
    kind: Annotated[str, typer.Option("--kind", help="fact, preference, entity or decision.")] = "fact",
    source: Annotated[str, typer.Option("--source", help="manual or auto.")] = "manual",
    scope: Annotated[str, typer.Option("--scope", help="global, project:NAME or workspace:NAME.")] = "global",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Decide and report; write nothing.")] = False,
    until: Annotated[
        str,
        typer.Option("--until", help="The last day it holds (YYYY-MM-DD); past it, search no longer serves it."),
    ] = "",
    user: Annotated[
        bool, typer.Option("--user", help="Write to your own root ($MEMTREE_HOME), not the project's.")
    ] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Remember something: sanitize → route (tag, tree, inbox) → dedup or conflict → write safely.

    Dedup reads the note and the parts a split made of it.

    The same statement with another value (a number, date, name, state or a negation: `pool size is
    10` after `pool size is 50`) replaces the old entry: it stays in the note marked superseded.
    Two facts true side by side (the same in production and in staging) are both kept; a close text
    that is neither a restatement nor a replacement is kept as a conflict for a person to settle.

    A merge that would drop a word of either text is kept as a conflict too.
    """
    body = _read_text(text, file)
    labels = tuple(t.strip() for t in tags.split(",") if t.strip())
    decision = (_open_user(root) if user else _open(root)).add(
        body, tag=tag, to=to, tags=labels, kind=kind, source=source, scope=scope, dry_run=dry_run, until=until
    )
    if json:
        _dump(schema.decision(decision))
        return
    print(printable(_describe(type(decision).__name__.lower(), decision)))


def _describe(name: str, d: Any) -> str:
    """One line a person reads after `add`."""
    where = f"{d.path} (node {d.node}, routed by {d.how})"
    prefix = "would be " if d.dry_run else ""
    if name == "created":
        line = f"{prefix}created {d.entry_id} in {where}; nearest existing entry: similarity {d.similarity:.2f}"
        if d.supersedes:
            line += f"; it replaces {d.supersedes}, marked superseded (its text kept, served for the past)"
    elif name == "merged":
        line = f"{prefix}merged into {d.entry_id} in {where}: similarity {d.similarity:.2f} ({d.strategy})"
    elif name == "duplicate":
        line = f"duplicate of {d.existing} in {where}: nothing written"
    else:
        line = (
            f"{prefix}written as {d.entry_id} in {where}, but similar ({d.similarity:.2f}) to an existing entry: "
            f"«{d.other[:80]}»" + (f" — conflict {d.conflict_id} (see `memtree conflicts`)" if d.conflict_id else "")
        )
    if d.redacted:
        line += f"; redacted: {', '.join(d.redacted)}"
    return line


@app.command()
@_errors
def log(
    text: Annotated[str | None, typer.Argument(help="The line to log; '-' reads stdin.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Read the text from this file.")] = None,
    source: Annotated[str, typer.Option("--source", help="manual or auto.")] = "manual",
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Append a timestamped line to today's raw log, memory/YYYY-MM-DD.md (never rewritten); day and time
    in log.timezone (default: your local zone)."""
    logged = _open(root).log(_read_text(text, file), source=source)
    if json:
        _dump(schema.logged(logged))
        return
    extra = f"; redacted: {', '.join(logged.redacted)}" if logged.redacted else ""
    print(printable(f"logged to {logged.path}:{logged.line}{extra}"))


@conflicts_app.callback()
@_errors
def conflicts(
    ctx: typer.Context,
    root: RootOption = None,
    json: JsonOption = False,
    scan: Annotated[bool, typer.Option("--scan", help="Look for entries that contradict each other.")] = False,
    record: Annotated[
        bool, typer.Option("--record", help="With --scan: record what is found as open conflicts.")
    ] = False,
) -> None:
    """List open conflicts: both texts, their files and what differs (--scan finds contradictions)."""
    if ctx.invoked_subcommand is not None:
        return
    from memtree.write.conflicts import cause

    if scan:
        _scan(root, json, record)
        return
    open_ = _open(root).conflicts()
    if json:
        _dump(schema.conflicts(open_))
        return
    if not open_:
        print("no open conflicts")
        return
    for c in open_:
        print(printable(f"{c.id}  {cause(c)}  {c.created}".rstrip()))
        print(printable(f"  new  {c.new.path}  {c.new.id or '(hand-written)'}: {c.new.text}"))
        print(printable(f"  old  {c.old.path}  {c.old.id or '(hand-written)'}: {c.old.text}"))
    print(printable(f"settle one with: memtree conflicts resolve ID --keep new|old|both ({len(open_)} open)"))


def _scan(root: Path | None, json: bool, record: bool) -> None:
    found = _open(root).scan_conflicts(record=record)
    if json:
        _dump(schema.contradictions(found, recorded=record))
        return
    if not found:
        print("no contradictions found")
        return
    for c in found:
        print(printable(f"similarity {c.similarity:.2f}, {c.reason}"))
        print(printable(f"  newer  {c.newer.path}  ({c.newer_created}): {c.newer.text}"))
        print(printable(f"  older  {c.older.path}  ({c.older_created}): {c.older.text}"))
        print(printable(f"  → {c.suggestion}"))
    tail = "recorded in conflicts.json" if record else "record them with --scan --record"
    print(printable(f"{len(found)} possible contradiction(s); {tail}"))


@conflicts_app.command("resolve")
@_errors
def resolve(
    ctx: typer.Context,
    conflict_id: Annotated[str, typer.Argument(help="The conflict's id (c-…).")],
    keep: Annotated[str, typer.Option("--keep", help="new, old or both.")] = "",
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Settle a conflict: keep the new entry, the old one, or both.

    The entry not kept is marked superseded by the kept one; its text stays in the note (search
    serves it only for the past, `--as-of`). A conflict whose entry was forgotten, archived or
    superseded meanwhile has closed itself."""
    root, json = _from_group(ctx, "root", root), _from_group(ctx, "json", json)
    if not keep:
        raise _fail("error: say which to keep: --keep new|old|both")
    settled, outcome = _open(root).resolve_conflict(conflict_id, keep)
    if json:
        _dump(schema.resolved(settled, keep, outcome))
        return
    print(printable(f"resolved {settled.id} (kept {keep}): {outcome}"))


@app.command()
@_errors
def split(
    path: Annotated[str | None, typer.Argument(help="A bank note; default: every bank note over the limit.")] = None,
    max_bytes: Annotated[
        int | None, typer.Option("--max-bytes", help="Size limit in UTF-8 bytes (default split.max_bytes, 10240).")
    ] = None,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Split oversized bank notes at headings (then paragraphs) into child notes and nodes."""
    results = _open(root).split(path, max_bytes)
    if json:
        _dump(schema.splits(results))
        return
    if not results:
        print("no bank note over the limit; nothing to split")
    for r in results:
        if r.children:
            print(printable(f"split {r.path} into {len(r.children)} notes: {', '.join(r.children)}"))
        else:
            print(printable(f"{r.path}: within the limit; nothing to split"))
        for warning in r.warnings:
            say(f"warning: {warning}")


@app.command()
@_errors
def check(
    files: Annotated[list[str] | None, typer.Argument(help="Only these files (pre-commit passes them).")] = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help=(
                "Merge conflict markers, rebuild an unreadable conflicts.json (its bytes kept beside it), settle "
                "interrupted splits, keep the old words of values edited by hand (marked superseded), split "
                "oversized notes, remove leftover temp "
                "files, cut parent cycles, redact secrets the change journal keeps, re-index, drop empty "
                "categories; check again."
            ),
        ),
    ] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """For pre-commit: exit 1 listing oversized bank notes, tree problems, git conflict markers and secrets."""
    mt = _open(root)
    fixed: list[str] = []
    if fix:
        fixed += mt.fix_markers()
        fixed += [f"removed {p}, left by a killed write" for p in mt.sweep()]
        fixed += [f"cut a parent cycle of tree-index.json: node {i} is now a top node" for i in mt.cut_cycles()]
        fixed += mt.repair_splits()
        redacted = mt.redact_journal()
        fixed += [f"redacted the secrets {redacted} journaled change(s) kept for undo"] if redacted else []
        fixed += [f"split {r.path} into {len(r.children)} notes" for r in mt.split() if r.children]
        result = mt.index()
        fixed += [f"added node {n}" for n in result.nodes_added]
        fixed += [f"renamed: {a} is now {b}; its node kept its keywords and weight" for a, b in result.renamed]
        fixed += [f"rewrote the links to a renamed note in {p}" for p in result.relinked]
        fixed += [f"dropped node {i} ({p} is gone)" for i, p in result.nodes_dropped]
        # after index(): a note moved by hand is followed by the hash the index kept before any refresh
        fixed += [
            f"kept {e.path}'s old words of {e.old_id} as superseded by {e.new_id}, a value edited by hand in place"
            for e in mt.hand_edits(from_git=True)
        ]
        fixed += [f"dropped category {i} (no note under it)" for i in mt.prune_categories()]
    problems = mt.check(files or None)
    _warn(mt.settings.warnings)
    if json:
        _dump(schema.check(fixed, problems))
    else:
        for line in fixed:
            print(printable(f"fixed: {line}"))
        for p in problems:
            hint = " (memtree check --fix)" if p.fixable else ""
            print(printable(f"{p.path}: {p.kind}: {p.detail}{hint}"))
        if not problems:
            print("memtree check: ok")
    if problems:
        raise typer.Exit(1)


@app.command()
@_errors
def watch(
    no_split: Annotated[bool, typer.Option("--no-split", help="Only re-index; do not split notes.")] = False,
    root: RootOption = None,
    json: Annotated[
        bool,
        typer.Option("--json", help='One JSON object a line for each action: {"time" (ISO 8601), "level", "message"}.'),
    ] = False,
) -> None:
    """Re-index notes as they are edited (and split ones that grow too big) until Ctrl-C or SIGTERM."""
    from datetime import datetime

    from memtree.serve.watch import Watcher, stopping_on_signals

    def log(line: str) -> None:
        now = datetime.now().astimezone()
        if json:
            sys.stdout.buffer.write(schema.dumps(schema.watch_event(line, now), indent=False))
            sys.stdout.buffer.flush()
        else:
            print(printable(f"{now:%H:%M:%S} {line}"), flush=True)

    watcher = Watcher(_open(root), log, split=not no_split)
    # a second Ctrl-C interrupts a slow stop: still exit 0, run()'s finally has stopped the observer
    with contextlib.suppress(KeyboardInterrupt), stopping_on_signals(watcher):
        watcher.run()
