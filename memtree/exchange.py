"""`memtree export` / `memtree import`: every bank entry and the tree's nodes as one JSON document.

Export lists the entries of bank notes (list items and paragraphs; headings, code and tables are
layout, not entries) with their metadata, in note and line order, and the nodes of the tree.
Import reads such a document (at most ``IMPORT_MAX_BYTES``), validates all of it before writing
anything, sanitizes every text (and refuses a document whose paths, ids, tags or other names
hold a secret: see ``clean_fields``), skips an entry whose id is already in the memory or whose text is
already in its note, and appends the rest to their notes with their metadata as it was — so an
export imported into an empty root exports again byte for byte.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from . import entries, store
from . import tree as treemod
from .errors import ChangedOnDisk, MemtreeError, QueryError

if TYPE_CHECKING:
    from .sanitize import Sanitizer

FORMAT = 1
IMPORT_MAX_BYTES = 10 * 1024 * 1024
_META_KEYS = ("id", "created", "tags", "kind", "source", "scope", "merged")


@dataclass(frozen=True)
class Imported:
    """What an import did (or, with dry_run, would do)."""

    written: int
    skipped: int
    nodes_added: tuple[str, ...]
    notes: tuple[str, ...]
    redacted: int
    dry_run: bool = False


def export(root: Path, bank: str | None = None) -> dict[str, Any]:
    """The export document of a root (or of one bank: a top-level folder of bank/)."""
    prefix = f"bank/{bank.strip('/')}/" if bank else "bank/"
    disk, _ = store.walk(root, ("bank",))
    out = []
    for f in disk:
        if not f.path.startswith(prefix):
            continue
        try:
            note = store.read_note(root / f.path)
        except (OSError, UnicodeDecodeError):
            continue
        for e in entries.parse_entries(note):
            meta = {k: v for k, v in _meta_json(e.meta).items() if v}
            out.append({"path": f.path, "item": e.is_item, "text": e.content, "meta": meta})
    tree = treemod.load(root, check_files=False)
    nodes = [n.to_json() for n in tree.nodes if bank is None or _in_bank(n, prefix)]
    return {"memtree": "export", "version": FORMAT, "bank": bank, "nodes": nodes, "entries": out}


def _in_bank(node: treemod.Node, prefix: str) -> bool:
    return bool(node.path and node.path.startswith(prefix)) or node.id == prefix[5:-1]


def _meta_json(meta: entries.EntryMeta) -> dict[str, Any]:
    return {
        "id": meta.id,
        "created": meta.created,
        "tags": list(meta.tags),
        "kind": meta.kind,
        "source": meta.source,
        "scope": meta.scope,
        "merged": list(meta.merged),
        **meta.extra,
    }


def dumps(doc: dict[str, Any]) -> bytes:
    """Deterministic bytes of an export document."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def parse(data: bytes, source: str = "import") -> dict[str, Any]:
    """An export document checked whole: size, JSON, format, and every entry and node."""
    if len(data) > IMPORT_MAX_BYTES:
        raise QueryError(f"{source}: {len(data):,} bytes; an import takes at most {IMPORT_MAX_BYTES:,}")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise QueryError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or doc.get("memtree") != "export" or doc.get("version") != FORMAT:
        raise QueryError(f'{source}: not a memtree export (expected "memtree": "export", "version": {FORMAT})')
    if not isinstance(doc.get("entries"), list) or not isinstance(doc.get("nodes"), list):
        raise QueryError(f'{source}: "entries" and "nodes" must be lists')
    for i, e in enumerate(doc["entries"]):
        where = f"{source}: entries[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("text"), str) or not e["text"].strip():
            raise QueryError(f'{where} needs a non-empty "text"')
        note_path(e.get("path"), f'{where} "path"')
        meta = e.get("meta", {})
        if not isinstance(meta, dict) or not all(isinstance(v, (str, list)) for v in meta.values()):
            raise QueryError(f'{where}: "meta" must map names to strings or lists')
    try:
        nodes = [treemod._node(raw, i, source) for i, raw in enumerate(doc["nodes"])]
        for n in nodes:
            if n.path is not None:
                note_path(n.path, f"{source}: node '{n.id}' path")
    except MemtreeError as exc:
        raise QueryError(str(exc)) from None
    return doc


NAME_MAX_BYTES = 255
"""The longest file or folder name most file systems take (ext4, APFS, NTFS: 255)."""
PATH_MAX_CHARS = 1024
"""An imported note path longer than this is refused, whatever the file system would take."""


def note_path(path: object, where: str) -> str:
    """An imported path, checked: a Markdown note under bank/ (not the archive), with sane names."""
    if not isinstance(path, str) or not path.startswith("bank/") or not path.endswith(store.NOTE_SUFFIXES):
        raise QueryError(f"{where} must name a Markdown note under bank/ (bank/….md), got {_quote(path)}")
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise QueryError(f"{where} holds a control character (NUL, newline, …): {_quote(path)}")
    if len(path) > PATH_MAX_CHARS:
        raise QueryError(f"{where} is {len(path):,} characters long; at most {PATH_MAX_CHARS:,}")
    try:
        treemod.check_path(path, where)
    except MemtreeError as exc:
        raise QueryError(str(exc)) from None
    for part in path.split("/")[1:]:
        if not part or part.startswith(".") or part == store.ARCHIVE_DIR:
            raise QueryError(
                f"{where}: {_quote(path)} names a hidden, empty or archive folder, which search never reads"
            )
        if len(part.encode("utf-8")) > NAME_MAX_BYTES:
            raise QueryError(f"{where}: a name in {_quote(path)[:60]}… is over {NAME_MAX_BYTES} bytes")
    return path


def _quote(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "…"


def _writable(root: Path, paths: list[str]) -> None:
    """Every path can be written: inside the root, and no file stands where a folder must be."""
    for path in paths:
        store.inside(root, path)
        parts = path.split("/")
        for i in range(1, len(parts)):
            folder = root.joinpath(*parts[:i])
            if folder.exists() and not folder.is_dir():
                raise QueryError(f"import: cannot write {path}: {'/'.join(parts[:i])} is a file, not a folder")
        if (root / path).is_dir():
            raise QueryError(f"import: cannot write {path}: it is a folder")


def import_(root: Path, doc: dict[str, Any], custom_patterns: Any = (), dry_run: bool = False) -> Imported:
    """Write an (already parsed) export document into ``root``; see the module docstring."""
    from .retain import with_nodes
    from .sanitize import Sanitizer

    sanitizer = Sanitizer(custom_patterns)
    doc, redacted = clean_fields(doc, sanitizer)
    with store.write_lock(root) if not dry_run else contextlib.nullcontext():
        tree = treemod.load(root, check_files=False)
        known_ids = _ids_in(root)
        notes: dict[str, str] = {}
        originals: dict[str, str] = {}
        snaps: dict[str, store.Snapshot] = {}
        written = skipped = 0
        _writable(root, [*{e["path"] for e in doc["entries"]}, *(n["path"] for n in doc["nodes"] if n.get("path"))])
        for e in doc["entries"]:
            path = e["path"]
            if path not in notes:
                snaps[path] = store.read(root, path)
                try:
                    notes[path] = originals[path] = snaps[path].text
                except UnicodeDecodeError:
                    raise QueryError(f"import: {path} is not UTF-8 text; memtree will not rewrite it") from None
            clean = sanitizer.sanitize(e["text"])
            redacted += len(clean.redactions)
            meta = _meta_from(e.get("meta", {}))
            have = {entries.normalize(x.content) for x in entries.parse_entries(notes[path])}
            if (meta.id and meta.id in known_ids) or entries.normalize(clean.text) in have:
                skipped += 1
                continue
            text = entries.format_entry(clean.text, meta) if e.get("item", True) else _paragraph(clean.text, meta)
            notes[path] = _append(notes[path], text, bool(e.get("item", True)), Path(path).stem)
            known_ids.update(i for i in (meta.id, *meta.merged) if i)
            written += 1
        new_nodes = [treemod._node(raw, i, "import") for i, raw in enumerate(doc["nodes"])]
        taken = set(tree.by_path)
        missing = [n for n in new_nodes if n.id not in tree.by_id and (n.path is None or n.path not in taken)]
        ids = {n.id for n in missing}
        linked = tuple(
            replace(n, children=tuple(c for c in n.children if c in ids))
            for n in sorted(missing, key=lambda n: n.id.count("/"))
        )
        if linked:
            with_nodes(tree, linked)  # validates: raises before anything is written
        for n in linked:  # a note with no entries (only headings, say) still gets its file
            if n.path and n.path not in notes and not (root / n.path).is_file():
                notes[n.path] = f"# {Path(n.path).stem}\n"
        if not dry_run:
            for path, text in notes.items():
                if text != originals.get(path):
                    snap = snaps.get(path) or store.read(root, path)
                    try:
                        store.save(root, snap, text.encode("utf-8"))
                    except ChangedOnDisk:
                        raise ChangedOnDisk(
                            f"import: {path} was edited while importing; run the import again "
                            "(the entries already written are recognised and skipped)"
                        ) from None
            if linked:
                treemod.update(
                    root, lambda current: with_nodes(current, tuple(n for n in linked if n.id not in current.by_id))
                )
    changed = tuple(sorted(p for p, t in notes.items() if t != originals.get(p)))
    return Imported(written, skipped, tuple(n.id for n in linked), changed, redacted, dry_run)


def clean_fields(doc: dict[str, Any], sanitizer: Sanitizer, source: str = "import") -> tuple[dict[str, Any], int]:
    """The parsed document with no secret outside entry texts, and how many values were redacted.

    Names — paths, ids, tags, scope, kind, meta keys, node ids, parents, children — are refused
    whole (QueryError naming the entry or node); free-text meta values are redacted; a node
    keyword holding a secret is dropped, since a redacted keyword would route every query about
    "redacted" to that node.
    """
    redacted = 0
    out_entries = []
    for i, e in enumerate(doc["entries"]):
        where = f"{source}: entries[{i}]"
        sanitizer.require_clean(e["path"], f'{where} "path"')
        meta = dict(e.get("meta", {}))
        for key, value in meta.items():
            sanitizer.require_clean(key, f"{where}: a meta name")
            if key in _META_KEYS or not isinstance(value, str):
                for item in value if isinstance(value, list) else [value]:
                    sanitizer.require_clean(str(item), f'{where} meta "{key}"')
            else:
                clean = sanitizer.sanitize(value)
                redacted += len(clean.redactions)
                meta[key] = clean.text
        out_entries.append({**e, "meta": meta})
    out_nodes = []
    for i, raw in enumerate(doc["nodes"]):
        where = f"{source}: nodes[{i}]"
        for key in ("id", "path", "parent"):
            if isinstance(raw.get(key), str):
                sanitizer.require_clean(raw[key], f'{where} "{key}"')
        for child in raw.get("children", []):
            sanitizer.require_clean(child, f'{where} "children"')
        keywords = raw.get("keywords", [])
        kept = [k for k in keywords if not sanitizer.find(k)]
        redacted += len(keywords) - len(kept)
        out_nodes.append({**raw, "keywords": kept} if len(kept) < len(keywords) else raw)
    return {**doc, "entries": out_entries, "nodes": out_nodes}, redacted


def _ids_in(root: Path) -> set[str]:
    disk, _ = store.walk(root, ("bank",))
    ids: set[str] = set()
    for f in disk:
        try:
            ids.update(entries.iter_ids(store.read_note(root / f.path)))
        except (OSError, UnicodeDecodeError):
            continue
    return ids


def _meta_from(raw: dict[str, Any]) -> entries.EntryMeta:
    def text(key: str) -> str:
        value = raw.get(key, "")
        return value if isinstance(value, str) else ""

    def items(key: str) -> tuple[str, ...]:
        value = raw.get(key, [])
        return tuple(str(v) for v in value) if isinstance(value, list) else ()

    extra = {k: str(v) for k, v in raw.items() if k not in _META_KEYS and isinstance(v, str)}
    return entries.EntryMeta(
        text("id"), text("created"), items("tags"), text("kind"), text("source"), text("scope"), items("merged"), extra
    )


def _paragraph(content: str, meta: entries.EntryMeta) -> str:
    comment = meta.render()
    return f"{content} {comment}" if comment else content


def _append(note: str, text: str, item: bool, heading: str) -> str:
    if item:
        return entries.append_entry(note, text, heading)
    body = note.rstrip("\n")
    return f"{body}\n\n{text}\n" if body else f"# {heading}\n\n{text}\n"
