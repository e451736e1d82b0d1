"""SessionStart's briefing: what an agent should know before the first prompt, in a few lines — or nothing.

Three parts, each only when memory holds something for it, in this order (the budget cuts the last):

1. open conflicts: two entries that may contradict each other, which the person should settle;
2. the newest decisions: entries of kind ``decision`` or in a ``decisions`` note, newest first;
3. standing preferences: entries of kind ``preference`` or in a ``preferences`` note, newest first.

Lines are added while the block stays within the budget (CJK-aware tokens, heading included); an entry
is one line, cut at :data:`LINE_TOKENS`, led by the heading it stands under (a hand-written decision log
names each decision in its heading). Entries memtree dated come newest first; undated ones after them,
each note's from its bottom up (notes are appended at the bottom). Disabled banks are left out, as
search leaves them out. The user's own root (``$MEMTREE_HOME``) adds its decisions and preferences too,
each named ``user:PATH``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memtree.notes import entries, store
from memtree.notes.layout import skipped
from memtree.text.terms import estimate_tokens
from memtree.write.conflicts import OpenConflict

HEADER = "## Memory briefing (memtree)"
LINE_TOKENS = 45
"""Tokens of one entry in the briefing; why: a briefing names things, `memtree get` shows them whole, and
at 300 tokens it should name five or six."""
NOTE_KINDS = {"decisions": "decision", "preferences": "preference"}
"""A note with this name holds entries of that kind, metadata or not (bank/project/decisions.md, bank/auto/…)."""


@dataclass(frozen=True)
class Item:
    """One entry the briefing may name: its kind, text, where it is, and when it was written ("" if unknown)."""

    kind: str
    text: str
    path: str
    created: str


def collect(root: Path, disabled: Sequence[str], mark: str = "") -> list[Item]:
    """Every decision and preference entry of bank/, newest first (entries without a date last, by path);
    ``mark`` leads each item's path (``user:`` for the user's own root)."""
    skip = skipped(tuple(disabled))
    notes, _ = store.walk(root, ("bank",))
    found: list[Item] = []
    for note in notes:
        if note.path.startswith(skip):
            continue
        stem_kind = NOTE_KINDS.get(PurePosixPath(note.path).stem, "")
        try:
            text = store.read_note(root / note.path)
        except (OSError, UnicodeDecodeError):
            continue  # a note that cannot be read is check's to report; a briefing goes on without it
        lines = text.split("\n")
        undated: list[Item] = []
        for entry in entries.parse_entries(text):
            kind = entry.meta.kind or stem_kind
            if kind not in ("decision", "preference") or not entry.content:
                continue
            title = _heading(lines, entry.start)
            said = f"{title}: {entry.content}" if title else entry.content
            item = Item(kind, said, mark + note.path, entry.meta.created)
            (found if item.created else undated).append(item)
        found += reversed(undated)
    return newest_first(found)


def newest_first(found: Sequence[Item]) -> list[Item]:
    """The dated items newest first, then the undated ones in the order given."""
    dated = sorted((i for i in found if i.created), key=lambda i: (_negated(i.created), i.path))
    return dated + [i for i in found if not i.created]


def _heading(lines: list[str], start: int) -> str:
    """The title of the nearest heading above line ``start`` (1-based) below the note's first level, or ""."""
    for row in reversed(lines[: start - 1]):
        if row.startswith("#"):
            level = len(row) - len(row.lstrip("#"))
            return row.lstrip("#").strip() if level > 1 else ""
    return ""


def _negated(created: str) -> tuple[int, ...]:
    """A sort key putting later ISO times first."""
    return tuple(-ord(c) for c in created)


def render(conflicts: Sequence[OpenConflict], items: Sequence[Item], budget: int) -> str:
    """The briefing block within ``budget`` tokens; empty when there is nothing to say or no room for it."""
    sections: list[tuple[str, list[str]]] = []
    if conflicts:
        lines = [f"- {c.id}: {_line(c.new.text)} ⟷ {_line(c.old.text)}" for c in conflicts]
        sections.append((f"Open conflicts ({len(conflicts)}; settle with `memtree conflicts`):", lines))
    for kind, title in (("decision", "Decisions, newest first:"), ("preference", "Preferences:")):
        lines = [f"- {_line(i.text)} ({i.path})" for i in items if i.kind == kind]
        if lines:
            sections.append((title, lines))
    if not sections or budget <= 0:
        return ""
    parts = [HEADER]
    for title, lines in sections:
        trial = [*parts, "", title]
        added = 0
        for line in lines:
            if estimate_tokens("\n".join([*trial, line])) > budget:
                break
            trial.append(line)
            added += 1
        if added:
            parts = trial
    if len(parts) == 1:
        return ""
    return "\n".join(parts) + "\n"


def _line(text: str) -> str:
    """``text`` on one line, cut to :data:`LINE_TOKENS` (at a space when there is one)."""
    flat = " ".join(entries.strip_meta(text).split())
    if estimate_tokens(flat) <= LINE_TOKENS:
        return flat
    lo, hi = 0, len(flat)
    while lo < hi:  # the longest prefix within the limit: estimate_tokens grows with the prefix
        mid = (lo + hi + 1) // 2
        if estimate_tokens(flat[:mid] + "…") <= LINE_TOKENS:
            lo = mid
        else:
            hi = mid - 1
    space = flat.rfind(" ", lo // 2, lo)
    return flat[: space if space > 0 else lo].rstrip() + "…"
