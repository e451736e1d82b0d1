"""`memtree history` and `memtree undo`: what memtree changed, and stepping back through it.

Both read the change journal (memtree.notes.changes, ``.memtree/changes.jsonl``).

- **history** lists the journaled changes, newest first — all of them, or those of one node, note
  or entry id — and, when the root is in a git repository, the commits of that path (git log,
  read-only; skipped when git is not installed or there is no repository).
- **undo N** reverts the last N journaled changes, newest first, each only if every file it touched
  is still exactly as that change left it (its SHA-256): a file edited since by a person or another
  program stops the whole undo with one line naming it, and nothing is written. All N are checked
  before the first byte is written. An undo is journaled like any write and counts as the newest
  change: `undo` right after an undo redoes what it reverted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

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
        return History(ref, tuple(found[:limit]), tuple(git.log(state.root, (), limit, mentions=ref)))
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


def undo(state: RootState, count: int, now: datetime, dry_run: bool = False) -> Undone:
    """Revert the last ``count`` journaled changes, newest first (see the module docstring)."""
    from memtree.write.verbs import recording

    if count < 1:
        raise QueryError(f"undo takes how many changes to revert, at least 1 (got {count})")
    with store.write_lock(state.root):
        journal = changes.load(state.root)
        if not journal:
            raise QueryError(
                f"nothing to undo: no memtree write is journaled in {changes.STATE_DIR}/{changes.JOURNAL_FILE}"
            )
        if count > len(journal):
            raise QueryError(f"undo {count}: only {len(journal)} memtree write(s) are journaled; nothing was written")
        picked = tuple(reversed(journal[-count:]))
        snaps, wanted = _plan(state.root, picked)
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


def _plan(root: Path, picked: tuple[Change, ...]) -> tuple[dict[str, store.Snapshot], dict[str, bytes | None]]:
    """Each file as it is now and as the undo leaves it; StaleUndo when one changed since its write."""
    snaps: dict[str, store.Snapshot] = {}
    wanted: dict[str, bytes | None] = {}
    for change in picked:
        for f in reversed(change.files):
            if not store.memtree_writes(f.path):
                raise MemtreeError(
                    f"cannot undo {change.id}: the journal names {f.path}, a file memtree never writes "
                    f"(a planted or damaged {changes.STATE_DIR}/{changes.JOURNAL_FILE}?); nothing was written"
                )
            if f.path not in snaps:
                snaps[f.path] = store.read(root, f.path)
                wanted[f.path] = snaps[f.path].data
            current = wanted[f.path]
            if (None if current is None else changes.digest(current)) != f.after:
                how = "is gone" if current is None else "changed"
                raise StaleUndo(
                    f"cannot undo {change.id} ({change.command}, {change.time}): {f.path} {how} since that write "
                    "(by hand or by another program); nothing was written"
                )
            wanted[f.path] = f.before_bytes(current)
    return snaps, wanted


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
