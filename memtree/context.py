"""`memtree context`: the best chunks for a query as a Markdown block an agent prepends to its prompt.

Whole chunks only, best first, each under a heading naming its source, until the next one would
pass the token budget (estimated CJK-aware, headings included). The block never breaks a chat:
the CLI prints nothing on stdout when anything fails and says why on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import text
from .entries import strip_meta
from .search import Hit, SearchResult

CONTEXT_BUDGET = 2000
"""Default token budget of the block (DESIGN §8 search.token_budget)."""
CONTEXT_HITS = 10
"""Chunks considered; the budget usually stops the block first."""
HEADER = "## Memory"


@dataclass(frozen=True)
class Context:
    """The block, what it holds, and its estimated size."""

    markdown: str
    sources: tuple[str, ...]  # "path:start-end" of every chunk included
    tokens: int
    budget: int
    left_out: int  # chunks found but not included (they would pass the budget)


def render(result: SearchResult, budget: int = CONTEXT_BUDGET) -> Context:
    """The prompt block for a search result (empty when nothing matched with confidence)."""
    if not result.hits:
        return Context("", (), 0, budget, 0)
    parts = [f"{HEADER}\n\nRelevant notes from memory (memtree) for: {result.query.strip()}\n"]
    used = text.estimate_tokens(parts[0])
    sources: list[str] = []
    left_out = 0
    for hit in result.hits:
        block = _block(hit)
        cost = text.estimate_tokens(block)
        if used + cost > budget:
            left_out += 1
            continue  # a later, shorter chunk may still fit
        parts.append(block)
        used += cost
        sources.append(f"{hit.path}:{hit.lines[0]}-{hit.lines[1]}")
    if not sources:
        return Context("", (), 0, budget, left_out)
    return Context("\n".join(parts).rstrip("\n") + "\n", tuple(sources), used, budget, left_out)


def _block(hit: Hit) -> str:
    where = f"{hit.path}:{hit.lines[0]}-{hit.lines[1]}"
    label = f" ({hit.node})" if hit.node else ""
    body = strip_meta(hit.text).strip("\n")
    return f"### {where}{label}\n\n{body}\n"
