"""Open conflicts: pairs of entries that may contradict each other, kept in tracked ``conflicts.json``.

`add` records one when a new entry is similar to an existing one but not enough to merge
(0.5 ≤ similarity < 0.8 by default) and is not plainly its replacement: both are kept and every
agent sees the pair until someone settles it with `memtree conflicts resolve ID --keep new|old|both`,
which marks the entry not kept superseded (memtree.notes.entries.retired) — its text stays in the
note, served only for the past; a sentence of a hand-written paragraph moves out alone, the
paragraph's other sentences stay byte for byte. A conflict whose entry was forgotten, archived,
superseded or changed closes itself (:func:`is_open`). The file is written deterministically (sorted, 2-space indent) so
concurrent agents' changes merge cleanly in git.

`memtree conflicts --scan` looks through whole banks for pairs stated two ways (different
numbers, or one negated), comparing each sentence of a hand-written paragraph on its own, and
names the newer by ``created=``: an entry without one is undated, never newer than a dated one.

Why one module over 300 lines: conflicts.json's format, creating (the one place a conflict is made,
:func:`open_conflict`), resolving and scanning are one file's life.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import orjson

from memtree.config import CONFLICT_THRESHOLD
from memtree.errors import MemtreeError, QueryError
from memtree.notes import entries, store

CONFLICTS_FILE = "conflicts.json"
FORMAT = 1


@dataclass(frozen=True)
class Side:
    """One entry of a conflict: where it is and what it says."""

    path: str
    id: str
    text: str


@dataclass(frozen=True)
class OpenConflict:
    """Two entries that may contradict each other."""

    id: str
    created: str
    similarity: float
    new: Side
    old: Side


def load(root: Path) -> list[OpenConflict]:
    """The open conflicts (none when the file is absent)."""
    path = store.inside(root, CONFLICTS_FILE)  # one linked out of the root is refused, not read
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise MemtreeError(f"{path}: unreadable ({exc}); fix or delete it") from None
    return loads(data, str(path))


def loads(data: bytes | str, source: str = CONFLICTS_FILE) -> list[OpenConflict]:
    """The open conflicts of a conflicts.json text; MemtreeError naming ``source`` when it is not one."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MemtreeError(f"{source}: unreadable ({exc}); fix or delete it") from None
    try:
        return [
            OpenConflict(c["id"], c["created"], float(c["similarity"]), Side(**c["new"]), Side(**c["old"]))
            for c in doc.get("conflicts", [])
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MemtreeError(f"{source}: not a memtree conflicts file ({exc})") from None


def dumps(conflicts: list[OpenConflict]) -> bytes:
    """Deterministic bytes of the conflicts file."""
    items: list[dict[str, Any]] = [asdict(c) for c in sorted(conflicts, key=lambda c: (c.created, c.id))]
    return orjson.dumps({"version": FORMAT, "conflicts": items}, option=orjson.OPT_INDENT_2) + b"\n"


def save(root: Path, conflicts: list[OpenConflict]) -> None:
    """Write the conflicts file (removed when nothing is open; the caller holds the write lock)."""
    if conflicts:
        store.rewrite(root, CONFLICTS_FILE, lambda _old: dumps(conflicts).decode())
        return
    snap = store.read(root, CONFLICTS_FILE)
    if snap.exists:
        store.remove(root, snap)  # journaled: an undo brings it back


def new_id(now: datetime) -> str:
    """A conflict id: the day found and 64 random bits (``c-20261201-3fa9c2d17b0e5a48``), unique across clones."""
    return f"c-{now:%Y%m%d}-{secrets.token_hex(8)}"


def open_conflict(root: Path, new: Side, old: Side, similarity: float, now: datetime) -> str:
    """Record an open conflict in conflicts.json (the caller holds the write lock); returns its id.

    The one place a conflict is created: `add` (memtree.write.retain) and `conflicts --scan --record`.
    """
    return _append(root, [(new, old, similarity)], now)[0]


def record_scanned(root: Path, found: list[Contradiction], now: datetime) -> list[str]:
    """Record each contradiction not yet open (either way round) as an open conflict; returns the new ids."""
    with store.write_lock(root):
        known = {(c.new.text, c.old.text) for c in load(root)}
        known |= {(old, new) for new, old in known}
        fresh = [(c.newer, c.older, c.similarity) for c in found if (c.newer.text, c.older.text) not in known]
        return _append(root, fresh, now) if fresh else []


def _append(root: Path, pairs: list[tuple[Side, Side, float]], now: datetime) -> list[str]:
    open_ = [c for c in load(root) if is_open(root, c)]  # one that closed itself leaves the file here
    ids = []
    for new, old, similarity in pairs:
        cid = new_id(now)
        open_.append(OpenConflict(cid, now.isoformat(timespec="seconds"), round(similarity, 4), new, old))
        ids.append(cid)
    save(root, open_)
    return ids


CLASH_ID = re.compile(r"c-[0-9a-f]{12}")
"""The id of a clash memtree's git merge left (memtree.write.merge); a conflict `add` records has a day in its id."""


def cause(c: OpenConflict) -> str:
    """What made a pair an open conflict, in one line: the words that differ and why, for one `add`
    or `update` recorded (with their similarity); the field and both values, for a node field a merge
    kept ours of; that a merge kept both versions, for an entry two clones changed.

    Why not the similarity alone: a clash has none (0.0 said nothing), and a number says less than
    the values it is about (`50 → 80`).
    """
    if is_field(c):
        name, _, theirs = c.new.text.partition("=")
        ours = c.old.text.partition("=")[2]
        return f"node {c.new.id}: {name} {ours} kept, {theirs} from the merge"
    if not measured(c):
        return "a git merge kept both versions of one entry"
    from memtree.write.similarity import distinct_facts

    why = distinct_facts(c.new.text, c.old.text) or "worded alike"
    was, now = differing_words(c.old.text, c.new.text)
    said = f": {was or '(nothing)'} → {now or '(nothing)'}" if was or now else ""
    return f"{why}{said} (similarity {c.similarity:.2f})"


def measured(c: OpenConflict) -> bool:
    """Whether a conflict was recorded for its similarity (by `add`, `update` or `--scan`), not left by a git merge."""
    return not is_field(c) and not (c.similarity == 0.0 and CLASH_ID.fullmatch(c.id))


def is_field(c: OpenConflict) -> bool:
    """Whether a conflict is a node field clash of tree-index.json (memtree.write.clashes.as_conflict)."""
    from memtree.notes.tree import TREE_FILE

    return c.new.path == TREE_FILE and "=" in c.new.text


def field_of(side: Side) -> tuple[str, Any]:
    """A node field conflict's side as (field, value): ``weight=2.5`` → ("weight", 2.5). ValueError if malformed."""
    name, _, value = side.text.partition("=")
    return name, orjson.loads(value)


def differing_words(old: str, new: str) -> tuple[str, str]:
    """The stretch of words in which two texts differ, once their common first and last words are set aside."""
    a = entries.normalize(old).rstrip(" .!?。").split()
    b = entries.normalize(new).rstrip(" .!?。").split()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return " ".join(a[head : len(a) - tail]), " ".join(b[head : len(b) - tail])


KEEP = ("new", "old", "both")


def resolve(
    root: Path, conflict_id: str, keep: str, day: date, conflict_at: float = CONFLICT_THRESHOLD
) -> tuple[OpenConflict, str]:
    """Settle one conflict: the entry not kept is marked superseded on ``day`` by the kept one
    (``both`` marks none); returns it and what was done. No text leaves the note.

    What is retired is only the conflicting text: an entry memtree wrote (it has an id) or a
    one-sentence entry is marked as a whole; a sentence of a hand-written entry moves out of it into
    an entry of its own at the end of the note, marked, the rest of the paragraph byte for byte. A
    hand-written entry recorded whole (the add path records the entry it compared with) gives up
    just its sentence that conflicts with the kept side — the one most similar to it, at least
    ``conflict_at`` and clearly ahead of the rest. When that sentence cannot be told, or the
    recorded sentence is there more than once, nothing changes: MemtreeError names what to edit by
    hand, and the conflict stays open. A conflict that closed itself (:func:`is_open`) is named so.
    """
    if keep not in KEEP:
        raise QueryError(f"--keep must be one of {', '.join(KEEP)}, got {keep!r}")
    with store.write_lock(root):
        open_ = load(root)
        found = next((c for c in open_ if c.id == conflict_id), None)
        if found is None:
            ids = ", ".join(c.id for c in open_ if is_open(root, c)) or "none are open"
            raise QueryError(f"no open conflict {conflict_id!r} (open: {ids})")
        if not is_open(root, found):
            save(root, [c for c in open_ if c.id != conflict_id and is_open(root, c)])
            raise QueryError(
                f"{conflict_id} closed itself: one of its entries was forgotten, archived, superseded or "
                "changed since; nothing to settle"
            )
        outcome = "both entries kept"
        if keep != "both":
            side, kept = (found.old, found.new) if keep == "new" else (found.new, found.old)
            which = ("old", "new")[keep == "old"]
            done: list[str] = []

            def retire(note: str) -> str | None:
                marked = _retire(note, side, kept, day, conflict_at, f"the {which} entry of {conflict_id}")
                if marked is None:
                    return None
                done[:] = [marked[1]]
                return marked[0]

            if store.rewrite(root, side.path, retire):
                outcome = done[0]
            else:
                outcome = f"the {which} entry was already changed or removed in {side.path}; nothing marked there"
        save(root, [c for c in open_ if c.id != conflict_id and is_open(root, c)])
    return found, outcome


def is_open(root: Path, c: OpenConflict) -> bool:
    """Whether both sides of a conflict are still current entries of their notes.

    A conflict closes itself when either entry was forgotten, archived, superseded or changed. A node
    field's (a merge kept ours and filed theirs) stays open while the node is in the tree and holds
    another value than theirs.
    """
    if is_field(c):
        return _field_open(root, c)
    return all(_current(root, side) for side in (c.new, c.old))


def _field_open(root: Path, c: OpenConflict) -> bool:
    from memtree.notes import tree as treemod

    try:
        name, theirs = field_of(c.new)
        node = treemod.load(root, check_files=False).by_id.get(c.new.id)
    except (MemtreeError, OSError, ValueError):
        return True  # an unreadable tree or value closes nothing: check --fix and resolve say what is wrong
    return node is not None and getattr(node, name, theirs) != theirs


def _current(root: Path, side: Side) -> bool:
    try:
        note = store.read(root, side.path).text
    except (MemtreeError, OSError, UnicodeDecodeError):
        return False
    entry = entries.find(note, side.id, side.text)
    want = entries.sentences(side.text)
    if entry is not None:
        if entries.is_retired(entry.meta):
            return False
        # changed (`update`, an edit by hand): the words the conflict is about are no longer what it says
        have = entries.sentences(entry.content)
        return entries.normalize(entry.content) == entries.normalize(side.text) or all(w in have for w in want)
    return any(not e.meta.id and _holds(e, want) for e in entries.parse_entries(note))


def _retire(note: str, side: Side, kept: Side, day: date, conflict_at: float, what: str) -> tuple[str, str] | None:
    """``note`` with ``side``'s conflicting text marked superseded by ``kept``, and what was done;
    None when it is not there. MemtreeError when which text to retire cannot be told (see :func:`resolve`).
    """
    from memtree.write.similarity import similarity

    entry = entries.find(note, side.id, side.text)
    if entry is not None and (entry.meta.id or len(entries.sentences(entry.content)) == 1):
        marked = entries.remark(note, entry, entries.retired(entry.meta, day, kept.id))
        return marked, f"marked {side.path}:{entry.start}-{entry.end} superseded (its text kept)"
    if entry is not None:  # a hand-written entry of several sentences, recorded whole
        said = entries.sentences(entry.content)
        same = entries.normalize(kept.text)
        ranked = sorted(((similarity(s, kept.text), s) for s in said if entries.normalize(s) != same), reverse=True)
        best, sentence = ranked[0] if ranked else (0.0, "")
        if best < conflict_at or any(score == best for score, _ in ranked[1:]):
            raise MemtreeError(
                f"{what} is a hand-written entry of {len(said)} sentences at {side.path}:{entry.start}-{entry.end} "
                "and no one of them clearly conflicts; nothing changed: edit it by hand, then close the "
                "conflict with --keep both"
            )
    else:  # a sentence of a hand-written entry, as the scan records it
        want = entries.sentences(side.text)
        holders = [e for e in entries.parse_entries(note) if not e.meta.id and _holds(e, want)]
        if not holders:
            return None
        if len(holders) > 1:
            where = ", ".join(f"{side.path}:{e.start}" for e in holders)
            raise MemtreeError(f"{what} is written more than once ({where}); nothing changed: edit it by hand")
        entry, sentence = holders[0], want[0]
    new = entries.remove_sentence(note, entry, sentence)
    if new is None:
        raise MemtreeError(
            f"{what} is in {side.path}:{entry.start}-{entry.end} more than once; nothing changed: edit it by hand"
        )
    # Why its own entry at the note's end: the sentence keeps its words, marked; the paragraph keeps the rest
    meta = entries.retired(entries.EntryMeta(), day, kept.id)
    heading = Path(side.path).stem
    moved = entries.append_entry(new, entries.format_entry(sentence, meta), heading)
    return moved, (
        f"moved {sentence!r} out of {side.path}:{entry.start}-{entry.end} to the note's end, marked superseded; "
        "the rest of that entry kept"
    )


def _holds(entry: entries.Entry, want: list[str]) -> bool:
    """Whether ``want`` is one sentence, and one of ``entry``'s."""
    return len(want) == 1 and want[0] in entries.sentences(entry.content)


NEGATIONS = frozenset("안 않 못 없 아니 말 not no never don't doesn't isn't aren't won't cannot can't without".split())
"""Words that turn a statement around (Korean roots match as prefixes: 않는다, 없음, 못했다)."""
SCAN_MAX_DF = 50
"""Entries are paired through their rarer shared words; a word in more entries than this pairs nothing."""


@dataclass(frozen=True)
class Contradiction:
    """Two entries that look like the same fact stated two ways, and which one to keep."""

    similarity: float
    reason: str  # "different numbers: 10 vs 50" or "one is negated"
    newer: Side
    older: Side
    newer_created: str
    older_created: str

    @property
    def suggestion(self) -> str:
        """What to do about it."""
        if self.newer_created == UNDATED:  # then both are: a dated entry is always the newer
            return f"neither is dated: keep the one that still holds ({self.newer.path}, {self.older.path})"
        return f"keep the newer one ({self.newer.path}) unless the older is better supported"


def _numbers(text_: str) -> list[str]:
    from memtree.text.terms import terms

    return [t for t in terms(text_) if t[:1].isdigit()]


def _negated(text_: str) -> bool:
    from memtree.text.terms import normalize

    words = normalize(text_).replace(".", " ").replace(",", " ").split()
    return any(w in NEGATIONS or w.startswith(("않", "없", "못", "안 ")) for w in words)


UNDATED = "undated"
"""What --scan says for an entry's time when it carries no ``created=`` (entries written by hand)."""


def _stamp(created: str) -> float | None:
    """When an entry was written, from its ``created=`` metadata; None when it carries no such date.

    Why not the note's modification time: every `add` to a note bumps it, and a hand-written
    entry of that note would then read as newer than the entry just added.
    """
    from datetime import datetime

    try:
        return datetime.fromisoformat(created).timestamp() if created else None
    except ValueError:
        return None


def _iso(stamp: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="seconds")


@dataclass(frozen=True)
class _Unit:
    """What --scan compares: an entry, or one sentence of a hand-written entry of several."""

    side: Side
    start: int  # the entry's first line
    stamp: float | None  # from created=; None when undated
    mtime: float  # its note's modification time: orders two undated units, never a dated one


def _units(path: str, note: str, mtime: float) -> list[_Unit]:
    """A note's entries; a hand-written entry of several sentences as one unit per sentence.

    Why: such a paragraph holds unrelated facts, and a conflict recorded on all of it would have
    `resolve` remove them all; its sentence is what contradicts, and what `resolve` removes.
    """
    out = []
    for e in entries.parse_entries(note):
        if entries.is_retired(e.meta):
            continue  # the past: it was replaced, not contradicted
        said = [e.content] if e.meta.id else entries.sentences(e.content)
        texts = [e.content] if len(said) < 2 else said
        out += [_Unit(Side(path, e.meta.id, t), e.start, _stamp(e.meta.created), mtime) for t in texts]
    return out


def scan(root: Path, conflict_at: float = CONFLICT_THRESHOLD, merge_at: float = 0.8) -> list[Contradiction]:
    """Entries of the same bank that are similar yet differ in their numbers or in a negation.

    The newer of two is the later ``created=``; an entry without one (hand-written) is undated
    and never newer than a dated one. Of two undated entries the one in the note modified later
    (then the later line) is named newer, and the suggestion says neither is dated.
    """
    from memtree.write.similarity import similarity, term_set

    found: list[_Unit] = []
    disk, _ = store.walk(root, ("bank",))
    for f in disk:
        try:
            note = store.read_note(root / f.path)
        except (OSError, UnicodeDecodeError):
            continue
        found += _units(f.path, note, f.mtime_ns / 1e9)
    by_term: dict[str, list[int]] = {}
    for i, u in enumerate(found):
        for t in term_set(u.side.text):
            by_term.setdefault(t, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for members in by_term.values():
        if 1 < len(members) <= SCAN_MAX_DF:
            pairs.update((a, b) for i, a in enumerate(members) for b in members[i + 1 :])
    out: list[Contradiction] = []
    for a, b in sorted(pairs):
        ua, ub = found[a], found[b]
        pa, pb, ta, tb = ua.side.path, ub.side.path, ua.side.text, ub.side.text
        if pa.split("/")[1:2] != pb.split("/")[1:2] and "/" in pa[5:] and "/" in pb[5:]:
            continue  # different banks (top-level folders of bank/)
        s = similarity(ta, tb)
        if not conflict_at <= s < 1.0:
            continue
        na, nb = _numbers(ta), _numbers(tb)
        if na and nb and na != nb:
            one, two = sorted((", ".join(na), ", ".join(nb)))
            reason = f"different numbers: {one} vs {two}"
        elif _negated(ta) != _negated(tb) and s >= conflict_at:
            reason = "one is negated"
        else:
            continue
        newer, older = (ua, ub) if _age(ua) >= _age(ub) else (ub, ua)
        out.append(Contradiction(round(s, 4), reason, newer.side, older.side, _when(newer), _when(older)))
    return sorted(out, key=lambda c: -c.similarity)


def _age(u: _Unit) -> tuple[bool, float, int]:
    """Sorts units oldest first: every undated one before every dated one."""
    return (u.stamp is not None, u.mtime if u.stamp is None else u.stamp, u.start)


def _when(u: _Unit) -> str:
    return UNDATED if u.stamp is None else _iso(u.stamp)


# --- repair -------------------------------------------------------------------------------------


def salvage(data: bytes) -> list[OpenConflict]:
    """The complete, well-formed conflict records in a conflicts.json text that is not JSON (cut short, say).

    Every ``{`` is tried as the start of a record, in order; a record read whole is kept and
    reading goes on after it, so a file cut in its last record gives all the others back.
    """
    import json

    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    found: dict[str, OpenConflict] = {}
    at = text.find("{", 1)  # the first "{" opens the document, which did not read whole
    while at != -1:
        try:
            raw, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        try:
            record = loads(orjson.dumps({"conflicts": [raw]}))
        except (MemtreeError, TypeError):
            at = text.find("{", at + 1)  # a side of a record, not one: look inside it no further than its start
            continue
        found.setdefault(record[0].id, record[0])
        at = text.find("{", end)
    return list(found.values())


def repair(root: Path, now: datetime) -> str | None:
    """Rebuild a conflicts.json memtree cannot read from the records it still holds (the caller holds
    the write lock); what was done in one line, or None when it reads (or is absent).

    Its bytes are first kept beside it, ``conflicts.json.bad-<time>``, so not one is lost; the
    file is then written again with every complete record found in it (:func:`salvage`).
    """
    snap = store.read(root, CONFLICTS_FILE)
    if snap.data is None:
        return None
    try:
        loads(snap.data)
        return None
    except MemtreeError:
        pass
    kept = store.inside(root, f"{CONFLICTS_FILE}.bad-{now:%Y%m%dT%H%M%S}")
    n = 1
    while kept.exists():
        n += 1
        kept = store.inside(root, f"{CONFLICTS_FILE}.bad-{now:%Y%m%dT%H%M%S}-{n}")
    store.atomic_write(kept, snap.data)
    found = salvage(snap.data)
    store.save(root, snap, dumps(found))  # ChangedOnDisk when a person edits it meanwhile: nothing written
    return (
        f"{CONFLICTS_FILE} could not be read: kept its {len(snap.data):,} bytes as {kept.name}, "
        f"rebuilt it with the {len(found)} complete record(s) found in it"
    )
