"""``delete`` and ``rename`` of Claude's memory tool: notes archived or moved, never lost.

A delete copies each note whole to the same path under ``bank/_archive/`` (memtree.lifecycle.aging's
archive, never searched) with a line saying when, from where and why, then removes it — only if it
still holds the bytes copied (memtree.notes.store.remove). A rename writes each note at its new
path and removes the old one the same way, keeping its modification time (decay and recency read
it). Both run under the root's write lock as one journaled change (``memtree undo`` puts it back),
then bring tree-index.json and the index in step (memtree.serve.claude_memory.tree). Files in a
folder that are not notes are left in place by a delete and carried by a rename (not journaled).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memtree.api import MemTree
from memtree.errors import ChangedOnDisk
from memtree.lifecycle import aging
from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.serve.claude_memory import tree as treeops
from memtree.serve.claude_memory.files import JOURNAL_COMMAND, note_text
from memtree.serve.claude_memory.paths import Refused, Target, shown
from memtree.write import renames
from memtree.write.verbs import recording

WHY_DELETED = "deleted through Claude's memory tool"
"""What an archived note's mark says about why it left bank/."""


@dataclass(frozen=True)
class Archived:
    """A delete: the notes moved to bank/_archive/, files left in place, the nodes dropped."""

    notes: tuple[str, ...]
    left: tuple[str, ...]
    tree: treeops.TreeChange


def delete(mt: MemTree, target: Target, path: str, now: datetime) -> Archived:
    """Move a note, or every note of a folder, to bank/_archive/ (the files leave bank/, their text stays)."""
    root = mt.state.root
    if target.is_root:
        raise Refused("Cannot delete the /memories directory itself")
    if target.is_tier:
        raise Refused(f"Cannot delete {target.shown}, a tier of the memory: delete the notes inside it")
    if not os.path.lexists(target.full):
        raise Refused(f"The path {path} does not exist")
    stamp = now.strftime("%Y-%m-%d")
    with store.write_lock(root), recording(mt.state, JOURNAL_COMMAND.format("delete"), now, summary=target.shown):
        folder = target.full.is_dir()
        notes, left = treeops.notes_under(root, target.rel) if folder else ([target.rel], [])
        for rel in notes:  # all readable first: a folder is archived whole or not at all
            note_text(store.read(root, rel), shown(rel))
        for rel in notes:
            _archive(root, rel, stamp)
        if folder:
            _remove_empty(target.full)
        _prune(root, target.rel)
        return Archived(tuple(notes), tuple(left), treeops.sync(mt.state, [], gone=True))


def _archive(root: Path, rel: str, stamp: str) -> None:
    for _ in range(store.REWRITE_ATTEMPTS):
        snap = store.read(root, rel)
        if not snap.exists:
            return
        body = snap.text.rstrip("\n")
        mark = f"<!-- memtree: archived={stamp}; from={rel}:1-{body.count(chr(10)) + 1}; why={WHY_DELETED} -->"
        aging.copy_to_archive(root, rel, [f"{mark}\n{body}"])
        try:
            store.remove(root, snap)
            return
        except ChangedOnDisk:
            continue  # written to meanwhile: its new text is archived too, then it goes
    raise ChangedOnDisk(f"{rel} kept changing while memtree tried to archive it; it is still in place")


def rename(mt: MemTree, old: Target, new: Target, paths: tuple[str, str], now: datetime) -> treeops.Moved:
    """Move a note or a folder of notes inside bank/; their nodes follow (see memtree.serve.claude_memory.tree)."""
    root = mt.state.root
    if old.is_root:
        raise Refused("Cannot rename the /memories directory itself")
    if old.is_tier or new.is_tier or new.is_root:
        raise Refused(f"Cannot rename {old.shown} to {new.shown}: a tier of the memory is neither moved nor replaced")
    if not os.path.lexists(old.full):
        raise Refused(f"The path {paths[0]} does not exist")
    if os.path.lexists(new.full):
        raise Refused(f"The destination {paths[1]} already exists")
    if new.rel.startswith(old.rel + "/"):
        raise Refused(f"Cannot rename {old.shown} to {new.shown}: a folder cannot move into itself")
    folder = old.full.is_dir()
    if not folder and not new.rel.endswith(store.NOTE_SUFFIXES):
        raise Refused(f"Cannot rename {old.shown} to {new.shown}: memtree keeps memory as Markdown notes; name it *.md")
    summary = f"{old.shown} → {new.shown}"
    with store.write_lock(root), recording(mt.state, JOURNAL_COMMAND.format("rename"), now, summary=summary):
        notes, others = treeops.notes_under(root, old.rel) if folder else ([old.rel], [])
        files = {rel: new.rel + rel[len(old.rel) :] for rel in notes}
        before = treemod.load(root, check_files=False)
        bound = treeops.split_bound(before, set(files))
        if bound:
            raise Refused(
                f"Cannot rename {old.shown}: {shown(bound[0])} and {shown(bound[1])} are parts of one split note, "
                "linked by relative paths; rename the folder that holds both"
            )
        for src, dst in files.items():
            _move_note(root, src, dst)
        for rel in others:
            _move_other(root, rel, new.rel + rel[len(old.rel) :])
        if folder:
            _remove_empty(old.full)
        _prune(root, old.rel)
        renamed = treeops.move(mt.state, files, (old.rel, new.rel) if folder else None)
        renames.relink(root, files, before, treemod.load(root, check_files=False))  # links to them follow
        return treeops.Moved(renamed, treeops.sync(mt.state, list(files.values()), gone=True))


def _move_note(root: Path, src: str, dst: str) -> None:
    """Write the note at ``dst`` and remove it at ``src`` (never over a file, never losing a write made meanwhile)."""
    for _ in range(store.REWRITE_ATTEMPTS):
        snap = store.read(root, src)
        if snap.data is None:
            return
        placed = store.read(root, dst)
        if placed.exists:
            raise Refused(f"The destination {shown(dst)} already exists")
        try:
            written = store.save(root, placed, snap.data)
        except ChangedOnDisk:
            raise Refused(f"The destination {shown(dst)} already exists") from None
        with contextlib.suppress(OSError):  # Why: decay and recency date undated entries by the note's mtime
            st = os.stat(snap.path)
            os.utime(written.path, ns=(st.st_atime_ns, st.st_mtime_ns))
        try:
            store.remove(root, snap)
            return
        except ChangedOnDisk:
            store.remove(root, written)  # written to meanwhile: move what it holds now
    raise ChangedOnDisk(f"{src} kept changing while memtree tried to move it; it is still in place")


def _move_other(root: Path, src: str, dst: str) -> None:
    """A file that is not a note goes with its folder as it is (renamed, not journaled)."""
    try:
        (root / dst).parent.mkdir(parents=True, exist_ok=True)
        store.inside(root, dst)
        if not os.path.lexists(root / dst):
            os.rename(root / src, root / dst)
    except OSError as exc:
        raise store.refused(dst, exc) from None


def _remove_empty(folder: Path) -> None:
    """Remove the folders under ``folder`` (and it) that are empty, deepest first."""
    for dirpath, _, _ in sorted(os.walk(folder, followlinks=False), key=lambda d: -len(d[0])):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


def _prune(root: Path, rel: str) -> None:
    """Remove the folders above ``rel`` that its leaving made empty, up to (not including) the tier."""
    parent = Path(rel).parent
    while len(parent.parts) > 1:
        try:
            os.rmdir(root / parent)  # only ever an empty folder
        except OSError:
            return
        parent = parent.parent
