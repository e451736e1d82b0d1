"""Keep tree-index.json in step with bank/: add nodes for new notes, drop nodes of gone ones.

Existing nodes are never rewritten — their keywords, weights and parents are human decisions.
A new note ``bank/a/b.md`` becomes node ``a/b`` under category ``a`` (created if missing), with
keywords from its frontmatter ``keywords:``/``tags:``, its first headings and its most
distinctive terms (TF × IDF against the whole index) — but none that holds a secret. A note that
moved keeps its node (:func:`moved`), whoever moved it.

Why one module over 300 lines: adding, dropping and moving nodes are one rule, how nodes follow notes.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from memtree.index.chunk_index import KEYWORD_MIN_TF, Parsed
from memtree.index.segment import Segment
from memtree.notes import chunks as chunking
from memtree.notes import store
from memtree.notes.entries import strip_meta
from memtree.notes.tree import Node, Tree, validate
from memtree.text import terms as text

AUTO_KEYWORDS = 8
"""Distinctive terms added as keywords of a new node (besides frontmatter and headings)."""
"""A word must occur at least this often in a note to be one of its topics; why: a word seen once
routes queries to a note that is not about it (measured: synth hit@5 0.684 → see docs/benchmarks.md)."""
HEADING_KEYWORD_MAX_CHARS = 40
BANK = "bank"


@dataclass(frozen=True)
class CatalogChange:
    """Nodes added and dropped by one catalog update, and the resulting tree."""

    tree: Tree
    added: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...]  # (node id, its missing path)


def node_id_for(path: str) -> str:
    """``bank/identity/values.md`` → ``identity/values``, in NFC whatever form the file name is in."""
    rel = PurePosixPath(path).relative_to(BANK)
    return unicodedata.normalize("NFC", str(rel.with_suffix("")))


def update(
    root: Path,
    tree: Tree,
    bank_files: list[str],
    segments: list[Segment],
    parsed: Mapping[str, Parsed] | None = None,
) -> CatalogChange:
    """Add nodes for bank notes without one and drop nodes whose file is gone.

    ``parsed`` holds notes the index has just read (the document and its term counts).
    """
    nodes = {n.id: n for n in tree.nodes}
    dropped: list[tuple[str, str]] = []
    for n in list(nodes.values()):
        if n.path and not (root / n.path).is_file():
            dropped.append((n.id, n.path))
            del nodes[n.id]
    gone = {node_id for node_id, _ in dropped}
    for other in list(nodes.values()):
        if gone.intersection(other.children):
            nodes[other.id] = replace(other, children=tuple(c for c in other.children if c not in gone))
        if other.parent in gone:  # children of a dropped note node move up
            nodes[other.id] = replace(nodes[other.id], parent=None)
    known_paths = {n.path for n in nodes.values() if n.path}
    n_docs = sum(s.n_live for s in segments) or 1
    added: list[str] = []
    new_files = [p for p in bank_files if p not in known_paths]
    df = document_frequencies(segments) if new_files else {}
    children: dict[str, list[str]] = {}  # parent → its new notes, added once at the end
    for path in new_files:
        node_id = node_id_for(path)
        while node_id in nodes:  # an id taken by a category or another note
            node_id += "_"
        parent = _ensure_category(nodes, str(PurePosixPath(node_id).parent))
        keywords = suggest_keywords(root / path, df, n_docs, (parsed or {}).get(path))
        nodes[node_id] = Node(node_id, path, tuple(keywords), parent, (), 1.0)
        if parent:
            children.setdefault(parent, []).append(node_id)
        added.append(node_id)
    # Why at the end: re-sorting a folder's children for each new note was quadratic in a flat bank/
    for parent, ids in children.items():
        p = nodes[parent]
        nodes[parent] = replace(p, children=tuple(sorted({*p.children, *ids})))
    new_tree = validate(list(nodes.values()), root)
    return CatalogChange(new_tree, tuple(added), tuple(dropped))


def category_keywords(node_id: str) -> tuple[str, ...]:
    """The keywords memtree gives a category it makes for a folder: the folder's name."""
    return (text.normalize(PurePosixPath(node_id).name),)


def empty_categories(tree: Tree) -> tuple[str, ...]:
    """Category nodes that hold no note (nor any node but other such categories) and nothing a person
    set: their keywords are still the folder's name and their weight the default. Sorted.

    Why keep the others: a category with keywords of its own routes queries, a human decision.
    """
    kids: dict[str, set[str]] = {}
    for n in tree.nodes:
        kids.setdefault(n.id, set()).update(n.children)
        if n.parent is not None:
            kids.setdefault(n.parent, set()).add(n.id)
    made = {
        n.id
        for n in tree.nodes
        if n.path is None and set(n.keywords) <= set(category_keywords(n.id)) and n.weight == 1.0
    }
    empty: set[str] = set()
    while True:
        more = {i for i in made - empty if kids.get(i, set()) <= empty}
        if not more:
            return tuple(sorted(empty))
        empty |= more


def without(tree: Tree, ids: Iterable[str], root: Path | None = None) -> Tree:
    """``tree`` without the nodes ``ids`` (no longer anyone's children)."""
    gone = set(ids)
    kept = [
        replace(
            n, children=tuple(c for c in n.children if c not in gone), parent=None if n.parent in gone else n.parent
        )
        for n in tree.nodes
        if n.id not in gone
    ]
    return validate(kept, root)


def folder_node_id(rel: str) -> str:
    """The node id memtree derives from a bank path (``bank/a/b.md`` → ``a/b``; a folder ``bank/a`` → ``a``)."""
    return node_id_for(rel) if rel.endswith(store.NOTE_SUFFIXES) else node_id_for(rel + ".md")


def moved(tree: Tree, files: Mapping[str, str], folder: tuple[str, str] | None = None) -> Tree:
    """The tree after the notes ``files`` (old path → new path) moved; ``folder``: (old, new) of a moved folder.

    A moved note keeps its node — keywords, weight and children are human decisions — with the new
    path; its id follows the path only when it was derived from it (``bank/a/b.md`` ↔ ``a/b``), and so
    does a parent that was its folder's category. Moving a folder renames the categories made from it.
    Every rename uses this one rule: Claude's memory tool, and a note moved by hand (`check --fix`).
    """
    nodes = {n.id: n for n in tree.nodes}
    ids: dict[str, str] = {}
    if folder is not None:  # the categories made from the folder and its subfolders move with it
        old_cat, new_cat = folder_node_id(folder[0]), folder_node_id(folder[1])
        for n in tree.nodes:
            if n.path is None and (n.id == old_cat or n.id.startswith(old_cat + "/")):
                ids[n.id] = new_cat + n.id[len(old_cat) :]
    for n in tree.nodes:
        if n.path is not None and n.path in files and n.id == node_id_for(n.path):
            ids[n.id] = node_id_for(files[n.path])
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
            old_name, new_name = text.normalize(n.id.rsplit("/", 1)[-1]), text.normalize(new_id.rsplit("/", 1)[-1])
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
    return validate([replace(n, children=tuple(sorted(kids.get(n.id, ())))) for n in out.values()])


def _folder(node_id: str) -> str | None:
    parent = str(PurePosixPath(node_id).parent)
    return None if parent in ("", ".") else parent


def _category(nodes: dict[str, Node], node_id: str) -> None:
    """Make the category ``node_id`` (and those above it) when missing, as :func:`update` does."""
    while node_id not in nodes:
        parent = _folder(node_id)
        nodes[node_id] = Node(node_id, None, category_keywords(node_id), parent, (), 1.0)
        if parent is None:
            return
        node_id = parent


def _ensure_category(nodes: dict[str, Node], folder: str) -> str | None:
    if folder in ("", "."):
        return None
    if folder in nodes:
        return folder
    parent = _ensure_category(nodes, str(PurePosixPath(folder).parent))
    nodes[folder] = Node(folder, None, category_keywords(folder), parent, (), 1.0)
    if parent:
        p = nodes[parent]
        nodes[parent] = replace(p, children=tuple(sorted({*p.children, folder})))
    return folder


def document_frequencies(segments: list[Segment]) -> dict[str, int]:
    """Chunk-level document frequency of every index term."""
    df: dict[str, int] = {}
    for seg in segments:
        offsets = seg.offsets
        for i, term in enumerate(seg.terms):
            df[term] = df.get(term, 0) + offsets[i + 1] - offsets[i]
    return df


def suggest_keywords(path: Path, df: dict[str, int], n_docs: int, parsed: Parsed | None = None) -> list[str]:
    """Frontmatter keywords/tags, short headings, then the note's most distinctive words.

    ``parsed`` (the note as the index has just read it) saves reading and tokenizing it again.
    """
    tf: Mapping[str, int]
    surfaces: Mapping[str, str] | None = None
    if parsed is not None:
        doc, tf, surfaces = parsed
    else:
        try:
            doc = chunking.parse(store.read_note(path))
        except (OSError, UnicodeDecodeError):
            return []
        tf = Counter(t for c in doc.chunks for t in text.terms(strip_meta(c.text)))
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

    taken = {t for kw in out for t in text.terms(kw)}
    if MARKER_TERM in tf:  # Why: `[REDACTED:github-token]` is the sanitizer's marker, not what the note is about
        taken |= marker_terms()
    log_n = math.log(n_docs + 1)
    # TF × IDF, best first, ties by the term itself so the choice is deterministic
    scored = (
        (-n * (log_n - math.log(df.get(t, 0) + 1)), t)
        for t, n in tf.items()
        if n >= KEYWORD_MIN_TF and t not in taken and len(t) >= 2 and not t.isdigit() and not t.startswith("@")
    )
    # Why sorted and not heapq.nsmallest (the same list): a note has a few dozen frequent terms, which C sorts faster
    ranked = [t for _, t in sorted(scored)[:AUTO_KEYWORDS]]
    if surfaces is None:
        surfaces = text.first_surfaces(strip_meta("\n".join(c.text for c in doc.chunks)), set(ranked))
    out += [surfaces.get(t, t) for t in ranked]
    return _without_secrets(list(dict.fromkeys(out)))


MARKER_TERM = text.terms("REDACTED")[0]
"""The index term of the word every sanitizer marker holds."""


@functools.cache
def marker_terms() -> frozenset[str]:
    """The words of every ``[REDACTED:kind]`` marker: never a note's keyword where its note holds a marker."""
    from memtree.write.sanitize import BUILTIN_RULES, CUSTOM_KIND

    kinds = {r.kind for r in BUILTIN_RULES} | {CUSTOM_KIND}
    return frozenset({MARKER_TERM, *(t for kind in kinds for t in text.terms(kind))})


def _without_secrets(keywords: list[str]) -> list[str]:
    """The keywords but those holding a secret (built-in rules): a hand-written note's heading or
    frontmatter must not be copied into tree-index.json and keywords.json."""
    from memtree.write.sanitize import sanitize

    joined = "\n".join(keywords)  # why one scan: a per-keyword call would cost an index build ~15 scans per note
    found = sanitize(joined).redactions
    if not found:
        return keywords
    kept, start = [], 0
    for keyword in keywords:
        end = start + len(keyword)
        if not any(r.start < end and r.end > start for r in found):
            kept.append(keyword)
        start = end + 1
    return kept
