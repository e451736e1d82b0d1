"""What memtree last saw of each note's entries: the words a person's edit in place replaced.

A person (or Claude's memory tool) who edits a value inside an entry's line keeps its metadata
comment, so the note alone cannot tell what the entry said before. memtree keeps, per bank note, the
blocks of the entries it knows by id as it last read or wrote them, in ``.memtree/seen/`` (one small
JSON file a note, named by a digest of its path). memtree.write.handedits compares a changed note
with it.

Derived state: deleting ``.memtree/`` loses only the words of edits made since memtree last looked
(git's HEAD still has the committed ones: `memtree check --fix` asks it). Entries without an id
(written by hand) are not kept: they have no identity to follow across an edit.

It moves with memtree's own writes (:func:`wrote`, called by memtree.notes.store.save: an entry
memtree rewrote is never read as a person's edit) and with each look at a changed note
(memtree.write.handedits), never with a person's edit alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Set as AbstractSet
from pathlib import Path

import orjson

from memtree.notes import entries
from memtree.notes.changes import STATE_DIR

ARCHIVE = "bank/_archive/"  # memtree.notes.store.ARCHIVE_DIR under bank/ (store calls this module)
SEEN_DIR = "seen"
"""Under ``.memtree/``: one file a bank note, the blocks of its entries that carry an id."""


def tracked(rel: str) -> bool:
    """Whether memtree keeps what it saw of ``rel``: a bank note (not one of bank/_archive/, the past as kept)."""
    return rel.startswith("bank/") and rel.endswith(".md") and not rel.startswith(ARCHIVE)


def blocks(note: str) -> dict[str, str]:
    """Each entry id of ``note`` → the entry's lines as written (metadata comment included).

    An id written twice in one note (a copy and paste) is left out: which copy was edited is unknown.
    """
    if "memtree:" not in note:
        return {}  # no metadata comment, no id
    lines = note.split("\n")
    out: dict[str, str] = {}
    twice: set[str] = set()
    for e in entries.parse_entries(note):
        if not e.meta.id:
            continue
        if e.meta.id in out:
            twice.add(e.meta.id)
        out[e.meta.id] = "\n".join(lines[e.start - 1 : e.end])
    for i in twice:
        del out[i]
    return out


def _file(root: Path, rel: str) -> str:
    # Why strings, not Path: a refresh asks this of every changed note, and pathlib's joins cost more than the read
    name = hashlib.sha256(rel.encode("utf-8")).hexdigest()[:24]
    return os.path.join(root, STATE_DIR, SEEN_DIR, f"{name}.json")


def load(root: Path, rel: str) -> dict[str, str] | None:
    """The blocks of ``rel`` as memtree last saw them; None when it never kept them (or cannot read them)."""
    try:
        with open(_file(root, rel), "rb") as f:
            data = orjson.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("path") != rel or not isinstance(data.get("entries"), dict):
        return None
    return {str(k): str(v) for k, v in data["entries"].items()}


_UNKNOWN: dict[str, str] = {"": ""}  # a value :func:`load` never returns: "not read yet"


def written(root: Path, rel: str) -> set[str]:
    """The ids of ``rel`` whose words memtree itself wrote last (:func:`wrote`), not a person's seen by a look."""
    try:
        with open(_file(root, rel), "rb") as f:
            data = orjson.loads(f.read())
    except (OSError, ValueError):
        return set()
    ids = data.get("written") if isinstance(data, dict) and data.get("path") == rel else None
    return {str(i) for i in ids} if isinstance(ids, list) else set()


def keep(
    root: Path,
    rel: str,
    found: dict[str, str],
    known: dict[str, str] | None = _UNKNOWN,
    by_memtree: AbstractSet[str] = frozenset(),
) -> None:
    """Remember ``found`` (:func:`blocks`) as what ``rel`` holds now; nothing is written when it is known.

    ``known``: what :func:`load` gave, when the caller has just read it. ``by_memtree``: the ids whose
    words memtree just wrote (:func:`written` keeps them until a look finds them changed). A root whose
    ``.memtree/`` cannot be written keeps nothing (hand edits then go unseen there).
    """
    known = load(root, rel) if known is _UNKNOWN else known
    if (known == found and not by_memtree) or (known is None and not found):
        return  # the usual look: nothing changed, so which words memtree wrote did not either (no second read)
    before = written(root, rel) if known is not None else set()
    mine = {i for i in before | by_memtree if i in found and (i in by_memtree or (known or {}).get(i) == found[i])}
    if known == found and mine == before:
        return
    path = Path(_file(root, rel))
    with contextlib.suppress(OSError):
        if not found:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # Why not fsync'd: derived state; a crash leaves the old file or the new one (a rename), at worst
        # an edit in between goes unseen
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps({"path": rel, "entries": found, "written": sorted(mine)}))
        os.replace(tmp, path)


def wrote(root: Path, rel: str, before: str | None, after: str) -> None:
    """memtree changed ``rel`` from ``before`` to ``after`` (memtree.notes.store.save): what it wrote is seen.

    Only the entries memtree's write changed, added or removed move; an entry it left as it was keeps
    what was seen of it, so a person's edit made before the write is still told apart afterwards.
    """
    was = blocks(before) if before is not None else {}
    now = blocks(after)
    known = load(root, rel)
    found = dict(was if known is None else known)
    for i in set(found) - set(now):
        del found[i]
    mine = set()
    for i, block in now.items():
        if was.get(i) != block or i not in found:
            found[i] = block
            mine.add(i)
    keep(root, rel, found, known, mine)


def drop(root: Path, rel: str) -> None:
    """Forget what ``rel`` held (the note is gone)."""
    with contextlib.suppress(OSError):
        os.unlink(_file(root, rel))
