"""``memtree eval``: how well search finds the known answers of a file of queries, and how fast.

The query file format is memtree.search.queryfile's. A hit finds an answer (chunk level) when it is in the
answer's note, its lines overlap the answer's and it spans at most ``max_span`` lines (30, score.py's rule).
Over answerable queries: hit@1, hit@5, MRR@10, file-level hit@5 and the share left empty; over
unanswerable ones the share left empty (higher is better); the same per category. Each search is timed
in-process, after one warm-up search. Recall reinforcement is off: evaluating never changes what it
measures.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.errors import QueryError
from memtree.search.queryfile import (  # noqa: F401  (re-exported: eval's callers read queries through here)
    HIT_DEPTH,
    MAX_SPAN,
    MRR_DEPTH,
    SPANS_FILE,
    Found,
    Query,
    QueryFileError,
    Target,
    build_queries,
    decode_lines,
    load_queries,
    parse_spans,
    uses_spans,
)

if TYPE_CHECKING:
    from datetime import datetime

    from memtree.search.result import SearchResult


@dataclass(frozen=True)
class Outcome:
    """One query's search: its hits and the 1-based rank of the first right one."""

    query: Query
    found: tuple[Found, ...]
    rank: int | None
    file_rank: int | None
    ms: float = 0.0
    rejected: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Metrics:
    """Figures over a set of queries; ratios over answerable (or unanswerable) ones, None when there are none."""

    queries: int
    answerable: int
    hit_at_1: float | None
    hit_at_5: float | None
    mrr_at_10: float | None
    file_hit_at_5: float | None
    answerable_empty: float | None
    unanswerable_empty: float | None

    @property
    def unanswerable(self) -> int:
        """How many of the queries have no right answer in the memory."""
        return self.queries - self.answerable

    def to_json(self) -> dict[str, Any]:
        """The figures under score.py's names, rounded to 4 places as score.py does."""
        ratios = {
            "hit@1": self.hit_at_1,
            "hit@5": self.hit_at_5,
            "mrr@10": self.mrr_at_10,
            "file_hit@5": self.file_hit_at_5,
            "answerable_empty": self.answerable_empty,
            "unanswerable_empty": self.unanswerable_empty,
        }
        counts = {"n": self.queries, "answerable": self.answerable, "unanswerable": self.unanswerable}
        return counts | {k: None if v is None else round(v, 4) for k, v in ratios.items()}


@dataclass(frozen=True)
class Latency:
    """Milliseconds per search: mean, median and 95th percentile (linear interpolation)."""

    n: int
    mean: float
    p50: float
    p95: float


@dataclass(frozen=True)
class Report:
    """The result of an evaluation: overall and per-category figures, latency and the settings used."""

    overall: Metrics
    categories: dict[str, Metrics]
    latency: Latency
    k: int
    tier: str
    max_span: int = MAX_SPAN
    rejected: int = 0
    errors: int = 0
    first_error: str | None = field(default=None, compare=False)


# --- reading the query file -----------------------------------------------------------------------


def ranks(found: Sequence[Found], targets: Sequence[Target], max_span: int = MAX_SPAN) -> tuple[int | None, int | None]:
    """1-based rank of the first hit that finds any target: at chunk level, and at file level."""
    chunk = next((i for i, h in enumerate(found, 1) if any(t.holds(h, max_span) for t in targets)), None)
    file = next((i for i, h in enumerate(found, 1) if any(t.in_file(h) for t in targets)), None)
    return chunk, file


def judge(
    query: Query,
    found: Sequence[Found],
    max_span: int = MAX_SPAN,
    ms: float = 0.0,
    rejected: str | None = None,
    error: str | None = None,
) -> Outcome:
    """The outcome of one query given its hits, best first."""
    rank, file_rank = ranks(found, query.targets, max_span)
    return Outcome(query, tuple(found), rank, file_rank, ms, rejected, error)


def _share(outcomes: Sequence[Outcome], test: Callable[[Outcome], bool]) -> float | None:
    return sum(1 for o in outcomes if test(o)) / len(outcomes) if outcomes else None


def metrics(outcomes: Sequence[Outcome]) -> Metrics:
    """hit@1, hit@5, MRR@10, file hit@5 and empty shares of a set of outcomes."""
    ans = [o for o in outcomes if o.query.answerable]
    una = [o for o in outcomes if not o.query.answerable]
    # summed in query order, as score.py does, so that the floats agree to the last bit
    mrr = sum(1 / o.rank for o in ans if o.rank is not None and o.rank <= MRR_DEPTH) / len(ans) if ans else None
    return Metrics(
        len(outcomes),
        len(ans),
        _share(ans, lambda o: o.rank == 1),
        _share(ans, lambda o: o.rank is not None and o.rank <= HIT_DEPTH),
        mrr,
        _share(ans, lambda o: o.file_rank is not None and o.file_rank <= HIT_DEPTH),
        _share(ans, lambda o: not o.found),
        _share(una, lambda o: not o.found),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (NaN for no values)."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(outcomes: Sequence[Outcome], k: int, tier: str, max_span: int = MAX_SPAN) -> Report:
    """The report of a run: overall, per category (sorted by name) and latency of the searches that ran."""
    names = sorted({o.query.category for o in outcomes if o.query.category is not None})
    ms = [o.ms for o in outcomes if o.error is None]
    errors = [o.error for o in outcomes if o.error is not None]
    return Report(
        metrics(outcomes),
        {c: metrics([o for o in outcomes if o.query.category == c]) for c in names},
        Latency(len(ms), statistics.fmean(ms) if ms else float("nan"), percentile(ms, 50), percentile(ms, 95)),
        k,
        tier,
        max_span,
        sum(1 for o in outcomes if o.rejected),
        len(errors),
        errors[0] if errors else None,
    )


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """One line of ``--per-query``; its "id" and "hits" are also what score.py --results reads."""
    q = outcome.query
    return {
        "id": q.id,
        "query": q.text,
        "category": q.category,
        "answerable": q.answerable,
        "rank": outcome.rank,
        "file_rank": outcome.file_rank,
        "ms": round(outcome.ms, 3),
        "rejected": outcome.rejected,
        "error": outcome.error,
        "hits": [{"path": h.path, "lines": list(h.lines), "node": h.node} for h in outcome.found],
    }


# --- running the searches -------------------------------------------------------------------------


def run(
    search: Callable[[str, int, str], SearchResult],
    queries: Sequence[Query],
    k: int = 10,
    tier: str = "default",
    max_span: int = MAX_SPAN,
    progress: Callable[[int, int], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[Outcome]:
    """Search every query once, timed, after one warm-up search; a query memtree cannot search counts as empty.

    ``search(text, k, tier)`` runs one search without the query cache.
    """
    from memtree.search.query import TIER_CHOICES

    if tier not in TIER_CHOICES:
        raise QueryError(f"unknown tier {tier!r}: choose one of {', '.join(TIER_CHOICES)}")
    if k < 1 or max_span < 1:
        raise QueryError("k and the largest span must be at least 1")
    for q in queries:  # warm-up: loads the index and fills the caches a long-lived process has warm
        try:
            search(q.text, k, tier)
            break
        except QueryError:
            continue
    outcomes = []
    for i, q in enumerate(queries, 1):
        t0 = clock()
        try:
            result = search(q.text, k, tier)
        except QueryError as exc:  # no searchable term: the batch protocol answers it with no hits too
            outcomes.append(judge(q, (), max_span, 1000 * (clock() - t0), error=str(exc)))
        else:
            ms = 1000 * (clock() - t0)
            found = tuple(Found(h.path, h.lines, h.node) for h in result.hits)
            outcomes.append(judge(q, found, max_span, ms, result.rejected))
        if progress is not None:
            progress(i, len(queries))
    return outcomes


def evaluate(
    queries: Path,
    root: str | os.PathLike[str] | None = None,
    spans: Path | None = None,
    k: int = 10,
    tier: str = "default",
    max_span: int = MAX_SPAN,
    progress: Callable[[int, int], None] | None = None,
    *,
    now: datetime,
) -> tuple[Report, list[Outcome]]:
    """Open the memory root once (recall reinforcement off), read the queries, search and score them.

    ``now`` is the moment every search is judged at (decay, recency, relative dates).
    """
    from memtree.config import load_settings
    from memtree.notes.root import find_root
    from memtree.search import query
    from memtree.state import RootState

    where = find_root(root)
    settings = load_settings(where)
    state = RootState(where, settings=replace(settings, search=replace(settings.search, reinforce=False)))
    found = load_queries(queries, state.tree(), state.root, spans)

    def search(text: str, k: int, tier: str) -> SearchResult:
        with state.lock:
            return query.search(state, text, now, k, tier, cache=False)

    outcomes = run(search, found, k, tier, max_span, progress)
    return summarize(outcomes, k, tier, max_span), outcomes
