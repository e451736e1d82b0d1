"""Query files for ``memtree eval``: JSON Lines of queries and their known answers, validated.

The query file is JSON Lines (UTF-8, blank lines skipped), one object per line::

    {"query": "크론 스케줄은 몇 시?", "expected": ["technical/cron-design"], "category": "ops", "id": "q1"}

``expected`` lists the right answers, each one of
  - a string: a node id of tree-index.json, or a note path relative to the root ("bank/tools/pytest.md");
  - ``{"path": "bank/x.md", "lines": [start, end]}``: lines 1-based and inclusive ("lines" left out: the whole note);
  - ``{"node": "technical/cron-design"}``.
An empty or missing ``expected``, or ``"unanswerable": true``, makes the query unanswerable: the right answer
is no hits. ``category`` and ``id`` are optional (the id defaults to ``line-N``).

The shared benchmark's queries.jsonl (``materialize.py``) is read as it is:
``{"id", "query", "relevant": [doc ids], "answerable", "category"}``, each doc id resolved to its path and
lines through spans.jsonl (``--spans``, else the spans.jsonl beside the query file). Relevant docs missing
from spans.jsonl were held out of the corpus and are ignored, as the shared score.py does.

A hit finds an answer (chunk level) when it is in the answer's note, its lines overlap the answer's and it
spans at most ``max_span`` lines (30, score.py's rule); a whole-note answer takes any hit in the note; a node
answer takes a hit of that node or in its note (for a category node: in any note below it). File level: the
hit is in the answer's note.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memtree.errors import MemtreeError
from memtree.notes.tree import Tree

if TYPE_CHECKING:
    pass

MAX_SPAN = 30
"""Most lines a chunk-level hit may span (the shared score.py's --max-span)."""
HIT_DEPTH = 5
"""hit@5 and file hit@5: the first right hit within this many."""
MRR_DEPTH = 10
"""MRR@10: a right hit further down scores 0, as in score.py."""
SPANS_FILE = "spans.jsonl"


class QueryFileError(MemtreeError):
    """A query or spans file is unreadable or invalid; the message names the file and line."""


@dataclass(frozen=True)
class Found:
    """Where one search hit is: its note, its lines and its node."""

    path: str
    lines: tuple[int, int]
    node: str | None = None


@dataclass(frozen=True)
class Target:
    """One right answer: lines of a note, a whole note, or a node (its note, or every note below it)."""

    paths: frozenset[str]
    lines: tuple[int, int] | None = None
    node: str | None = None

    def in_file(self, hit: Found) -> bool:
        """The hit is in this answer's note (or is this node's)."""
        return hit.path in self.paths or (self.node is not None and hit.node == self.node)

    def holds(self, hit: Found, max_span: int = MAX_SPAN) -> bool:
        """The hit finds this answer at chunk level."""
        if not self.in_file(hit):
            return False
        if self.lines is None:
            return True
        start, end = hit.lines
        return end - start + 1 <= max_span and start <= self.lines[1] and end >= self.lines[0]


@dataclass(frozen=True)
class Query:
    """A query and its right answers (none: unanswerable)."""

    id: str
    text: str
    targets: tuple[Target, ...] = ()
    category: str | None = None
    line: int = 0

    @property
    def answerable(self) -> bool:
        """Whether the right answer is some hit rather than none."""
        return bool(self.targets)


def decode_lines(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSON Lines text with their 1-based line numbers; blank lines skipped."""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise QueryFileError(f"{source}, line {n}: not valid JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise QueryFileError(f"{source}, line {n}: expected a JSON object, got {type(obj).__name__}")
        out.append((n, obj))
    if not out:
        raise QueryFileError(f"{source}: no queries (the file is empty)")
    return out


def _lines(value: Any, where: str) -> tuple[int, int]:
    ok = isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
    if not ok or not 1 <= value[0] <= value[1]:
        raise QueryFileError(f"{where}: lines must be [start, end] with 1 <= start <= end, got {value!r}")
    return value[0], value[1]


def parse_spans(text: str, source: str) -> dict[str, Target]:
    """spans.jsonl of the shared benchmark: doc id → its note and lines."""
    spans: dict[str, Target] = {}
    for n, obj in decode_lines(text, source):
        where = f"{source}, line {n}"
        doc, path = obj.get("id"), obj.get("path")
        if not isinstance(doc, str) or not isinstance(path, str):
            raise QueryFileError(f'{where}: a span needs a string "id" and "path"')
        if doc in spans:
            raise QueryFileError(f"{where}: doc id {doc!r} appears twice")
        spans[doc] = Target(frozenset({path}), _lines(obj.get("lines"), where))
    return spans


def uses_spans(objs: Sequence[tuple[int, dict[str, Any]]]) -> bool:
    """Whether any query names its answers by the shared benchmark's doc ids ("relevant")."""
    return any("relevant" in obj and "expected" not in obj for _, obj in objs)


def build_queries(
    objs: Sequence[tuple[int, dict[str, Any]]],
    source: str,
    tree: Tree,
    note_path: Callable[[str], str | None],
    spans: Mapping[str, Target] | None = None,
) -> tuple[Query, ...]:
    """Validated queries from decoded lines; node ids are looked up in ``tree``, paths with ``note_path``.

    ``note_path`` turns a path as written into the root-relative path of a note, or None if there is none.
    """
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for n, obj in objs:
        where = f"{source}, line {n}"
        text, qid, category = obj.get("query"), obj.get("id", f"line-{n}"), obj.get("category")
        if not isinstance(text, str) or not text.strip():
            raise QueryFileError(f'{where}: "query" must be a non-empty string')
        if type(qid) not in (str, int):
            raise QueryFileError(f'{where}: "id" must be a string or an integer')
        if category is not None and not isinstance(category, str):
            raise QueryFileError(f'{where}: "category" must be a string')
        if str(qid) in seen:
            raise QueryFileError(f"{where}: id {str(qid)!r} was already used on line {seen[str(qid)]}")
        seen[str(qid)] = n
        targets = _targets(obj, where, tree, note_path, spans)
        queries.append(Query(str(qid), text, targets, category, n))
    return tuple(queries)


def _targets(
    obj: dict[str, Any],
    where: str,
    tree: Tree,
    note_path: Callable[[str], str | None],
    spans: Mapping[str, Target] | None,
) -> tuple[Target, ...]:
    said: bool | None = None  # whether the line says the query is answerable
    for key, means in (("answerable", True), ("unanswerable", False)):
        if key not in obj:
            continue
        if type(obj[key]) is not bool:
            raise QueryFileError(f'{where}: "{key}" must be true or false')
        if said is not None and said != (obj[key] is means):
            raise QueryFileError(f'{where}: "answerable" and "unanswerable" contradict each other')
        said = obj[key] is means
    bench = "relevant" in obj and "expected" not in obj
    key = "relevant" if bench else "expected"
    items = obj.get(key)
    items = [] if items is None else items
    if not isinstance(items, list):
        raise QueryFileError(f'{where}: "{key}" must be a list')
    if said is False:
        return ()
    if not items:
        if said:
            raise QueryFileError(f'{where}: marked answerable, but "{key}" is empty')
        return ()
    if not bench:
        return tuple(_target(item, where, tree, note_path) for item in items)
    if spans is None:
        raise QueryFileError(f'{where}: "relevant" doc ids need spans.jsonl (give --spans FILE)')
    if not all(isinstance(doc, str) for doc in items):
        raise QueryFileError(f'{where}: "relevant" must be a list of doc ids (strings)')
    found = [spans[doc] for doc in items if doc in spans]
    if not found:
        raise QueryFileError(f"{where}: none of its relevant docs {items} is in spans.jsonl")
    return tuple(replace(t, paths=frozenset(_note(p, where, note_path) for p in t.paths)) for t in found)


def _note(path: str, where: str, note_path: Callable[[str], str | None]) -> str:
    found = note_path(path)
    if found is None:
        raise QueryFileError(f"{where}: {path!r} is not a note in the memory root")
    return found


def _target(item: Any, where: str, tree: Tree, note_path: Callable[[str], str | None]) -> Target:
    if isinstance(item, str):
        if item in tree.by_id:
            return _node_target(item, where, tree)
        path = note_path(item)
        if path is None:
            raise QueryFileError(f"{where}: {item!r} is neither a node id of tree-index.json nor a note path")
        return Target(frozenset({path}))
    if isinstance(item, dict) and set(item) == {"node"} and isinstance(item["node"], str):
        if item["node"] not in tree.by_id:
            raise QueryFileError(f"{where}: unknown node {item['node']!r} (not in tree-index.json)")
        return _node_target(item["node"], where, tree)
    if isinstance(item, dict) and set(item) <= {"path", "lines"} and isinstance(item.get("path"), str):
        lines = _lines(item["lines"], where) if "lines" in item else None
        return Target(frozenset({_note(item["path"], where, note_path)}), lines)
    raise QueryFileError(
        f'{where}: an expected item is a node id or path string, {{"path", "lines"}} or {{"node"}}; got {item!r}'
    )


def _node_target(node_id: str, where: str, tree: Tree) -> Target:
    node = tree.by_id[node_id]
    paths = {node.path} if node.path else {n.path for n in tree.descendants(node_id) if n.path}
    if not paths:
        raise QueryFileError(f"{where}: node {node_id!r} has no note, and neither has any node below it")
    return Target(frozenset(paths), node=node_id)


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QueryFileError(f"{what} {path} does not exist") from None
    except UnicodeDecodeError:
        raise QueryFileError(f"{what} {path} is not UTF-8 text") from None
    except OSError as exc:
        raise QueryFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def load_queries(path: Path, tree: Tree, root: Path, spans: Path | None = None) -> tuple[Query, ...]:
    """Read and validate a query file against the tree and the notes under ``root``."""
    objs = decode_lines(_read(path, "query file"), str(path))
    table = None
    if spans is None and uses_spans(objs):
        spans = path.parent / SPANS_FILE
        if not spans.exists():
            raise QueryFileError(f'{path} names its answers by doc id ("relevant"): give --spans FILE')
    if spans is not None:
        table = parse_spans(_read(spans, "spans file"), str(spans))
    checked: dict[str, str | None] = {}

    def note_path(written: str) -> str | None:
        if written not in checked:
            rel = os.path.normpath(written)
            inside = not os.path.isabs(rel) and rel.split(os.sep, 1)[0] != ".."
            checked[written] = Path(rel).as_posix() if inside and (root / rel).is_file() else None
        return checked[written]

    return build_queries(objs, str(path), tree, note_path, table)


# --- judging and summing up -----------------------------------------------------------------------
