"""`memtree mcp`: serve one memory root to an agent over MCP's stdio transport (on memtree.cli.common's app)."""

from __future__ import annotations

from typing import Annotated

import typer

from memtree.cli.common import RootOption, _errors, _fail, _open, app


@app.command("mcp")
@_errors
def serve_mcp(
    root: RootOption = None,
    json: Annotated[
        bool,
        typer.Option("--json", help='Log one JSON object a line on stderr: {"time" (ISO 8601), "level", "message"}.'),
    ] = False,
) -> None:
    """Serve this memory root over MCP on stdin/stdout for an agent (Claude Code, Claude Desktop, Cursor).

    Tools: search, context, get, add, log, status, conflicts, resolve_conflict, banks, update, forget, history,
    undo, ingest.

    Nothing but the protocol is written to stdout. Needs the MCP SDK: pip install 'memtree\\[mcp]'.
    """
    try:
        from memtree.serve.mcp import serve_stdio
    except ModuleNotFoundError as exc:  # the SDK, or a package it needs, is not installed
        raise _fail(f"memtree mcp needs the MCP SDK ({exc}): pip install 'memtree[mcp]'") from None
    from memtree.cli.serve import _logger

    log = _logger(json)  # stderr: stdout carries the protocol alone
    mt = _open(root)
    log(f"serving {mt.root} over MCP on stdin/stdout")
    serve_stdio(mt)
    log("stopped: stdin closed")
