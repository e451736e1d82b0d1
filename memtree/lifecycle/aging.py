"""`memtree decay`: every bank entry's weight today, the archive candidates, and archiving them.

An archive candidate is an entry whose decay weight fell under ``decay.archive_below`` (0.02), or
an auto-extracted entry (``source=auto``) older than ``consolidate.prune_days`` (90) that search found
fewer than ``consolidate.prune_min_recalls`` times (3; consolidation's rule, DESIGN §5): memtree.yaml's
keys, passed in as memtree.config's DecaySettings and ConsolidateSettings. Archiving moves a candidate's
lines, metadata and all, to the same path under ``bank/_archive/`` — which search never reads —
and deletes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.errors import ChangedOnDisk
from memtree.notes import chunks, entries, store
from memtree.notes.usage import entry_keys
from memtree.search import decay

if TYPE_CHECKING:
    from memtree.config import ConsolidateSettings, DecaySettings


def digest(content: str) -> str:
    """A short hash of an entry's words (whitespace and case folded): recall/ excerpts keep it."""
    import hashlib

    return hashlib.blake2b(entries.normalize(content).encode(), digest_size=6).hexdigest()


ARCHIVE_DIR = "bank/_archive"


@dataclass(frozen=True)
class Aged:
    """One bank chunk's decay: where, how old and by what, how often recalled, its weight."""

    path: str
    lines: tuple[int, int]
    preview: str
    age_days: float
    dated: str
    recalls: int
    weight: float
    auto: bool
    why: str  # why it is an archive candidate ("" when it is not)
    id: str = ""
    keys: tuple[str, ...] = ()  # what usage counts it under (memtree.notes.usage)
    sha: str = ""  # memtree.lifecycle.recall.digest of its content
    content: str = ""
    retired: bool = False  # superseded by a newer entry (its words kept for the past)

    @property
    def candidate(self) -> bool:
        return bool(self.why)


def survey(
    root: Path,
    paths: Iterable[str],
    recalls: Callable[[tuple[str, ...]], int],
    now: float,
    curve: DecaySettings,
    stale: ConsolidateSettings,
) -> list[Aged]:
    """The decay at ``now`` (epoch s) of every entry (list item or paragraph) of the bank notes ``paths``.

    ``curve`` weighs each entry; ``stale`` says when an auto entry is old and rarely recalled.
    """
    out: list[Aged] = []
    for path in sorted(paths):
        full = root / path
        try:
            body = store.read_note(full)
            mtime = full.stat().st_mtime
        except (OSError, UnicodeDecodeError):
            continue
        doc = chunks.parse(body)
        note = decay.note_facts(path, list(doc.lines), mtime)
        for e in entries.parse_entries(body):
            content = e.content  # Why a name: Entry.content is worked out again at each reading
            if not content:
                continue
            stamp = decay.parse_time(e.meta.created)
            time_, dated = (stamp, "entry") if stamp is not None else (note.time, note.origin)
            keys = entry_keys(path, e)
            count = recalls(keys)
            age = max(0.0, (now - time_) / decay.DAY_S)
            w = decay.weight(age, count, curve)
            auto = e.meta.source == "auto"
            why = ""
            if w < curve.archive_below:
                why = f"weight {w:.3f} < {curve.archive_below}"
            elif auto and age > stale.prune_days and count < stale.prune_min_recalls:
                why = f"auto entry {age:.0f} d old, recalled {count}×"
            preview = content.split("\n", 1)[0]
            span, sha = (e.start, e.end), digest(content)
            row = Aged(
                path,
                span,
                preview[:100],
                round(age, 1),
                dated,
                count,
                w,
                auto,
                why,
                e.meta.id,
                keys,
                sha,
                content,
                entries.is_retired(e.meta),
            )
            out.append(row)
    return out


def archive(root: Path, candidates: list[Aged], now: float) -> list[Aged]:
    """Move ``candidates`` to bank/_archive/ (caller holds the write lock); returns those moved.

    An entry that changed since the survey (not found by its id or its words) is left where it is.
    OutsideRoot, before anything moves, when an archive note's way leads out of the root (a linked
    bank/_archive/): a move that cannot land is an error, never a silent no-op.
    """
    stamp = time.strftime("%Y-%m-%d", time.localtime(now))
    moved: list[Aged] = []
    by_path: dict[str, list[Aged]] = {}
    for a in candidates:
        by_path.setdefault(a.path, []).append(a)
    for path in by_path:
        store.inside(root, archive_path(path))
    for path, group in sorted(by_path.items()):
        for _ in range(store.REWRITE_ATTEMPTS):
            try:
                moved.extend(_archive_note(root, path, group, stamp))
                break
            except ChangedOnDisk:
                continue  # a hand edit landed meanwhile: find the entries again in what is there now
            except (OSError, UnicodeDecodeError):
                break
    return moved


def _archive_note(root: Path, path: str, group: list[Aged], stamp: str) -> list[Aged]:
    """Move ``group``'s entries of one note: first the copy to _archive/, then the removal."""
    snap = store.read(root, path)
    if not snap.exists:
        return []
    body = snap.text
    found = []
    for a in group:
        e = entries.find(body, a.id, a.preview) if a.id else _by_preview(body, a)
        if e is not None:
            found.append((a, e))
    if not found:
        return []
    found.sort(key=lambda pair: pair[1].start)
    lines = body.split("\n")
    copy_to_archive(root, path, [archive_block(stamp, path, e, a.why, lines) for a, e in found])
    text = body
    for _, e in reversed(found):  # bottom up, so the line numbers above stay right
        text = entries.remove_lines(text, e.start, e.end)
    store.save(root, snap, text.encode())
    return [a for a, _ in found]


def archive_path(path: str) -> str:
    """Where an archived entry of the bank note ``path`` is kept: the same path under bank/_archive/."""
    return f"{ARCHIVE_DIR}/{Path(path).relative_to('bank').as_posix()}"


def archive_block(stamp: str, path: str, entry: entries.Entry, why: str, lines: list[str]) -> str:
    """An archived entry: a comment saying when, from where and why, then its lines as they were."""
    mark = f"<!-- memtree: archived={stamp}; from={path}:{entry.start}-{entry.end}; why={comment_value(why)} -->"
    return "\n".join([mark, *lines[entry.start - 1 : entry.end]])


def comment_value(text: str) -> str:
    """``text`` as a value of a metadata comment: one line, no ';' and no '-->' (they would end it).

    Why: an archive's ``why=`` may be a person's reason (`memtree forget --reason`).
    """
    return " ".join(text.replace(";", ",").replace("-->", "→").split())


def copy_to_archive(root: Path, path: str, blocks: list[str]) -> None:
    """Append ``blocks`` to the archive copy of the note ``path`` (caller holds the write lock).

    A block already there is not copied again: a retry after a hand edit finds its copy made.
    """

    def copied(old: str) -> str:
        there = _marks(old)
        pieces = [old.rstrip("\n") if old else f"# Archived from {path}", ""]
        pieces += [piece for block in blocks if not _holds(old, block, there) for piece in (block, "")]
        return "\n".join(pieces)

    store.rewrite(root, archive_path(path), copied)


_MARK = "<!-- memtree: archived="


def _marks(old: str) -> dict[str, list[int]]:
    """Where each archive comment of ``old`` begins, by the text from there to the end of its line (one scan).

    Why: `block in old` for each block is a scan of the whole archive per block, quadratic when a
    big note's consolidation archives thousands of entries."""
    found: dict[str, list[int]] = {}
    at = old.find(_MARK)
    while at >= 0:
        end = old.find("\n", at)
        found.setdefault(old[at : end if end >= 0 else len(old)], []).append(at)
        at = old.find(_MARK, at + 1)
    return found


def _holds(old: str, block: str, marks: dict[str, list[int]]) -> bool:
    """``block in old``, looked up by its first line when that is an archive comment (:func:`_marks`)."""
    first, sep, _ = block.partition("\n")
    if not sep or not first.startswith(_MARK):
        return block in old
    return any(old.startswith(block, at) for at in marks.get(first, ()))


def _by_preview(body: str, a: Aged) -> entries.Entry | None:
    return next(
        (
            e
            for e in entries.parse_entries(body)
            if e.start == a.lines[0] and e.content.split("\n", 1)[0][:100] == a.preview
        ),
        None,
    )
