"""`memtree links REF`: the links of one note, out and in, over the root's notes and nodes.

The links themselves are parsed, cached and resolved in memtree.notes.links; this module only puts
a root's notes (memtree.notes.store.walk) and nodes (tree-index.json) in front of them.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtree.errors import QueryError
from memtree.notes import links, store

if TYPE_CHECKING:
    from memtree.notes.links import Graph, Resolved
    from memtree.notes.tree import Tree
    from memtree.state import RootState


@dataclass(frozen=True)
class NoteLinks:
    """A note's links: those it holds (``outgoing``) and those of other notes that lead to it (``incoming``)."""

    path: str
    node: str | None
    outgoing: tuple[Resolved, ...]
    incoming: tuple[Resolved, ...]


def graph(state: RootState, tree: Tree | None = None) -> Graph:
    """Every link of the root's notes (bank/, memory/, recall/, as the chunk index lists them), resolved
    against the nodes of ``tree`` (default: the root's, which must be readable)."""
    state.fresh()  # Why the index's notes: it has just looked at the disk, so no second walk is needed
    files = [store.stat_of(store.FileStat, (p, e.tier, e.mtime_ns, e.size)) for p, e in state.index.files.items()]
    tree = state.parsed_tree() if tree is None else tree
    node_paths = {unicodedata.normalize("NFC", n.id): n.path for n in tree.nodes if n.path}
    return links.scan(state.root, files, node_paths)


def note_links(state: RootState, ref: str) -> NoteLinks:
    """The links out of and into the note ``ref`` names (a node id, a path, ``.md`` optional, or a link's
    target: ``note#entry-id`` names its note, as `get` reads it)."""
    store.check_name(ref, "links")
    found = graph(state)
    path = found.path_of(ref) or found.path_of(links.target(ref).note)
    if path is None:
        raise QueryError(
            f"no node or note named {ref[:200]!r} in {state.root} "
            "(memtree links names a note by node id or path: identity/values, bank/identity/values.md)"
        )
    node = state.parsed_tree().by_path.get(path)
    return NoteLinks(path, node.id if node else None, tuple(found.outgoing(path)), tuple(found.incoming(path)))
