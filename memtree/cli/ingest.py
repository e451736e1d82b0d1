"""`memtree ingest`: conversation turns kept in memory/ and remembered on a cadence (memtree.lifecycle.ingest)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from memtree import schema
from memtree.cli.common import JsonOption, RootOption, _dump, _errors, _fail, _open, app, print_proposals
from memtree.cli.render import printable, say


@app.command()
@_errors
def ingest(
    transcript: Annotated[
        str,
        typer.Argument(
            metavar="TRANSCRIPT",
            help='JSON lines of turns {"conversation","role","text","ts"}; \'-\' reads stdin '
            "(an empty one only runs the idle flush).",
        ),
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read, validate and decide; write nothing.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Keep conversation turns in memory/ and, on a cadence (every extract.every_turns assistant turns, after a gap,
    when a conversation is quiet), add what they teach to bank/auto/; a watermark per conversation means no turn is
    logged or examined twice, and a bad line is one error with nothing written."""
    if transcript == "-":
        data, source = sys.stdin.buffer.read(), "stdin"
    else:
        try:
            data, source = Path(transcript).read_bytes(), transcript
        except OSError as exc:
            raise _fail(f"error: cannot read {transcript}: {exc.strerror}") from None
    report = _open(root).ingest(data, source=source, dry_run=dry_run)
    for notice in report.notices:
        say(f"warning: {notice}")
    if json:
        _dump(schema.ingested(report))
        return
    print_proposals(report.proposals)
    for c in report.cycles:
        print(
            printable(
                f"cycle {c.conversation} turns {c.first}-{c.last} ({c.trigger}, {c.windows} window(s)): "
                f"{c.written} written"
            )
        )
    verb = "would log" if dry_run else "logged"
    logs = f" to {', '.join(report.logs)}" if report.logs else ""
    print(
        printable(
            f"{verb} {len(report.logged)} of {report.turns} turns{logs} ({report.known} already there); "
            f"{len(report.cycles)} cycle(s), {report.written} entr{'y' if report.written == 1 else 'ies'} written; "
            f"{report.pending} turn(s) pending"
        )
    )
