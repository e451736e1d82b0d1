"""tree-index.json kept in step with what Claude's memory tool does to bank/.

A new note gets its node the way `memtree index` makes one (memtree.write.catalog: id from the
path, category parents, keywords from frontmatter, headings and distinctive words), and the nodes of
notes that are gone are dropped the same way. A moved note keeps its node — keywords, weight and
children are human decisions — with the new path; its id follows the path only when it was
derived from it (``bank/a/b.md`` ↔ ``a/b``), and so does a parent that was its folder's category.
Moving a folder renames the categories made from it. conflicts.json's entries follow moved notes.
Every change goes through notes.tree.update, the file's one writer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.notes.tree import Node, Tree
from memtree.state import RootState
from memtree.write import catalog, conflicts


@dataclass(frozen=True)
class TreeChange:
    """Nodes a memory-tool write added to tree-index.json and dropped from it."""

    added: tuple[Node, ...] = ()
    dropped: tuple[str, ...] = ()
    emptied: tuple[str, ...] = ()  # categories left with no note (memtree.write.catalog.empty_categories)


def sync(state: RootState, new_notes: list[str], gone: bool = False) -> TreeChange:
    """Index ``new_notes``, give those without a node one and drop nodes whose note is gone.

    ``gone``: a note was removed or moved, which only a full check of the notes drops from the index.
    """
    root = state.root
    if gone or not new_notes:
        state.refresh()
    else:
        state.refresh_paths(new_notes)
    segments = [seg for _, seg in state.index.segment_list()]
    found: list[Any] = []  # the catalog's change, the empty categories pruned

    def synced(current: Tree) -> Tree | None:
        wanted = [p for p in new_notes if p not in current.by_path and (root / p).is_file()]
        change = catalog.update(root, current, wanted, segments)
        emptied = catalog.empty_categories(change.tree) if gone else ()  # the folders a delete or rename left
        tree = catalog.without(change.tree, emptied, root) if emptied else change.tree
        found[:] = [change, emptied]
        return tree if change.added or change.dropped or emptied else None

    treemod.update(root, synced)
    state.forget_tree()
    if not found:
        return TreeChange()
    change, emptied = found
    return TreeChange(tuple(change.tree.by_id[i] for i in change.added), tuple(i for i, _ in change.dropped), emptied)


note_id = catalog.folder_node_id
moved = catalog.moved
"""The tree after notes moved: their nodes follow them (the one rule, memtree.write.catalog.moved)."""


@dataclass(frozen=True)
class Moved:
    """A rename: the nodes that followed their notes (old id, new id, new path), and nodes added or dropped."""

    nodes: tuple[tuple[str, str, str], ...]
    tree: TreeChange


def move(
    state: RootState, files: Mapping[str, str], folder: tuple[str, str] | None = None
) -> tuple[tuple[str, str, str], ...]:
    """Record a move in tree-index.json and conflicts.json (caller holds the write lock).

    Returns (old id, new id, new path) of every note node that moved.
    """
    root = state.root
    followed: list[tuple[str, str, str]] = []

    def change(current: Tree) -> Tree:
        after = moved(current, files, folder)
        followed[:] = [
            (n.id, after.by_path[files[n.path]].id, files[n.path])
            for n in current.nodes
            if n.path is not None and n.path in files
        ]
        return after

    treemod.update(root, change)
    state.forget_tree()
    if (root / conflicts.CONFLICTS_FILE).is_file():
        store.rewrite(root, conflicts.CONFLICTS_FILE, lambda text: _moved_conflicts(text, files))
    return tuple(followed)


def _moved_conflicts(text: str, files: Mapping[str, str]) -> str | None:
    open_ = conflicts.loads(text)
    after = [
        replace(
            c,
            new=replace(c.new, path=files.get(c.new.path, c.new.path)),
            old=replace(c.old, path=files.get(c.old.path, c.old.path)),
        )
        for c in open_
    ]
    return None if after == open_ else conflicts.dumps(after).decode()


def notes_under(root: Path, rel: str) -> tuple[list[str], list[str]]:
    """The notes in the folder ``rel`` (root-relative, sorted), and the other files there (links not followed)."""
    notes: list[str] = []
    others: list[str] = []
    for folder, dirs, files in os.walk(root / rel, followlinks=False):
        dirs.sort()
        for name in files:
            full = Path(folder) / name
            path = full.relative_to(root).as_posix()
            note = name.endswith(store.NOTE_SUFFIXES) and not store.ignored(name) and not full.is_symlink()
            (notes if note else others).append(path)
    return sorted(notes), sorted(others)


def split_bound(tree: Tree, paths: set[str]) -> tuple[str, str] | None:
    """A (moving, staying) pair of notes joined by a split, which must move together; None when there is none.

    Why: a split parent links to its parts by relative path (``b/part.md``), so moving one without
    the other breaks the links; moving the folder that holds both keeps them.
    """
    for n in tree.nodes:
        parent = tree.by_id.get(n.parent) if n.parent else None
        if n.path is None or parent is None or parent.path is None:
            continue
        if (n.path in paths) != (parent.path in paths):
            return (n.path, parent.path) if n.path in paths else (parent.path, n.path)
    return None
