"""The Claude Code plugin shipped with memtree: its files, and where `memtree claude install` puts them.

The plugin (Claude Code's plugin layout): ``.claude-plugin/plugin.json`` (the manifest),
``hooks/hooks.json`` (the five events, each ``memtree hook EVENT``), ``.mcp.json`` (``memtree mcp``)
and ``commands/remember.md``, ``recall.md``, ``forget.md`` (the slash commands, which use the MCP
server's tools). The files are package data (``memtree/hooks/plugin/``) with two blanks filled at
install: ``{memtree}``, the command that runs this memtree (an absolute path when one is known, so
Claude Code finds the same installation whatever its PATH), and ``{version}``.

Where: a folder under a ``.claude/skills/`` folder is a plugin Claude Code loads at its next session
(``memtree@skills-dir``) — ``~/.claude/skills/memtree`` for ``--scope user`` (every project),
``<project>/.claude/skills/memtree`` for ``--scope project``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from importlib import resources
from pathlib import Path

from memtree.errors import QueryError

NAME = "memtree"
FILES = {
    "plugin.json": ".claude-plugin/plugin.json",
    "hooks.json": "hooks/hooks.json",
    "mcp.json": ".mcp.json",
    "remember.md": "commands/remember.md",
    "recall.md": "commands/recall.md",
    "forget.md": "commands/forget.md",
}
"""Package data file → its path in the plugin."""
SCOPES = ("user", "project")


def memtree_command() -> str:
    """The shell words that run this memtree: its console script beside the interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / ("memtree.exe" if os.name == "nt" else "memtree")
    if beside.is_file():
        return shlex.quote(str(beside))
    found = shutil.which("memtree")
    return shlex.quote(found) if found else "memtree"


def files(command: str, version: str) -> dict[str, str]:
    """The plugin's files (path in the plugin → text) with ``command`` and ``version`` filled in."""
    package = resources.files("memtree.hooks") / "plugin"
    out: dict[str, str] = {}
    for source, target in FILES.items():
        text = (package / source).read_text(encoding="utf-8")
        if source.endswith(".json"):
            # filled in as JSON strings: a path with a quote or a backslash stays valid JSON
            text = text.replace("{memtree}", json.dumps(command)[1:-1]).replace("{version}", json.dumps(version)[1:-1])
            json.loads(text)  # a broken template is a bug here, never a broken plugin there
        out[target] = text
    return out


def folder(scope: str, home: Path, project: Path) -> Path:
    """Where the plugin goes for ``scope``: a folder Claude Code loads plugins from."""
    if scope not in SCOPES:
        raise QueryError(f"--scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    base = home if scope == "user" else project
    return base / ".claude" / "skills" / NAME


def install(dest: Path, plugin: dict[str, str]) -> list[str]:
    """Write the plugin's files under ``dest`` (other files there are left alone); the paths written."""
    from memtree.notes.store import atomic_write

    written: list[str] = []
    for rel, text in plugin.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
        written.append(str(path))
    return written
