"""Human output with rich: the hits table with highlighted matches, --explain, status."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from . import text
from .entries import strip_meta

if TYPE_CHECKING:
    from .api import Status
    from .search import Hit, SearchResult

SNIPPET_CHARS = 140


def snippet(hit: Hit) -> tuple[str, list[str]]:
    """The most telling line of a hit (the first holding a matched term) and the words to highlight."""
    words: list[str] = []
    best_line, best = "", -1
    for line in strip_meta(hit.text).split("\n"):
        stripped = line.strip()
        if not stripped or stripped == "---":
            continue
        found = [
            word for term, word in text.terms_with_surface(stripped) if any(text.relation(q, term) for q in hit.matched)
        ]
        if len(set(found)) > best:
            best_line, best = stripped, len(set(found))
        words += found
    if len(best_line) > SNIPPET_CHARS:
        first = min((best_line.casefold().find(w) for w in words if best_line.casefold().find(w) >= 0), default=0)
        start = max(0, first - SNIPPET_CHARS // 3)
        best_line = ("…" if start else "") + best_line[start : start + SNIPPET_CHARS] + "…"
    return best_line, sorted(set(words), key=len, reverse=True)


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
        cell.append(f"{hit.path}:{hit.lines[0]}-{hit.lines[1]}", style="bold cyan")
        cell.append(f"  {hit.node}" if hit.node else "  (no node)", style="dim")
        shown = Text(line)
        shown.highlight_words(words, style="bold yellow", case_sensitive=False)
        cell.append("\n")
        cell.append_text(shown)
        table.add_row(str(rank), f"{hit.score:.3f}", cell)
    console.print(table)
    if explain:
        tw, bw = result.weights.get("tree", 0.4), result.weights.get("bm25", 0.6)
        console.print()
        terms = ", ".join(f"{s.term} (df {s.df}, idf {s.idf:.2f})" for s in result.term_stats)
        console.print(Text(f"terms: {terms}"))
        for rank, hit in enumerate(result.hits, 1):
            console.print(Text(f"{rank}. {hit.explain(tw, bw)}"))
            detail = f"   matched: {', '.join(hit.matched) or '—'}"
            if hit.route:
                detail += f"; routed by keywords: {', '.join(hit.route)}"
            console.print(Text(detail, style="dim"))
    if show_text:
        for rank, hit in enumerate(result.hits, 1):
            console.rule(
                Text(
                    f"{rank}. {hit.path}:{hit.lines[0]}-{hit.lines[1]}" + (" (cut to budget)" if hit.truncated else "")
                )
            )
            console.print(Text(hit.text))


def print_status(st: Status, max_bytes: int) -> None:
    """Per-tier counts, oversized notes and index freshness."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"memtree status — {st.root}", box=None, header_style="bold")
    for col in ("tier", "files", "bytes", "nodes", "chunks"):
        table.add_column(col, justify="left" if col == "tier" else "right")
    for tier, s in st.tiers.items():
        table.add_row(f"{tier}/", str(s.files), f"{s.bytes:,}", str(s.nodes), str(s.chunks))
    console.print(table)
    if st.banks:
        console.print(
            "banks: "
            + ", ".join(
                f"{b.name} ({b.entries} entries, {b.bytes:,} B{'' if b.enabled else ', disabled'})" for b in st.banks
            )
        )
    console.print(f"tree nodes: {st.nodes}")
    if st.oversized:
        console.print(f"[bold red]over {max_bytes:,} bytes[/]: " + ", ".join(f"{p} ({b:,} B)" for p, b in st.oversized))
    else:
        console.print(f"no bank note over {max_bytes:,} bytes")
    for node_id, path in st.dangling:
        console.print(
            f"[bold red]node '{node_id}'[/] points to {path}, which does not exist "
            "(restore it, or run `memtree index` to drop the node)"
        )
    if st.open_conflicts:
        console.print(f"[bold yellow]{st.open_conflicts} open conflict(s)[/]: see `memtree conflicts`")
    if st.archive_candidates:
        console.print(
            f"[bold yellow]{st.archive_candidates} archive candidate(s)[/]: see `memtree decay`, "
            "moved by `memtree decay --archive`"
        )
    if st.recall is not None:
        r = st.recall
        line = f"recall/: {r['excerpts']} excerpts, {r['tokens']} of {r['budget']} tokens"
        if r.get("evicted"):
            line += (
                f"; [bold yellow]{len(r['evicted'])} evicted at the last reconcile[/] ({', '.join(r['evicted'][:3])})"
            )
        console.print(line)
    sem = st.semantic or {}
    if sem.get("active"):
        console.print(
            f"semantic layer: on ({sem['model']}), {sem['with_vectors']} of {sem['chunks']} chunks have vectors"
            + ("" if sem["with_vectors"] == sem["chunks"] else " (`memtree index --embed` adds the rest)")
        )
    elif sem.get("notice"):
        console.print(f"[bold yellow]{sem['notice']}[/]")
    else:
        console.print(
            f"semantic layer: off (embed.enabled: {sem.get('enabled', 'auto')}; `memtree index --embed` turns it on)"
        )
    c = st.consolidation
    if c is None:
        console.print("consolidation: never run here (`memtree consolidate`)")
    else:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.get("finished", 0)))
        outcome = f"[bold red]failed: {c['error']}[/]" if c.get("error") else f"merged {c.get('merged', 0)}"
        console.print(f"consolidation: last run {when}, {outcome}")
        if c.get("last_error") and not c.get("error"):
            console.print(f"  last error: {c['last_error']}")
    if st.watcher is None:
        console.print("watcher: never run here (`memtree watch`)")
    elif st.watcher.get("alive"):
        console.print(
            f"watcher: running (pid {st.watcher['pid']}, since {st.watcher['started']}, "
            f"{st.watcher['actions']} actions, last heartbeat {st.watcher['age_s']} s ago)"
        )
    else:
        console.print(f"[bold red]watcher: not running[/] (last heartbeat {st.watcher['age_s']} s ago)")
    if st.stale:
        console.print(
            f"index: {len(st.stale)} note(s) changed since the last index "
            f"(refreshed by the next search or `memtree index`): {', '.join(st.stale[:5])}"
            + (" …" if len(st.stale) > 5 else "")
        )
    else:
        console.print(f"index: fresh (version {st.index_version})")
