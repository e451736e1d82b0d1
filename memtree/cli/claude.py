"""`memtree claude install`: the Claude Code plugin written where Claude Code loads it, or printed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memtree.cli.common import JsonOption, _dump, _errors, app
from memtree.cli.render import printable

claude_app = typer.Typer(help="Claude Code: the memtree plugin (hooks, MCP server, /remember /recall /forget).")
app.add_typer(claude_app, name="claude")


@claude_app.callback(invoke_without_command=True)
@_errors
def claude_status(ctx: typer.Context, json: JsonOption = False) -> None:
    """Where the memtree plugin is installed for Claude Code (user and project scope), or that it is not."""
    if ctx.invoked_subcommand is not None:
        return
    from memtree.hooks import plugin

    found = {}
    for scope in plugin.SCOPES:
        dest = plugin.folder(scope, Path.home(), Path.cwd())
        found[scope] = str(dest) if dest.is_dir() else None
    if json:
        _dump(found)
        return
    for scope, where in found.items():
        said = where if where else "not installed (memtree claude install --scope " + scope + ")"
        print(printable(f"{scope}: {said}"))


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
    json: JsonOption = False,
) -> None:
    """Write the memtree plugin for Claude Code: hooks (a briefing at session start, confident recall on each
    prompt, the session captured before compaction, after replies and at the end), the MCP server (`memtree mcp`)
    and the slash commands /remember, /recall and /forget. Claude Code loads it at its next session."""
    from importlib.metadata import version

    from memtree.hooks import plugin

    dest = plugin.folder(scope, Path.home(), Path.cwd())
    files = plugin.files(plugin.memtree_command(), version("memtree"))
    listed = {str(dest / rel): text for rel, text in files.items()}
    if show and json:
        _dump({"scope": scope, "path": str(dest), "written": False, "files": listed})
        return
    if show:
        for rel, text in files.items():
            print(printable(f"# {dest / rel}\n{text.rstrip()}\n"))
        return
    written = plugin.install(dest, files)
    if json:
        _dump({"scope": scope, "path": str(dest), "written": True, "files": listed})
        return
    for path in written:
        print(printable(f"wrote {path}"))
    print(
        printable(
            f"Claude Code loads it at its next session as memtree@skills-dir (/reload-plugins loads it now); "
            f"check it with `claude plugin validate {dest}`"
        )
    )
