"""Two roots' answers to one search made one: the project's own memory and the user's (``$MEMTREE_HOME``).

Each root is searched whole by the pipeline, with its own index, IDF, tree and rejection, and its hits
are tagged with the root they came from (``Hit.root``: ``project`` or ``user``). The rule:

- a root that rejects, or holds no note in the tiers searched, contributes nothing; the answer is
  refused only when both refuse (the project's reason is given);
- a root that answers only with the past (superseded or expired facts, served when none of its current
  ones answers) contributes nothing when the other answers with current facts;
- the hits of the roots that answer are merged by score, the project's first on a tie, and the best
  ``k`` kept; a token ``budget`` is then spent again down the merged list.

Why by score, not by rank or raw BM25: raw BM25 is on each index's own scale (its IDF, its lengths),
so it cannot be compared across roots; but a hit's score already divides BM25 by its root's best
(memtree.index.blend) and multiplies that by absolute shares — the query's coverage and adjacency,
decay, recency, scope — so the best hit of each root stands near its coverage, and a user-root hit
ranks above the project's only when it holds more of the question. Interleaving by rank would put a
weak second root's best at rank 2 every time. Why the project first on a tie: writes go there, and
it is the memory of the work at hand.
"""

from __future__ import annotations

from dataclasses import replace

from memtree.search.result import Hit, SearchResult, fit

PROJECT = "project"
USER = "user"


def merged(project: SearchResult | None, user: SearchResult | None, k: int, budget: int | None) -> SearchResult:
    """One result of the two roots' (None: that root had no note to search); see the module docstring."""
    if user is None:
        assert project is not None
        return project
    user = replace(
        user,
        hits=tuple(replace(h, root=USER) for h in user.hits),
        warnings=tuple(f"user root: {w}" for w in user.warnings),
    )
    if project is None:
        return user
    warnings = (*project.warnings, *user.warnings)
    if user.rejected or not user.hits:
        return replace(project, warnings=warnings) if user.warnings else project
    if project.rejected or not project.hits:
        return replace(user, warnings=warnings)
    # a root serves superseded or expired facts only when none of its current ones answers (memtree.search.query);
    # across roots the same: the past of one is not served beside the other's current facts
    current = {r is project: any(h.status == "current" for h in r.hits) for r in (project, user)}
    if current[True] != current[False]:
        return replace(project if current[True] else user, warnings=warnings)
    hits = sorted((*project.hits, *user.hits), key=lambda h: (-h.score, h.root != PROJECT))[:k]
    return _spent(replace(project, hits=tuple(hits), warnings=warnings), budget)


def _spent(result: SearchResult, budget: int | None) -> SearchResult:
    """``result`` with its hits' text cut to one ``budget`` again (each root spent a whole one)."""
    if budget is None:
        return result
    left = budget
    hits: list[Hit] = []
    for h in result.hits:
        text, cut, used = fit(h.text, left)
        left -= used
        hits.append(replace(h, text=text, truncated=h.truncated or cut))
    return replace(result, hits=tuple(hits))
