"""The lifecycle commands: `distill`, `export`, `import`, `banks` (registered on memtree.cli's app)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from .cli import JsonOption, RootOption, _dump, _errors, _fail, _open, app


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
        sys.stderr.write(f"memtree: {notice}\n")
    if json:
        _dump(
            {
                "written": report.written,
                "notices": list(report.notices),
                "proposals": [
                    {
                        "provenance": p.provenance,
                        "outcome": p.outcome,
                        "rule": p.candidate.rule,
                        "score": p.candidate.score,
                        "section": p.candidate.section,
                        "type": p.candidate.type,
                        "text": p.candidate.text,
                        "path": getattr(p.decision, "path", None),
                    }
                    for p in report.proposals
                ],
            }
        )
        return
    for p in report.proposals:
        where = f" → {p.decision.path}" if p.decision is not None else ""
        print(
            f"{p.outcome:<11} {p.candidate.score:>3}  {p.candidate.rule:<14} {p.provenance}{where}: {p.candidate.text}"
        )
    print(
        f"{report.written} entr{'y' if report.written == 1 else 'ies'} written from {len(report.proposals)} candidates"
    )


@app.command()
@_errors
def export(
    bank: Annotated[str | None, typer.Option("--bank", help="Only this bank (a top-level folder of bank/).")] = None,
    root: RootOption = None,
) -> None:
    """Print every bank entry with its metadata, and the tree's nodes, as one JSON document."""
    from .exchange import dumps

    sys.stdout.buffer.write(dumps(_open(root).export(bank)))


@app.command("import")
@_errors
def import_(
    file: Annotated[str, typer.Argument(help="An export document; '-' reads stdin.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and count; write nothing.")] = False,
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Import an export document (≤ 10 MB): validated whole, sanitized, deduplicated, metadata kept."""
    if file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise _fail(f"error: cannot read {file}: {exc.strerror}") from None
    result = _open(root).import_(data, dry_run=dry_run)
    if json:
        _dump(asdict(result))
        return
    verb = "would write" if dry_run else "wrote"
    print(
        f"{verb} {result.written} entries ({result.skipped} already there) into {len(result.notes)} notes; "
        f"{len(result.nodes_added)} nodes added" + (f"; {result.redacted} redactions" if result.redacted else "")
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
    from .banks import list_banks

    found = list_banks(_open(root).root)
    if json:
        _dump([asdict(b) for b in found])
        return
    if not found:
        print("no banks: bank/ has no folders")
    for b in found:
        state = "enabled" if b.enabled else "disabled"
        print(f"{b.name:<24} {b.notes:>5} notes {b.entries:>6} entries {b.bytes:>10,} bytes  {state}")


def _switch(name: str, root: Path | None, enabled: bool) -> None:
    from .banks import set_enabled

    disabled = set_enabled(_open(root).root, name, enabled)
    print(f"bank {name} {'enabled' if enabled else 'disabled'}; disabled banks: {', '.join(disabled) or 'none'}")


@banks_app.command("disable")
@_errors
def disable(name: Annotated[str, typer.Argument(help="The bank to leave out.")], root: RootOption = None) -> None:
    """Leave a bank out of search and context (written to memtree.yaml)."""
    _switch(name, root, False)


@banks_app.command("enable")
@_errors
def enable(name: Annotated[str, typer.Argument(help="The bank to search again.")], root: RootOption = None) -> None:
    """Search a disabled bank again (written to memtree.yaml)."""
    _switch(name, root, True)
