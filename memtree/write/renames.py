"""Notes moved by hand (`git mv`, `mv`, a file manager) found again, and links rewritten after any move.

When `memtree index` (and so `check --fix`) finds a node whose note is gone and a bank note without a
node, the two may be one note under a new name. :func:`detect` pairs them by content: the vanished
note's last committed text (``git show HEAD:path``, when the root is in a repository) or the content
hash the index last recorded for it, against each new note. Identical content, or at least
:data:`RENAME_SIMILARITY` of their lines in common (git's own default rename threshold, 50 %), makes
a pair, the most similar first. The node then follows its note by memtree.write.catalog.moved (the
rule Claude's memory tool uses too): its keywords, weight and place in the tree stay.

:func:`relink` rewrites every ``[[link]]`` to a moved note in the form it was written
(memtree.notes.links.renamed_ref), leaving anchors, aliases and everything else as they were.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memtree.notes import links, store
from memtree.notes.tree import Tree

RENAME_SIMILARITY = 0.5
"""Share of lines two texts must have in common to be one note renamed (git's default, ``-M50%``)."""


def indexed_hashes(index: Any) -> dict[str, str]:
    """The content hash the chunk index last recorded for each note (loaded from disk when not yet)."""
    if not getattr(index, "segments", True) and getattr(index, "persist", False):
        index.load()
    files = getattr(index, "files", {})
    return {path: entry.hash for path, entry in files.items()}


def _lines(text: str) -> Counter[str]:
    """The lines that say something: why not ``---`` or a fence, which every note may share."""
    return Counter(s for s in (line.strip() for line in text.splitlines()) if any(map(str.isalnum, s)))


def similarity(a: str, b: str) -> float:
    """Share of lines two texts have in common (2·common / (lines of a + lines of b)); 1.0 for equal texts."""
    if a == b:
        return 1.0
    la, lb = _lines(a), _lines(b)
    total = sum(la.values()) + sum(lb.values())
    return 2 * sum((la & lb).values()) / total if total else 0.0


def detect(root: Path, tree: Tree, bank: Iterable[str], known: Mapping[str, str]) -> dict[str, str]:
    """Old path → new path for each node whose note is gone and that a new bank note continues.

    ``bank`` lists the bank notes on disk; ``known`` the content hashes the index recorded before it
    saw the notes go. Nothing is read unless a node lost its note and a note has no node.
    """
    on_disk = set(bank)
    gone = [n.path for n in tree.nodes if n.path and n.path not in on_disk and not (root / n.path).is_file()]
    new = sorted(on_disk - {n.path for n in tree.nodes if n.path})
    if not gone or not new:
        return {}
    from memtree.index.chunk_index import content_hash
    from memtree.notes import git

    texts: dict[str, str] = {}
    for path in new:
        try:
            texts[path] = store.read_note(root / path)
        except (OSError, UnicodeDecodeError):
            continue
    pairs: list[tuple[float, str, str]] = []
    for old in gone:
        before = git.committed_text(root, old)
        for path, text in texts.items():
            if before is not None:
                score = similarity(before, text)
            else:
                score = 1.0 if known.get(old) == content_hash(text.encode("utf-8")) else 0.0
            if score >= RENAME_SIMILARITY:
                pairs.append((score, old, path))
    moves: dict[str, str] = {}
    for _, old, path in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if old not in moves and path not in moves.values():
            moves[old] = path
    return moves


def relink(root: Path, moves: Mapping[str, str], before: Tree, after: Tree) -> list[str]:
    """Rewrite the links to the notes ``moves`` (old path → new path) in every note; the notes rewritten.

    Links are resolved as they were before the move (``before``: the tree then); one that still
    leads to the note after it (``after``: a node id that did not change) is left as it is. Call under
    the root's write lock, inside the change being recorded (so `memtree undo` puts them back too).
    """
    if not moves:
        return []
    disk, _ = store.walk(root)
    node_paths = {unicodedata.normalize("NFC", n.id): n.path for n in before.nodes if n.path}
    then = ({f.path for f in disk} - set(moves.values())) | set(moves)
    found = links.scan(root, disk, node_paths).links
    graph = links.Graph(root, found, frozenset(then), node_paths)  # the notes as they were named before
    now = {unicodedata.normalize("NFC", n.id): n.path for n in after.nodes if n.path}
    note = links.lookup(f.path for f in disk)

    def refers(ref: str) -> str | None:
        old = graph.path_of(ref)
        if old is None or old not in moves or links.resolve(ref, now.get, note) == moves[old]:
            return None
        return links.renamed_ref(ref, old, moves[old])

    done: list[str] = []
    for path in sorted(found):
        touched = any(refers(k.note) is not None for k in found[path])
        if touched and store.rewrite(root, path, lambda text: links.relink(text, refers)):
            done.append(path)
    return done
