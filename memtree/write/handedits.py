"""Hand edits in place: a value a person changed inside an entry's line supersedes the old value.

A person edits ``- Redis pool size is 80 <!-- memtree: id=e-1; created=… -->`` in an editor to say
120, keeping the comment; Claude's memory tool does the same with ``str_replace``. The note then
holds the new value under the old entry's id and time, and the old value is gone from it. When
memtree next reads the note it compares each entry that carries an id with the words it last saw
under that id (memtree.notes.seen; `check --fix` falls back on git's HEAD). An entry is a *hand
edit* when its metadata comment is byte for byte what it was and its words are not (every memtree
verb that rewrites an entry's words changes its comment: ``updated=``, ``superseded=``, a new id).

The conflict rule (memtree.write.retain.verdict) reads the change: a replacement of a value (a
number, a name, a day, on/off …) that is no spelling fix (:func:`typo`) keeps the old words above
the edited line as an entry of their own — the old id and time, ``superseded=`` the day of the edit
and ``by=`` the edited line, which takes a fresh id and the edit's time. Anything else (a typo fixed,
a sentence reworded, words added) keeps the id and changes nothing.

A note holding a clash mark a git merge left (``clash=``) is left to `conflicts resolve`. Claude's
memory tool writes through memtree, so its edits are split in its own write (:func:`supersede`,
memtree.serve.claude_memory.files); what memtree itself writes moves what it has seen
(memtree.notes.seen.wrote) and is never read as a hand edit.

The time of the edit is the note's modification time (the caller may pass it in). The note is
rewritten with memtree.notes.store.save, whose compare-and-swap on the file's bytes never replaces
what a person wrote meanwhile: on a change the note is read again and judged again; the person's
words are kept byte for byte, only the comment of the edited line changes and the old line is
inserted above it. The write is atomic (a crash leaves the old file or the new one).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.errors import ChangedOnDisk, MemtreeError
from memtree.notes import entries, git, seen, store
from memtree.write.merge import CLASH_KEY

if TYPE_CHECKING:
    from memtree.state import RootState

COMMAND = "hand edit"
"""The journal's name for the change that keeps a hand-edited entry's old words."""


@dataclass(frozen=True)
class HandEdit:
    """An entry whose value a person changed in place: the old words kept, superseded by the new."""

    path: str
    old_id: str  # the entry's id before the edit, now its kept old words'
    new_id: str  # the edited line's fresh id
    old: str
    new: str
    day: date  # the day of the edit: the old words hold until then


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn ``a`` into ``b``."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


TYPO_MIN_CHARS = 4
"""A word this long may differ by one edit and still be the same word misspelt (twice as long: two).
Why: `sise`/`size`, `Alcie`/`Alice` are typos, `Bob`/`Rob` are other names."""


def _hangul(word: str) -> bool:
    return any("\uac00" <= c <= "\ud7a3" for c in word)


def typo(old: str, new: str) -> bool:
    """Whether ``new`` differs from ``old`` by spelling alone: the same words, each changed one by one by at
    most one edit (two in a word of twice :data:`TYPO_MIN_CHARS`), no digit changed, none added or dropped.

    Why no Korean word: one syllable is a whole other word (화요일/수요일, 김민수/김민주), and a slip
    of a particle (깃랩를/깃랩을) the conflict rule already reads as the same sentence."""
    a, b = entries.normalize(old).split(), entries.normalize(new).split()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op != "replace" or i2 - i1 != j2 - j1:
            return False
        for u, v in zip(a[i1:i2], b[j1:j2]):
            shorter = min(len(u), len(v))
            allowed = 2 if shorter >= 2 * TYPO_MIN_CHARS else 1 if shorter >= TYPO_MIN_CHARS else 0
            if any(c.isdigit() for c in u + v) or _hangul(u + v) or _distance(u, v) > allowed:
                return False
    return True


def replaces(old: str, new: str, merge_at: float, conflict_at: float) -> bool:
    """Whether words ``new``, written over ``old`` in place, replace a value (not a typo fix or a rewording)."""
    from memtree.write.retain import verdict
    from memtree.write.similarity import similarity

    if entries.normalize(old) == entries.normalize(new) or typo(old, new):
        return False
    return verdict(new, old, similarity(new, old), merge_at, conflict_at) == "replace"


def fresh_id(old_id: str, content: str, when: datetime) -> str:
    """The edited line's id: the day of the edit and a digest of the old id and the new words.

    Why not random like retain.new_id: two clones that both see one pulled hand edit give it the
    same id, so their notes merge without a clash."""
    digest = hashlib.sha256(f"{old_id}\n{entries.normalize(content)}".encode()).hexdigest()[:16]
    return f"e-{when:%Y%m%d}-{digest}"


def supersede(
    path: str, note: str, before: dict[str, str], when: datetime, merge_at: float, conflict_at: float
) -> tuple[str, list[HandEdit]]:
    """``note`` with each hand edit of a value (against ``before``, :func:`memtree.notes.seen.blocks`)
    split into the old words, superseded on ``when``'s day, and the edited line with a fresh id; the edits."""
    now_blocks = seen.blocks(note)
    found: list[tuple[entries.Entry, str, entries.Entry]] = []
    for e in entries.parse_entries(note):
        was = before.get(e.meta.id)
        if not e.meta.id or was is None or e.meta.id not in now_blocks or entries.is_retired(e.meta):
            continue
        olds = entries.parse_entries(was)
        if len(olds) != 1 or olds[0].meta != e.meta:  # memtree rewrote it (its comment changed): no hand edit
            continue
        old = olds[0]
        if replaces(old.content, e.content, merge_at, conflict_at):
            found.append((e, was, old))
    edits = []
    day = when.date()
    for e, was, old in reversed(found):  # bottom up, so the line numbers above stay right
        new_id = fresh_id(e.meta.id, e.content, when)
        kept = {k: v for k, v in e.meta.extra.items() if k not in (entries.SUPERSEDED, entries.BY, entries.UPDATED)}
        meta = replace(e.meta, id=new_id, created=when.isoformat(timespec="seconds"), merged=(), extra=kept)
        block = "\n".join(note.split("\n")[e.start - 1 : e.end])
        edited = entries.remark(block, replace(e, start=1, end=e.end - e.start + 1), meta)
        past = entries.remark(was, old, entries.retired(old.meta, day, new_id))
        gap = "\n" if e.is_item else "\n\n"
        note = entries.replace_lines(note, e.start, e.end, past + gap + edited)
        edits.append(HandEdit(path, e.meta.id, new_id, old.content, e.content, day))
    return note, edits[::-1]


def _when(root: Path, path: str) -> datetime:
    """The time of a note's last edit: its modification time, with the local offset."""
    return datetime.fromtimestamp((root / path).stat().st_mtime).astimezone()


def settle(
    state: RootState, paths: Iterable[str], when: datetime | None = None, from_git: bool = False
) -> list[HandEdit]:
    """Keep the old words of the values edited by hand in these bank notes (see the module docstring).

    ``when``: the time of the edits (None: each note's modification time). ``from_git`` (`check --fix`):
    a note that differs from git's HEAD is compared with it too — memtree may not have seen its entries
    before the edit (``.memtree/`` deleted, the note pulled). Remembers what each note holds now.
    """
    cfg = state.settings.retain
    done: list[HandEdit] = []
    paths = list(paths)
    edited_since_head = set(git.changed_since_head(state.root, "bank")) if from_git and paths else set()
    for path in paths:
        if not seen.tracked(path):
            continue
        try:
            # Why not store.read: this note was just read by the index through the root's walk; the
            # rewrite (_write) reads it again through store.read, with its checks
            note = store.read_note(os.path.join(state.root, path))
        except FileNotFoundError:
            seen.drop(state.root, path)
            continue
        except (OSError, UnicodeDecodeError):
            continue
        if f"{CLASH_KEY}=" in note:
            continue  # a git merge kept two versions of an entry: `conflicts resolve` settles which holds
        before = known = seen.load(state.root, path)
        if path in edited_since_head:
            before = _with_head(state.root, path, before, note)
        if not before or "memtree:" not in note:
            seen.keep(state.root, path, seen.blocks(note), known)
            continue
        try:
            at = when or _when(state.root, path)
        except OSError:
            continue
        _, edits = supersede(path, note, before, at, cfg.merge_threshold, cfg.conflict_threshold)
        if not edits:
            seen.keep(state.root, path, seen.blocks(note), known)
            continue
        try:
            edits, note = _write(state, path, before, at)
        except (MemtreeError, OSError, UnicodeDecodeError) as exc:  # read-only, kept changing, no longer UTF-8
            # the next look tries again
            state.warnings.append(f"{path}: a value edited by hand could not be kept as superseded ({exc})")
            continue
        seen.keep(state.root, path, seen.blocks(note))
        state.refresh_paths([path])
        done += edits
    return done


def noticed(state: RootState, changed: list[str], removed: list[str]) -> None:
    """What a refresh found (RootState.on_notes_changed): settle the hand edits of changed notes."""
    settle(state, changed)
    for path in removed:
        seen.drop(state.root, path)


def _with_head(root: Path, path: str, known: dict[str, str] | None, note: str) -> dict[str, str] | None:
    """What to compare ``note`` with when git's HEAD may know more: an entry memtree saw change since it last
    wrote it, or whose words memtree wrote itself, by what it saw; every other by its words at HEAD (a look
    since may have taken an edit for seen)."""
    committed = git.committed_text(root, path)
    if committed is None:
        return known
    now = seen.blocks(note)
    mine = seen.written(root, path)  # words memtree wrote since HEAD (a link it rewrote): never a hand edit
    pending = {i: b for i, b in (known or {}).items() if b != now.get(i) or i in mine}
    return {**seen.blocks(committed), **pending}


def _write(state: RootState, path: str, before: dict[str, str], at: datetime) -> tuple[list[HandEdit], str]:
    """Rewrite one note with its hand edits split (compare-and-swap: a change meanwhile is judged again)."""
    from memtree.write.verbs import recording

    cfg = state.settings.retain
    with store.write_lock(state.root), recording(state, COMMAND, at) as rec:
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(state.root, path)
            note, edits = supersede(path, snap.text, before, at, cfg.merge_threshold, cfg.conflict_threshold)
            if not edits:
                return [], snap.text
            try:
                store.save(state.root, snap, note.encode("utf-8"))
            except ChangedOnDisk:
                continue  # the person saved again meanwhile: their text is judged afresh, never overwritten
            rec.summary = "; ".join(f"{e.old_id} → {e.new_id}" for e in edits)
            rec.ids.extend(i for e in edits for i in (e.old_id, e.new_id))
            with contextlib.suppress(OSError, UnicodeDecodeError, MemtreeError):
                note = store.read(state.root, path).text  # with a line appended meanwhile, carried by save
            return edits, note
    raise ChangedOnDisk(f"{path} kept changing while memtree read it")
