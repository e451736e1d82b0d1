"""Clashes a merge kept both ways: the ``clash=`` marks memtree's merge driver leaves in notes.

When two clones edit one entry differently, the merge (memtree.write.merge) keeps both versions,
the later one with an id of its own (``e-….1a2b3c``) and ``clash=c-…`` in its comment; prose
both sides rewrote keeps both blocks, the later one's last line marked. The mark travels in the
note with the merge, so every clone lists it: `memtree conflicts` shows each mark as an open
conflict (new = the marked version, old = the one it clashed with) and `conflicts resolve`
settles it — ``--keep new`` or ``old`` removes the other version of an entry (the kept one takes
the entry's id), ``--keep both`` removes the mark. A prose clash is edited by hand, then closed
with ``--keep both``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memtree.errors import MemtreeError
from memtree.notes import entries, store
from memtree.write.conflicts import OpenConflict, Side
from memtree.write.merge import CLASH_KEY


def _parent_id(entry_id: str) -> str | None:
    """The id a clashed version was split from (``e-1.1a2b3c`` → ``e-1``), None for a prose clash."""
    head, dot, tail = entry_id.rpartition(".")
    return head if dot and len(tail) == 6 else None


def _in_note(path: str, note: str) -> list[OpenConflict]:
    found = entries.parse_entries(note)
    out = []
    for i, e in enumerate(found):
        cid = e.meta.extra.get(CLASH_KEY)
        if not cid:
            continue
        parent = _parent_id(e.meta.id)
        other = next((x for x in found if x.meta.id == parent), None) if parent else (found[i - 1] if i else None)
        old = Side(path, other.meta.id, other.content) if other is not None else Side(path, "", "")
        out.append(OpenConflict(cid, e.meta.created, 0.0, Side(path, e.meta.id, e.content), old))
    return out


def find(root: Path) -> list[OpenConflict]:
    """Every clash mark in the bank's notes, as an open conflict."""
    disk, _ = store.walk(root, ("bank",))
    out = []
    for f in disk:
        try:
            data = (root / f.path).read_bytes()
            if f"{CLASH_KEY}=".encode() not in data:
                continue
            out += _in_note(f.path, data.decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return out


def settle(root: Path, clash: OpenConflict, keep: str) -> str:
    """Settle one clash (the caller holds the write lock): what was done, in one line."""
    path = clash.new.path
    parent = _parent_id(clash.new.id)
    if keep != "both" and parent is None:
        raise MemtreeError(
            f"{clash.id} is prose both sides rewrote ({path}): edit the two versions by hand, then "
            f"`memtree conflicts resolve {clash.id} --keep both`"
        )

    def settled(note: str) -> str | None:
        found = entries.parse_entries(note)
        marked = next((e for e in found if e.meta.extra.get(CLASH_KEY) == clash.id), None)
        if marked is None:
            return None
        extra = {k: v for k, v in marked.meta.extra.items() if k != CLASH_KEY}
        if keep == "both":
            unmarked = entries.with_meta(marked, marked.content, replace(marked.meta, extra=extra))
            return entries.replace_lines(note, marked.start, marked.end, unmarked)
        other = next((e for e in found if e.meta.id == parent), None)
        if keep == "old":
            return entries.remove_lines(note, marked.start, marked.end)
        kept = entries.with_meta(marked, marked.content, replace(marked.meta, id=parent or "", extra=extra))
        note = entries.replace_lines(note, marked.start, marked.end, kept)
        if other is not None:
            note = entries.remove_lines(note, other.start, other.end)
        return note

    if not store.rewrite(root, path, settled):
        return f"the clash mark is no longer in {path}; nothing changed"
    return {"both": "both versions kept", "new": "the marked version kept", "old": "the marked version removed"}[keep]
