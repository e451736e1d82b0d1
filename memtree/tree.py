"""tree-index.json: the node model, load/validate/save, and keyword routing of queries.

The file is human-edited and git-tracked, so it is validated strictly (every error names the
node, or the line and column of bad JSON) and written deterministically: nodes sorted by id,
keys in a fixed order, children sorted, 2-space indent, trailing newline.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from . import text
from .errors import TreeError

TREE_FILE = "tree-index.json"
TREE_VERSION = 1
NODE_KEYS = ("id", "path", "keywords", "parent", "children", "weight")
_NODE_KEY_SET = frozenset(NODE_KEYS)


@dataclass(frozen=True)
class Node:
    """One node of the routing tree; ``path`` is None for a pure category node."""

    id: str
    path: str | None = None
    keywords: tuple[str, ...] = ()
    parent: str | None = None
    children: tuple[str, ...] = ()
    weight: float = 1.0

    def to_json(self) -> dict[str, Any]:
        """The node as written to tree-index.json, keys in the fixed order."""
        return {
            "id": self.id,
            "path": self.path,
            "keywords": list(self.keywords),
            "parent": self.parent,
            "children": sorted(self.children),
            "weight": self.weight,
        }


@dataclass(frozen=True)
class Tree:
    """A validated tree: nodes sorted by id, with lookups by id and by path."""

    nodes: tuple[Node, ...] = ()
    version: int = TREE_VERSION
    digest: str = field(default="", compare=False)  # hash of the file it was read from
    by_id: dict[str, Node] = field(default_factory=dict, compare=False, repr=False)
    by_path: dict[str, Node] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(sorted(self.nodes, key=lambda n: n.id)))
        self.by_id.update((n.id, n) for n in self.nodes)
        self.by_path.update((n.path, n) for n in self.nodes if n.path)

    def descendants(self, node_id: str) -> list[Node]:
        """Every node below ``node_id`` (depth first)."""
        out: list[Node] = []
        stack = list(self.by_id[node_id].children)
        seen: set[str] = set()
        while stack:
            child = self.by_id.get(stack.pop())
            if child is None or child.id in seen:
                continue
            seen.add(child.id)
            out.append(child)
            stack.extend(child.children)
        return out


def dumps(tree: Tree) -> bytes:
    """Deterministic bytes of a tree (what save writes)."""
    doc = {"version": tree.version, "nodes": [n.to_json() for n in tree.nodes]}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def loads(data: bytes | str, root: Path | None = None, source: str = TREE_FILE) -> Tree:
    """Parse and validate tree-index.json; with ``root``, node files must exist inside it."""
    if isinstance(data, bytes) and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a byte-order mark, as some Windows editors write
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise TreeError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise TreeError(f'{source}: expected an object with "version" and a "nodes" list')
    version = doc.get("version", TREE_VERSION)
    if version != TREE_VERSION:
        raise TreeError(f"{source}: unsupported version {version!r} (this memtree reads version {TREE_VERSION})")
    extra = set(doc) - {"version", "nodes"}
    if extra:
        raise TreeError(f"{source}: unknown top-level key(s): {', '.join(sorted(extra))}")
    nodes = [_node(raw, i, source) for i, raw in enumerate(doc["nodes"])]
    tree = validate(nodes, root, source)
    import hashlib

    raw = data.encode() if isinstance(data, str) else data
    object.__setattr__(tree, "digest", hashlib.blake2b(raw, digest_size=16).hexdigest())
    return tree


def _node(raw: Any, index: int, source: str) -> Node:
    if not isinstance(raw, dict):
        raise TreeError(f"{source}: nodes[{index}] is not an object")
    node_id = raw.get("id")
    if not isinstance(node_id, str) or not node_id.strip() or node_id != node_id.strip("/ "):
        raise TreeError(
            f'{source}: nodes[{index}] needs an "id": a non-empty string without '
            f"leading or trailing '/' (got {node_id!r})"
        )
    where = f"{source}: node '{node_id}'"
    unknown = raw.keys() - _NODE_KEY_SET
    if unknown:
        raise TreeError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (allowed: {', '.join(NODE_KEYS)})")
    path = raw.get("path")
    if path is not None and (not isinstance(path, str) or not path):
        raise TreeError(f'{where}: "path" must be a relative file path or null')
    keywords = raw.get("keywords", [])
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise TreeError(f'{where}: "keywords" must be a list of strings')
    parent = raw.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise TreeError(f'{where}: "parent" must be a node id or null')
    children = raw.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise TreeError(f'{where}: "children" must be a list of node ids')
    weight = raw.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
        raise TreeError(f'{where}: "weight" must be a number ≥ 0 (got {weight!r})')
    return Node(node_id, path, tuple(keywords), parent, tuple(children), float(weight))


def validate(nodes: Sequence[Node], root: Path | None = None, source: str = TREE_FILE) -> Tree:
    """Check ids, paths, parents, children and cycles; return the Tree or raise TreeError."""
    by_id: dict[str, Node] = {}
    paths: dict[str, str] = {}
    for n in nodes:
        if n.id in by_id:
            raise TreeError(f"{source}: duplicate node id '{n.id}'")
        by_id[n.id] = n
        if n.path is not None:
            check_path(n.path, f"{source}: node '{n.id}'")
            if n.path in paths:
                raise TreeError(f"{source}: nodes '{paths[n.path]}' and '{n.id}' both point to {n.path}")
            paths[n.path] = n.id

    child_sets = {n.id: set(n.children) for n in nodes}  # why: a category may have thousands of children
    for n in nodes:
        if n.parent is not None and n.parent not in by_id:
            raise TreeError(f"{source}: node '{n.id}' has unknown parent '{n.parent}'")
        for c in n.children:
            child = by_id.get(c)
            if child is None:
                raise TreeError(f"{source}: node '{n.id}' lists unknown child '{c}'")
            if child.parent != n.id:
                raise TreeError(
                    f"{source}: node '{n.id}' lists child '{c}', but '{c}' has parent "
                    f"{child.parent!r}; make the two agree"
                )
        if n.parent is not None and n.id not in child_sets[n.parent]:
            raise TreeError(f"{source}: node '{n.id}' has parent '{n.parent}', which does not list it in its children")
    for n in nodes:
        chain = [n.id]  # in walk order, so the message shows the cycle as it runs
        p = n.parent
        while p is not None:
            if p in chain:
                raise TreeError(f"{source}: parent cycle through node '{n.id}' ({' → '.join([*chain, p])})")
            chain.append(p)
            p = by_id[p].parent
    tree = Tree(tuple(nodes))
    if root is not None:
        check_files(tree, root, source=source)
    return tree


def check_files(tree: Tree, root: Path, known: Container[str] = (), source: str = TREE_FILE) -> None:
    """Every node's file must exist; ``known`` paths (just seen on disk) skip the stat."""
    for n in tree.nodes:
        if n.path and n.path not in known and not os.path.isfile(os.path.join(root, n.path)):
            raise TreeError(
                f"{source}: node '{n.id}' points to {n.path}, which does not exist "
                f"(restore the file, or run `memtree index` to drop the node)"
            )


def check_path(path: str, where: str) -> None:
    """A node path must be relative, inside the root, with forward slashes."""
    if path.startswith("/") or "\\" in path or (len(path) > 1 and path[1] == ":"):
        raise TreeError(f"{where}: path {path!r} must be relative to the memory root")
    if ".." in path.split("/"):
        raise TreeError(f"{where}: path {path!r} leaves the memory root ('..' is not allowed)")


def load(root: Path, check_files: bool = True) -> Tree:
    """Load <root>/tree-index.json (an empty tree if absent); node files must exist if checked."""
    path = root / TREE_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Tree()
    except OSError as exc:
        raise TreeError(f"{path}: cannot read ({exc.strerror})") from None
    # check_path has already refused absolute paths and '..', so every node path is inside the root.
    return loads(data, root if check_files else None, str(path))


# --- routing -------------------------------------------------------------------------------


class Route(NamedTuple):
    """A node the query was routed to: its tree score and, per query term, how a keyword matched."""

    node: str
    score: float
    matches: dict[int, tuple[float, str]]  # query term index → (strength, keyword)
    via: str | None = None  # the category node climbed to, when reached by parent fallback

    @property
    def terms(self) -> dict[int, float]:
        """Query term index → match strength."""
        return {qi: s for qi, (s, _) in self.matches.items()}

    @property
    def keywords(self) -> tuple[str, ...]:
        """The keywords that matched, in query order."""
        return tuple(dict.fromkeys(kw for _, kw in self.matches.values()))


class KeywordIndex:
    """Node keywords as sorted terms, so a query term finds its nodes by bisection."""

    def __init__(self, tree: Tree, parts: tuple[list[str], list[tuple[str, str]]] | None = None) -> None:
        if parts is None:
            pairs: list[tuple[str, str, str]] = []  # (term, node id, keyword)
            for n in tree.nodes:
                for kw in n.keywords:
                    for t in dict.fromkeys(text.terms(kw)):
                        pairs.append((t, n.id, kw))
            pairs.sort()
            parts = [p[0] for p in pairs], [(p[1], p[2]) for p in pairs]
        self.terms, self.entries = parts
        self.tree = tree

    def to_json(self) -> dict[str, Any]:
        """What the cache in .memtree/ keeps, keyed by the tree file's digest."""
        return {
            "digest": self.tree.digest,
            "tokenizer": text.TOKENIZER_VERSION,
            "terms": self.terms,
            "nodes": [e[0] for e in self.entries],
            "keywords": [e[1] for e in self.entries],
        }

    @classmethod
    def from_json(cls, tree: Tree, doc: Any) -> KeywordIndex | None:
        """The cached index when it was made from this very tree file, else None."""
        if (
            not isinstance(doc, dict)
            or doc.get("digest") != tree.digest
            or not tree.digest
            or doc.get("tokenizer") != text.TOKENIZER_VERSION
        ):
            return None
        return cls(tree, (doc["terms"], list(zip(doc["nodes"], doc["keywords"]))))

    def matches(self, q: str) -> Iterable[tuple[str, str, float]]:
        """(node id, keyword, strength) for every keyword term related to query term ``q``."""
        terms, entries = self.terms, self.entries
        lo = bisect.bisect_left(terms, q)
        if not text.is_cjk(q):
            for i in range(lo, bisect.bisect_right(terms, q, lo)):
                yield entries[i][0], entries[i][1], text.EXACT
            return
        # every term in [q, q + U+10FFFF) starts with q: exact when equal, else a prefix match
        for i in range(lo, bisect.bisect_left(terms, q + "\U0010ffff", lo)):
            strength = (
                text.relation(q, terms[i])
                if len(q) < text.MIN_STEM
                else (text.EXACT if terms[i] == q else text.PARTIAL)
            )
            if strength:
                yield entries[i][0], entries[i][1], strength
        for size in range(1, len(q)):
            p = q[:size]
            strength = text.relation(q, p)
            if not strength:
                continue
            j = bisect.bisect_left(terms, p)
            while j < len(terms) and terms[j] == p:
                yield entries[j][0], entries[j][1], strength
                j += 1


def route(
    index: KeywordIndex, qterms: Sequence[str], idf: Sequence[float], partial: float = text.PARTIAL
) -> dict[str, Route]:
    """Tree scores for nodes holding files.

    A node's score is ``weight × Σ idf(q)·match(q) / Σ idf(q)`` over the query terms (match 1.0
    exact, ``partial`` for a prefix match), clamped to [0, 1]. When no file node matches, the
    matching category nodes pass their score down to their descendants (parent fallback).
    """
    total = sum(idf) or 1.0
    best: dict[str, dict[int, tuple[float, str]]] = {}
    for qi, q in enumerate(qterms):
        for node_id, kw, strength in index.matches(q):
            s = 1.0 if strength >= 1.0 else partial
            per_node = best.setdefault(node_id, {})
            if s > per_node.get(qi, (0.0, ""))[0]:
                per_node[qi] = (s, kw)
    tree = index.tree
    routes: dict[str, Route] = {}
    categories: list[Route] = []
    for node_id, per_q in best.items():
        node = tree.by_id[node_id]
        raw = sum(idf[qi] * s for qi, (s, _) in per_q.items()) / total
        r = Route(node_id, min(1.0, raw * node.weight), per_q)
        if node.path:
            routes[node_id] = r
        else:
            categories.append(r)
    if routes or not categories:
        return routes
    for cat in sorted(categories, key=lambda r: -r.score):
        for child in tree.descendants(cat.node):
            if child.path and child.id not in routes:
                routes[child.id] = Route(child.id, min(1.0, cat.score * child.weight), cat.matches, via=cat.node)
    return routes
