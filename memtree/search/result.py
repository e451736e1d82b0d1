"""What a search returns: hits with their signals, the result, and the messages that explain it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memtree.index.protocol import TermStats
from memtree.text import terms as text


@dataclass(frozen=True)
class Hit:
    """One search hit: where it is, how it scored, and its text."""

    node: str | None
    path: str
    lines: tuple[int, int]
    score: float
    signals: dict[str, float]
    text: str
    tier: str
    matched: tuple[str, ...] = ()
    route: tuple[str, ...] = ()
    truncated: bool = False
    keys: tuple[str, ...] = ()  # the entries this chunk holds, as usage counts them (memtree.notes.usage)
    dated: str = ""  # where the chunk's age came from: entry, frontmatter, file name, modified
    via: str = ""  # a recall/ hit: the excerpt's own place (path and lines are its source's)
    status: str = "current"  # or, served when nothing current answers: "superseded DAY by ID", "expired DAY"
    root: str = "project"  # the root it came from: the project's, or the user's own (memtree.search.roots)

    def explain(self, tree_weight: float, bm25_weight: float) -> str:
        """The arithmetic of this hit's score, as in DESIGN §3.8."""
        s = self.signals
        label = self.node or self.path
        line = (
            f"{label}: keyword {tree_weight:g}×{s['tree']:.2f} + {bm25_weight:g}×{s['bm25_norm']:.2f} "
            f"= {s['keyword']:.3f}  (bm25 {s['bm25']:.2f}, coverage {s['coverage']:.2f})"
        )
        if s.get("route") and s["route"] != s["tree"]:
            line += f"; tree = route {s['route']:.2f} × the chunk's share of the query {s['tree'] / s['route']:.2f}"
        if "semantic" in s:
            line += (
                f"\n    semantic: cosine {s['semantic']:.2f} ({s['semantic_norm']:.2f} of the best)"
                f" → blended {s['blended']:.3f}"
            )
        if "evidence" in s:
            line += (
                f"\n    × evidence {s['evidence']:.2f} (coverage) × adjacency {s['adjacency']:.2f}"
                " (the question's words side by side)"
            )
        if "decay" in s:
            age = f"{s['age_days']:g} d old by {self.dated}, " if self.dated else ""
            line += (
                f"\n    × decay {s['decay']:.2f} ({age}{s['recalls']:g} recalls) × recency {s['recency']:g}"
                f" × scope {s['scope']:g}"
            )
        if "evidence" in s or "decay" in s:
            line += f" = {self.score:.3f}"
        return line


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, or none with the reason; the query's terms and their statistics."""

    query: str
    terms: tuple[str, ...]
    hits: tuple[Hit, ...]
    rejected: str | None = None
    term_stats: tuple[TermStats, ...] = ()
    warnings: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)


def recall_source(chunk_text: str) -> tuple[str, tuple[int, int]] | None:
    """Where a recall/ excerpt's knowledge lives (its ``from=`` note and lines), if it says."""
    from memtree.notes.entries import META_RE, parse_meta, source_of

    for m in META_RE.finditer(chunk_text):
        found = source_of(parse_meta(m.group("body")))
        if found is not None:
            return found
    return None


def fit(chunk_text: str, left: int) -> tuple[str, bool, int]:
    """Chunk text within ``left`` estimated tokens: whole, cut at a line, or empty."""
    need = text.estimate_tokens(chunk_text)
    if need <= left:
        return chunk_text, False, need
    if left <= 0:
        return "", True, 0
    kept: list[str] = []
    used = 0
    for line in chunk_text.split("\n"):
        cost = text.estimate_tokens(line + "\n")
        if used + cost > left:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept), True, used


QUOTED_TERMS = 8
"""Terms (or words) a message quotes before "… and N more"; why: a 20,000-word query made a 129 KB error line."""
QUOTED_CHARS = 40
"""Characters a message quotes of one term or word (a query may be one 100 KB word)."""


def quote_terms(words: Sequence[str]) -> str:
    """``words`` comma-joined for a one-line message: the first ``QUOTED_TERMS``, then how many more."""
    shown = ", ".join(w if len(w) <= QUOTED_CHARS else w[:QUOTED_CHARS] + "…" for w in words[:QUOTED_TERMS])
    return shown + (f" … and {len(words) - QUOTED_TERMS:,} more" if len(words) > QUOTED_TERMS else "")


def quote_query(query: str) -> str:
    """``query`` quoted for a one-line message; a long one by its first words and its length in words."""
    words = query.split()
    if len(words) <= QUOTED_TERMS and len(query) <= QUOTED_TERMS * QUOTED_CHARS:
        return repr(query)
    head = " ".join(w if len(w) <= QUOTED_CHARS else w[:QUOTED_CHARS] + "…" for w in words[:QUOTED_TERMS])
    return f"{head + ' …'!r} ({len(words):,} word{'' if len(words) == 1 else 's'})"


def rejection(
    stats: Sequence[TermStats],
    best: float,
    threshold: float,
    had_candidates: bool,
    query: str = "",
    scoped_out: bool = False,
    elsewhere: Sequence[tuple[str, str]] = (),
) -> str:
    """Why nothing is returned: what the query holds that memory does not, or where else its terms are,
    and what would help: the tier holding a missing word (``elsewhere``: term, tier), or that the words
    are all held but no passage holds enough of them together."""
    # the user's own words, not the stems they were indexed as (blue-green, not blu)
    words = dict(reversed(text.terms_with_surface(query))) if query else {}

    def shown(terms: list[str]) -> str:
        return quote_terms(list(dict.fromkeys(words.get(t, t) for t in terms if not t.startswith("@"))) or terms)

    missing = [st.term for st in stats if st.df == 0]
    held = list(dict.fromkeys(term for term, _ in elsewhere))
    absent = [t for t in missing if t not in held]
    hint = ""
    if held:
        tiers = list(dict.fromkeys(tier for _, tier in elsewhere))
        flag = f"--tier {tiers[0]}" if len(tiers) == 1 else "--tier all"
        verb = "is" if len(held) == 1 else "are"
        hint = f"; {shown(held)} {verb} in {' and '.join(t + '/' for t in tiers)}, which {flag} searches"
    if len(missing) == len(stats):
        where = "memory" if not held else "the notes searched"
        return f"no confident match: no term of the query occurs in {where} ({shown(missing)}){hint}"
    if not had_candidates:
        found = shown([st.term for st in stats if st.df])
        if scoped_out:
            return f"no confident match: {found} occur only in entries outside the current scope (see --scope)"
        return (
            f"no confident match: {found} occur only in notes not searched "
            "(memory/ needs --tier memory or --tier all; disabled banks are left out)"
        )
    if missing:
        tail = (f"; not in memory: {shown(absent)}" if absent else "") + hint
    else:  # every word is held: it is their being apart that fails
        tail = "; every word is in memory, but no passage holds enough of them together"
    return f"no confident match: the best chunk covers {best:.0%} of the query (needs {threshold:.0%}){tail}"
