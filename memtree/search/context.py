"""`memtree context`: the best chunks for a query as a Markdown block an agent prepends to its prompt.

Whole chunks, best first, each under a heading naming its source, until the next one would pass
the token budget (estimated CJK-aware, headings included). The block quotes only a short excerpt
of the query, so a long message cannot eat the budget; when no whole chunk fits, the best one is
cut at line boundaries from its first line that is not a heading (inside that line only as a last
resort), so a small budget still gets something; a budget too small even for that gets an empty
block, which the CLI says on stderr. The block never breaks a chat: the CLI prints nothing on stdout when anything
fails and says why on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass

from memtree.notes.entries import strip_meta
from memtree.search.result import Hit, SearchResult, fit
from memtree.text import terms as text

CONTEXT_BUDGET = 2000
"""Default token budget of the block (DESIGN §8 search.token_budget)."""
CONTEXT_HITS = 10
"""Chunks considered; the budget usually stops the block first."""
QUERY_EXCERPT_CHARS = 80
"""Characters of the query quoted in the block; why: a 1,300-word message echoed whole left no
room for a single chunk, and the agent has the message anyway."""
HEADER = "## Memory"
ELLIPSIS = "…"
LIST_MARKS = " \t-*+>"


@dataclass(frozen=True)
class Context:
    """The block, what it holds, and its estimated size."""

    markdown: str
    # "path:start-end" of every chunk included (of the lines kept, when cut); "user:path:start-end" of the user root's
    sources: tuple[str, ...]
    tokens: int
    budget: int
    left_out: int  # chunks found but not included (they would pass the budget)


def render(result: SearchResult, budget: int = CONTEXT_BUDGET) -> Context:
    """The prompt block for a search result (empty when nothing matched with confidence)."""
    if not result.hits:
        return Context("", (), 0, budget, 0)
    full = f"{HEADER}\n\nRelevant notes from memory (memtree) for: {excerpt(result.query)}\n"
    bare = f"{HEADER}\n"
    # Why the bare header next: at a budget of a few dozen tokens the line quoting the query is
    # what leaves no room for the answer.
    ctx = _whole_chunks(full, result.hits, budget) or _whole_chunks(bare, result.hits, budget)
    return ctx or _best_cut(bare, result.hits, budget) or Context("", (), 0, budget, len(result.hits))


def excerpt(query: str, limit: int = QUERY_EXCERPT_CHARS) -> str:
    """The query on one line, at most ``limit`` characters, with an ellipsis and its length when cut."""
    flat = " ".join(query.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", limit // 2, limit)
    return f"{flat[: cut if cut > 0 else limit].rstrip()}{ELLIPSIS} ({len(flat):,} characters)"


def _whole_chunks(header: str, hits: tuple[Hit, ...], budget: int) -> Context | None:
    parts = [header]
    sources: list[str] = []
    left_out = 0
    for hit in hits:
        block = _block(hit, _body(hit), hit.lines)
        # the joined block itself is measured: per-part estimates round differently
        if text.estimate_tokens("\n".join([*parts, block])) > budget:
            left_out += 1
            continue  # a later, shorter chunk may still fit
        parts.append(block)
        sources.append(_where(hit, hit.lines))
    if not sources:
        return None
    return _context(parts, sources, budget, left_out)


def _best_cut(header: str, hits: tuple[Hit, ...], budget: int) -> Context | None:
    """The best chunk's first lines (or the start of its first line) within what the header leaves."""
    hit = hits[0]
    body = _body(hit)
    # Why from the first line that is not a heading: a chunk opens with its note's headings, and a cut
    # that kept only `# inbox` would answer with a title (the block's own heading names the note)
    rows = body.split("\n")
    skip = next((i for i, row in enumerate(rows) if row.strip() and not row.lstrip().startswith("#")), 0)
    body, start = "\n".join(rows[skip:]), hit.lines[0] + skip
    left = budget - text.estimate_tokens(header) - text.estimate_tokens(_block(hit, "", (start, hit.lines[1])))
    kept = fit(body, left)[0].rstrip()  # a cut ending on a blank line names that line for nothing
    if not kept.strip():
        kept = _clip(body.split("\n", 1)[0], left)
    if not kept.strip(LIST_MARKS + ELLIPSIS):  # a bullet and an ellipsis say nothing
        return None
    lines = (start, min(hit.lines[1], start + kept.count("\n")))
    parts = [header, _block(hit, kept, lines)]
    if text.estimate_tokens("\n".join(parts)) > budget:
        return None
    return _context(parts, [_where(hit, lines)], budget, len(hits) - 1)


def _clip(line: str, left: int) -> str:
    """The longest start of ``line`` (at a space when there is one) plus an ellipsis within ``left`` tokens."""
    lo, hi = 0, len(line)
    while lo < hi:  # longest prefix that fits, by bisection: estimate_tokens grows with the prefix
        mid = (lo + hi + 1) // 2
        if text.estimate_tokens(line[:mid] + ELLIPSIS) <= left:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return ""
    space = line.rfind(" ", lo // 2, lo)
    return line[: space if space > 0 else lo].rstrip() + ELLIPSIS


def _context(parts: list[str], sources: list[str], budget: int, left_out: int) -> Context:
    markdown = "\n".join(parts).rstrip("\n") + "\n"
    return Context(markdown, tuple(sources), text.estimate_tokens(markdown), budget, left_out)


def _body(hit: Hit) -> str:
    # strip_meta removes comments within lines, so line k of the body is still line start + k
    return strip_meta(hit.text).strip("\n")


def _where(hit: Hit, lines: tuple[int, int]) -> str:
    # a user-root chunk is named as such: its path is of the user's root, not the project's
    mark = f"{hit.root}:" if hit.root != "project" else ""  # `memtree get user:PATH` reads it
    return f"{mark}{hit.path}:{lines[0]}-{lines[1]}"


def _block(hit: Hit, body: str, lines: tuple[int, int]) -> str:
    label = f" ({hit.node})" if hit.node else ""
    # Why said in the block: an agent reading the past must not take it for the current fact
    past = f" [{hit.status}: no longer current]" if hit.status != "current" else ""
    return f"### {_where(hit, lines)}{label}{past}\n\n{body}\n"
