"""The `eval` command: score search on a file of queries with known answers (registered on memtree.cli.common's app)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memtree import schema
from memtree.cli.common import JsonOption, RootOption, _dump, _errors, _fail, app

if TYPE_CHECKING:
    from memtree.search.evaluate import Metrics, Report

PROGRESS_AFTER_S = 0.5
"""A run that ends sooner shows no counter at all."""
PROGRESS_EVERY_S = 0.1


@app.command("eval")
@_errors
def eval_(
    queries: Annotated[
        Path,
        typer.Argument(
            help='JSON lines: {"query", "expected": [ITEM, ...], "category", "id"}, an ITEM being a node id, a '
            'note path, {"path", "lines": \\[start, end]} or {"node"}; no expected (or "unanswerable": true) '
            "means the right answer is no hits. The shared bench's queries.jsonl is read as it is.",
            show_default=False,
        ),
    ],
    root: RootOption = None,
    k: Annotated[int, typer.Option("-k", "--k", help="Hits asked of each search.")] = 10,
    tier: Annotated[
        str, typer.Option("--tier", help="default (recall+bank), recall, bank, memory or all.")
    ] = "default",
    spans: Annotated[
        Path | None,
        typer.Option(
            "--spans",
            help='spans.jsonl resolving "relevant" doc ids to path and lines (default: the one beside QUERIES).',
            show_default=False,
        ),
    ] = None,
    per_query: Annotated[
        Path | None,
        typer.Option(
            "--per-query",
            help="Write each query's ranks and hits to FILE as JSON lines (score.py --results reads it).",
            show_default=False,
        ),
    ] = None,
    max_span: Annotated[
        int, typer.Option("--max-span", help="Most lines a hit may span to find an answer at chunk level.")
    ] = 30,
    json: JsonOption = False,
) -> None:
    """Score search on QUERIES: hit@1, hit@5, MRR@10, file hit@5, empty answers, per category, ms per query."""
    from memtree.api import clock
    from memtree.search.evaluate import evaluate, outcome_json

    if per_query is not None and not per_query.parent.is_dir():
        raise _fail(f"error: --per-query {per_query}: folder {per_query.parent} does not exist")
    progress, done = _counter(sys.stderr.isatty())
    try:
        report, outcomes = evaluate(queries, root, spans, k, tier, max_span, progress, now=clock())
    finally:
        done()
    if per_query is not None:
        import orjson

        try:
            per_query.write_bytes(b"".join(orjson.dumps(outcome_json(o)) + b"\n" for o in outcomes))
        except OSError as exc:
            raise _fail(f"error: cannot write {per_query}: {exc.strerror or exc}") from None
    if json:
        _dump(schema.evaluation(report))
    else:
        sys.stdout.write(render(report))


def _counter(enabled: bool) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A `done/total queries` counter on stderr, for a terminal and a run that takes a while."""
    if not enabled:
        return None, lambda: None
    start = time.monotonic()
    state = {"shown": 0.0}

    def progress(i: int, n: int) -> None:
        now = time.monotonic()
        if now - start >= PROGRESS_AFTER_S and now - state["shown"] >= PROGRESS_EVERY_S:
            sys.stderr.write(f"\rmemtree eval: {i}/{n} queries")
            sys.stderr.flush()
            state["shown"] = now

    def done() -> None:
        if state["shown"]:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()

    return progress, done


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _row(name: str, m: Metrics, width: int) -> str:
    ratios = (m.hit_at_1, m.hit_at_5, m.mrr_at_10, m.file_hit_at_5, m.answerable_empty)
    return (
        f"{name:<{width}}{m.queries:>6}{m.unanswerable:>8}"
        + "".join(f"{_cell(v):>8}" for v in ratios)
        + f"{_cell(m.unanswerable_empty):>14}\n"
    )


def render(report: Report) -> str:
    """The human table: an overall row and one per category, then latency, rejections and errors."""
    width = max(len(name) for name in ["all", *report.categories]) + 2
    heads = ("hit@1", "hit@5", "MRR@10", "file@5", "empty")
    out = f"{'set':<{width}}{'n':>6}{'unans.':>8}" + "".join(f"{h:>8}" for h in heads) + f"{'unans. empty':>14}\n"
    out += _row("all", report.overall, width)
    out += "".join(_row(name, m, width) for name, m in report.categories.items())
    lat = report.latency
    out += (
        f"search: mean {lat.mean:.2f} ms, p50 {lat.p50:.2f}, p95 {lat.p95:.2f} over {lat.n} queries "
        f"(in-process, warm; k {report.k}, tier {report.tier}); {report.rejected} rejected\n"
    )
    if report.errors:
        out += f"{report.errors} queries could not be searched (counted as empty), first: {report.first_error}\n"
    return out
