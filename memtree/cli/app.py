"""The ``memtree`` command: parse options → one library call → render (rich, or JSON with --json).

Exit codes: 0 ok, 1 nothing found (a rejected search), 2 usage or data error.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import typer

from memtree.cli.render import printable
from memtree.errors import MemtreeError
from memtree.notes.entries import META_RE, parse_meta, strip_meta

app = typer.Typer(
    name="memtree",
    help="Local, file-based long-term memory for AI agents: Markdown notes, a routing tree and "
    "Korean-aware hybrid search. Exit codes: 0 ok, 1 nothing found, 2 usage or data error.",
    no_args_is_help=True,
    # --install-completion / --show-completion: typer imports its completion code anyway, and
    # adding the two options costs a cold start ~0.3 ms
    add_completion=True,
    pretty_exceptions_enable=False,
)

RootOption = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="Memory root (default: $MEMTREE_ROOT, else the nearest parent with tree-index.json).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
ScopeOption = Annotated[
    str | None,
    typer.Option(
        "--scope",
        help="Current scope: global, project:NAME, workspace:NAME or a chain project:NAME/workspace:NAME; "
        "entries of scopes above are visible, below are not, its own are boosted (default: search.scope).",
        show_default=False,
    ),
]
F = TypeVar("F", bound=Callable[..., Any])


def _version(value: bool) -> None:
    if value:
        from memtree import __version__

        print(f"memtree {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Options that come before the command."""


def _fail(message: str, code: int = 2) -> typer.Exit:
    sys.stderr.write(printable(f"memtree: {message}\n"))
    return typer.Exit(code)


def _errors(fn: F) -> F:
    """Turn MemtreeError (and interrupts) into one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemtreeError as exc:
            raise _fail(f"error: {exc}") from None
        except KeyboardInterrupt:
            raise _fail("interrupted", 130) from None

    return wrapper  # type: ignore[return-value]


def _dump(obj: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")


def _warn(warnings: Any) -> None:
    for w in warnings:
        sys.stderr.write(printable(f"memtree: warning: {w}\n"))


def _from_group(ctx: typer.Context, name: str, value: Any) -> Any:
    """An option given to the group (``banks --json disable x``) counts for its subcommand too."""
    if value in (None, False) and ctx.parent is not None:
        return ctx.parent.params.get(name, value)
    return value


def _open(root: Path | None) -> Any:
    from memtree.api import MemTree

    return MemTree(root)


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
    json: JsonOption = False,
) -> None:
    """Create an empty memory root: bank/, memory/, recall/, tree-index.json, .gitignore entry."""
    from memtree.notes.root import init as do_init

    if directory is not None and root is not None and directory != root:
        raise _fail("error: give the folder as DIRECTORY or --root, not both")
    root, created = do_init(root or directory or Path("."))
    if json:
        _dump({"root": str(root), "created": created})
    else:
        print(printable(f"memory root {root}: " + (f"created {', '.join(created)}" if created else "already set up")))


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
        _dump(
            {
                "files": result.files,
                "chunks": result.chunks,
                "added": rep.added,
                "changed": rep.changed,
                "removed": rep.removed,
                "rebuilt": rep.rebuilt,
                "nodes_added": list(result.nodes_added),
                "nodes_dropped": [{"id": i, "path": p} for i, p in result.nodes_dropped],
                "seconds": round(result.seconds, 3),
                "warnings": rep.warnings,
                "embedded": result.embedded,
            }
        )
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
) -> None:
    """Search memory: tree routing (0.4) + Korean-aware BM25 (0.6), weighed by decay; exit 1 when nothing matches."""
    mt = _open(root)
    if batch:
        _batch(mt, k, tier, budget, scope, semantic)
        return
    if not query:
        raise _fail("error: give a QUERY, or --batch to read queries from stdin")
    result = mt.search(query, k=k, tier=tier, budget=budget, scope=scope, semantic=semantic)
    _warn(result.warnings)
    if json:
        _dump(_result_json(result, with_text=True))
    else:
        from memtree.cli.render import print_hits

        print_hits(result, explain=explain, show_text=budget is not None)
    if result.rejected:
        if not json:
            sys.stderr.write(printable(f"memtree: {result.rejected}\n"))
        raise typer.Exit(1)


def _entry_ids(chunk_text: str) -> list[str]:
    """Ids of the entries memtree wrote in a hit's text; a recall/ excerpt names its source entry's."""
    ids = []
    for m in META_RE.finditer(chunk_text):
        meta = parse_meta(m.group("body"))
        found = meta.id or meta.extra.get("key", "")
        if found and "#" not in found:  # `path#hash` keys a hand-written entry: it has no id
            ids.append(found)
    return list(dict.fromkeys(ids))


def _result_json(result: Any, with_text: bool) -> dict[str, Any]:
    """A search result as JSON: hit text without metadata comments, the entry ids in ``ids``."""
    hits = []
    for h in result.hits:
        item = {
            "node": h.node,
            "path": h.path,
            "lines": list(h.lines),
            "score": h.score,
            "tier": h.tier,
            "signals": h.signals,
            "matched": list(h.matched),
            "ids": _entry_ids(h.text),
        }
        if h.via:
            item["via"] = h.via
        if with_text:
            item["text"] = strip_meta(h.text)
            item["truncated"] = h.truncated
        hits.append(item)
    return {
        "query": result.query,
        "terms": list(result.terms),
        "hits": hits,
        "rejected": result.rejected,
        "warnings": list(result.warnings),
        "term_stats": [{"term": s.term, "df": s.df, "idf": round(s.idf, 4)} for s in result.term_stats],
    }


def _batch(mt: Any, k: int | None, tier: str, budget: int | None, scope: str | None, semantic: bool | None) -> None:
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
            out.write(orjson.dumps({"id": qid, "line": n, "error": f"bad input line: {why}", "hits": []}) + b"\n")
            continue
        try:
            result = mt.search(query, k=k, tier=tier, budget=budget, scope=scope, semantic=semantic)
        except MemtreeError as exc:
            out.write(orjson.dumps({"id": qid, "hits": [], "error": str(exc)}) + b"\n")
            continue
        if result.warnings and not warned:
            _warn(result.warnings)
            warned = True
        payload = _result_json(result, with_text=budget is not None)
        payload["id"] = qid
        out.write(orjson.dumps(payload) + b"\n")
    out.flush()


@app.command()
def context(
    query: Annotated[str, typer.Argument(help="What the agent is about to answer.")],
    root: RootOption = None,
    budget: Annotated[int, typer.Option("--budget", help="Token budget of the block (CJK-aware).")] = 2000,
    k: Annotated[int, typer.Option("-k", "--k", help="Chunks considered.")] = 10,
    json: JsonOption = False,
    scope: ScopeOption = None,
) -> None:
    """Print a prompt-ready Markdown block of the best notes for QUERY; never fails a chat (exit 0)."""
    from memtree.cli.entry import run_context  # the console script's fast path runs the very same function

    raise typer.Exit(run_context(query, root, budget, k, json, scope))


@app.command()
@_errors
def get(
    ref: Annotated[str, typer.Argument(help="A node id (identity/values) or a path (bank/x.md).")],
    root: RootOption = None,
    json: JsonOption = False,
) -> None:
    """Print one note by node id or path."""
    note = _open(root).get(ref)
    if json:
        _dump({"path": note.path, "node": note.node, "keywords": list(note.keywords), "text": note.text})
    else:
        sys.stdout.write(printable(note.text if note.text.endswith("\n") else note.text + "\n"))


@app.command()
@_errors
def status(root: RootOption = None, json: JsonOption = False) -> None:
    """Tiers and banks, oversized notes, index, watcher, conflicts, archive candidates, recall/, consolidation."""
    mt = _open(root)
    st = mt.status()
    _warn(st.warnings)
    if json:
        _dump(
            {
                "root": st.root,
                "tiers": {t: vars(s) for t, s in st.tiers.items()},
                "nodes": st.nodes,
                "oversized": [{"path": p, "bytes": b} for p, b in st.oversized],
                "index": {"version": st.index_version, "fresh": not st.stale, "stale": list(st.stale)},
                "dangling_nodes": [{"id": i, "path": p} for i, p in st.dangling],
                "watcher": st.watcher,
                "open_conflicts": st.open_conflicts,
                "max_bytes": mt.settings.split.max_bytes,
                "banks": [vars(b) for b in st.banks],
                "archive_candidates": st.archive_candidates,
                "consolidation": st.consolidation,
                "recall": st.recall,
                "semantic": st.semantic,
            }
        )
        return
    from memtree.cli.render import print_status

    print_status(st, mt.settings.split.max_bytes)


from memtree.cli import eval as cli_eval  # noqa: E402, F401  (register their commands on the app)


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


def main() -> None:
    """Console entry point: every usage error is one line on stderr starting with ``memtree:``, exit 2."""
    try:
        code = app(standalone_mode=False)
    except _usage_errors() as exc:
        # Why: typer's boxed five-line usage error is noise in an agent's log; keep click's hint
        # ("Did you mean --json?") and say where the help is
        ctx = getattr(exc, "ctx", None)
        where = f"memtree {ctx.info_name} --help" if ctx is not None and ctx.parent else "memtree --help"
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
