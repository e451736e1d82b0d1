"""Keep tree-index.json in step with bank/: add nodes for new notes, drop nodes of gone ones.

Existing nodes are never rewritten — their keywords, weights and parents are human decisions.
A new note ``bank/a/b.md`` becomes node ``a/b`` under category ``a`` (created if missing), with
keywords from its frontmatter ``keywords:``/``tags:``, its first headings and its most
distinctive terms (TF × IDF against the whole index).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from . import chunks as chunking
from . import store, text
from .bm25 import Segment
from .tree import Node, Tree, validate

AUTO_KEYWORDS = 8
"""Distinctive terms added as keywords of a new node (besides frontmatter and headings)."""
HEADING_KEYWORD_MAX_CHARS = 40
BANK = "bank"


@dataclass(frozen=True)
class CatalogChange:
    """Nodes added and dropped by one catalog update, and the resulting tree."""

    tree: Tree
    added: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...]  # (node id, its missing path)


def node_id_for(path: str) -> str:
    """``bank/identity/values.md`` → ``identity/values``."""
    rel = PurePosixPath(path).relative_to(BANK)
    return str(rel.with_suffix(""))


def update(root: Path, tree: Tree, bank_files: list[str], segments: list[Segment]) -> CatalogChange:
    """Add nodes for bank notes without one and drop nodes whose file is gone."""
    nodes = {n.id: n for n in tree.nodes}
    dropped: list[tuple[str, str]] = []
    for n in list(nodes.values()):
        if n.path and not (root / n.path).is_file():
            dropped.append((n.id, n.path))
            del nodes[n.id]
    for node_id, _ in dropped:
        for other in list(nodes.values()):
            if node_id in other.children:
                nodes[other.id] = replace(other, children=tuple(c for c in other.children if c != node_id))
        for other in list(nodes.values()):
            if other.parent == node_id:  # children of a dropped note node move up
                nodes[other.id] = replace(other, parent=None)
    known_paths = {n.path for n in nodes.values() if n.path}
    n_docs = sum(s.n_live for s in segments) or 1
    added: list[str] = []
    for path in bank_files:
        if path in known_paths:
            continue
        node_id = node_id_for(path)
        while node_id in nodes:  # an id taken by a category or another note
            node_id += "_"
        parent = _ensure_category(nodes, str(PurePosixPath(node_id).parent))
        keywords = suggest_keywords(root / path, segments, n_docs)
        nodes[node_id] = Node(node_id, path, tuple(keywords), parent, (), 1.0)
        if parent:
            p = nodes[parent]
            nodes[parent] = replace(p, children=tuple(sorted({*p.children, node_id})))
        added.append(node_id)
    new_tree = validate(list(nodes.values()), root)
    return CatalogChange(new_tree, tuple(added), tuple(dropped))


def _ensure_category(nodes: dict[str, Node], folder: str) -> str | None:
    if folder in ("", "."):
        return None
    if folder in nodes:
        return folder
    parent = _ensure_category(nodes, str(PurePosixPath(folder).parent))
    name = PurePosixPath(folder).name
    nodes[folder] = Node(folder, None, tuple(dict.fromkeys([text.normalize(name)])), parent, (), 1.0)
    if parent:
        p = nodes[parent]
        nodes[parent] = replace(p, children=tuple(sorted({*p.children, folder})))
    return folder


def suggest_keywords(path: Path, segments: list[Segment], n_docs: int) -> list[str]:
    """Frontmatter keywords/tags, short headings, then the note's most distinctive words."""
    try:
        doc = chunking.parse(store.read_note(path))
    except (OSError, UnicodeDecodeError):
        return []
    out: list[str] = []
    for key in ("keywords", "tags"):
        value = doc.meta.get(key)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        if isinstance(value, list):
            out += [text.normalize(str(v)) for v in value if str(v).strip()]
    for heading in doc.headings[:3]:
        h = text.normalize(heading.strip())
        if h and len(h) <= HEADING_KEYWORD_MAX_CHARS:
            out.append(h)
    surface: dict[str, Counter[str]] = {}
    tf: Counter[str] = Counter()
    for c in doc.chunks:
        for term, word in text.terms_with_surface(c.text):
            if len(term) < 2 or term.isdigit():
                continue
            tf[term] += 1
            surface.setdefault(term, Counter())[word] += 1

    def weight(term: str) -> float:
        df = sum(_df(seg, term) for seg in segments)
        return tf[term] * math.log((n_docs + 1) / (df + 1))

    taken = {t for kw in out for t in text.terms(kw)}
    ranked = sorted((t for t in tf if t not in taken), key=lambda t: (-weight(t), t))
    out += [surface[t].most_common(1)[0][0] for t in ranked[:AUTO_KEYWORDS]]
    return list(dict.fromkeys(out))


def _df(seg: Segment, term: str) -> int:
    i = bisect.bisect_left(seg.terms, term)
    if i < len(seg.terms) and seg.terms[i] == term:
        return seg.offsets[i + 1] - seg.offsets[i]
    return 0
