"""Human output with rich: the hits table with highlighted matches, --explain, status.

Everything a person reads passes through ``printable`` first: note text is untrusted, and an
escape sequence in it (``ESC]0;title BEL``, ``ESC[2J``) must not reach the terminal. Every step
over a hit's text is linear and bounded: a hit on one 10 MB line shows a snippet as fast as a
hit on a short one.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from . import text
from .entries import strip_meta

if TYPE_CHECKING:
    from .api import Status
    from .search import Hit, SearchResult

SNIPPET_CHARS = 140
SNIPPET_SCAN_CHARS = 20_000
"""Characters of a hit looked at for its snippet; why: a chunk holds at most 4,000 characters,
so only a hit on one huge line (whose text is that whole line) is cut short, and tokenizing
10 MB per hit would take seconds."""
SHOWN_LINE_CHARS = 2_000
"""With --budget, a line of a hit's text longer than this is cut, with a note saying how to see it all."""
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls (CSI, OSC, …)."""


def printable(s: str) -> str:
    """``s`` safe for a terminal: control characters (ESC, BEL, CR, C1 …) removed, newline and tab kept."""
    return _CONTROL.sub("", s)


def highlighter(words: list[str]) -> re.Pattern[str] | None:
    """One case-insensitive alternation of ``words``, longest first (so a longer form wins), or None."""
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w))), re.IGNORECASE)


def snippet(hit: Hit) -> tuple[str, list[str]]:
    """The most telling line of a hit (the first holding the most matched terms) and the words to highlight."""
    related: dict[str, bool] = {}
    words: set[str] = set()
    best_line, best = "", -1
    budget = SNIPPET_SCAN_CHARS
    for line in strip_meta(hit.text).split("\n"):
        stripped = line.strip()
        if not stripped or stripped == "---":
            continue
        if budget <= 0:
            break
        scanned = stripped[:budget]
        budget -= len(scanned)
        found: set[str] = set()
        for term, word in text.terms_with_surface(scanned):
            hit_term = related.get(term)
            if hit_term is None:
                hit_term = related[term] = any(text.relation(q, term, infix=1.0) for q in hit.matched)  # compounds too
            if hit_term:
                found.add(word)
        if len(found) > best:
            best_line, best = stripped, len(found)
        words |= found
    if len(best_line) > SNIPPET_CHARS:
        pattern = highlighter(list(words))
        first = pattern.search(best_line, 0, SNIPPET_SCAN_CHARS) if pattern else None
        start = max(0, (first.start() if first else 0) - SNIPPET_CHARS // 3)
        best_line = ("…" if start else "") + best_line[start : start + SNIPPET_CHARS] + "…"
    return best_line, sorted(words, key=len, reverse=True)


def shown_text(hit: Hit, max_chars: int = SHOWN_LINE_CHARS) -> str:
    """A hit's text for the terminal: each line cut at ``max_chars``, with how much more there is."""
    out = []
    for line in hit.text.split("\n"):
        if len(line) > max_chars:
            more, (a, b) = len(line) - max_chars, hit.lines
            line = f"{line[:max_chars]}… ({more:,} more characters; memtree get {hit.path}, lines {a}-{b})"
        out.append(line)
    return printable("\n".join(out))


def print_hits(result: SearchResult, explain: bool, show_text: bool) -> None:
    """A table of hits; with ``explain`` the arithmetic of each; with ``show_text`` their text."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not result.hits:
        return
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("path:lines · node / snippet", overflow="fold")
    for rank, hit in enumerate(result.hits, 1):
        line, words = snippet(hit)
        cell = Text()
        cell.append(printable(f"{hit.path}:{hit.lines[0]}-{hit.lines[1]}"), style="bold cyan")
        cell.append(printable(f"  {hit.node}") if hit.node else "  (no node)", style="dim")
        shown = Text(printable(line))
        pattern = highlighter(words)
        if pattern is not None:
            shown.highlight_regex(pattern, style="bold yellow")
        cell.append("\n")
        cell.append_text(shown)
        table.add_row(str(rank), f"{hit.score:.3f}", cell)
    console.print(table)
    if explain:
        tw, bw = result.weights.get("tree", 0.4), result.weights.get("bm25", 0.6)
        console.print()
        terms = ", ".join(f"{s.term} (df {s.df}, idf {s.idf:.2f})" for s in result.term_stats)
        console.print(Text(printable(f"terms: {terms}")))
        for rank, hit in enumerate(result.hits, 1):
            console.print(Text(printable(f"{rank}. {hit.explain(tw, bw)}")))
            detail = f"   matched: {', '.join(hit.matched) or '—'}"
            if hit.route:
                detail += f"; routed by keywords: {', '.join(hit.route)}"
            console.print(Text(printable(detail), style="dim"))
    if show_text:
        for rank, hit in enumerate(result.hits, 1):
            where = f"{rank}. {hit.path}:{hit.lines[0]}-{hit.lines[1]}"
            console.rule(Text(printable(where) + (" (cut to budget)" if hit.truncated else "")))
            console.print(Text(shown_text(hit)))


def print_status(st: Status, max_bytes: int) -> None:
    """Per-tier counts, oversized notes and index freshness."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=printable(f"memtree status — {st.root}"), box=None, header_style="bold")
    for col in ("tier", "files", "bytes", "nodes", "chunks"):
        table.add_column(col, justify="left" if col == "tier" else "right")
    for tier, s in st.tiers.items():
        table.add_row(f"{tier}/", str(s.files), f"{s.bytes:,}", str(s.nodes), str(s.chunks))
    console.print(table)
    if st.banks:
        console.print(
            printable(
                "banks: "
                + ", ".join(
                    f"{b.name} ({b.entries} entries, {b.bytes:,} B{'' if b.enabled else ', disabled'})"
                    for b in st.banks
                )
            )
        )
    console.print(printable(f"tree nodes: {st.nodes}"))
    if st.oversized:
        console.print(
            printable(f"[bold red]over {max_bytes:,} bytes[/]: " + ", ".join(f"{p} ({b:,} B)" for p, b in st.oversized))
        )
    else:
        console.print(printable(f"no bank note over {max_bytes:,} bytes"))
    for node_id, path in st.dangling:
        console.print(
            printable(
                f"[bold red]node '{node_id}'[/] points to {path}, which does not exist "
                "(restore it, or run `memtree index` to drop the node)"
            )
        )
    if st.open_conflicts:
        console.print(printable(f"[bold yellow]{st.open_conflicts} open conflict(s)[/]: see `memtree conflicts`"))
    if st.archive_candidates:
        console.print(
            printable(
                f"[bold yellow]{st.archive_candidates} archive candidate(s)[/]: see `memtree decay`, "
                "moved by `memtree decay --archive`"
            )
        )
    if st.recall is not None:
        r = st.recall
        line = f"recall/: {r['excerpts']} excerpts, {r['tokens']} of {r['budget']} tokens"
        if r.get("evicted"):
            line += (
                f"; [bold yellow]{len(r['evicted'])} evicted at the last reconcile[/] ({', '.join(r['evicted'][:3])})"
            )
        console.print(printable(line))
    sem = st.semantic or {}
    if sem.get("active"):
        console.print(
            printable(
                f"semantic layer: on ({sem['model']}), {sem['with_vectors']} of {sem['chunks']} chunks have vectors"
                + ("" if sem["with_vectors"] == sem["chunks"] else " (`memtree index --embed` adds the rest)")
            )
        )
    elif sem.get("notice"):
        console.print(f"[bold yellow]{printable(sem['notice'])}[/]")
    else:
        console.print(
            printable(
                f"semantic layer: off (embed.enabled: {sem.get('enabled', 'auto')}; "
                "`memtree index --embed` turns it on)"
            )
        )
    c = st.consolidation
    if c is None:
        console.print("consolidation: never run here (`memtree consolidate`)")
    else:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.get("finished", 0)))
        outcome = f"[bold red]failed: {c['error']}[/]" if c.get("error") else f"merged {c.get('merged', 0)}"
        console.print(printable(f"consolidation: last run {when}, {outcome}"))
        if c.get("last_error") and not c.get("error"):
            console.print(printable(f"  last error: {c['last_error']}"))
    if st.watcher is None:
        console.print("watcher: never run here (`memtree watch`)")
    elif st.watcher.get("alive"):
        console.print(
            printable(
                f"watcher: running (pid {st.watcher['pid']}, since {st.watcher['started']}, "
                f"{st.watcher['actions']} actions, last heartbeat {st.watcher['age_s']} s ago)"
            )
        )
    else:
        console.print(printable(f"[bold red]watcher: not running[/] (last heartbeat {st.watcher['age_s']} s ago)"))
    if st.stale:
        console.print(
            printable(
                f"index: {len(st.stale)} note(s) changed since the last index "
                f"(refreshed by the next search or `memtree index`): {', '.join(st.stale[:5])}"
                + (" …" if len(st.stale) > 5 else "")
            )
        )
    else:
        console.print(printable(f"index: fresh (version {st.index_version})"))
