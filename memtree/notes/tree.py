"""tree-index.json: the node model, load/validate/save, and keyword routing of queries.

The file is human-edited and git-tracked, so it is validated strictly (every error names the
node, or the line and column of bad JSON) and written deterministically: nodes sorted by id,
keys in a fixed order, children sorted, 2-space indent, trailing newline.
"""

from __future__ import annotations

import functools
import os
import unicodedata
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import orjson

from memtree.errors import TreeError
from memtree.notes import store

TREE_FILE = "tree-index.json"
TREE_VERSION = 1
NODE_KEYS = ("id", "path", "keywords", "parent", "children", "weight")
_NODE_KEY_SET = frozenset(NODE_KEYS)
_nfc = functools.partial(unicodedata.normalize, "NFC")


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


class NFCKeys(dict):  # type: ignore[type-arg]
    """A lookup whose keys compare in NFC: macOS writes Hangul file names as NFD, people type NFC."""

    def __setitem__(self, key: str, value: Node) -> None:
        super().__setitem__(unicodedata.normalize("NFC", key), value)

    def __getitem__(self, key: str) -> Node:
        return super().__getitem__(unicodedata.normalize("NFC", key))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(unicodedata.normalize("NFC", key))

    def get(self, key: str, default: Node | None = None) -> Node | None:  # type: ignore[override]
        return super().get(unicodedata.normalize("NFC", key), default)

    def update(self, pairs: Any = (), **_: Any) -> None:  # type: ignore[override]
        dict.update(self, ((_nfc(key), value) for key, value in pairs))


@dataclass(frozen=True)
class Tree:
    """A validated tree: nodes sorted by id, with lookups by id and by path (both compared in NFC)."""

    nodes: tuple[Node, ...] = ()
    version: int = TREE_VERSION
    digest: str = field(default="", compare=False)  # hash of the file it was read from
    by_id: dict[str, Node] = field(default_factory=NFCKeys, compare=False, repr=False)
    by_path: dict[str, Node] = field(default_factory=NFCKeys, compare=False, repr=False)

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


def update(root: Path, change: Callable[[Tree], Tree | None]) -> Tree | None:
    """Apply ``change`` to tree-index.json as it is on disk and save the result (the file's one writer).

    The file is read, changed and saved under the root's write lock; if a person edits it in the
    meantime the change is made again on their version (memtree.notes.store.save), so a hand edit and
    an agent's new node never overwrite each other. ``change`` returns None to leave it alone.
    Returns the tree saved, or None.
    """
    from memtree.errors import ChangedOnDisk
    from memtree.notes import store

    with store.write_lock(root):
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(root, TREE_FILE)
            current = loads(snap.data, None, str(root / TREE_FILE)) if snap.data is not None else Tree()
            fresh = change(current)
            if fresh is None:
                return None
            data = dumps(fresh)
            if data == snap.data:
                return fresh
            try:
                store.save(root, snap, data)
                return fresh
            except ChangedOnDisk:
                continue
    raise ChangedOnDisk(f"{TREE_FILE} kept changing while memtree tried to write it; nothing was written")


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
    nodes = _nodes(doc["nodes"], source)
    tree = validate(nodes, root, source)
    import hashlib

    raw = data.encode() if isinstance(data, str) else data
    object.__setattr__(tree, "digest", hashlib.blake2b(raw, digest_size=16).hexdigest())
    return tree


_NONE = type(None)


def _nodes(raws: list[Any], source: str) -> list[Node]:
    """The nodes of a file's "nodes" list, each checked as :func:`_node` checks it.

    Why two ways: checked one by one, 6,000 nodes took ~15 ms of every cold search. The same checks,
    made field by field over all nodes at once (in C), pass far faster; only when one fails are the
    nodes checked one by one, to name the first bad one exactly as before."""
    if set(map(type, raws)) <= {dict} and all(map(_NODE_KEY_SET.issuperset, raws)):
        ids: list[Any] = list(map(dict.get, raws, repeat("id")))
        paths = list(map(dict.get, raws, repeat("path")))
        keywords = list(map(dict.get, raws, repeat("keywords"), repeat([])))
        parents = list(map(dict.get, raws, repeat("parent")))
        children = list(map(dict.get, raws, repeat("children"), repeat([])))
        weights = list(map(dict.get, raws, repeat("weight"), repeat(1.0)))
        if (
            set(map(type, ids)) <= {str}
            and all(map(str.strip, ids))
            and ids == list(map(str.strip, ids, repeat("/ ")))
            and set(map(type, paths)) <= {str, _NONE}
            and "" not in paths
            and set(map(type, keywords)) <= {list}
            and set(map(type, chain.from_iterable(keywords))) <= {str}
            and set(map(type, parents)) <= {str, _NONE}
            and set(map(type, children)) <= {list}
            and set(map(type, chain.from_iterable(children))) <= {str}
            and set(map(type, weights)) <= {int, float}
            and min(weights, default=0) >= 0
        ):
            return list(map(Node, ids, paths, map(tuple, keywords), parents, map(tuple, children), map(float, weights)))
    return [_node(raw, i, source) for i, raw in enumerate(raws)]


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
    if not raw.keys() <= _NODE_KEY_SET:
        unknown = raw.keys() - _NODE_KEY_SET
        raise TreeError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (allowed: {', '.join(NODE_KEYS)})")
    path = raw.get("path")
    if path is not None and (not isinstance(path, str) or not path):
        raise TreeError(f'{where}: "path" must be a relative file path or null')
    keywords = raw.get("keywords", [])
    if not isinstance(keywords, list) or not all(map(isinstance, keywords, repeat(str))):
        raise TreeError(f'{where}: "keywords" must be a list of strings')
    parent = raw.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise TreeError(f'{where}: "parent" must be a node id or null')
    children = raw.get("children", [])
    if not isinstance(children, list) or not all(map(isinstance, children, repeat(str))):
        raise TreeError(f'{where}: "children" must be a list of node ids')
    weight = raw.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
        raise TreeError(f'{where}: "weight" must be a number ≥ 0 (got {weight!r})')
    return Node(node_id, path, tuple(keywords), parent, tuple(children), float(weight))


class TreeCycle(TreeError):
    """tree-index.json's parents run round a cycle (`memtree check --fix` cuts it: :func:`cut_cycles`)."""


def validate(nodes: Sequence[Node], root: Path | None = None, source: str = TREE_FILE) -> Tree:
    """Check ids, paths, parents, children and cycles; return the Tree or raise TreeError."""
    by_id: dict[str, Node] = {}  # by NFC id: two ids that differ only in normalization are one id
    paths: dict[str, str] = {}
    for n in nodes:
        key = _nfc(n.id)
        if key in by_id:
            raise TreeError(f"{source}: duplicate node id '{n.id}'")
        by_id[key] = n
        if n.path is not None:
            problem = _path_problem(n.path)
            if problem is not None:
                raise TreeError(f"{source}: node '{n.id}': {problem}")
            if n.path in paths:
                raise TreeError(f"{source}: nodes '{paths[n.path]}' and '{n.id}' both point to {n.path}")
            paths[n.path] = n.id

    child_sets = {n.id: set(n.children) for n in nodes}  # why: a category may have thousands of children
    get = by_id.get
    for n in nodes:
        if n.parent is not None and _nfc(n.parent) not in by_id:
            raise TreeError(f"{source}: node '{n.id}' has unknown parent '{n.parent}'")
        for c in n.children:
            child = get(_nfc(c))
            if child is None:
                raise TreeError(f"{source}: node '{n.id}' lists unknown child '{c}'")
            if child.parent != n.id:
                raise TreeError(
                    f"{source}: node '{n.id}' lists child '{c}', but '{c}' has parent "
                    f"{child.parent!r}; make the two agree"
                )
        if n.parent is not None and n.id not in child_sets[n.parent]:
            raise TreeError(f"{source}: node '{n.id}' has parent '{n.parent}', which does not list it in its children")
    rooted: set[str] = set()  # ids whose parents are known to lead up to a top node, not round a cycle
    for n in nodes:
        chain = [n.id]  # in walk order, so the message shows the cycle as it runs
        p = n.parent
        while p is not None and p not in rooted:
            if p in chain:
                raise TreeCycle(f"{source}: parent cycle through node '{n.id}' ({' → '.join([*chain, p])})")
            chain.append(p)
            p = by_id[_nfc(p)].parent
        rooted.update(chain)
    tree = Tree(tuple(nodes))
    if root is not None:
        check_files(tree, root, source=source)
    return tree


def _cut(nodes: Sequence[Node]) -> tuple[list[Node], list[str]]:
    """``nodes`` with every parent cycle cut, and the ids cut: in each cycle the node of the shortest id
    (the one a person most likely meant as the top) loses its parent, which stops listing it."""
    by_id = {n.id: n for n in nodes}
    cut: list[str] = []
    rooted: set[str] = set()
    for n in nodes:
        chain = [n.id]
        p = n.parent
        while p is not None and p not in rooted and p in by_id:
            if p in chain:
                top = min(chain[chain.index(p) :], key=lambda i: (i.count("/"), len(i), i))
                old = by_id[top].parent
                by_id[top] = replace(by_id[top], parent=None)
                if old is not None and old in by_id:
                    kept = tuple(c for c in by_id[old].children if c != top)
                    by_id[old] = replace(by_id[old], children=kept)
                cut.append(top)
                break
            chain.append(p)
            p = by_id[p].parent
        rooted.update(chain)
    return [by_id[n.id] for n in nodes], cut


def cut_cycles(root: Path) -> list[str]:
    """Cut every parent cycle of tree-index.json and save it (under the write lock); the ids made top nodes.

    Nothing is written when the file has no cycle, or when it has another problem too (that one is
    the person's to fix: `memtree check` names it).
    """
    from memtree.errors import ChangedOnDisk

    source = str(root / TREE_FILE)
    with store.write_lock(root):
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(root, TREE_FILE)
            if snap.data is None:
                return []
            try:
                loads(snap.data, None, source)
                return []
            except TreeCycle:
                pass
            except TreeError:
                return []
            doc = orjson.loads(snap.data.removeprefix(b"\xef\xbb\xbf"))
            nodes, cut = _cut(_nodes(doc["nodes"], source))
            try:
                fixed = validate(nodes, None, source)
            except TreeError:
                return []
            try:
                store.save(root, snap, dumps(fixed))
                return cut
            except ChangedOnDisk:
                continue
    raise ChangedOnDisk(f"{TREE_FILE} kept changing while memtree tried to write it; nothing was written")


def dangling(tree: Tree, root: Path, known: Container[str] = ()) -> list[Node]:
    """Nodes whose file is gone (deleted or renamed in an editor); ``known`` paths skip the stat."""
    return [n for n in tree.nodes if n.path and n.path not in known and not os.path.isfile(os.path.join(root, n.path))]


def check_files(tree: Tree, root: Path, known: Container[str] = (), source: str = TREE_FILE) -> None:
    """Every node's file must exist; ``known`` paths (just seen on disk) skip the stat."""
    for n in dangling(tree, root, known)[:1]:
        raise TreeError(
            f"{source}: node '{n.id}' points to {n.path}, which does not exist "
            f"(restore the file, or run `memtree index` to drop the node)"
        )


def check_path(path: str, where: str) -> None:
    """A node path must be relative, inside the root, with forward slashes."""
    problem = _path_problem(path)
    if problem is not None:
        raise TreeError(f"{where}: {problem}")


def _path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a node's path (see :func:`check_path`), or None."""
    if path.startswith("/") or "\\" in path or (len(path) > 1 and path[1] == ":"):
        return f"path {path!r} must be relative to the memory root"
    if ".." in path.split("/"):
        return f"path {path!r} leaves the memory root ('..' is not allowed)"
    return None


def load(root: Path, check_files: bool = True) -> Tree:
    """Load <root>/tree-index.json (an empty tree if absent); node files must exist if checked."""
    path = store.inside(root, TREE_FILE)  # a tree-index.json linked out of the root is refused, not read
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Tree()
    except OSError as exc:
        raise TreeError(f"{path}: cannot read ({exc.strerror})") from None
    # check_path has already refused absolute paths and '..', so every node path is inside the root.
    return loads(data, root if check_files else None, str(path))
