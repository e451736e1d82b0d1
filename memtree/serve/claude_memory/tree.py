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
from pathlib import Path, PurePosixPath
from typing import Any

from memtree.notes import store
from memtree.notes import tree as treemod
from memtree.notes.tree import Node, Tree
from memtree.state import RootState
from memtree.text.terms import normalize
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


def note_id(rel: str) -> str:
    """The node id memtree derives from a bank path (``bank/a/b.md`` → ``a/b``; a folder ``bank/a`` → ``a``)."""
    return catalog.node_id_for(rel) if rel.endswith(store.NOTE_SUFFIXES) else catalog.node_id_for(rel + ".md")


def moved(tree: Tree, files: Mapping[str, str], folder: tuple[str, str] | None = None) -> Tree:
    """The tree after the notes ``files`` (old path → new path) moved; ``folder``: (old, new) of a moved folder."""
    nodes = {n.id: n for n in tree.nodes}
    ids: dict[str, str] = {}
    if folder is not None:  # the categories made from the folder and its subfolders move with it
        old_cat, new_cat = note_id(folder[0]), note_id(folder[1])
        for n in tree.nodes:
            if n.path is None and (n.id == old_cat or n.id.startswith(old_cat + "/")):
                ids[n.id] = new_cat + n.id[len(old_cat) :]
    for n in tree.nodes:
        if n.path is not None and n.path in files and n.id == catalog.node_id_for(n.path):
            ids[n.id] = catalog.node_id_for(files[n.path])
    taken = set(nodes) - set(ids)
    for old in sorted(ids):  # an id already used by a node that stays gets catalog's suffix
        new = ids[old]
        while new in taken:
            new += "_"
        ids[old] = new
        taken.add(new)
    out: dict[str, Node] = {}
    for n in tree.nodes:
        new_id = ids.get(n.id, n.id)
        parent = n.parent
        if parent in ids:
            parent = ids[parent]
        elif n.id in ids and parent == _folder(n.id):  # its folder's category: the new folder's
            parent = _folder(new_id)
        keywords = n.keywords
        if n.path is None and n.id in ids:  # a category's own name follows the folder's
            old_name, new_name = normalize(n.id.rsplit("/", 1)[-1]), normalize(new_id.rsplit("/", 1)[-1])
            keywords = tuple(dict.fromkeys(new_name if k == old_name else k for k in keywords))
        path = files.get(n.path, n.path) if n.path else None
        out[new_id] = replace(n, id=new_id, path=path, parent=parent, keywords=keywords, children=())
    for n in list(out.values()):
        if n.parent is not None:
            _category(out, n.parent)
    kids: dict[str, list[str]] = {}
    for n in out.values():
        if n.parent is not None:
            kids.setdefault(n.parent, []).append(n.id)
    return treemod.validate([replace(n, children=tuple(sorted(kids.get(n.id, ())))) for n in out.values()])


def _folder(node_id: str) -> str | None:
    parent = str(PurePosixPath(node_id).parent)
    return None if parent in ("", ".") else parent


def _category(nodes: dict[str, Node], node_id: str) -> None:
    """Make the category ``node_id`` (and those above it) when missing, as memtree.write.catalog does."""
    while node_id not in nodes:
        parent = _folder(node_id)
        nodes[node_id] = Node(node_id, None, catalog.category_keywords(node_id), parent, (), 1.0)
        if parent is None:
            return
        node_id = parent


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
