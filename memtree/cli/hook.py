"""`memtree hook EVENT`: one event of an agent's loop (memtree.hooks); the typer skin of memtree.hooks.run.

The console script runs hooks before typer is imported (memtree.cli.entry); this command is what a
`memtree serve` daemon runs when a hook forwards its event, and what answers ``--help``.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memtree.cli.common import JsonOption, RootOption, app


@app.command("hook")
def hook(
    event: Annotated[
        str,
        typer.Argument(metavar="EVENT", help="SessionStart, UserPromptSubmit, PreCompact, Stop or SessionEnd."),
    ],
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Answer one hook event of an agent (Claude Code's protocol): its JSON on stdin, what to add to the
    model's context as JSON on stdout — a briefing at SessionStart, confident recall on UserPromptSubmit,
    nothing otherwise; PreCompact, Stop (throttled) and SessionEnd capture the session's transcript_path.
    Never fails a session: any error is one line on stderr, exit 0. Settings: hooks.briefing_tokens,
    hooks.recall_tokens, hooks.recall_tier, hooks.stop_every_min. --json: one object, {"event", "output"}."""
    from memtree.hooks import run

    try:
        from memtree.hooks.protocol import event_name, parse

        name = event_name(event)
        parsed = parse(name, run._stdin())
        out = run.run_here(parsed, root)
        sys.stdout.write(run.as_document(event, out) if json else out)
        sys.stdout.flush()
    except Exception as exc:  # a hook never breaks the session: one line, exit 0
        run._warn(f"{event}: {exc}")
