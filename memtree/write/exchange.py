"""`memtree export` / `memtree import`: a memory as one JSON document — a backup, and a merge.

Export (format 2) lists the entries of bank notes (list items and paragraphs; headings, code and
tables are layout, not entries) with their metadata, in note and line order, the nodes of the
tree, and under ``files`` the whole text of every tracked file: the notes of bank/ (its
``_archive/`` too), memory/ and recall/, tree-index.json and conflicts.json (one bank's export:
that bank's notes only).

Import reads such a document, or a format 1 one (entries and nodes only), of at most
``IMPORT_MAX_BYTES``; validates all of it before writing anything, sanitizes every text (and
refuses a document whose paths, ids, tags or other names hold a secret: see ``clean_fields``),
then:

- into an **empty** root (no note in any tier, no node, no conflicts.json) it writes every file
  of ``files`` back as it was — an export of a memory whose notes hold no secret, imported into
  an empty root, reproduces each tracked file byte for byte (a secret is redacted on the way in);
- into any other root it merges: an entry whose id is already in the memory or whose text is
  already in its note is skipped, the rest are appended to their notes with their metadata as it
  was; missing nodes are added, open conflicts not yet open are added, and a memory/ log or an
  archive note the root lacks is created. A file that exists is never replaced; recall/hot.md is
  left to `memtree recall sync`.

Left out, by design: files that are not Markdown notes, hidden files, non-UTF-8 notes (JSON holds
text), memtree.yaml (settings, patterns) and .gitignore (`memtree init` writes it).

Why one module over 300 lines: export and import are one format, written and read in one place so
that a round trip stays byte for byte (tests/test_exchange.py).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memtree.errors import ChangedOnDisk, MemtreeError, QueryError
from memtree.notes import entries, store
from memtree.notes import tree as treemod
from memtree.write import conflicts

if TYPE_CHECKING:
    from memtree.write.sanitize import Sanitizer

FORMAT = 2
READS = (1, 2)
"""The export formats import reads: 1 (entries and nodes) and 2 (plus every tracked file whole)."""
IMPORT_MAX_BYTES = 10 * 1024 * 1024
ARCHIVE = f"bank/{store.ARCHIVE_DIR}"
WHOLE_FILES = (treemod.TREE_FILE, conflicts.CONFLICTS_FILE)
"""The tracked files besides notes that an export carries whole."""
_META_KEYS = ("id", "created", "tags", "kind", "source", "scope", "merged")


@dataclass(frozen=True)
class Imported:
    """What an import did (or, with dry_run, would do).

    ``restored``: the files written whole (into an empty root; or memory/ logs and archive notes
    the root lacked); ``conflicts_added``: open conflicts added to conflicts.json.
    """

    written: int
    skipped: int
    nodes_added: tuple[str, ...]
    notes: tuple[str, ...]
    redacted: int
    dry_run: bool = False
    restored: tuple[str, ...] = ()
    conflicts_added: int = 0


def export(root: Path, bank: str | None = None) -> dict[str, Any]:
    """The export document of a root (or of one bank: a top-level folder of bank/; QueryError for another name)."""
    if bank is not None:
        bank = known_bank(root, bank)
    prefix = f"bank/{bank}/" if bank else "bank/"
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
    files = _files(root, bank)
    return {"memtree": "export", "version": FORMAT, "bank": bank, "nodes": nodes, "entries": out, "files": files}


def known_bank(root: Path, name: str) -> str:
    """``name`` as a bank of ``root`` (a top-level folder of bank/), or QueryError naming the banks there are."""
    wanted = name.strip("/")
    folder = root / "bank"
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_dir() and not store.ignored(e.name))
    except OSError:
        names = []
    if wanted not in names:
        raise QueryError(f"unknown bank {name[:80]!r}: the banks of this memory are {', '.join(names) or 'none yet'}")
    return wanted


def _files(root: Path, bank: str | None) -> dict[str, str]:
    """The whole text of every tracked file (one bank's: its notes and their archive copies)."""
    prefixes = (f"bank/{bank}/", f"{ARCHIVE}/{bank}/") if bank else ("",)
    disk, _ = store.walk(root, (*store.TIERS, ARCHIVE))
    paths = [f.path for f in disk if f.path.startswith(prefixes)]
    if bank is None:
        paths += [name for name in WHOLE_FILES if (root / name).is_file()]
    out: dict[str, str] = {}
    for path in paths:
        try:
            data = (root / path).read_bytes()
            if b"\x00" not in data:  # binary: no text to carry
                out[path] = data.decode("utf-8")  # a byte-order mark stays, so the bytes come back
        except (OSError, UnicodeDecodeError):
            continue
    return out


def size_warning(data: bytes) -> str | None:
    """Why an export document of ``data`` could not be imported (over ``IMPORT_MAX_BYTES``), or None."""
    if len(data) <= IMPORT_MAX_BYTES:
        return None
    return (
        f"this export is {len(data):,} bytes, over the {IMPORT_MAX_BYTES:,} an import takes; "
        "export one bank at a time (--bank NAME) to get documents that import"
    )


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
    """An export document checked whole: size, JSON, format, every entry, node and file."""
    if len(data) > IMPORT_MAX_BYTES:
        raise QueryError(f"{source}: {len(data):,} bytes; an import takes at most {IMPORT_MAX_BYTES:,}")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise QueryError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or doc.get("memtree") != "export" or doc.get("version") not in READS:
        raise QueryError(f'{source}: not a memtree export (expected "memtree": "export", "version": 1 or {FORMAT})')
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
    files = doc.get("files", {}) if doc["version"] >= 2 else {}
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise QueryError(f'{source}: "files" must map paths to the text of each file')
    for path in files:
        tracked_path(path, f"{source}: files: {_quote(path)}")
    if treemod.TREE_FILE in files:
        _tree_nodes(files[treemod.TREE_FILE], f"{source}: files: {treemod.TREE_FILE}")
    if conflicts.CONFLICTS_FILE in files:
        _conflicts(files[conflicts.CONFLICTS_FILE], f"{source}: files: {conflicts.CONFLICTS_FILE}")
    return {**doc, "files": files}


def _tree_nodes(text: str, where: str) -> list[dict[str, Any]]:
    """The nodes of a tree-index.json text, validated (QueryError naming ``where``)."""
    try:
        tree = treemod.loads(text.encode("utf-8"), None, where)
    except MemtreeError as exc:
        raise QueryError(str(exc)) from None
    return [n.to_json() for n in tree.nodes]


def _conflicts(text: str, where: str) -> list[conflicts.OpenConflict]:
    """The open conflicts of a conflicts.json text, validated (QueryError naming ``where``)."""
    try:
        found = conflicts.loads(text, where)
    except MemtreeError as exc:
        raise QueryError(str(exc)) from None
    for c in found:
        names = (c.id, c.created, c.new.id, c.new.text, c.old.id, c.old.text)
        if not all(isinstance(v, str) for v in names):
            raise QueryError(f"{where}: conflict {c.id!r} holds a value that is not a string")
        note_path(c.new.path, f"{where}: conflict {c.id!r} path")
        note_path(c.old.path, f"{where}: conflict {c.id!r} path")
    return found


NAME_MAX_BYTES = 255
"""The longest file or folder name most file systems take (ext4, APFS, NTFS: 255)."""
PATH_MAX_CHARS = 1024
"""An imported note path longer than this is refused, whatever the file system would take."""


def note_path(path: object, where: str) -> str:
    """An imported path, checked: a Markdown note under bank/ (not the archive), with sane names."""
    if not isinstance(path, str) or not path.startswith("bank/") or not path.endswith(store.NOTE_SUFFIXES):
        raise QueryError(f"{where} must name a Markdown note under bank/ (bank/….md), got {_quote(path)}")
    return _sane(path, where, archive=False)


def tracked_path(path: object, where: str) -> str:
    """A path of a file restored whole, checked: tree-index.json, conflicts.json, or a Markdown note
    of bank/ (its archive too), memory/ or recall/ — never a hidden file, .git/ or memtree.yaml."""
    if path in WHOLE_FILES:
        return str(path)
    tiers = ", ".join(f"{t}/" for t in store.TIERS)
    if not isinstance(path, str) or path.split("/")[0] not in store.TIERS or not path.endswith(store.NOTE_SUFFIXES):
        raise QueryError(
            f"{where} must name a Markdown note under {tiers}, {treemod.TREE_FILE} or "
            f"{conflicts.CONFLICTS_FILE}, got {_quote(path)}"
        )
    return _sane(path, where, archive=path.startswith(f"{ARCHIVE}/"))


def _sane(path: str, where: str, archive: bool) -> str:
    """``path`` with no control character, '..', hidden or empty name, overlong name or (unless
    ``archive``) archive folder."""
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise QueryError(f"{where} holds a control character (NUL, newline, …): {_quote(path)}")
    if len(path) > PATH_MAX_CHARS:
        raise QueryError(f"{where} is {len(path):,} characters long; at most {PATH_MAX_CHARS:,}")
    try:
        treemod.check_path(path, where)
    except MemtreeError as exc:
        raise QueryError(str(exc)) from None
    for i, part in enumerate(path.split("/")[1:]):
        if not part or part.startswith(".") or (part == store.ARCHIVE_DIR and not (archive and i == 0)):
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


def _empty(root: Path, tree: treemod.Tree) -> bool:
    """Whether ``root`` holds nothing an import could merge into: no note, node or conflicts file."""
    if tree.nodes or (root / conflicts.CONFLICTS_FILE).exists():
        return False
    disk, _ = store.walk(root, (*store.TIERS, ARCHIVE))
    return not disk


def import_(root: Path, doc: dict[str, Any], custom_patterns: Any = (), dry_run: bool = False) -> Imported:
    """Write an (already parsed) export document into ``root``; see the module docstring."""
    from memtree.write.retain import with_nodes
    from memtree.write.sanitize import Sanitizer

    sanitizer = Sanitizer(custom_patterns)
    doc, redacted = clean_fields(doc, sanitizer)
    files: dict[str, str] = doc.get("files", {})
    with store.write_lock(root) if not dry_run else contextlib.nullcontext():
        tree = treemod.load(root, check_files=False)
        restore = _empty(root, tree)
        wanted = sorted(p for p in files if restore or p.startswith(("memory/", f"{ARCHIVE}/")))
        _writable(
            root,
            [
                *wanted,
                *{e["path"] for e in doc["entries"]},
                *(n["path"] for n in doc["nodes"] if n.get("path")),
            ],
        )
        known_ids = _ids_in(root)
        texts: dict[str, str] = {}  # what each touched file will hold
        originals: dict[str, str | None] = {}  # what it held (None: it did not exist)
        snaps: dict[str, store.Snapshot] = {}
        restored: list[str] = []
        written = skipped = conflicts_added = 0
        for path in wanted:
            if path in WHOLE_FILES:
                continue
            snap = store.read(root, path)
            if snap.exists:  # never replace a file a person wrote
                continue
            clean = sanitizer.sanitize(files[path])
            redacted += len(clean.redactions)
            snaps[path], originals[path], texts[path] = snap, None, clean.text
            restored.append(path)
            if path.startswith("bank/") and not path.startswith(f"{ARCHIVE}/"):
                written += len(entries.parse_entries(clean.text))
                known_ids.update(entries.iter_ids(clean.text))
        raw_tree = restore and _same_tree(files.get(treemod.TREE_FILE), doc["nodes"], sanitizer)
        if raw_tree:  # the tree's own bytes, hand formatting and all
            snaps[treemod.TREE_FILE] = store.read(root, treemod.TREE_FILE)
            originals[treemod.TREE_FILE] = snaps[treemod.TREE_FILE].text
            texts[treemod.TREE_FILE] = files[treemod.TREE_FILE]
            restored.append(treemod.TREE_FILE)
        if conflicts.CONFLICTS_FILE in files:
            merged = _merged_conflicts(root, files[conflicts.CONFLICTS_FILE], sanitizer, restore)
            if merged is not None:
                snap, text, added, red = merged
                snaps[snap.rel], originals[snap.rel], texts[snap.rel] = snap, None if restore else snap.text, text
                conflicts_added, redacted = added, redacted + red
                if restore:
                    restored.append(snap.rel)
        for e in doc["entries"]:
            path = e["path"]
            if path not in texts:
                snaps[path] = store.read(root, path)
                try:
                    texts[path] = originals[path] = snaps[path].text
                except UnicodeDecodeError:
                    raise QueryError(f"import: {path} is not UTF-8 text; memtree will not rewrite it") from None
            clean = sanitizer.sanitize(e["text"])
            redacted += len(clean.redactions)
            meta = _meta_from(e.get("meta", {}))
            have = {entries.normalize(x.content) for x in entries.parse_entries(texts[path])}
            if (meta.id and meta.id in known_ids) or entries.normalize(clean.text) in have:
                if path not in restored:  # an entry of a restored note was counted with it
                    skipped += 1
                continue
            item = bool(e.get("item", True))
            text = entries.format_entry(clean.text, meta) if item else entries.format_paragraph(clean.text, meta)
            texts[path] = _append(texts[path], text, bool(e.get("item", True)), Path(path).stem)
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
        if linked and not raw_tree:
            with_nodes(tree, linked)  # validates: raises before anything is written
        for n in linked:  # a note with no entries (only headings, say) still gets its file
            if n.path and n.path not in texts and not (root / n.path).is_file():
                texts[n.path], originals[n.path] = f"# {Path(n.path).stem}\n", None
        if not dry_run:
            # notes first, then conflicts.json and tree-index.json: no node points to a note not yet written
            for path in sorted(texts, key=lambda p: (p in WHOLE_FILES, p)):
                if texts[path] != originals.get(path):
                    snap = snaps.get(path) or store.read(root, path)
                    try:
                        store.save(root, snap, texts[path].encode("utf-8"))
                    except ChangedOnDisk:
                        raise ChangedOnDisk(
                            f"import: {path} was edited while importing; run the import again "
                            "(the entries already written are recognised and skipped)"
                        ) from None
            if linked and not raw_tree:
                treemod.update(
                    root, lambda current: with_nodes(current, tuple(n for n in linked if n.id not in current.by_id))
                )
    changed = tuple(sorted(p for p, t in texts.items() if p.endswith(store.NOTE_SUFFIXES) and t != originals.get(p)))
    return Imported(
        written, skipped, tuple(n.id for n in linked), changed, redacted, dry_run, tuple(restored), conflicts_added
    )


def _same_tree(text: str | None, nodes: list[dict[str, Any]], sanitizer: Sanitizer) -> bool:
    """Whether a carried tree-index.json text holds exactly the (cleaned) nodes and no secret."""
    if text is None or sanitizer.find(text):
        return False
    wanted = sorted((treemod._node(raw, i, "import").to_json() for i, raw in enumerate(nodes)), key=lambda n: n["id"])
    return _tree_nodes(text, f"import: {treemod.TREE_FILE}") == wanted


def _merged_conflicts(
    root: Path, text: str, sanitizer: Sanitizer, restore: bool
) -> tuple[store.Snapshot, str, int, int] | None:
    """conflicts.json with the document's open conflicts: restored whole, or merged (those not yet open).

    Returns the file's snapshot, its new text, how many conflicts were added and how many texts
    were redacted; None when nothing changes.
    """
    where = f"import: {conflicts.CONFLICTS_FILE}"
    theirs = _conflicts(text, where)
    redacted = 0
    clean: list[conflicts.OpenConflict] = []
    for c in theirs:
        for name in (c.id, c.new.path, c.new.id, c.old.path, c.old.id):
            sanitizer.require_clean(name, f"{where}: a conflict's id or path")
        sides = []
        for side in (c.new, c.old):
            found = sanitizer.sanitize(side.text)
            redacted += len(found.redactions)
            sides.append(replace(side, text=found.text))
        clean.append(replace(c, new=sides[0], old=sides[1]))
    snap = store.read(root, conflicts.CONFLICTS_FILE)
    if restore:
        return snap, text if not redacted else conflicts.dumps(clean).decode(), len(clean), redacted
    mine = _conflicts(snap.text, conflicts.CONFLICTS_FILE) if snap.exists else []
    open_ids = {c.id for c in mine}
    new = [c for c in clean if c.id not in open_ids]
    if not new:
        return None
    return snap, conflicts.dumps(mine + new).decode(), len(new), redacted


def clean_fields(doc: dict[str, Any], sanitizer: Sanitizer, source: str = "import") -> tuple[dict[str, Any], int]:
    """The parsed document with no secret outside entry and file texts, and how many values were redacted.

    Names — paths (of files too), ids, tags, scope, kind, meta keys, node ids, parents, children — are refused
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
    for path in doc.get("files", {}):
        sanitizer.require_clean(path, f'{source}: a path in "files"')
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


def _append(note: str, text: str, item: bool, heading: str) -> str:
    if item:
        return entries.append_entry(note, text, heading)
    body = note.rstrip("\n")
    return f"{body}\n\n{text}\n" if body else f"# {heading}\n\n{text}\n"
