"""Links between notes: ``[[note]]``, ``[[note#entry]]``, ``[[note|alias]]`` and typed relation lines.

A link names a note the way every memtree ref does (:func:`candidates`: a node id, else a
root-relative path, with or without ``.md``, with or without ``bank/``) and, after ``#``, an entry
id (``e-1a2b3c4d5e``) or a heading of that note. A list item that starts with a relation word types
the links on its line::

    - supersedes [[infra/redis#e-1a2b3c4d5e]]
    - relates_to [[project/decisions]]
    - contradicts [[infra/redis-old]]

Only :data:`RELATIONS` are typed (docs/concepts/links.md says why these three); any other link is a
plain ``link``. Links inside fenced code and inline code are text, not links.

A ``supersedes`` link written by hand retires its target the way memtree's own ``superseded=`` mark
does (:func:`retirements`, :meth:`Retirements.of`): the entry it names, or every entry of the note it names,
stops holding on the day of the entry holding the line (else of the note holding it), for search's
current-by-default and ``--as-of`` alike.

Backlinks are derived, never written: :func:`scan` reads the notes of the tiers once and keeps each
note's links in ``.memtree/links.json`` keyed by the note's mtime and size, so a later scan reads only
the notes that changed; a note without ``[[`` costs one substring test when read and nothing after.
An entry anchor that is not in its note is looked for where memtree moved it: in the entry that
merged it (``merged=``, consolidate) and in the parts of a split note (``note/part.md``).

Why one module over 300 lines: parsing, resolving, rewriting and the cached scan share one link
syntax and one rule for what a ref names; kept together, a link is read the same way everywhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import orjson

from memtree.errors import MemtreeError
from memtree.notes import store
from memtree.notes.chunks import FENCE
from memtree.notes.entries import (
    META_RE,
    SPLIT_MARKER,
    SUPERSEDED,
    UPDATED,
    EntryMeta,
    day_of,
    parse_entries,
    parse_meta,
    retired,
)

RELATIONS = ("supersedes", "relates_to", "contradicts")
"""The typed relations: each has a meaning memtree shows (`memtree links`, the viewer) or acts on."""
PLAIN = "link"
"""The kind of a link outside a relation line."""
CACHE_FILE = "links.json"
CACHE_VERSION = 1
BANK = "bank"

LINK_RE = re.compile(r"\[\[([^\[\]|#\n]+)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
"""``[[note]]``, ``[[note#anchor]]``, ``[[note|alias]]``, ``[[note#anchor|alias]]``."""
_RELATION_RE = re.compile(r"^\s*[-*+]\s+(" + "|".join(RELATIONS) + r")\b[\s:]*\[\[")
_CODE_SPAN_RE = re.compile(r"(`+)[^`\n]*?\1")
_HEADING_RE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Link:
    """One link as written: the note holding it, its line (1-based), kind, note ref, anchor and alias."""

    source: str
    line: int
    kind: str
    note: str
    anchor: str = ""
    alias: str = ""

    @property
    def written(self) -> str:
        """The link as it reads in the note (without its alias)."""
        return f"[[{self.note}#{self.anchor}]]" if self.anchor else f"[[{self.note}]]"


@dataclass(frozen=True)
class Resolved:
    """A link and where it leads: the target note and line, or why it leads nowhere (``problem``)."""

    link: Link
    path: str | None
    line: int | None = None
    problem: str = ""


def _code_free(lines: list[str]) -> Iterable[tuple[int, str]]:
    """(1-based line number, text without inline code) of each line outside fenced code that may hold a link."""
    fence = ""
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m:
            mark = m.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = ""
            continue
        if fence or "[[" not in line:
            continue
        yield number, _CODE_SPAN_RE.sub(lambda c: " " * len(c.group(0)), line) if "`" in line else line


def parse(source: str, text: str) -> tuple[Link, ...]:
    """Every link of a note's text (``source`` is its root-relative path); none in code."""
    if "[[" not in text:  # Why first: nearly every note has no link, and this is all it then costs
        return ()
    out: list[Link] = []
    for number, line in _code_free(text.split("\n")):
        relation = _RELATION_RE.match(line)
        kind = relation.group(1) if relation else PLAIN
        for m in LINK_RE.finditer(line):
            note = m.group(1).strip()
            if note:
                out.append(Link(source, number, kind, note, (m.group(2) or "").strip(), (m.group(3) or "").strip()))
    return tuple(out)


# --- the one rule a ref names a note by ---------------------------------------------------------------


def candidates(ref: str) -> list[tuple[str, str]]:
    """What ``ref`` may name, in the order tried: ("id", node id) first, then ("path", root-relative path).

    Why this order: `memtree get` takes a node id before a path; a link may also leave out ``.md``
    (as Obsidian writes it) and ``bank/`` (a node id is a bank path without both).
    """
    r = unicodedata.normalize("NFC", ref.strip().replace("\\", "/")).removeprefix("./").strip("/")
    out = [("id", r), ("path", r)]
    if not r.endswith(store.NOTE_SUFFIXES):
        out.append(("path", r + ".md"))
    if not r.startswith(tuple(t + "/" for t in store.TIERS)):
        out += [("path", f"{BANK}/{r}")] + ([] if r.endswith(store.NOTE_SUFFIXES) else [("path", f"{BANK}/{r}.md")])
    return out


def target(ref: str) -> Link:
    """A ref read as a link's target (``note``, ``note#entry-id``, ``note#heading``, ``|alias`` and the
    brackets optional): the one reading `memtree get` and links share."""
    r = ref.strip()
    if r.startswith("[[") and r.endswith("]]"):
        r = r[2:-2]
    r = r.split("|", 1)[0]
    note, _, anchor = r.partition("#")
    return Link("", 0, PLAIN, note.strip(), anchor.strip())


def resolve(ref: str, node_path: Callable[[str], str | None], note: Callable[[str], str | None]) -> str | None:
    """The note ``ref`` names: ``node_path(id)`` gives a node's note path, ``note(path)`` the note on disk
    at that path (see :func:`lookup`) or None."""
    for how, value in candidates(ref):
        path = node_path(value) if how == "id" else value
        found = note(path) if path is not None else None
        if found is not None:
            return found
    return None


def lookup(paths: Iterable[str]) -> Callable[[str], str | None]:
    """``path → the note's path as on disk`` over ``paths``, compared in NFC (macOS writes Hangul names as NFD)."""
    return {unicodedata.normalize("NFC", p): p for p in paths}.get


def node_id(path: str) -> str | None:
    """The node id a bank note's path gives (``bank/a/b.md`` → ``a/b``); None outside bank/."""
    if not path.startswith(BANK + "/"):
        return None
    stem = path[len(BANK) + 1 :]
    for suffix in store.NOTE_SUFFIXES:
        stem = stem.removesuffix(suffix)
    return unicodedata.normalize("NFC", stem)


def renamed_ref(written: str, old: str, new: str) -> str:
    """How a link written ``written`` to the note at ``old`` names it at ``new``, in the form it was written."""
    w = written.strip()
    if w.endswith(store.NOTE_SUFFIXES):
        keep = new
    else:
        keep = new.rsplit(".", 1)[0] if new.endswith(store.NOTE_SUFFIXES) else new
    if not w.startswith(tuple(t + "/" for t in store.TIERS)) and keep.startswith(BANK + "/"):
        keep = keep[len(BANK) + 1 :]
    return keep


def relink(text: str, refers: Callable[[str], str | None]) -> str | None:
    """``text`` with each link's note ref replaced by ``refers(ref)`` (None: kept); None when nothing changed.

    The anchor, the alias and everything around the link are left as they are; links in code too.
    """
    if "[[" not in text:
        return None
    lines = text.split("\n")
    changed = False
    for number, clean in _code_free(lines):
        line = lines[number - 1]
        pieces: list[str] = []
        at = 0
        for m in LINK_RE.finditer(clean):
            new = refers(m.group(1).strip())
            if new is None:
                continue
            pieces += [line[at : m.start(1)], new]
            at = m.end(1)
        if pieces:
            lines[number - 1] = "".join(pieces) + line[at:]
            changed = True
    return "\n".join(lines) if changed else None


# --- anchors: entries and headings ---------------------------------------------------------------------


def anchors(text: str) -> dict[str, int]:
    """The anchors of a note and their lines: entry ids (an id merged into an entry: that entry's line)
    and headings (casefolded)."""
    found: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if "memtree:" in line:
            m = META_RE.search(line)
            if m:
                meta = parse_meta(m.group("body"))
                for entry_id in (meta.id, *meta.merged):
                    if entry_id:
                        found.setdefault(entry_id, number)
        h = _HEADING_RE.match(line) if line.startswith("#") else None
        if h:
            found.setdefault(_heading_key(h.group(1)), number)
    return found


def _heading_key(heading: str) -> str:
    return unicodedata.normalize("NFC", heading).strip().casefold()


# --- the scan and its cache -------------------------------------------------------------------------


@dataclass
class Graph:
    """Every link of the notes scanned, resolved on demand against the notes and nodes given."""

    root: Path
    links: dict[str, tuple[Link, ...]]  # note path → its links (only notes that have some)
    notes: frozenset[str]  # every note path scanned
    node_paths: Mapping[str, str | None]  # node id → its note path
    exists: Callable[[str], str | None] | None = None  # path → the note there, or None; default: among ``notes``
    _anchors: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _parts: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _paths: dict[str, str | None] = field(default_factory=dict, repr=False)
    _note: Callable[[str], str | None] | None = field(default=None, repr=False)

    def path_of(self, ref: str) -> str | None:
        """The note ``ref`` names, by :func:`resolve` (each ref resolved once)."""
        if ref not in self._paths:
            if self._note is None:
                self._note = self.exists or lookup(self.notes)
            node_path = self.node_paths.get
            self._paths[ref] = resolve(ref, lambda i: node_path(unicodedata.normalize("NFC", i)), self._note)
        return self._paths[ref]

    def _read(self, path: str) -> dict[str, int]:
        """The anchors of the note at ``path`` (read once); a split note's parts are remembered too."""
        if path not in self._anchors:
            try:
                text = store.read_note(self.root / path)
            except (OSError, UnicodeDecodeError):
                text = ""
            self._anchors[path] = anchors(text)
            if SPLIT_MARKER in text:  # Why: a split moved its entries to its parts (``stem/part.md``)
                stem = path.rsplit(".", 1)[0] + "/"
                self._parts[path] = tuple(sorted(p for p in self.notes if p.startswith(stem)))
        return self._anchors[path]

    def follow(self, link: Link) -> Resolved:
        """Where ``link`` leads: its note, and the line of its entry or heading."""
        path = self.path_of(link.note)
        if path is None:
            return Resolved(link, None, None, f"no note named '{link.note}'")
        if not link.anchor:
            return Resolved(link, path, None)
        self._read(path)
        for where in (path, *self._parts.get(path, ())):
            found = self._read(where)
            line = found.get(link.anchor, found.get(_heading_key(link.anchor)))
            if line is not None:
                return Resolved(link, where, line)
        return Resolved(link, path, None, f"no entry or heading '{link.anchor}' in {path}")

    def outgoing(self, path: str) -> list[Resolved]:
        """The links of the note at ``path``, in the order written."""
        return [self.follow(link) for link in self.links.get(path, ())]

    def incoming(self, path: str) -> list[Resolved]:
        """The links of every note that lead to ``path`` (or into it), by source and line."""
        found: list[Resolved] = []
        for links in self.links.values():
            for link in links:
                named = self.path_of(link.note)
                # Why the second test: an entry link to a split note leads into the part now holding the entry
                if named == path or (named and link.anchor and path.startswith(named.rsplit(".", 1)[0] + "/")):
                    r = self.follow(link)
                    if r.path == path:
                        found.append(r)
        return found

    def dangling(self) -> list[Resolved]:
        """Every link that leads nowhere: no such note, or no such entry or heading in it."""
        return [r for links in self.links.values() for r in map(self.follow, links) if r.problem]


# --- hand-written supersedes: the one rule of what they retire ----------------------------------------


SUPERSEDES = RELATIONS[0]


@dataclass(frozen=True)
class Retirement:
    """What one hand-written ``supersedes`` link says: from ``day`` on its target is the past, replaced by
    ``by`` (the id of the entry holding the line, else ``PATH:LINE``)."""

    day: date
    by: str


@dataclass(frozen=True)
class Retirements:
    """What the ``supersedes`` links of a memory retire: whole notes by path, entries by id (an entry id is
    unique in a memory, so an entry keeps its retirement wherever split or a rename moved it)."""

    notes: Mapping[str, Retirement] = field(default_factory=dict)
    entries: Mapping[str, Retirement] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.notes or self.entries)

    def of(self, path: str, meta: EntryMeta) -> EntryMeta:
        """``meta`` of an entry of the note at ``path`` as these links leave it: retired on the earliest day
        one names it (its note or its id), unless memtree's own ``superseded=`` mark is earlier."""
        found = [r for r in (self.notes.get(path), self.entries.get(meta.id) if meta.id else None) if r is not None]
        if not found:
            return meta
        first = min(found, key=lambda r: (r.day, r.by))
        own = day_of(meta.extra.get(SUPERSEDED, ""))
        return meta if own is not None and own <= first.day else retired(meta, first.day, first.by)


def retirements(graph: Graph, note_day: Callable[[str], date]) -> Retirements:
    """What the ``supersedes`` links of ``graph`` retire: the entry an ``#entry-id`` names, else the
    whole note the link names.

    A link's day is the day of the entry holding its line (``updated=``, else ``created=``; a line
    nested under a memtree entry belongs to it), else ``note_day(source)`` (memtree.search.decay's note
    time: frontmatter, a date in the file name, else when the file was last changed). A link to no
    note, to a heading (no entry has that id) or to the note or entry holding it retires nothing.
    """
    notes: dict[str, Retirement] = {}
    ids: dict[str, Retirement] = {}
    for source, links in graph.links.items():
        own = [k for k in links if k.kind == SUPERSEDES]
        if not own:
            continue
        try:
            lines = store.read_note(graph.root / source).split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        for link in own:
            path = graph.path_of(link.note)
            if path is None:
                continue
            meta = _entry_meta(lines, link.line)
            if link.anchor:
                if link.anchor == meta.id:
                    continue  # the entry holding the line
            elif path == source:
                continue  # the note holding the line
            day = day_of(meta.extra.get(UPDATED, "")) or day_of(meta.created) or note_day(source)
            mark = Retirement(day, meta.id or f"{source}:{link.line}")
            into, key = (ids, link.anchor) if link.anchor else (notes, path)
            if key not in into or (mark.day, mark.by) < (into[key].day, into[key].by):
                into[key] = mark
    return Retirements(notes, ids)


def _entry_meta(lines: list[str], line: int) -> EntryMeta:
    """The metadata of the entry holding 1-based line ``line`` (a relation line, so a list item) of a
    note: its own, else the first memtree comment on its lines (a relation line nested under an entry
    ends the block, so the entry's comment sits above it).

    Why only that item's lines are read: reading a note's every entry (their metadata too) for one
    line cost ~2 ms a note; an item runs from its unindented first line over its indented ones.
    """
    top = line - 1
    while top > 0 and lines[top][:1].isspace() and lines[top - 1].strip():
        top -= 1
    bottom = line
    while bottom < len(lines) and lines[bottom][:1].isspace() and lines[bottom].strip():
        bottom += 1
    found = parse_entries("\n".join(lines[top:bottom]))
    if not found:
        return EntryMeta()
    if found[0].meta.id or found[0].meta.created:
        return found[0].meta
    for text in lines[top:bottom]:
        m = META_RE.search(text) if "memtree:" in text else None
        if m:
            return parse_meta(m.group("body"))
    return found[0].meta


def scan(root: Path, files: Iterable[store.FileStat], node_paths: Mapping[str, str | None]) -> Graph:
    """The links of the notes ``files`` (as :func:`memtree.notes.store.walk` lists them), read only
    where they changed since the cached scan; the cache is rewritten when anything changed."""
    cache_path = root / store.STATE_DIR / CACHE_FILE
    cached: dict[str, list[object]] = {}
    with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError, TypeError):
        doc = orjson.loads(cache_path.read_bytes())
        if doc.get("version") == CACHE_VERSION and isinstance(doc.get("notes"), dict):
            cached = doc["notes"]
    fresh: dict[str, list[object]] = {}
    links: dict[str, tuple[Link, ...]] = {}
    notes: list[str] = []
    for f in files:
        notes.append(f.path)
        known = cached.get(f.path)
        found: tuple[Link, ...] | None = None
        if isinstance(known, list) and len(known) == 3 and known[0] == f.mtime_ns and known[1] == f.size:
            found = _cached(f.path, known[2])
        if found is None:
            try:
                found = parse(f.path, store.read_note(root / f.path))
            except (OSError, UnicodeDecodeError):
                found = ()
        fresh[f.path] = [f.mtime_ns, f.size, [[k.line, k.kind, k.note, k.anchor, k.alias] for k in found]]
        if found:
            links[f.path] = found
    if fresh != cached:
        with contextlib.suppress(OSError, MemtreeError):  # a read-only root: the next scan reads again
            store.check_state_dir(root)
            os.makedirs(cache_path.parent, exist_ok=True)
            store.atomic_write(cache_path, orjson.dumps({"version": CACHE_VERSION, "notes": fresh}), durable=False)
    return Graph(root, links, frozenset(notes), node_paths)


_ROW_TYPES = (int, str, str, str, str)


def _cached(source: str, rows: object) -> tuple[Link, ...] | None:
    """The links a cache row holds, or None when it is not what :func:`scan` writes (then the note is read)."""
    if not isinstance(rows, list):
        return None
    out: list[Link] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(_ROW_TYPES) or not all(map(isinstance, row, _ROW_TYPES)):
            return None
        out.append(Link(source, *row))
    return tuple(out)
