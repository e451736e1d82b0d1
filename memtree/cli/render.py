"""Human output with rich: the hits table with highlighted matches, --explain, status.

Everything a person reads passes through ``printable`` first: note text is untrusted, and an
escape sequence in it (``ESC]0;title BEL``, ``ESC[2J``) must not reach the terminal. Every step
over a hit's text is linear and bounded: a hit on one 10 MB line shows a snippet as fast as a
hit on a short one.

On a terminal rich lays the output out as it likes. Piped (stdout not a terminal) every line is
printed whole and without trailing padding, so ``grep`` and an agent see each hit and each
``--explain`` sum on one line. ``NO_COLOR`` drops every style, bold included.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import IO, TYPE_CHECKING, Literal

from memtree.notes.entries import strip_meta
from memtree.text import match
from memtree.text import terms as text

if TYPE_CHECKING:
    from rich.console import Console

    from memtree.api import Status
    from memtree.search.links import NoteLinks
    from memtree.search.result import Hit, SearchResult

SNIPPET_CHARS = 140
SNIPPET_SCAN_CHARS = 20_000
"""Characters of a hit looked at for its snippet; why: a chunk holds at most 4,000 characters,
so only a hit on one huge line (whose text is that whole line) is cut short, and tokenizing
10 MB per hit would take seconds."""
SHOWN_LINE_CHARS = 2_000
"""With --budget, a line of a hit's text longer than this is cut, with a note saying how to see it all."""
PIPED_WIDTH = 100_000
"""Console width when stdout is not a terminal: wide enough that a table never wraps a hit."""
PIPED_RULE_WIDTH = 80
"""Width of the rule above each hit's text when piped (a rule spans the whole console width)."""
_PADDING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)(?=\n)")
"""Spaces at the end of a line, before any closing style codes (FORCE_COLOR output)."""
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls (CSI, OSC, …)."""


def printable(s: str) -> str:
    """``s`` safe for a terminal: control characters (ESC, BEL, CR, C1 …) removed, newline and tab kept."""
    return _CONTROL.sub("", s)


def say(message: str) -> None:
    """One ``memtree: …`` line on stderr (an error, a warning), made printable."""
    sys.stderr.write(printable(f"memtree: {message}\n"))


class _Unpadded:
    """A text stream that drops the spaces rich pads lines with (each print is one write)."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def write(self, s: str) -> int:
        return self._out.write(_PADDING.sub(r"\1", s))

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return False


def console() -> Console:
    """The console for human output: rich's own on a terminal; piped, unwrapped and unpadded lines."""
    from rich.console import Console

    # Why: rich honours NO_COLOR by dropping colours only, so bold and dim still reach the
    # output; no colour system at all means no escape sequence of any kind (no-color.org: non-empty)
    styles: Literal["auto"] | None = None if os.environ.get("NO_COLOR") else "auto"
    if sys.stdout.isatty():
        return Console(color_system=styles)
    return Console(file=_Unpadded(sys.stdout), width=PIPED_WIDTH, soft_wrap=True, color_system=styles)  # type: ignore[arg-type]


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
                hit_term = related[term] = any(match.relation(q, term, infix=1.0) for q in hit.matched)  # compounds too
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
    """A hit's text for a person: no metadata comments, each line cut at ``max_chars`` with how much more there is."""
    out = []
    for line in strip_meta(hit.text).split("\n"):
        if len(line) > max_chars:
            more, (a, b) = len(line) - max_chars, hit.lines
            line = f"{line[:max_chars]}… ({more:,} more characters; memtree get {hit.path}, lines {a}-{b})"
        out.append(line)
    return printable("\n".join(out))


def print_hits(result: SearchResult, explain: bool, show_text: bool) -> None:
    """A table of hits; with ``explain`` the arithmetic of each; with ``show_text`` their text."""
    from rich.rule import Rule
    from rich.table import Table
    from rich.text import Text

    out = console()
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
        if hit.root != "project":
            cell.append(f"  [{hit.root} root]", style="bold magenta")
        if hit.status != "current":
            cell.append(printable(f"  [{hit.status}: no longer current]"), style="bold red")
        shown = Text(printable(line))
        pattern = highlighter(words)
        if pattern is not None:
            shown.highlight_regex(pattern, style="bold yellow")
        cell.append("\n")
        cell.append_text(shown)
        table.add_row(str(rank), f"{hit.score:.3f}", cell)
    out.print(table)
    if explain:
        tw, bw = result.weights.get("tree", 0.4), result.weights.get("bm25", 0.6)
        out.print()
        terms = ", ".join(f"{s.term} (df {s.df}, idf {s.idf:.2f})" for s in result.term_stats)
        out.print(Text(printable(f"terms: {terms}")))
        for rank, hit in enumerate(result.hits, 1):
            out.print(Text(printable(f"{rank}. {hit.explain(tw, bw)}")))
            detail = f"   matched: {', '.join(hit.matched) or '—'}"
            if hit.route:
                detail += f"; routed by keywords: {', '.join(hit.route)}"
            out.print(Text(printable(detail), style="dim"))
    if show_text:
        for rank, hit in enumerate(result.hits, 1):
            where = f"{rank}. {hit.path}:{hit.lines[0]}-{hit.lines[1]}"
            where += f" [{hit.root} root]" if hit.root != "project" else ""
            rule = Rule(Text(printable(where) + (" (cut to budget)" if hit.truncated else "")))
            out.print(rule, width=None if out.is_terminal else PIPED_RULE_WIDTH)
            out.print(Text(shown_text(hit)))


def _safe(s: object) -> str:
    """``s`` as literal text in a rich markup string: no control characters, no ``[tag]`` taken for markup."""
    from rich.markup import escape

    return escape(printable(str(s)))


def print_status(st: Status, max_bytes: int) -> None:
    """Per-tier counts, oversized notes and index freshness."""
    from rich.markup import escape
    from rich.table import Table

    out = console()
    table = Table(title=_safe(f"memtree status — {st.root}"), box=None, header_style="bold")
    for col in ("tier", "files", "bytes", "nodes", "chunks"):
        table.add_column(col, justify="left" if col == "tier" else "right")
    for tier, s in st.tiers.items():
        table.add_row(f"{tier}/", str(s.files), f"{s.bytes:,}", str(s.nodes), str(s.chunks))
    out.print(table)
    if st.user_root:
        out.print(printable(f"user root: {st.user_root} (searched beside this one)"))
    if st.banks:
        out.print(
            printable(
                "banks: "
                + ", ".join(
                    f"{escape(b.name)} ({b.entries} entries, {b.bytes:,} B{'' if b.enabled else ', disabled'})"
                    for b in st.banks
                )
            )
        )
    out.print(printable(f"tree nodes: {st.nodes}"))
    if st.oversized:
        out.print(
            printable(
                f"[bold red]over {max_bytes:,} bytes[/]: "
                + ", ".join(f"{escape(p)} ({b:,} B)" for p, b in st.oversized)
            )
        )
    else:
        out.print(printable(f"no bank note over {max_bytes:,} bytes"))
    for node_id, path in st.dangling:
        out.print(
            printable(
                f"[bold red]node '{escape(node_id)}'[/] points to {escape(path)}, which does not exist "
                "(restore it, or run `memtree index` to drop the node)"
            )
        )
    if st.open_conflicts:
        out.print(printable(f"[bold yellow]{st.open_conflicts} open conflict(s)[/]: see `memtree conflicts`"))
    if st.clashes:
        said = f"{st.clashes} edit(s) a git merge kept both ways"
        out.print(printable(f"[bold yellow]{said}[/] (clash marks in notes): see `memtree conflicts`"))
    if st.marker_files:
        said = f"{st.marker_files} file(s) hold git conflict markers"
        out.print(printable(f"[bold red]{said}[/], never memory: `memtree check --fix` merges them"))
    if st.archive_candidates:
        out.print(
            printable(
                f"[bold yellow]{st.archive_candidates} archive candidate(s)[/]: see `memtree decay`, "
                "moved by `memtree decay --archive`"
            )
        )
    if st.recall is not None:
        r = st.recall
        line = f"recall/: {r['excerpts']} excerpts, {r['tokens']} of {r['budget']} tokens"
        if r.get("evicted"):
            evicted = escape(", ".join(r["evicted"][:3]))
            line += f"; [bold yellow]{len(r['evicted'])} evicted at the last reconcile[/] ({evicted})"
        out.print(printable(line))
    sem = st.semantic or {}
    if sem.get("active"):
        out.print(
            printable(
                f"semantic layer: on ({escape(str(sem['model']))}), "
                f"{sem['with_vectors']} of {sem['chunks']} chunks have vectors"
                + ("" if sem["with_vectors"] == sem["chunks"] else " (`memtree index --embed` adds the rest)")
            )
        )
    elif sem.get("notice"):
        out.print(f"[bold yellow]{_safe(sem['notice'])}[/]")
    else:
        out.print(
            printable(
                f"semantic layer: off (embed.enabled: {sem.get('enabled', 'auto')}; "
                "`memtree index --embed` turns it on)"
            )
        )
    c = st.consolidation
    if c is None:
        out.print("consolidation: never run here (`memtree consolidate`)")
    else:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.get("finished", 0)))
        outcome = (
            f"[bold red]failed: {escape(str(c['error']))}[/]" if c.get("error") else f"merged {c.get('merged', 0)}"
        )
        out.print(printable(f"consolidation: last run {when}, {outcome}"))
        if c.get("last_error") and not c.get("error"):
            out.print(_safe(f"  last error: {c['last_error']}"))
    if st.watcher is None:
        out.print("watcher: never run here (`memtree watch`)")
    elif st.watcher.get("alive"):
        out.print(
            printable(
                f"watcher: running (pid {st.watcher['pid']}, since {st.watcher['started']}, "
                f"{st.watcher['actions']} actions, last heartbeat {st.watcher['age_s']} s ago)"
            )
        )
    else:
        out.print(printable(f"[bold red]watcher: not running[/] (last heartbeat {st.watcher['age_s']} s ago)"))
    if st.stale:
        out.print(
            printable(
                f"index: {len(st.stale)} note(s) changed since the last index "
                f"(refreshed by the next search or `memtree index`): {escape(', '.join(st.stale[:5]))}"
                + (" …" if len(st.stale) > 5 else "")
            )
        )
    else:
        out.print(printable(f"index: fresh (version {st.index_version})"))


def print_links(found: NoteLinks) -> None:
    """`memtree links`: the note, then its links out and in, one a line (``path:line  kind  [[…]] → where``)."""
    print(printable(f"{found.path}" + (f" (node {found.node})" if found.node else "")))
    for title, rows, out in (("links out", found.outgoing, True), ("links in", found.incoming, False)):
        print(f"{title}: {len(rows)}" if rows else f"{title}: none")
        for r in rows:
            where = f"{r.path}:{r.line}" if r.line else f"{r.path}"
            leads = f"dangling: {r.problem}" if r.problem else where
            shown = f"{r.link.source}:{r.link.line}  {r.link.kind}  {r.link.written}"
            print(printable(f"  {shown} → {leads}" if out else f"  {shown}"))
