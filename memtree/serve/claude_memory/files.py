"""The note writes of Claude's memory tool, made memtree's way: create, str_replace and insert.

Every write is sanitized (only the text the model wrote: a secret a person left elsewhere in a note
is theirs to fix, and `memtree check` names it), made through memtree.notes.store under the root's
write lock (atomic, compared with what was read right before the rename), split when the note
passes ``split.max_bytes``, indexed at once, kept in step with tree-index.json
(memtree.serve.claude_memory.tree) and journaled as one change (``memtree undo`` reverts it,
split and node included). Deletes and renames are memtree.serve.claude_memory.moves. Call these
under ``state.lock``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from memtree.api import MemTree
from memtree.errors import ChangedOnDisk, MemtreeError
from memtree.notes import entries, store
from memtree.serve.claude_memory import tree as treeops
from memtree.serve.claude_memory.paths import Refused, Target
from memtree.write.retain import sanitizer_for
from memtree.write.sanitize import MARKER, Sanitizer
from memtree.write.verbs import recording

JOURNAL_COMMAND = "memory {}"
"""How the change journal names a memory-tool write: ``memory create``, ``memory delete``, …"""

Edit = Callable[[str], tuple[str, int, int]]
"""A change to a note's text: the new text and the span of it the model wrote (start, end)."""


@dataclass(frozen=True)
class Written:
    """A note written: its text as saved, what was redacted, the nodes it changed, the parts a split made."""

    rel: str
    text: str
    redacted: tuple[str, ...] = ()
    tree: treeops.TreeChange = field(default_factory=treeops.TreeChange)
    parts: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def create(mt: MemTree, target: Target, text: str, now: datetime) -> Written:
    """Write a new note (never over an existing file)."""
    root, path = mt.state.root, target.shown
    if os.path.lexists(target.full):
        raise Refused(f"File {path} already exists")
    _check_size(mt, target, text)
    clean = sanitizer_for(mt.settings).sanitize(entries.neutralize(text))  # a new note holds no metadata yet
    with store.write_lock(root), recording(mt.state, JOURNAL_COMMAND.format("create"), now, summary=path):
        snap = store.read(root, target.rel)
        if snap.exists:
            raise Refused(f"File {path} already exists")
        try:
            store.save(root, snap, clean.text.encode())
        except ChangedOnDisk:
            raise Refused(f"File {path} already exists") from None
        return _settled(mt, target.rel, clean.text, tuple(sorted({r.kind for r in clean.redactions})), now)


def edit(mt: MemTree, target: Target, change: Edit, now: datetime, command: str) -> Written:
    """Change an existing note; ``change`` may raise Refused, and then nothing is written."""
    root, path = mt.state.root, target.shown
    sanitizer = sanitizer_for(mt.settings)
    with store.write_lock(root), recording(mt.state, JOURNAL_COMMAND.format(command), now, summary=path):
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(root, target.rel)
            if not snap.exists:
                raise Refused(f"The path {path} does not exist. Please provide a valid path.")
            before = note_text(snap, path)
            new, start, end = change(before)
            new, end = own_metadata_only(before, new, start, end)
            clean, kinds = redact_span(sanitizer, new, start, end)
            clean = _past_kept(mt, target.rel, before, clean, now)
            _check_size(mt, target, clean)
            if clean.encode() == snap.data:
                return Written(target.rel, clean, kinds)
            try:
                store.save(root, snap, clean.encode())
                break
            except ChangedOnDisk:
                continue  # a person's edit landed meanwhile: the change is made again on their text
        else:
            raise ChangedOnDisk(f"{target.rel} kept changing while memtree tried to edit it; nothing was written")
        return _settled(mt, target.rel, clean, kinds, now)


def _past_kept(mt: MemTree, rel: str, before: str, after: str, now: datetime) -> str:
    """``after`` with each value the model replaced in place kept, superseded, as a person's edit by hand is
    (memtree.write.handedits): the old words stay above the edited line, which takes a fresh id."""
    from memtree.notes import seen
    from memtree.write import handedits

    if not seen.tracked(rel) or "memtree:" not in before:
        return after
    cfg = mt.settings.retain
    return handedits.supersede(rel, after, seen.blocks(before), now, cfg.merge_threshold, cfg.conflict_threshold)[0]


def note_text(snap: store.Snapshot, path: str) -> str:
    """A note's text, or Refused when it is not UTF-8 text."""
    try:
        return snap.text
    except UnicodeDecodeError:
        raise Refused(f"The file {path} is not UTF-8 text; the memory tool serves Markdown notes") from None


def own_metadata_only(before: str, new: str, start: int, end: int) -> tuple[str, int]:
    """``new`` with the metadata comments the model wrote in ``[start, end)`` made inert, but those it
    carried along from the text it replaced (as often as that text had them); and the span's new end.

    Why: a model copying an entry's ``<!-- memtree: id=… -->`` elsewhere would give two entries one id.
    """
    span = new[start:end]
    if "<!--" not in span:
        return new, end
    outside = entries.comments(new[:start]) + entries.comments(new[end:])
    carried = entries.comments(before) - outside
    fixed = entries.neutralize(span, carried)
    return new[:start] + fixed + new[end:], start + len(fixed)


def redact_span(sanitizer: Sanitizer, text: str, start: int, end: int) -> tuple[str, tuple[str, ...]]:
    """``text`` with the secrets that touch ``[start, end)`` redacted (one joined across its edge too).

    An empty span (a deletion) still catches a secret the join made: it crosses the point.
    """
    found = [r for r in sanitizer.find(text) if r.start < end and r.end > start]
    if not found:
        return text, ()
    parts, position = [], 0
    for r in found:
        parts += [text[position : r.start], MARKER.format(kind=r.kind)]
        position = r.end
    return "".join([*parts, text[position:]]), tuple(sorted({r.kind for r in found}))


def _check_size(mt: MemTree, target: Target, text: str) -> None:
    limit = mt.settings.index.max_note_bytes
    if len(text.encode()) > limit:
        raise Refused(
            f"Cannot write {target.shown}: {len(text.encode()):,} bytes is over index.max_note_bytes "
            f"({limit:,}), past which memtree does not index a note; keep memory in smaller notes"
        )


def _settled(mt: MemTree, rel: str, text: str, redacted: tuple[str, ...], now: datetime) -> Written:
    """After a write: the index, the note's node, and a split when the note passed split.max_bytes."""
    warnings: list[str] = []
    change = treeops.TreeChange()
    try:
        change = treeops.sync(mt.state, [rel])
    except MemtreeError as exc:  # the note is written; the result says why its node could not follow
        warnings.append(f"tree-index.json was not updated: {exc}")
    parts: list[str] = []
    if (mt.state.root / rel).stat().st_size > mt.settings.split.max_bytes:
        try:
            for result in mt.split(str(mt.state.root / rel), now=now):
                parts += result.children
                warnings += result.warnings
        except MemtreeError as exc:
            warnings.append(f"not split yet: {exc}")
            mt.state.refresh_paths([rel])
    return Written(rel, text, redacted, change, tuple(parts), tuple(warnings))
