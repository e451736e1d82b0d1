"""Markdown → chunks with 1-based line ranges; YAML frontmatter parsed, not indexed.

A chunk is a paragraph, a list item (with its continuation lines and nested items), a table or a
fenced code block kept whole: even a small section is cut into its blocks, so a hit points at the
lines that answer rather than at the whole note. A heading line (with any sub-headings right
under it) joins the chunk that follows it, so a heading's words still find its first block; every
chunk also names the headings it sits under (``Chunk.headings``) for the other blocks' sake. No
chunk holds more than ``CHUNK_MAX_CHARS`` characters: a longer block is cut at line boundaries
and, inside one huge line, at whitespace, so one giant paragraph cannot stall indexing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CHUNK_MAX_CHARS = 4000
"""Hard cap on one chunk; why: a 21K-character chunk is what stalls other tools' indexers."""

_HEADING = re.compile(r"^(#{1,6})\s+\S")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
"""A code fence's opening or closing line (its run of backticks or tildes in group 1)."""
_LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|")


@dataclass(frozen=True)
class Chunk:
    """A piece of a note: its 1-based inclusive line range, its text, and the headings it sits under.

    ``headings`` are the texts of the enclosing headings (outermost first) whose lines are not part
    of the chunk itself: context for an index, never part of the chunk's range or text.
    """

    start: int
    end: int
    text: str
    headings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Document:
    """A parsed note: frontmatter metadata, its headings and its chunks."""

    meta: dict[str, Any]
    headings: tuple[str, ...]
    chunks: tuple[Chunk, ...]
    meta_error: str | None = None
    body_start: int = 1
    lines: tuple[str, ...] = field(default=(), repr=False)


def split_frontmatter(lines: list[str]) -> tuple[dict[str, Any], int, str | None]:
    """YAML frontmatter of a note → (metadata, first body line index, error or None)."""
    i = _frontmatter_close(lines)
    if not i:
        return {}, 0, None
    block = "\n".join(lines[1:i])
    try:
        import yaml  # lazy: only notes with frontmatter pay for it

        meta = yaml.safe_load(block) if block.strip() else {}
    except Exception as exc:  # yaml raises many types; any of them means "unreadable"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, i + 1, f"frontmatter is not valid YAML ({first})"
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return {}, i + 1, "frontmatter is not a mapping"
    return meta, i + 1, None


def _frontmatter_close(lines: Sequence[str]) -> int:
    """The line closing a note's YAML frontmatter (``---`` or ``...`` within its first 500 lines), or 0: none."""
    if not lines or lines[0].strip() != "---":
        return 0
    return next((i for i in range(1, min(len(lines), 500)) if lines[i].strip() in ("---", "...")), 0)


def _closing_fence(marker: str) -> re.Pattern[str]:
    """CommonMark: only a bare fence of the same character, at least as long, closes a code block
    (a ```` block may show a ``` example; ```python inside a ``` block is content)."""
    return re.compile(rf"^\s{{0,3}}{re.escape(marker[0])}{{{len(marker)},}}\s*$")


def parse(text: str) -> Document:
    """Parse a note into frontmatter, headings and chunks."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    meta, body, error = split_frontmatter(lines)
    blocks = _blocks(lines, body)
    headings = tuple(_heading_text(lines[s]) for s, _, kind in blocks if kind == "heading")
    chunks = _assemble(lines, blocks)
    return Document(meta, headings, tuple(chunks), error, body + 1, tuple(lines))


def _blocks(lines: list[str], start: int) -> list[tuple[int, int, str]]:
    """Split body lines into blocks (0-based inclusive ranges) of kind heading/para/item/code/table."""
    out: list[tuple[int, int, str]] = []
    i, n = start, len(lines)
    while i < n:
        line = lines[i]
        lead = _lead(line)
        if not lead:
            i += 1
            continue
        fence = FENCE.match(line) if lead in "`~" else None
        if fence:
            marker = fence.group(1)
            close = _closing_fence(marker)
            j = i + 1
            while j < n and not close.match(lines[j]):
                j += 1
            end = min(j, n - 1)
            out.append((i, end, "code"))
            i = end + 1
            continue
        if lead == "#" and _HEADING.match(line):
            out.append((i, i, "heading"))
            i += 1
            continue
        if lead == "|" and _TABLE_ROW.match(line):
            j = i
            while j + 1 < n and _TABLE_ROW.match(lines[j + 1]):
                j += 1
            out.append((i, j, "table"))
            i = j + 1
            continue
        item = _LIST_ITEM.match(line) if lead in "-*+" or lead.isdecimal() else None
        if item:
            indent = len(item.group(1))
            j = i
            while j + 1 < n:
                nxt = lines[j + 1]
                if not nxt.strip():
                    # a blank line continues the item only if indented content follows
                    k = j + 1
                    while k < n and not lines[k].strip():
                        k += 1
                    if k < n and _indent(lines[k]) > indent and not _HEADING.match(lines[k]):
                        j = k
                        continue
                    break
                nested = _LIST_ITEM.match(nxt)
                if nested and len(nested.group(1)) <= indent:
                    break
                if _HEADING.match(nxt) or (FENCE.match(nxt) and _indent(nxt) <= indent):
                    break
                if not nested and _indent(nxt) <= indent and (_TABLE_ROW.match(nxt)):
                    break
                j += 1
            out.append((i, j, "item"))
            i = j + 1
            continue
        j = i
        while j + 1 < n:
            if _opens_block(lines[j + 1]):
                break
            j += 1
        out.append((i, j, "para"))
        i = j + 1
    return out


def _lead(line: str) -> str:
    """The first character of ``line`` that is not whitespace ('' for a blank line).

    Why: each block pattern opens with its own characters (```` ` ```` or ``~``, ``#``, ``|``, a
    bullet or a digit), so a line is only matched against the patterns it can open; one regex
    call saved per pattern that cannot match is a tenth of chunking a note of one-line items.
    """
    return line.lstrip()[:1]


def _opens_block(line: str) -> bool:
    """Whether ``line`` is blank or opens a heading, a fence, a list item or a table (so ends a paragraph)."""
    lead = _lead(line)
    return (
        not lead
        or (lead == "#" and _HEADING.match(line) is not None)
        or (lead in "`~" and FENCE.match(line) is not None)
        or ((lead in "-*+" or lead.isdecimal()) and _LIST_ITEM.match(line) is not None)
        or (lead == "|" and _TABLE_ROW.match(line) is not None)
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _assemble(lines: list[str], blocks: list[tuple[int, int, str]]) -> list[Chunk]:
    """Group blocks into chunks: one block each, a heading (and its sub-headings) joined to the next."""
    chunks: list[Chunk] = []
    trail: list[tuple[int, int, str]] = []  # enclosing headings: (level, 0-based line, text), outermost first
    pending: int | None = None  # first line of the headings waiting for their first block
    for i, (s, e, kind) in enumerate(blocks):
        if kind == "heading":
            level = _heading_level(lines[s])
            trail = [h for h in trail if h[0] < level] + [(level, s, _heading_text(lines[s]))]
            pending = s if pending is None else pending
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            # Why: a heading followed by a sibling or a higher one has an empty section; it stands
            # alone rather than lending its words to another section's first block.
            if nxt is None or (nxt[2] == "heading" and _heading_level(lines[nxt[0]]) <= level):
                chunks += _capped(lines, pending, e, trail)
                pending = None
            continue
        chunks += _capped(lines, s if pending is None else pending, e, trail)
        pending = None
    return chunks


def _heading_text(line: str) -> str:
    return line.strip().lstrip("#").strip()


def _heading_level(line: str) -> int:
    m = _HEADING.match(line)
    return len(m.group(1)) if m else 7


def _size(lines: list[str], s: int, e: int) -> int:
    return sum(map(len, lines[s : e + 1])) + e + 1 - s


def _capped(lines: list[str], s: int, e: int, trail: list[tuple[int, int, str]]) -> list[Chunk]:
    """Chunks for lines s..e (0-based): one, or several when over CHUNK_MAX_CHARS.

    ``trail`` holds the enclosing headings' (level, line, text); each chunk names those outside its lines.
    """
    if s == e and len(lines[s]) < CHUNK_MAX_CHARS:  # the common case: one short line
        if not trail or trail[-1][1] < s:
            return [Chunk(s + 1, s + 1, lines[s], tuple([h[2] for h in trail]))]
        return [Chunk(s + 1, s + 1, lines[s], tuple([h[2] for h in trail if h[1] != s]))]
    out: list[tuple[int, int, str]] = []  # 0-based inclusive ranges and texts
    if _size(lines, s, e) <= CHUNK_MAX_CHARS:
        out.append((s, e, "\n".join(lines[s : e + 1])))
    else:
        start, size = s, 0
        for k in range(s, e + 1):
            length = len(lines[k]) + 1
            if length > CHUNK_MAX_CHARS:
                if k > start:
                    out.append((start, k - 1, "\n".join(lines[start:k])))
                out += [(k, k, piece) for piece in _cut_line(lines[k])]
                start, size = k + 1, 0
                continue
            if size + length > CHUNK_MAX_CHARS and k > start:
                out.append((start, k - 1, "\n".join(lines[start:k])))
                start, size = k, 0
            size += length
        if start <= e:
            out.append((start, e, "\n".join(lines[start : e + 1])))
    return [Chunk(a + 1, b + 1, body, tuple([h[2] for h in trail if not a <= h[1] <= b])) for a, b, body in out]


def _cut_line(line: str) -> list[str]:
    """Cut one huge line into pieces of at most CHUNK_MAX_CHARS, at whitespace when possible.

    Why offsets, not ``line = line[cut:]``: copying the rest at every cut made a 40 MB line take 34 s.
    """
    pieces = []
    start, n = 0, len(line)
    while n - start > CHUNK_MAX_CHARS:
        cut = line.rfind(" ", start + CHUNK_MAX_CHARS // 2, start + CHUNK_MAX_CHARS)
        cut = cut if cut > start else start + CHUNK_MAX_CHARS
        pieces.append(line[start:cut])
        start = cut
    if line[start:].strip():
        pieces.append(line[start:])
    return pieces


def chunk_headings(lines: Sequence[str], spans: Sequence[tuple[int, int]]) -> list[tuple[str, ...]]:
    """The headings each chunk (1-based lines ``start``..``end`` of the note ``lines``) sits under,
    outside its own lines: :attr:`Chunk.headings` as :func:`parse` gives it, read in one pass
    without parsing the note (frontmatter and fenced code hold no heading). The semantic layer
    prefixes a chunk's passage with them (memtree.index.vectors.passage)."""
    trails: list[tuple[tuple[int, str], ...]] = []
    trail: list[tuple[int, int, str]] = []
    end = _frontmatter_close(lines)
    body = end + 1 if end else 0
    close: re.Pattern[str] | None = None
    for i, line in enumerate(lines):
        if i >= body:
            if close is not None:
                if close.match(line):
                    close = None
            elif (fence := FENCE.match(line)) is not None:
                close = _closing_fence(fence.group(1))
            elif (m := _HEADING.match(line)) is not None:
                level = len(m.group(1))
                while trail and trail[-1][0] >= level:
                    trail.pop()
                trail.append((level, i, _heading_text(line)))
        trails.append(tuple((at, text) for _, at, text in trail))
    out = []
    for start, end in spans:
        above = trails[start - 1] if 0 < start <= len(trails) else ()
        out.append(tuple(text for at, text in above if not start - 1 <= at <= end - 1))
    return out
