"""`memtree claude install`: the Claude Code plugin written where Claude Code loads it, or printed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memtree.cli.common import _errors, app
from memtree.cli.render import printable

claude_app = typer.Typer(
    help="Claude Code: the memtree plugin (hooks, MCP server, /remember /recall /forget).", no_args_is_help=True
)
app.add_typer(claude_app, name="claude")


@claude_app.command("install")
@_errors
def install(
    scope: Annotated[
        str,
        typer.Option(
            "--scope", help="user: ~/.claude/skills/memtree (every project); project: ./.claude/skills/memtree."
        ),
    ] = "user",
    show: Annotated[bool, typer.Option("--print", help="Print the plugin's files instead of writing them.")] = False,
) -> None:
    """Write the memtree plugin for Claude Code: hooks (a briefing at session start, confident recall on each
    prompt, the session captured before compaction, after replies and at the end), the MCP server (`memtree mcp`)
    and the slash commands /remember, /recall and /forget. Claude Code loads it at its next session."""
    from importlib.metadata import version

    from memtree.hooks import plugin

    dest = plugin.folder(scope, Path.home(), Path.cwd())
    files = plugin.files(plugin.memtree_command(), version("memtree"))
    if show:
        for rel, text in files.items():
            print(printable(f"# {dest / rel}\n{text.rstrip()}\n"))
        return
    for path in plugin.install(dest, files):
        print(printable(f"wrote {path}"))
    print(
        printable(
            f"Claude Code loads it at its next session as memtree@skills-dir (/reload-plugins loads it now); "
            f"check it with `claude plugin validate {dest}`"
        )
    )
