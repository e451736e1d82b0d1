"""`memtree update` and `memtree forget`: change one bank entry's words, or move it to bank/_archive/.

An entry is named by its id (``e-20261129-6f65aaae``: a search hit's ``ids``) or by ``PATH:LINE``,
any line of it (a hit's ``lines``), so an entry written by hand, which has no id, can be named too.

- **update** sanitizes the new words, then checks them against the note's other entries as `add`
  does (memtree.write.retain's similarity and thresholds): a restatement of another entry is a
  *duplicate* and nothing is written; a close but different one is written and recorded as a
  *conflict*, or when it states that entry's fact with another value, that entry is marked
  superseded by it; else it is *updated*. The entry keeps its id, list marker and metadata, and gains
  ``updated=<time>``; its old words stay just above it as an entry of their own, marked
  ``superseded=<day>; by=<its id>`` (memtree.notes.entries.retired): `get` and `history` show the chain,
  search serves them only for the past (``--as-of``). A hand-written entry gains an id for it.
- **forget** moves the entry, metadata and all, to the same path under ``bank/_archive/`` with the
  reason (memtree.lifecycle.aging's archive block) — never a silent delete.

Both drop the entry's excerpt from recall/ (searched first) and are journaled, so `memtree undo`
reverts them. Bad input — an unknown id, a line out of range or holding no entry, text that is
empty — is one QueryError naming it, and nothing is written.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memtree.errors import ChangedOnDisk, QueryError
from memtree.lifecycle import aging, recall
from memtree.notes import entries, store
from memtree.write import conflicts, retain
from memtree.write.verbs import recording

if TYPE_CHECKING:
    from pathlib import Path

    from memtree.config import Settings
    from memtree.state import RootState

REASON_MAX_CHARS = 500
"""A forget reason longer than this is cut: it rides in a one-line comment of the archive note."""
FORGOTTEN = "forgotten"
"""What an archived entry's ``why=`` says it left for (followed by the reason when one is given)."""
_LINE_REF = re.compile(r"^(?P<path>.+):(?P<line>-?\d+)$")


@dataclass(frozen=True)
class Ref:
    """An entry as named on the command line: its id, or a note and one of its lines."""

    id: str = ""
    path: str = ""
    line: int = 0

    def __str__(self) -> str:
        return self.id or f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Updated:
    """What `update` did: ``decision`` is updated, unchanged, duplicate (nothing written) or conflict."""

    decision: Literal["updated", "unchanged", "duplicate", "conflict"]
    path: str
    node: str | None
    lines: tuple[int, int]  # the entry's lines now
    entry_id: str | None  # None: a hand-written entry
    similarity: float  # to the most similar other entry of the note
    redacted: tuple[str, ...] = ()
    existing: str | None = None  # a duplicate's other entry: its id, or its lines when hand-written
    conflict_id: str | None = None
    other: str | None = None  # a conflict's other text, or the text of the entry it replaced
    replaced: str | None = None  # another entry the new words replace (marked superseded): its id or lines


@dataclass(frozen=True)
class Forgotten:
    """What `forget` moved to bank/_archive/."""

    path: str
    lines: tuple[int, int]  # where the entry was
    entry_id: str | None
    preview: str
    why: str
    archive: str  # the archive note it now lives in


def parse_ref(state: RootState, given: str) -> Ref:
    """``ID`` or ``PATH:LINE`` (a bank note, relative to here or to the root) → a :class:`Ref`."""
    ref = store.check_name(given.strip(), "ref", absolute=True)
    if not ref:
        raise QueryError("name the entry: its id (e-…) or PATH:LINE")
    m = _LINE_REF.match(ref)
    if m is None:
        if any(c.isspace() for c in ref) or "/" in ref:
            raise QueryError(f"{given!r} is neither an entry id (e-…) nor PATH:LINE")
        return Ref(id=ref)
    path = state.relative(m["path"])
    if not path.startswith("bank/") or path.startswith(aging.ARCHIVE_DIR + "/"):
        raise QueryError(f"{path}: update and forget change bank notes only (not memory/, recall/ or the archive)")
    return Ref(path=path, line=int(m["line"]))


def locate(state: RootState, ref: Ref) -> tuple[str, entries.Entry]:
    """The note and entry ``ref`` names, as they are on disk now; QueryError naming what is wrong."""
    if ref.id:
        return _by_id(state, ref.id)
    note = _read(state, ref.path)
    return ref.path, _at_line(note, ref.path, ref.line)


def _read(state: RootState, path: str) -> str:
    try:
        return store.read(state.root, path).text
    except UnicodeDecodeError:
        raise QueryError(f"{path} is not UTF-8 text; memtree will not rewrite it") from None


def _at_line(note: str, path: str, line: int) -> entries.Entry:
    count = len(note.split("\n")) - (1 if note.endswith("\n") else 0)
    if not 1 <= line <= count:
        raise QueryError(f"{path}:{line}: out of range, the note has {count} lines; nothing was written")
    for e in entries.parse_entries(note):
        if e.start <= line <= e.end:
            return e
    raise QueryError(
        f"{path}:{line} holds no entry (a heading, a blank line, code, a table or frontmatter); "
        "give a line of a list item or paragraph, or the entry's id; nothing was written"
    )


def _by_id(state: RootState, entry_id: str) -> tuple[str, entries.Entry]:
    disk, _ = store.walk(state.root, ("bank",))
    found: list[tuple[str, entries.Entry]] = []
    merged_into = ""
    for f in disk:
        try:
            note = store.read_note(state.root / f.path)
        except (OSError, UnicodeDecodeError):
            continue
        if entry_id not in note:  # most notes: no parse
            continue
        for e in entries.parse_entries(note):
            if e.meta.id == entry_id:
                found.append((f.path, e))
            elif entry_id in e.meta.merged:
                merged_into = e.meta.id or f"{f.path}:{e.start}"
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        where = ", ".join(f"{p}:{e.start}" for p, e in found)
        raise QueryError(f"entry id {entry_id} is in more than one place ({where}); name one as PATH:LINE")
    if merged_into:
        raise QueryError(f"entry {entry_id} was merged into {merged_into}; name that one; nothing was written")
    archived = _archived(state, entry_id)
    if archived:
        raise QueryError(f"entry {entry_id} is archived in {archived} (forgotten or decayed); nothing was written")
    raise QueryError(
        f"no entry with id {entry_id!r} in bank/ (a search hit's ids name entries; a hand-written one is PATH:LINE)"
    )


def _archived(state: RootState, entry_id: str) -> str:
    top = state.root / aging.ARCHIVE_DIR
    if not top.is_dir():
        return ""
    for path in sorted(top.rglob("*.md")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if entry_id in text and entry_id in set(entries.iter_ids(text)):
            return path.relative_to(state.root).as_posix()
    return ""


def _refind(note: str, path: str, was: entries.Entry, ref: Ref) -> entries.Entry:
    """The entry again in the note as read under the lock: where it was, else by its id, else by its words.

    Why where it was first: two hand-written entries may say the same thing, and PATH:LINE named one.
    """
    parsed = entries.parse_entries(note)
    same = [e for e in parsed if e.start == was.start and e.content == was.content and e.meta.id == was.meta.id]
    found = same[0] if same else entries.find(note, was.meta.id, was.content)
    if found is None:
        raise QueryError(f"{ref} changed while memtree was writing ({path}); look again; nothing was written")
    return found


def update(state: RootState, given: str, text: str, now: datetime) -> Updated:
    """Replace one entry's words (see the module docstring); the index is refreshed at once."""
    ref = parse_ref(state, given)
    settings = state.settings
    clean = retain.sanitizer_for(settings).sanitize(text.strip())
    content = clean.text.strip()
    if not content:
        raise QueryError("nothing to update with: the new text is empty; nothing was written")
    redacted = tuple(sorted({r.kind for r in clean.redactions}))
    path, entry = locate(state, ref)
    limit = retain.AUTO_MAX_CHARS if entry.meta.source == "auto" else retain.MANUAL_MAX_CHARS
    if len(content) > limit:
        raise QueryError(f"the text has {len(content):,} characters; this entry takes at most {limit:,}")
    node = state.parsed_tree().by_path.get(path)
    with store.write_lock(state.root), recording(state, "update", now, summary=content) as rec:
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(state.root, path)
            entry = _refind(snap.text, path, entry, ref)
            try:
                result = _update_once(state.root, snap, entry, content, settings, now)
                break
            except ChangedOnDisk:
                continue
        else:
            raise ChangedOnDisk(f"{path} kept changing while memtree tried to update it; nothing was written")
        written = result.decision in ("updated", "conflict")
        if written:
            rec.ids.extend(i for i in (entry.meta.id,) if i)
            _settle(state, path, entry, now)
    if written:
        state.refresh_paths([path, recall.HOT_FILE])
    return replace(result, node=node.id if node else None, redacted=redacted)


def _update_once(
    root: Path, snap: store.Snapshot, entry: entries.Entry, content: str, settings: Settings, now: datetime
) -> Updated:
    """One attempt under the lock: decide against the note's other entries, write (ChangedOnDisk: retry)."""
    note, path = snap.text, snap.rel
    others = [
        e
        for e in entries.parse_entries(note)
        if e.start != entry.start and e.meta.scope == entry.meta.scope and not entries.is_retired(e.meta)
    ]
    match, score, identical = retain.best_match(content, others)
    found = Updated("unchanged", path, None, (entry.start, entry.end), entry.meta.id or None, round(score, 4))
    if content == entry.content:
        return found
    cfg = settings.retain
    if match is not None and (identical or score >= cfg.merge_threshold):
        return replace(found, decision="duplicate", existing=match.meta.id or f"lines {match.start}-{match.end}")
    # Why two entries: the old words stay, marked superseded by the entry that now says it (same id)
    current_id = entry.meta.id or retain.new_id(now)
    kept = {k: v for k, v in entry.meta.extra.items() if k not in (entries.SUPERSEDED, entries.BY)}
    meta = replace(entry.meta, id=current_id, extra={**kept, entries.UPDATED: now.isoformat(timespec="seconds")})
    past = replace(entry.meta, id=retain.new_id(now), merged=(), extra=dict(entry.meta.extra))
    old_block = _rewritten(entry, entry.content, entries.retired(past, now.date(), current_id))
    block = _rewritten(entry, content, meta)
    gap = "\n" if entry.is_item else "\n\n"
    start = entry.start + old_block.count("\n") + len(gap)
    said = retain.judge(content, match, score, cfg.merge_threshold, cfg.conflict_threshold) if match else ""
    if said == "replace" and match is not None:
        note = entries.remark(note, match, entries.retired(match.meta, now.date(), current_id))
    store.save(root, snap, entries.replace_lines(note, entry.start, entry.end, old_block + gap + block).encode("utf-8"))
    found = replace(found, decision="updated", lines=(start, start + block.count("\n")), entry_id=current_id)
    if said == "replace" and match is not None:
        return replace(found, replaced=match.meta.id or f"lines {match.start}-{match.end}", other=match.content)
    if said in ("conflict", "merge") and match is not None:
        new_side = conflicts.Side(path, current_id, content)
        old_side = conflicts.Side(path, match.meta.id, match.content)
        cid = conflicts.open_conflict(root, new_side, old_side, score, now)
        return replace(found, decision="conflict", conflict_id=cid, other=match.content)
    return found


def _rewritten(entry: entries.Entry, content: str, meta: entries.EntryMeta) -> str:
    """``entry`` with new words and metadata, in its own form: its list marker (or none) and indent."""
    comment = meta.render()
    lines = [ln.rstrip() for ln in content.split("\n")]
    if entry.is_item:
        m = entries.LIST_MARKER.match(entry.text)
        marker = m.group(0) if m else "- "
        body = marker + ("\n" + " " * len(marker)).join(lines)
    else:
        body = "\n".join(lines)
    return f"{body} {comment}" if comment else body


def forget(state: RootState, given: str, reason: str, now: datetime) -> Forgotten:
    """Move one entry to bank/_archive/ with the reason (see the module docstring)."""
    ref = parse_ref(state, given)
    said = retain.sanitizer_for(state.settings).sanitize(" ".join(reason.split())).text[:REASON_MAX_CHARS]
    why = aging.comment_value(f"{FORGOTTEN}: {said}" if said else FORGOTTEN)
    path, entry = locate(state, ref)
    stamp = f"{now:%Y-%m-%d}"
    with store.write_lock(state.root), recording(state, "forget", now) as rec:
        for _ in range(store.REWRITE_ATTEMPTS):
            snap = store.read(state.root, path)
            entry = _refind(snap.text, path, entry, ref)
            note = snap.text
            aging.copy_to_archive(state.root, path, [aging.archive_block(stamp, path, entry, why, note.split("\n"))])
            try:
                store.save(state.root, snap, entries.remove_lines(note, entry.start, entry.end).encode("utf-8"))
                break
            except ChangedOnDisk:
                continue  # the copy is made once: copy_to_archive skips a block already there
        else:
            raise ChangedOnDisk(f"{path} kept changing while memtree tried to forget {ref}; nothing was removed")
        preview = entry.content.split("\n", 1)[0][:100]
        rec.summary = f"{entry.meta.id or f'{path}:{entry.start}'} {preview}"
        rec.ids.extend(i for i in (entry.meta.id,) if i)
        _settle(state, path, entry, now)
    state.refresh_paths([path, recall.HOT_FILE])
    archive = aging.archive_path(path)
    return Forgotten(path, (entry.start, entry.end), entry.meta.id or None, preview, why, archive)


def _settle(state: RootState, path: str, was: entries.Entry, now: datetime) -> None:
    """After an entry changed or left (under the lock, in the command's change): its recall/ excerpt
    goes, and a note that passed the size limit is split."""
    from memtree.write import verbs

    recall.drop_source(state.root, path, aging.digest(was.content))
    full = state.root / path
    if full.is_file() and full.stat().st_size > state.settings.split.max_bytes:
        # someone who keeps editing it meanwhile (ChangedOnDisk): the next write or check splits it
        with contextlib.suppress(ChangedOnDisk):
            verbs.split(state, path, now=now)  # refreshes the index itself
