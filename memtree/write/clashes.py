"""Clashes a merge kept both ways: the ``clash=`` marks memtree's merge driver leaves in notes.

When two clones edit one entry differently, the merge (memtree.write.merge) keeps both versions,
the later one with an id of its own (``e-….1a2b3c``) and ``clash=c-…`` in its comment; prose
both sides rewrote keeps both blocks, the later one's last line marked. The mark travels in the
note with the merge, so every clone lists it: `memtree conflicts` shows each mark as an open
conflict (new = the marked version, old = the one it clashed with) and `conflicts resolve`
settles it — ``--keep new`` or ``old`` marks the other version of an entry superseded by the kept
one (its words stay in the note; the kept one has the entry's id), ``--keep both`` removes the mark.
A prose clash is edited by hand, then closed with ``--keep both``. A clash one of whose versions
was superseded or forgotten since has closed itself.

A node field of tree-index.json both sides changed (its path, parent or weight) has room for one
value: the merge keeps ours and records theirs (memtree.write.merge.FieldClash). git's driver may
write only the file it merges, so it leaves the record in this clone's ``.memtree/`` (a file no
git operation touches); the next `memtree sync`, `check --fix` or `conflicts resolve` files it in
conflicts.json, whence it reaches every clone, and `memtree conflicts` lists it meanwhile. It is
an open conflict of tree-index.json: old = the value kept, new = the other; ``--keep old`` closes
it, ``--keep new`` sets the other value (``both`` cannot: a node has one value per field).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, replace
from datetime import date
from pathlib import Path
from typing import Any

import orjson

from memtree.errors import MemtreeError, QueryError, TreeError
from memtree.notes import entries, store
from memtree.notes import tree as treemod
from memtree.write import conflicts
from memtree.write.conflicts import OpenConflict, Side
from memtree.write.merge import CLASH_KEY, FieldClash

PENDING_FILE = "tree-clashes.jsonl"
"""In ``.memtree/``: node field clashes the merge driver recorded, one JSON object a line, not yet filed."""


def _parent_id(entry_id: str) -> str | None:
    """The id a clashed version was split from (``e-1.1a2b3c`` → ``e-1``), None for a prose clash."""
    head, dot, tail = entry_id.rpartition(".")
    return head if dot and len(tail) == 6 else None


def _in_note(path: str, note: str) -> list[OpenConflict]:
    found = entries.parse_entries(note)
    out = []
    for i, e in enumerate(found):
        cid = e.meta.extra.get(CLASH_KEY)
        if not cid:
            continue
        parent = _parent_id(e.meta.id)
        other = next((x for x in found if x.meta.id == parent), None) if parent else (found[i - 1] if i else None)
        if entries.is_retired(e.meta) or (other is not None and entries.is_retired(other.meta)):
            continue  # one version was superseded since: the clash closed itself
        old = Side(path, other.meta.id, other.content) if other is not None else Side(path, "", "")
        out.append(OpenConflict(cid, e.meta.created, 0.0, Side(path, e.meta.id, e.content), old))
    return out


def find(root: Path) -> list[OpenConflict]:
    """Every clash mark in the bank's notes, as an open conflict."""
    disk, _ = store.walk(root, ("bank",))
    out = []
    for f in disk:
        try:
            data = (root / f.path).read_bytes()
            if f"{CLASH_KEY}=".encode() not in data:
                continue
            out += _in_note(f.path, data.decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return out


def settle(root: Path, clash: OpenConflict, keep: str, day: date) -> str:
    """Settle one clash (the caller holds the write lock): what was done, in one line.

    The version not kept is marked superseded on ``day`` by the kept one, which has the entry's id:
    no version's words leave the note."""
    path = clash.new.path
    parent = _parent_id(clash.new.id)
    if keep != "both" and parent is None:
        raise MemtreeError(
            f"{clash.id} is prose both sides rewrote ({path}): edit the two versions by hand, then "
            f"`memtree conflicts resolve {clash.id} --keep both`"
        )

    def settled(note: str) -> str | None:
        found = entries.parse_entries(note)
        marked = next((e for e in found if e.meta.extra.get(CLASH_KEY) == clash.id), None)
        if marked is None:
            return None
        extra = {k: v for k, v in marked.meta.extra.items() if k != CLASH_KEY}
        unmarked = replace(marked.meta, extra=extra)
        if keep == "both":
            return entries.remark(note, marked, unmarked)
        other = next((e for e in found if e.meta.id == parent), None)
        if keep == "old":
            return entries.remark(note, marked, entries.retired(unmarked, day, parent or ""))
        # the kept version takes the entry's id; the other keeps its words under the clashed version's id
        note = entries.remark(note, marked, replace(unmarked, id=parent or ""))
        if other is not None:
            past = entries.retired(replace(other.meta, id=marked.meta.id), day, parent or "")
            note = entries.remark(note, other, past)
        return note

    if not store.rewrite(root, path, settled):
        return f"the clash mark is no longer in {path}; nothing changed"
    return {
        "both": "both versions kept",
        "new": "the marked version kept; the other marked superseded (its text kept)",
        "old": "the marked version marked superseded (its text kept)",
    }[keep]


# --- node fields of tree-index.json --------------------------------------------------------------


def as_conflict(clash: FieldClash) -> OpenConflict:
    """A node field clash as an open conflict of tree-index.json (old = ours, kept; new = theirs)."""

    def side(value: Any) -> Side:
        return Side(treemod.TREE_FILE, clash.node, f"{clash.field}={orjson.dumps(value).decode()}")

    return OpenConflict(clash.id, "", 0.0, side(clash.theirs), side(clash.ours))


def is_field(conflict: OpenConflict) -> bool:
    """Whether a conflict is a node field clash of tree-index.json."""
    return conflicts.is_field(conflict)


def note_pending(root: Path, found: Iterable[FieldClash]) -> None:
    """Leave node field clashes for memtree to file (the merge driver: it may write no other tracked file)."""
    lines = b"".join(orjson.dumps(asdict(as_conflict(c))) + b"\n" for c in found)
    if not lines:
        return
    state = root / store.STATE_DIR
    state.mkdir(exist_ok=True)
    with open(state / PENDING_FILE, "ab") as out:  # one small append a merge: lines stay whole
        out.write(lines)


def pending(root: Path) -> list[OpenConflict]:
    """The node field clashes the merge driver left in ``.memtree/``, not yet in conflicts.json."""
    try:
        data = (root / store.STATE_DIR / PENDING_FILE).read_bytes()
    except OSError:
        return []
    out: dict[str, OpenConflict] = {}
    for line in data.splitlines():
        try:
            found = conflicts.loads(b'{"conflicts": [' + line + b"]}")
        except MemtreeError:
            continue  # a line a killed driver cut short
        out.update((c.id, c) for c in found)
    return list(out.values())


def file(root: Path, found: Iterable[OpenConflict]) -> list[str]:
    """Add these conflicts to conflicts.json unless open there (the caller holds the write lock); ids added."""
    open_ = conflicts.load(root)
    known = {c.id for c in open_}
    fresh = [c for c in found if c.id not in known and not known.add(c.id)]  # type: ignore[func-returns-value]
    if fresh:
        conflicts.save(root, [*open_, *fresh])
    return [c.id for c in fresh]


def adopt(root: Path) -> list[str]:
    """File the driver's pending node field clashes in conflicts.json (the caller holds the write lock)."""
    waiting = pending(root)
    if not waiting:
        return []
    added = file(root, waiting)
    (root / store.STATE_DIR / PENDING_FILE).unlink(missing_ok=True)
    return added


def settle_field(root: Path, clash: OpenConflict, keep: str) -> str:
    """Settle a node field clash (the caller holds the write lock, the clash is filed): what was done."""
    name, value = conflicts.field_of(clash.new)
    node_id = clash.new.id
    if keep == "both":
        raise QueryError(f"{clash.id}: node '{node_id}' has one {name}: --keep old (the one it has) or new ({value!r})")
    if keep == "new":

        def change(tree: treemod.Tree) -> treemod.Tree | None:
            node = tree.by_id.get(node_id)
            if node is None:
                raise MemtreeError(f"{clash.id}: node '{node_id}' is no longer in {treemod.TREE_FILE}; --keep old")
            if getattr(node, name) == value:
                return None
            nodes = {n.id: n for n in tree.nodes}
            if name == "parent":
                if node.parent in nodes:
                    old = nodes[node.parent]
                    nodes[old.id] = replace(old, children=tuple(c for c in old.children if c != node_id))
                if value is not None:
                    if value not in nodes:
                        raise MemtreeError(f"{clash.id}: parent '{value}' is no longer in {treemod.TREE_FILE}")
                    new = nodes[value]
                    nodes[value] = replace(new, children=tuple(sorted({*new.children, node_id})))
            fields: dict[str, Any] = {name: float(value) if name == "weight" else value}
            nodes[node_id] = replace(nodes[node_id], **fields)
            try:
                return treemod.validate([nodes[k] for k in sorted(nodes)])
            except TreeError as exc:
                raise MemtreeError(
                    f"{clash.id}: {name}={value!r} would break the tree ({exc}); nothing changed"
                ) from None

        treemod.update(root, change)
    conflicts.save(root, [c for c in conflicts.load(root) if c.id != clash.id])
    node = treemod.load(root, check_files=False).by_id.get(node_id)
    if node is None:
        return f"node '{node_id}' is no longer in {treemod.TREE_FILE}; nothing changed"
    return f"node '{node_id}' keeps {name}={orjson.dumps(getattr(node, name)).decode()}"
