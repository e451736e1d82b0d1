"""The ``memtree`` command: parse options → one library call → render (rich, or JSON with --json).

This module holds the reading commands (init, index, search, context, get, status), registers the
others (memtree.cli.write, .lifecycle, .eval, .serve) and runs the app. Exit codes: 0 ok, 1 nothing found
(a rejected search), 2 usage or data error.

Why over 300 lines: the reading commands share their options and output helpers; each command is
parse → one call → render, and the length is their help texts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main

from memtree import schema
from memtree.cli import claude as cli_claude  # noqa: F401  (registers its commands on the app)
from memtree.cli import eval as cli_eval  # noqa: F401
from memtree.cli import git as cli_git  # noqa: F401
from memtree.cli import history as cli_history  # noqa: F401
from memtree.cli import hook as cli_hook  # noqa: F401
from memtree.cli import ingest as cli_ingest  # noqa: F401
from memtree.cli import lifecycle as cli_lifecycle  # noqa: F401
from memtree.cli import mcp as cli_mcp  # noqa: F401
from memtree.cli import serve as cli_serve  # noqa: F401
from memtree.cli import view as cli_view  # noqa: F401
from memtree.cli import write as cli_write  # noqa: F401
from memtree.cli.common import (
    AsOfOption,
    JsonOption,
    RootOption,
    ScopeOption,
    _dump,
    _errors,
    _fail,
    _open,
    _warn,
    app,
)
from memtree.cli.render import printable, say
from memtree.cli.search import answer_json
from memtree.errors import MemtreeError

__all__ = ["app", "main"]


@app.command()
@_errors
def init(
    directory: Annotated[
        Path | None, typer.Argument(help="Folder to scaffold (default: the current folder).", show_default=False)
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option("--root", help="Folder to scaffold, as every other command names it.", show_default=False),
    ] = None,
    user: Annotated[
        bool,
        typer.Option(
            "--user",
            help="Create your own root, searched beside every project's: $MEMTREE_HOME, else the platform's "
            "data folder (~/.local/share/memtree, ~/Library/Application Support/memtree, %APPDATA%\\memtree).",
        ),
    ] = False,
    json: JsonOption = False,
) -> None:
    """Create an empty memory root: bank/, memory/, recall/, tree-index.json, .gitignore, .gitattributes."""
    from memtree.notes.root import init as do_init

    if directory is not None and root is not None and directory != root:
        raise _fail("error: give the folder as DIRECTORY or --root, not both")
    if user:
        from memtree.notes.root import user_home

        if directory is not None or root is not None:
            raise _fail("error: --user creates the user root ($MEMTREE_HOME); name no folder with it")
        home = user_home()
        if home is None:
            raise _fail("error: MEMTREE_HOME is set empty, which turns the user root off; set it to a folder")
        root = home
    root, created, updated = do_init(root or directory or Path("."))
    created += _merge_driver(root)
    if json:
        _dump(schema.init(root, created, updated))
    else:
        done = [f"created {', '.join(created)}"] if created else []
        done += [f"added memtree's lines to {', '.join(updated)}"] if updated else []
        print(printable(f"memory root {root}: " + ("; ".join(done) or "already set up")))


@app.command()
@_errors
def index(
    root: RootOption = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild everything, not only changed notes.")] = False,
    embed: Annotated[
        bool,
        typer.Option(
            # Why the backslash: typer reads help as rich markup, where [embed] is a style tag and vanishes
            "--embed",
            help="Also embed every chunk without a vector (pip install 'memtree\\[embed]').",
        ),
    ] = False,
    json: JsonOption = False,
) -> None:
    """Index notes (changed ones only) and add tree nodes for new bank notes; drop nodes of gone notes."""
    mt = _open(root)
    progress, done = _progress_bar(enabled=not json)
    embed_progress, embed_done = _progress_bar(enabled=not json and embed, label="embedding chunks", least=64)
    try:
        result = mt.index(force=force, progress=progress, embed=embed, embed_progress=embed_progress)
    finally:
        done()
        embed_done()
    _warn(result.report.warnings)
    rep = result.report
    if json:
        _dump(schema.index(result))
        return
    print(
        f"indexed {result.files} notes, {result.chunks} chunks in {result.seconds:.2f} s "
        f"({len(rep.added)} added, {len(rep.changed)} changed, {len(rep.removed)} removed)"
    )
    if result.nodes_added:
        print(
            printable(
                f"tree-index.json: added {len(result.nodes_added)} node(s): {', '.join(result.nodes_added[:10])}"
                + (" …" if len(result.nodes_added) > 10 else "")
            )
        )
    for old, new in result.renamed:
        print(printable(f"tree-index.json: {old} was renamed {new}; its node follows it, keywords and weight kept"))
    for path in result.relinked:
        print(printable(f"rewrote the links to a renamed note in {path}"))
    for node_id, path in result.nodes_dropped:
        print(printable(f"tree-index.json: dropped node '{node_id}' ({path} no longer exists)"))
    if result.embedded:
        e = result.embedded
        print(
            f"vectors: {e['embedded']} chunks embedded, {e['chunks']} in all, with {e['model']} ({e['seconds']:.1f} s)"
        )


def _progress_bar(
    enabled: bool, label: str = "indexing notes", least: int = 200
) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A rich progress bar that appears only for long work (``least`` items) on a terminal."""
    if not enabled or not sys.stderr.isatty():
        return None, lambda: None
    state: dict[str, Any] = {}

    def progress(i: int, n: int) -> None:
        if n < least:
            return
        if "bar" not in state:
            from rich.progress import Progress

            state["bar"] = Progress(transient=True)
            state["bar"].start()
            state["task"] = state["bar"].add_task(label, total=n)
        state["bar"].update(state["task"], completed=i)

    def done() -> None:
        if "bar" in state:
            state["bar"].stop()

    return progress, done


@app.command()
@_errors
def search(
    query: Annotated[str | None, typer.Argument(help="What to look for (Korean, English or mixed).")] = None,
    root: RootOption = None,
    k: Annotated[
        int | None,
        typer.Option("-k", "--k", help="Number of hits (default 5, search.max_results).", show_default=False),
    ] = None,
    tier: Annotated[
        str, typer.Option("--tier", help="default (recall+bank), recall, bank, memory or all.")
    ] = "default",
    json: JsonOption = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show the arithmetic of every hit.")] = False,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget", help="Include chunk text up to this many tokens (CJK-aware estimate).", show_default=False
        ),
    ] = None,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help='Read {"id","query"} JSON lines on stdin, write {"id","hits"} lines (the bench/score.py protocol).',
        ),
    ] = False,
    scope: ScopeOption = None,
    semantic: Annotated[
        bool | None,
        typer.Option(
            "--semantic/--no-semantic",
            help="Force the embedding layer on or off (default: embed.enabled — on once `index --embed` ran).",
            show_default=False,
        ),
    ] = None,
    as_of: AsOfOption = None,
) -> None:
    """Search memory: tree routing (0.4) + Korean-aware BM25 (0.6), weighed by decay; exit 1 when nothing matches.

    Current facts only; a superseded or expired one is served, marked, when nothing current answers.
    --as-of DAY answers with the facts that held on that day.
    """
    from memtree.search.query import as_of_day

    day = as_of_day(as_of)
    mt = _open(root)
    if batch:
        _batch(mt, k, tier, budget, scope, semantic, day)
        return
    if not query:
        raise _fail("error: give a QUERY, or --batch to read queries from stdin")
    result = mt.search(query, k=k, tier=tier, budget=budget, scope=scope, semantic=semantic, as_of=day)
    if json:  # as the console script's fast path answers (memtree.cli.search)
        code = answer_json(result)
        if code:
            raise typer.Exit(code)
        return
    from memtree.cli.render import print_hits

    _warn(result.warnings)
    print_hits(result, explain=explain, show_text=budget is not None)
    if result.rejected:
        say(result.rejected)
        raise typer.Exit(1)


def _batch(
    mt: Any, k: int | None, tier: str, budget: int | None, scope: str | None, semantic: bool | None, as_of: Any = None
) -> None:
    """``--batch``: a query a line in, a `search --json` object (with the line's id) a line out."""
    import orjson

    out = sys.stdout.buffer
    warned = False
    for n, line in enumerate(sys.stdin.buffer, 1):
        if not line.strip():
            continue
        item: Any = None
        try:
            item = orjson.loads(line)
            qid, query = item["id"], item["query"]
            if not isinstance(query, str):
                raise TypeError("query must be a string")
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            # keep the id when the line has one, so the caller can pair the error with its question
            qid = item.get("id") if isinstance(item, dict) else None
            why = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            out.write(schema.dumps(schema.bad_line(qid, n, f"bad input line: {why}"), indent=False))
            continue
        try:
            result = mt.search(query, k=k, tier=tier, budget=budget, scope=scope, semantic=semantic, as_of=as_of)
        except MemtreeError as exc:
            out.write(schema.dumps(schema.bad_line(qid, n, str(exc)), indent=False))
            continue
        if result.warnings and not warned:
            _warn(result.warnings)
            warned = True
        answer = {"id": qid, **schema.search(result, with_text=budget is not None)}
        out.write(schema.dumps(answer, indent=False))
    out.flush()


@app.command()
def context(
    query: Annotated[str, typer.Argument(help="What the agent is about to answer.")],
    root: RootOption = None,
    budget: Annotated[
        int,
        typer.Option(
            "--budget",
            help="Token budget of the block (CJK-aware); too small for a whole chunk, the best entry's start.",
        ),
    ] = 2000,
    k: Annotated[int, typer.Option("-k", "--k", help="Chunks considered.")] = 10,
    json: JsonOption = False,
    scope: ScopeOption = None,
    as_of: AsOfOption = None,
) -> None:
    """Print a prompt-ready Markdown block of the best notes for QUERY; never fails a chat (exit 0).

    Current facts; --as-of DAY: the facts that held on that day."""
    from memtree.cli.context import run_context  # the console script's fast path runs the very same function

    raise typer.Exit(run_context(query, root, budget, k, json, scope, as_of))


@app.command()
@_errors
def get(
    ref: Annotated[
        str,
        typer.Argument(
            help="A node id (identity/values), a path (bank/x.md; bank/ and .md optional) "
            "or a link's target (identity/values#e-…, identity/values#Heading); user:REF: one of your own root's."
        ),
    ],
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Print one note by node id, path or link target (NOTE#ENTRY-ID, NOTE#HEADING), named as [[links]] name it.

    With --json, `target_line` is where the entry or heading named after # starts (null without #).
    """
    note = _open(root).get(ref)
    if json:
        _dump(schema.note(note))
    else:
        sys.stdout.write(printable(note.text if note.text.endswith("\n") else note.text + "\n"))


@app.command()
@_errors
def links(
    ref: Annotated[
        str,
        typer.Argument(help="A node id (identity/values), a path (bank/x.md; .md optional) or a link target (x#e-1)."),
    ],
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """List a note's links: those it holds ([[note]], [[note#entry]], relation lines) and those leading to it."""
    found = _open(root).links(ref)
    if json:
        _dump(schema.note_links(found))
        return
    from memtree.cli.render import print_links

    print_links(found)


@app.command()
@_errors
def status(root: RootOption = None, json: JsonOption = False) -> None:
    """Tiers and banks, oversized notes, index, watcher, conflicts, archive candidates, recall/, consolidation."""
    mt = _open(root)
    st = mt.status()
    _warn(st.warnings)
    if json:
        _dump(schema.status(st, mt.settings.split.max_bytes))
        return
    from memtree.cli.render import print_status

    print_status(st, mt.settings.split.max_bytes)


def _merge_driver(root: Path) -> list[str]:
    """In a git clone, set memtree's merge driver (`memtree git setup`); what was set."""
    from memtree.notes import git

    if not git.in_repository(root):
        return []
    try:
        return [f"git config {key}" for key in git.setup(root, sys.executable)]
    except MemtreeError as exc:
        _warn([f"{exc}; run `memtree git setup` later"])
        return []


def _usage_errors() -> tuple[type[Exception], ...]:
    """Click's usage error class(es): typer 0.2x vendors click as ``typer._click``, older ones use click."""
    found: list[type[Exception]] = []
    try:
        from typer._click.exceptions import UsageError

        found.append(UsageError)
    except ImportError:
        pass
    try:
        import click

        found.append(click.UsageError)
    except ImportError:
        pass
    return tuple(found)


def command_path(ctx: Any, argv: list[str]) -> list[str]:
    """The command (and subcommand) a usage error is about: from click's context when it has one, else
    the words of ``argv`` that name commands (an option missing its value is raised without a context)."""
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name)
        ctx = ctx.parent
    if names:
        return names
    group: Any = typer.main.get_command(app)
    for arg in argv:
        if arg.startswith("-"):
            continue
        command = getattr(group, "commands", {}).get(arg)
        if command is None:
            break
        names.append(arg)
        group = command
    return names


def main() -> None:
    """Console entry point: every usage error is one line on stderr starting with ``memtree:``, exit 2."""
    try:
        code = app(standalone_mode=False)
    except _usage_errors() as exc:
        # Why: typer's boxed five-line usage error is noise in an agent's log; keep click's hint
        # ("Did you mean --json?") and say where the help is
        where = " ".join(["memtree", *command_path(getattr(exc, "ctx", None), sys.argv[1:]), "--help"])
        error: Exception = exc
        message = " ".join(getattr(error, "format_message", lambda: str(error))().split())
        sys.stderr.write(f"memtree: {message} (see `{where}`)\n")
        sys.exit(2)
    except typer.Abort:
        sys.stderr.write("memtree: aborted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
