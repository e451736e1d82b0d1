"""`memtree history` and `memtree undo`: what memtree changed, and stepping back through it.

Both read the change journal (memtree.notes.changes, ``.memtree/changes.jsonl``).

- **history** lists the journaled changes, newest first — all of them, or those of one node, note
  or entry id (with the entry's chain: the versions it replaced and what replaced it, oldest
  first, from the notes' ``superseded=``/``by=`` marks) — and, when the root is in a git
  repository, the commits of that path (git log, read-only; skipped when git is not installed or
  there is no repository).
- **undo N** reverts the caller's last N journaled changes (each change names its actor:
  memtree.notes.recorder.who), newest first; ``undo --id`` the one named. A file no other change
  touched since is checked by hash: edited since by a person or another program, the whole undo
  stops with one line naming it, and nothing is written. A file that later changes by others
  touched too keeps theirs: the caller's lines are put back where those changes moved them, and
  the undo is refused (one line naming the change) when one of them touched the same lines or
  entries. All N are checked before the first byte is written. An undo is journaled like any write
  and counts as the caller's newest change: `undo` right after an undo redoes what it reverted.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from memtree.errors import MemtreeError, QueryError, StaleUndo
from memtree.notes import changes, entries, git, store
from memtree.notes.tree import TREE_FILE

if TYPE_CHECKING:
    from memtree.notes.changes import Change
    from memtree.notes.git import Commit
    from memtree.state import RootState

HISTORY_LIMIT = 20
"""Changes (and commits) `memtree history` shows by default."""
CONFIG_FILE = "memtree.yaml"  # memtree.config.CONFIG_FILE (an undo of `banks disable` changes it)


@dataclass(frozen=True)
class History:
    """The changes (newest first) and git commits of what was asked about."""

    target: str | None  # the node, note or id asked about, as resolved (None: the whole memory)
    changes: tuple[Change, ...]
    commits: tuple[Commit, ...]
    warnings: tuple[str, ...] = ()
    chain: tuple[Version, ...] = ()  # an entry id asked about: its versions, oldest first


@dataclass(frozen=True)
class Version:
    """One entry of a fact's chain: where it is, when it was written, when and by what it was replaced."""

    id: str
    path: str
    lines: tuple[int, int]
    created: str
    superseded: str  # the day, or "" while it holds
    by: str
    valid_until: str
    text: str


def chain(root: Path, entry_id: str) -> tuple[Version, ...]:
    """The versions of the fact ``entry_id`` is one of, oldest first: what it replaced (``by=`` it, and so
    back), it, and what replaced it (its ``by=``, and so on); empty when no bank note holds it."""
    top = root / "bank"
    for path in sorted(top.rglob("*.md")) if top.is_dir() else ():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if entry_id not in text:
            continue
        rel = path.relative_to(root).as_posix()
        found = {e.meta.id: e for e in entries.parse_entries(text) if e.meta.id}
        if entry_id not in found:
            continue
        replaced = {e.meta.extra.get(entries.BY, ""): e for e in found.values() if entries.is_retired(e.meta)}
        order: list[entries.Entry] = []
        seen, at = {entry_id}, found[entry_id]
        while (before := replaced.get(at.meta.id)) is not None and before.meta.id not in seen:
            order.insert(0, before)
            seen.add(before.meta.id)
            at = before
        order.append(found[entry_id])
        at = found[entry_id]
        while (after := found.get(at.meta.extra.get(entries.BY, ""))) is not None and after.meta.id not in seen:
            order.append(after)
            seen.add(after.meta.id)
            at = after
        if len(order) < 2:
            return ()
        return tuple(
            Version(
                e.meta.id,
                rel,
                (e.start, e.end),
                e.meta.created,
                e.meta.extra.get(entries.SUPERSEDED, ""),
                e.meta.extra.get(entries.BY, ""),
                e.meta.extra.get(entries.VALID_UNTIL, ""),
                e.content,
            )
            for e in order
        )
    return ()


@dataclass(frozen=True)
class Undone:
    """What an undo reverted (or, with ``dry_run``, would revert)."""

    undone: tuple[Change, ...]  # newest first
    paths: tuple[str, ...]  # the files written back
    change_id: str | None  # the undo's own change in the journal (None: a dry run)
    dry_run: bool


# --- history --------------------------------------------------------------------------------------


def history(state: RootState, ref: str | None = None, limit: int = HISTORY_LIMIT) -> History:
    """Journaled changes (and git commits) of the whole memory, or of one node, note or entry id."""
    if limit < 1:
        raise QueryError(f"--limit must be at least 1 (got {limit})")
    journal = changes.load(state.root)
    journal.reverse()
    if ref is None or not ref.strip():
        return History(None, tuple(journal[:limit]), tuple(git.log(state.root, (), limit)))
    ref = store.check_name(ref.strip(), "history", absolute=True)
    paths = _paths_of(state, ref, journal)
    if paths is not None:
        wanted = set(paths)
        found = [c for c in journal if wanted & set(c.paths)]
        commits = git.log(state.root, paths, limit) if paths else []
        return History(ref, tuple(found[:limit]), tuple(commits))
    found = [c for c in journal if ref in c.ids]
    if found or _written(state.root, ref):
        mentions = tuple(git.log(state.root, (), limit, mentions=ref))
        return History(ref, tuple(found[:limit]), mentions, chain=chain(state.root, ref))
    raise QueryError(f"{ref!r}: no node, note or entry id of this memory (nor any in its change journal)")


def _paths_of(state: RootState, ref: str, journal: list[Change]) -> list[str] | None:
    """The files a node id (with the notes under a category) or a path names; None when it names neither."""
    tree = state.parsed_tree()
    node = tree.by_id.get(ref.strip("/"))
    if node is not None:
        return [n.path for n in [node, *tree.descendants(node.id)] if n.path]
    given = Path(ref)
    rel = ref
    if given.is_absolute():
        try:
            rel = given.resolve().relative_to(state.root).as_posix()
        except ValueError:
            return None
    rel = Path(rel).as_posix().removeprefix("./")
    journaled = {p for c in journal for p in c.paths}
    if rel in journaled or rel in tree.by_path:
        return [rel]
    if "/" in rel or rel.endswith((".md", ".json", ".yaml")):
        try:
            if store.inside(state.root, rel).is_file():
                return [rel]
        except MemtreeError:
            return None
    return None


def _written(root: Path, entry_id: str) -> bool:
    """Whether some bank note (the archive included) holds an entry with this id (or merged it)."""
    top = root / "bank"
    for path in top.rglob("*.md") if top.is_dir() else ():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if entry_id in text and entry_id in set(entries.iter_ids(text)):
            return True
    return False


# --- undo -----------------------------------------------------------------------------------------


def undo(state: RootState, count: int, now: datetime, dry_run: bool = False, change_id: str | None = None) -> Undone:
    """Revert the caller's last ``count`` journaled changes (or the one ``change_id`` names), newest
    first, past later changes by others that touch other lines (see the module docstring)."""
    from memtree.notes.recorder import who
    from memtree.write.verbs import recording

    if count < 1:
        raise QueryError(f"undo takes how many changes to revert, at least 1 (got {count})")
    me = who(state.actor)
    with store.write_lock(state.root):
        journal = changes.load(state.root)
        if change_id is not None:
            picked = tuple(c for c in journal if c.id == change_id.strip())
            if not picked:
                raise QueryError(f"undo --id {change_id}: no such change in the journal (see `memtree history`)")
        else:
            # Why "" too: journals written before changes named their actor
            mine = [c for c in journal if c.actor in (me, "")]
            if not mine:
                raise QueryError(
                    f"nothing to undo: no memtree write by {me} is journaled in "
                    f"{changes.STATE_DIR}/{changes.JOURNAL_FILE} (`undo --id` takes anyone's)"
                )
            if count > len(mine):
                raise QueryError(
                    f"undo {count}: only {len(mine)} memtree write(s) by {me} are journaled; nothing was written"
                )
            picked = tuple(reversed(mine[-count:]))
        snaps, wanted = _plan(state.root, journal, picked)
        paths = tuple(p for p in _order(wanted) if wanted[p] != snaps[p].data)
        if dry_run:
            return Undone(picked, paths, None, True)
        ids = tuple(c.id for c in picked)
        summary = ", ".join(f"{c.id} ({c.command})" for c in picked)
        with recording(state, "undo", now, summary=summary, undoes=ids) as rec:
            for path in paths:
                data = wanted[path]
                if data is None:
                    store.remove(state.root, snaps[path])
                    _prune_folders(state.root, path)
                else:
                    store.save(state.root, snaps[path], data)
            rec.ids.extend(i for c in picked for i in c.ids)
    state.forget_tree()
    if CONFIG_FILE in paths:
        state.reload_settings()
    state.refresh()
    return Undone(picked, paths, rec.change.id if rec.change else None, False)


def _plan(
    root: Path, journal: list[Change], picked: tuple[Change, ...]
) -> tuple[dict[str, store.Snapshot], dict[str, bytes | None]]:
    """Each file as it is now and as the undo leaves it; StaleUndo when it cannot be reverted.

    A file no change but the picked ones touched since is stepped back change by change, each
    checked by hash. One that a later change kept (someone else's) touched too is rebased: each
    picked change's lines are found where the later changes moved them and put back as they were,
    refused when a later change touched those lines or the same entries.
    """
    chosen = {c.id for c in picked}
    at = {c.id: i for i, c in enumerate(journal)}
    oldest = min(at[c.id] for c in picked)
    later = [c for c in journal[oldest:] if c.id not in chosen]  # kept changes newer than the oldest picked
    for change in picked:
        for other in later:
            shared = set(change.ids) & set(other.ids)
            if at[other.id] > at[change.id] and shared:
                raise _refused(change, other, f"the same entries ({', '.join(sorted(shared)[:3])})")
    snaps: dict[str, store.Snapshot] = {}
    wanted: dict[str, bytes | None] = {}
    for path in dict.fromkeys(f.path for c in picked for f in reversed(c.files)):
        if not store.memtree_writes(path):
            raise MemtreeError(
                f"cannot undo: the journal names {path}, a file memtree never writes "
                f"(a planted or damaged {changes.STATE_DIR}/{changes.JOURNAL_FILE}?); nothing was written"
            )
        snaps[path] = store.read(root, path)
        first = min(at[c.id] for c in picked if path in c.paths)
        edits = [(c, f) for c in journal[first:] for f in c.files if f.path == path]
        if all(c.id in chosen for c, _ in edits):
            wanted[path] = _stepped_back(snaps[path].data, [(c, f) for c, f in reversed(edits)])
        else:
            wanted[path] = _rebased(path, snaps[path].data, edits, chosen)
    return snaps, wanted


def _stale(change: Change, path: str, gone: bool) -> StaleUndo:
    how = "is gone" if gone else "changed"
    return StaleUndo(
        f"cannot undo {change.id} ({change.command}, {change.time}): {path} {how} since that write "
        "(by hand, by another program or by git); nothing was written"
    )


def _refused(change: Change, other: Change, what: str) -> StaleUndo:
    by = other.actor or "another writer"
    return StaleUndo(
        f"cannot undo {change.id} ({change.command}, {change.time}): a later change by {by} "
        f"({other.id}, {other.command}) touches {what}; nothing was written"
    )


def _stepped_back(current: bytes | None, newest_first: list[tuple[Change, changes.FileChange]]) -> bytes | None:
    """The file before the given changes (all of them undone), each checked by hash."""
    for change, f in newest_first:
        if (None if current is None else changes.digest(current)) != f.after:
            raise _stale(change, f.path, current is None)
        current = f.before_bytes(current)
    return current


def _rebased(
    path: str, current: bytes | None, edits: list[tuple[Change, changes.FileChange]], chosen: set[str]
) -> bytes:
    """The file with the chosen changes' lines put back, the other changes' kept (see :func:`_plan`)."""
    # every change since the first picked one is journaled: the hashes chain up to the file as it is
    for (c, f), (_, g) in itertools.pairwise(edits):
        if g.before != f.after:
            raise _stale(c, path, g.before is None)
    last, f_last = edits[-1]
    if current is None or changes.digest(current) != f_last.after:
        raise _stale(last, path, current is None)
    # each edit as (start, old length, new length), in the coordinates of the file before it
    spans: list[tuple[int, int, int]] = []
    size = len(current)
    for c, f in reversed(edits):
        if f.before is None or f.after is None:
            kept = next(k for k, _ in edits if k.id not in chosen)
            raise _refused(c, kept, f"{path}, which it {'created' if f.before is None else 'removed'}")
        old = len(f.was)
        spans.append((f.head, old, size - f.head - f.tail))
        size = f.head + old + f.tail
    spans.reverse()
    puts: list[tuple[int, int, bytes]] = []
    for i, (c, f) in enumerate(edits):
        if c.id not in chosen:
            continue
        start, _, new = spans[i]
        s, e = start, start + new
        for j in range(i + 1, len(edits)):
            at, old, grown = spans[j]
            if at + old <= s:
                s, e = s + grown - old, e + grown - old
            elif at < e:  # it changed some of those lines (one after them or at their end leaves them be)
                raise _refused(c, edits[j][0], f"the same lines of {path}")
        puts.append((s, e, f.was))
    out = current
    for s, e, was in sorted(puts, reverse=True):
        out = out[:s] + was + out[e:]
    if path.endswith(".json"):
        try:
            orjson.loads(out)
        except ValueError:
            kept = next(k for k, _ in edits if k.id not in chosen)
            raise _refused(edits[0][0], kept, path) from None
    return out


def _order(wanted: dict[str, bytes | None]) -> list[str]:
    """Notes written back first, then tree-index.json and the other files, removals last: no node
    ever names a note that is not there."""

    def rank(path: str) -> tuple[int, str]:
        if wanted[path] is None:
            return (3 if path != TREE_FILE else 2, path)
        return (0 if path.endswith(store.NOTE_SUFFIXES) else 1, path)

    return sorted(wanted, key=rank)


def _prune_folders(root: Path, path: str) -> None:
    """Remove the folders a removed note leaves empty (below its tier's folder: bank/, memory/ …)."""
    folder = (root / path).parent
    while folder.parent != root and folder != root:
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            return
        folder = folder.parent
