"""SessionStart's briefing: what an agent should know before the first prompt, in a few lines — or nothing.

Three parts, each only when memory holds something for it, in this order (the budget cuts the last):

1. open conflicts: two entries that may contradict each other, which the person should settle;
2. the newest decisions: entries of kind ``decision`` or in a ``decisions`` note, newest first;
3. standing preferences: entries of kind ``preference`` or in a ``preferences`` note, newest first.

Lines are added while the block stays within the budget (CJK-aware tokens, heading included); an entry
is one line, cut at :data:`LINE_CHARS`. Disabled banks are left out, as search leaves them out.
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
LINE_CHARS = 160
"""Characters of one entry in the briefing; why: a briefing names things, `memtree get` shows them whole."""
NOTE_KINDS = {"decisions": "decision", "preferences": "preference"}
"""A note with this name holds entries of that kind, metadata or not (bank/project/decisions.md, bank/auto/…)."""


@dataclass(frozen=True)
class Item:
    """One entry the briefing may name: its kind, text, where it is, and when it was written ("" if unknown)."""

    kind: str
    text: str
    path: str
    created: str


def collect(root: Path, disabled: Sequence[str]) -> list[Item]:
    """Every decision and preference entry of bank/, newest first (entries without a date last, by path)."""
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
        for entry in entries.parse_entries(text):
            kind = entry.meta.kind or stem_kind
            if kind in ("decision", "preference") and entry.content:
                found.append(Item(kind, entry.content, note.path, entry.meta.created))
    found.sort(key=lambda i: (i.created == "", _negated(i.created), i.path))
    return found


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
    flat = " ".join(entries.strip_meta(text).split())
    return flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1].rstrip() + "…"
