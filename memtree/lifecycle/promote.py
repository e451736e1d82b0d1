"""`memtree promote REF --to user|project`: move one bank entry, with its history, between two roots.

The two roots are the project's and the user's own (``$MEMTREE_HOME``, memtree.notes.root.user_root).
What moves: the entry as it is written — its words, its id, its ``created`` time and every other key of its
metadata — and the older versions it superseded (entries whose ``by=`` names it, and theirs in turn, in any
note of the source bank), so `history` and ``--as-of`` keep answering in the root it went to. They land in
the note of the same path under the target's ``bank/`` (created, with its tree node, when it is missing).

Crash safety — the entry exists in at least one root at every moment: it is written to the target first
(under the target's lock, journaled there), and only then removed from the source (under the source's
lock, journaled there). A process killed between the two leaves it in both; promoting it again finds its
id already in the target, writes nothing there, and finishes the removal. Each root's `memtree undo`
reverts its own half. Nothing is deduplicated against the target's entries: it is a move, not an `add`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memtree.errors import ChangedOnDisk, QueryError
from memtree.lifecycle.edits import locate, parse_ref
from memtree.notes import entries, store
from memtree.write.verbs import recording

if TYPE_CHECKING:
    from memtree.notes.tree import Node
    from memtree.state import RootState

DIRECTIONS = ("user", "project")
"""Where `promote --to` may send an entry: up into the user's root, or down into the project's."""


@dataclass(frozen=True)
class Promoted:
    """What `promote` moved: the entry and its older versions, from which root's note to which."""

    entry_id: str | None  # None: a hand-written entry (it has no id; its words name it)
    to: str  # user or project
    from_root: str  # the root it left (absolute)
    to_root: str  # the root it is in now (absolute)
    path: str  # the note, the same path in both roots
    lines: tuple[int, int]  # the entry's lines in the target's note
    moved: tuple[str, ...]  # every entry moved, oldest first: ids, or PATH:LINE of the source for hand-written
    already: bool = False  # the target held it already (an earlier promote stopped halfway): only removed here


@dataclass(frozen=True)
class _Block:
    path: str
    entry: entries.Entry
    raw: str  # the entry's lines as written, metadata comment and all


def promote(source: RootState, target: RootState, given: str, to: str, now: datetime) -> Promoted:
    """Move the entry ``given`` (its id or PATH:LINE in ``source``) and its older versions into ``target``."""
    if to not in DIRECTIONS:
        raise QueryError(f"--to must be user or project, got {to!r}")
    path, entry = locate(source, parse_ref(source, given))
    if entries.is_retired(entry.meta):
        by = entry.meta.extra.get(entries.BY, "")
        raise QueryError(
            f"{given} is an older version{f' (superseded by {by})' if by else ''}: promote the current entry, "
            "its history moves with it; nothing was written"
        )
    blocks = [*_older(source, path, entry), _block(source, path, entry)]
    node = source.parsed_tree().by_path.get(path)
    already, lines = _write(target, path, blocks, node, now)
    _remove(source, blocks, now)
    moved = tuple(b.entry.meta.id or f"{b.path}:{b.entry.start}" for b in blocks)
    return Promoted(entry.meta.id or None, to, str(source.root), str(target.root), path, lines, moved, already)


def _block(state: RootState, path: str, entry: entries.Entry) -> _Block:
    lines = store.read(state.root, path).text.split("\n")
    return _Block(path, entry, "\n".join(lines[entry.start - 1 : entry.end]))


def _older(state: RootState, path: str, entry: entries.Entry) -> list[_Block]:
    """The versions ``entry`` superseded, and those they superseded, oldest first, in any bank note."""
    if not entry.meta.id:
        return []
    notes, _ = store.walk(state.root, ("bank",))
    texts: dict[str, str] = {}
    for note in notes:
        try:
            texts[note.path] = store.read_note(state.root / note.path)
        except (OSError, UnicodeDecodeError):
            continue
    wanted, found = {entry.meta.id}, []
    seen: set[tuple[str, int]] = {(path, entry.start)}
    while wanted:
        by = wanted
        wanted = set()
        for p, text in texts.items():
            if not any(i in text for i in by):  # most notes: no parse
                continue
            rows = text.split("\n")
            for e in entries.parse_entries(text):
                if e.meta.extra.get(entries.BY) in by and (p, e.start) not in seen:
                    seen.add((p, e.start))
                    found.append(_Block(p, e, "\n".join(rows[e.start - 1 : e.end])))
                    if e.meta.id:
                        wanted.add(e.meta.id)
    found.sort(key=lambda b: (b.entry.meta.created, b.path, b.entry.start))
    return found


def _write(
    target: RootState, path: str, blocks: list[_Block], node: Node | None, now: datetime
) -> tuple[bool, tuple[int, int]]:
    """Append the blocks the target's note lacks (a new note gets the source's node id and keywords); whether it
    held the entry already, and the entry's lines there."""
    last = blocks[-1].entry
    with store.write_lock(target.root), recording(target, "promote", now, summary=_summary(last)) as rec:
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(target.root, path)
            note = _text(snap, target)
            held = set(entries.iter_ids(note))
            have = {e.content for e in entries.parse_entries(note)}
            todo = [b for b in blocks if not _present(b.entry, held, have)]
            if not todo:
                break
            heading = PurePosixPath(path).stem
            for b in todo:
                note = entries.append_entry(note, b.raw, heading)
            try:
                store.save(target.root, snap, note.encode("utf-8"))
            except ChangedOnDisk:
                continue
            rec.ids.extend(i for b in todo if (i := b.entry.meta.id))
            if snap.data is None:
                _add_node(target, path, node)
            break
        else:
            raise ChangedOnDisk(f"{path} kept changing in {target.root} while memtree tried to write it; nothing moved")
    target.refresh_paths([path])
    final = store.read(target.root, path).text
    found = entries.find(final, last.meta.id, last.content) if last.meta.id else None
    if found is None:
        found = next((e for e in reversed(entries.parse_entries(final)) if e.content == last.content), None)
    lines = (found.start, found.end) if found else (0, 0)
    return not todo, lines


def _add_node(target: RootState, path: str, node: Node | None) -> None:
    """A node for the note just created in the target (the source's id and keywords), unless it has one."""
    from memtree.notes import tree as treemod
    from memtree.write.retain import _new_note_nodes, with_nodes

    tree = target.parsed_tree()
    if path in tree.by_path:
        return
    node_id = node.id if node else PurePosixPath(path).with_suffix("").as_posix().removeprefix("bank/")
    new = _new_note_nodes(tree, node_id, path, node.keywords if node else ())
    treemod.update(target.root, lambda current: with_nodes(current, new))
    target.forget_tree()


def _text(snap: store.Snapshot, state: RootState) -> str:
    try:
        return snap.text
    except UnicodeDecodeError:
        where = state.root / snap.rel
        raise QueryError(f"{where} is not UTF-8 text; memtree will not rewrite it; nothing moved") from None


def _present(entry: entries.Entry, ids: set[str], contents: set[str]) -> bool:
    return entry.meta.id in ids if entry.meta.id else entry.content in contents


def _remove(source: RootState, blocks: list[_Block], now: datetime) -> None:
    """Take the blocks out of the source's notes, each note rewritten once, its lines from the bottom up."""
    from memtree.lifecycle import aging, recall

    by_note: dict[str, list[_Block]] = {}
    for b in blocks:
        by_note.setdefault(b.path, []).append(b)
    with store.write_lock(source.root), recording(source, "promote", now, summary=_summary(blocks[-1].entry)) as rec:
        for path, mine in by_note.items():
            for _ in range(store.REWRITE_ATTEMPTS):
                snap = store.read(source.root, path)
                note = snap.text
                now_there = entries.parse_entries(note)
                spans = []
                for b in mine:
                    e = next(
                        (x for x in now_there if x.meta.id == b.entry.meta.id and x.content == b.entry.content),
                        None,
                    )
                    if e is not None:
                        spans.append((e.start, e.end))
                for start, end in sorted(spans, reverse=True):
                    note = entries.remove_lines(note, start, end)
                try:
                    if spans:
                        store.save(source.root, snap, note.encode("utf-8"))
                    break
                except ChangedOnDisk:
                    continue
            else:
                raise ChangedOnDisk(
                    f"{path} kept changing in {source.root}; the entry is in both roots now: promote it again"
                )
            for b in mine:
                recall.drop_source(source.root, path, aging.digest(b.entry.content))
        rec.ids.extend(i for b in blocks if (i := b.entry.meta.id))
    source.refresh_paths([*by_note, recall.HOT_FILE])


def _summary(entry: entries.Entry) -> str:
    return f"{entry.meta.id or 'a hand-written entry'} {entry.content.split(chr(10), 1)[0][:100]}"
