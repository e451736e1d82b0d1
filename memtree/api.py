"""``MemTree``: the facade agents, the CLI and the watcher use — thin verbs over one ``RootState``.

This is the edge: every verb takes an optional ``now`` and reads the clock here when it is not
given, then passes that moment down (nothing below reads the clock, so a result is reproducible
on any date). Every verb runs under the state's lock, so threads of one process can share one
``MemTree``. The verbs' bodies live with their layer: memtree.search.query (search, context,
get), memtree.write.verbs (index, add, log, conflicts, split, check, export/import) and
memtree.lifecycle.verbs (decay, archive, consolidate, recall, distill, ingest, banks, status),
memtree.lifecycle.edits (update, forget) and memtree.write.history (history, undo). Every write is
journaled in ``.memtree/changes.jsonl`` (memtree.notes.changes), so it can be undone.

Why one module over 300 lines: it is the whole facade — one short method per verb, each a docstring,
the lock and one call; splitting it would split the one list of what memtree can do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree.lifecycle import verbs as lifecycle
from memtree.search import query
from memtree.search.query import TIER_CHOICES, Note
from memtree.state import RootState
from memtree.write import verbs as write
from memtree.write.verbs import IndexResult

if TYPE_CHECKING:
    from memtree.config import Settings
    from memtree.index.chunk_index import Report
    from memtree.lifecycle.aging import Aged
    from memtree.lifecycle.banks import Bank
    from memtree.lifecycle.consolidate import Report as ConsolidateReport
    from memtree.lifecycle.edits import Forgotten, Updated
    from memtree.lifecycle.ingest import IngestReport
    from memtree.lifecycle.promote import Promoted
    from memtree.lifecycle.recall import Excerpt, Sync
    from memtree.lifecycle.reflect import DistillReport
    from memtree.lifecycle.status import Status
    from memtree.notes import tree as treemod
    from memtree.notes.git import Synced
    from memtree.search.context import Context
    from memtree.search.links import NoteLinks
    from memtree.search.result import SearchResult
    from memtree.write.check import Problem
    from memtree.write.conflicts import Contradiction, OpenConflict
    from memtree.write.exchange import Imported
    from memtree.write.handedits import HandEdit
    from memtree.write.history import History, Undone
    from memtree.write.journal import Logged
    from memtree.write.retain import Decision
    from memtree.write.split import SplitResult

__all__ = ["TIER_CHOICES", "IndexResult", "MemTree", "Note", "clock"]


USER_PREFIX = "user:"
"""How a path of the user's own root is named beside the project's (a context block's sources, `get user:PATH`)."""


def clock() -> datetime:
    """The current moment, with the local offset: the one place memtree's library reads the time."""
    return datetime.now().astimezone()


class MemTree:
    """A memory root: search it, fetch notes, remember, and keep its index and tree in step."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        settings: Settings | None = None,
        refresh_interval: float | None = None,
        actor: str | None = None,
        home: Path | bool | None = True,
    ) -> None:
        from memtree.notes.root import user_home

        self.state = RootState(root, settings=settings, refresh_interval=refresh_interval)
        self.state.actor = actor  # its changes are journaled as this actor's (None: $MEMTREE_ACTOR or user@host)
        # where the user's own root would be: $MEMTREE_HOME or the platform's default (True), a folder, or none
        self.home: Path | None = user_home() if home is True else home or None
        self._user: MemTree | None = None
        self.state.on_notes_changed = self._notes_changed  # a value edited by hand in place supersedes the old

    def _notes_changed(self, changed: list[str], removed: list[str]) -> None:
        from memtree.write import handedits  # lazy: only a refresh that found a change needs it

        handedits.noticed(self.state, changed, removed)

    @property
    def root(self) -> Path:
        """The memory root (an absolute Path)."""
        return self.state.root

    @property
    def settings(self) -> Settings:
        """The root's settings (memtree.yaml over the defaults of memtree.config)."""
        return self.state.settings

    def user(self) -> MemTree | None:
        """The user's own root, searched beside this one: ``home`` when it is a memory root other than this
        one and ``search.user_root`` is on; None otherwise. Looked for at every call (one stat), never created."""
        from memtree.notes.root import user_root

        with self.state.lock:
            found = user_root(self.home, self.root) if self.settings.search.user_root else None
            if found is None:
                self._user = None
            elif self._user is None or self._user.root != found:
                # Why its own refresh interval, not this one's: a daemon checks its root rarely, its watcher
                # telling it of edits, but no watcher watches the user root, which other projects write to
                self._user = MemTree(found, actor=self.state.actor, home=False)
            return self._user

    def beside(self) -> tuple[MemTree | None, str]:
        """The user root to search beside this one, and why none when it cannot be opened (said as a warning:
        a broken user root never stops the project's search)."""
        from memtree.errors import MemtreeError

        try:
            return self.user(), ""
        except MemtreeError as exc:
            return None, f"user root {self.home} not searched: {exc}"

    def user_or_fail(self) -> MemTree:
        """The user root (see ``user``), or a MemtreeError saying how to make one."""
        from memtree.errors import RootNotFound

        found = self.user()
        if found is not None:
            return found
        if self.home is None:
            raise RootNotFound("no user root: MEMTREE_HOME is set empty, which turns it off")
        if not self.settings.search.user_root:
            raise RootNotFound(f"no user root: search.user_root is false in {self.root}/memtree.yaml")
        if self.home.resolve() == self.root:
            raise RootNotFound(f"{self.root} is the user root itself: there is no other to move to or from")
        raise RootNotFound(f"no user root at {self.home} (create it with `memtree init --user`, or set MEMTREE_HOME)")

    @property
    def tree(self) -> treemod.Tree:
        """The validated tree (re-read when tree-index.json changes on disk)."""
        with self.state.lock:
            return self.state.tree()

    # --- reading --------------------------------------------------------------------------

    def search(
        self,
        query_: str,
        k: int | None = None,
        tier: str = "default",
        budget: int | None = None,
        cache: bool = True,
        scope: str | None = None,
        semantic: bool | None = None,
        now: datetime | None = None,
        as_of: date | None = None,
    ) -> SearchResult:
        """Search the memory; hits best first, or none with the reason (``rejected``).

        ``now`` is the moment decay and recency are judged at. ``scope`` (default:
        ``search.scope``) is the current scope: only entries of it and of the scopes above it are
        found. ``semantic`` forces the embedding layer on or off (default: ``embed.enabled``).
        Current facts only, the superseded or expired ones when nothing current answers (marked);
        ``as_of``: the facts that held on that day.
        """
        with self.state.lock:
            user, broken = self.beside()
            found = query.search(
                self.state,
                query_,
                now or clock(),
                k,
                tier,
                budget,
                cache,
                scope,
                semantic,
                now is not None,
                as_of,
                user.state if user is not None else None,
            )
            return replace(found, warnings=(*found.warnings, broken)) if broken else found

    def context(
        self,
        query_: str,
        budget: int = 2000,
        k: int = 10,
        tier: str = "default",
        scope: str | None = None,
        now: datetime | None = None,
        as_of: date | None = None,
    ) -> Context:
        """A prompt-ready Markdown block of the best chunks for ``query_`` within ``budget`` tokens."""
        with self.state.lock:
            user, _ = self.beside()
            return query.context(
                self.state,
                query_,
                now or clock(),
                budget,
                k,
                tier,
                scope,
                now is not None,
                as_of,
                user.state if user is not None else None,
            )

    def get(self, ref: str, now: datetime | None = None) -> Note:
        """A note by node id or root-relative path; ``user:REF`` names one of the user root's (as its hits do)."""
        if ref.startswith(USER_PREFIX):
            return self.user_or_fail().get(ref[len(USER_PREFIX) :], now)
        with self.state.lock:
            return query.get(self.state, ref, now or clock())

    def links(self, ref: str) -> NoteLinks:
        """The links out of and into one note (by node id or path): where each leads, or why nowhere."""
        from memtree.search.links import note_links

        with self.state.lock:
            return note_links(self.state, ref)

    def status(self, now: datetime | None = None) -> Status:
        """Files, bytes, nodes and chunks per tier; oversized notes; stale index; watcher; lifecycle; the user root
        searched beside this one (a broken one is a warning)."""
        with self.state.lock:
            found = lifecycle.status(self.state, now or clock())
            user, broken = self.beside()
            return replace(
                found,
                user_root=str(user.root) if user is not None else None,
                warnings=(*found.warnings, broken) if broken else found.warnings,
            )

    def usage(self) -> dict[str, list[float]]:
        """Recall counts: entry key → [retrievals, last retrieved, accesses, last accessed] (epoch s)."""
        with self.state.lock:
            return self.state.usage().counts()

    # --- the index ------------------------------------------------------------------------

    def refresh(
        self,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        paths: list[str] | None = None,
    ) -> Report:
        """Re-index notes changed on disk since the last call (all of them with ``force``).

        ``paths`` (root-relative) are the only notes that may have changed, as a file watcher knows:
        just those are stat'ed, not every note and folder.
        """
        with self.state.lock:
            return self.state.refresh(force, progress, paths)

    def index(
        self,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        embed: bool = False,
        embed_progress: Callable[[int, int], None] | None = None,
        now: datetime | None = None,
    ) -> IndexResult:
        """Refresh the chunk index and keep tree-index.json in step with bank/.

        ``embed`` also embeds every chunk without a vector (the semantic layer).
        """
        with self.state.lock:
            if not embed:
                return write.index(self.state, force, progress, now or clock())
            # an engine that stores the vectors too (Milvus) syncs once they are all embedded
            hold = getattr(self.state.index, "hold", None)
            with hold(force) if hold is not None else contextlib.nullcontext():
                result = write.index(self.state, force, progress, now or clock())
                embedded = query.embed_all(self.state, embed_progress)
            return replace(result, embedded=embedded)

    # --- writing --------------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        tag: str | None = None,
        to: str | None = None,
        tags: tuple[str, ...] = (),
        kind: str = "fact",
        source: str = "manual",
        scope: str = "global",
        dry_run: bool = False,
        now: datetime | None = None,
        origin: str | None = None,
        until: str = "",
    ) -> Decision:
        """Remember ``text``: sanitize, route, dedup or flag a conflict, write (DESIGN §4).

        ``until`` (YYYY-MM-DD): the last day the fact holds; past it, it is no longer current."""
        with self.state.lock:
            return write.add(
                self.state,
                text,
                now or clock(),
                tag=tag,
                to=to,
                tags=tags,
                kind=kind,
                source=source,
                scope=scope,
                dry_run=dry_run,
                origin=origin,
                until=until,
            )

    def log(self, text: str, *, source: str = "manual", now: datetime | None = None) -> Logged:
        """Append a timestamped, sanitized line to today's log in memory/."""
        with self.state.lock:
            return write.log(self.state, text, now or clock(), source)

    def conflicts(self) -> list[OpenConflict]:
        """Open conflicts, oldest first."""
        with self.state.lock:
            return write.conflicts(self.state)

    def scan_conflicts(self, record: bool = False, now: datetime | None = None) -> list[Contradiction]:
        """Entries that contradict each other; with ``record``, new pairs become open conflicts."""
        with self.state.lock:
            return write.scan_conflicts(self.state, now or clock(), record)

    def resolve_conflict(self, conflict_id: str, keep: str, now: datetime | None = None) -> tuple[OpenConflict, str]:
        """Settle a conflict keeping the new entry, the old one, or both; returns it and what was done."""
        with self.state.lock:
            return write.resolve_conflict(self.state, conflict_id, keep, now or clock())

    def split(
        self, path: str | None = None, max_bytes: int | None = None, now: datetime | None = None
    ) -> list[SplitResult]:
        """Split ``path`` (or every bank note over the limit) into child notes and nodes."""
        with self.state.lock:
            return write.split(self.state, path, max_bytes, now or clock())

    def check(self, files: list[str] | None = None) -> list[Problem]:
        """What `memtree check` refuses (nothing is written): oversized notes, tree problems, secrets."""
        with self.state.lock:
            return write.check(self.state, files)

    def prune_categories(self) -> tuple[str, ...]:
        """Drop the category nodes left with no note and no keywords of their own; their ids."""
        with self.state.lock:
            return write.prune_categories(self.state)

    def redact_journal(self) -> int:
        """Redact the secrets the change journal keeps in old note text; returns the changes rewritten."""
        with self.state.lock:
            return write.redact_journal(self.state)

    def sync(self, rebase: bool = True) -> Synced:
        """Commit memory's changes, pull (memtree's merge driver merging), push; the index then catches up."""
        from memtree.notes import git

        with self.state.lock:
            done = git.sync(self.state.root, rebase)
            if done.outcome == "ok" and write.file_field_clashes(self.state):
                done = git.sync(self.state.root, rebase)  # the clashes the pull's merge recorded, shared
            if done.outcome == "ok":
                self.state.forget_tree()
                self.state.refresh()
            return done

    def fix_markers(self, now: datetime | None = None) -> list[str]:
        """Merge git conflict blocks left in tracked files by the merge driver's rules, rebuild an unreadable
        conflicts.json (its bytes kept beside it) and file the node field clashes a merge left; what was done."""
        with self.state.lock:
            return write.fix_markers(self.state, now or clock())

    def sweep(self) -> list[str]:
        """Remove the temp files killed writes left in the root's tracked folders; returns their paths."""
        with self.state.lock:
            return write.sweep(self.state)

    def hand_edits(self, from_git: bool = False) -> list[HandEdit]:
        """Keep the old words of values a person edited in place in the bank notes, marked superseded by the
        edited lines on the day of the edit (its note's modification time; docs/concepts/time.md). Every
        refresh does this for the notes it finds changed; ``from_git`` (`check --fix`) also compares each
        note that differs from git's HEAD with it."""
        from memtree.write import handedits

        with self.state.lock:
            return handedits.settle(self.state, self.state.bank_notes(), from_git=from_git)

    def cut_cycles(self) -> list[str]:
        """Cut every parent cycle of tree-index.json (`check --fix`); returns the ids made top nodes."""
        with self.state.lock:
            return write.cut_cycles(self.state)

    def repair_splits(self, now: datetime | None = None) -> list[str]:
        """Settle a split a killed writer left halfway and remove the copies one left; what was done."""
        with self.state.lock:
            return write.repair_splits(self.state, now or clock())

    def export(self, bank: str | None = None) -> dict[str, Any]:
        """Every bank entry (or one bank's) with its metadata, and the tree's nodes, as one document."""
        with self.state.lock:
            return write.export(self.state, bank)

    def import_(self, data: bytes, dry_run: bool = False, now: datetime | None = None) -> Imported:
        """Import an export document (bytes, ≤ 10 MB): validated whole, sanitized, deduplicated."""
        with self.state.lock:
            return write.import_(self.state, data, dry_run, now or clock())

    # --- changing and undoing -------------------------------------------------------------

    def update(self, ref: str, text: str, now: datetime | None = None) -> Updated:
        """Replace the words of the entry ``ref`` (its id, or PATH:LINE): sanitized, checked for
        duplicates and conflicts, metadata kept, ``updated=`` set; the index is refreshed at once."""
        from memtree.lifecycle import edits

        with self.state.lock:
            return edits.update(self.state, ref, text, now or clock())

    def forget(self, ref: str, reason: str = "", now: datetime | None = None) -> Forgotten:
        """Move the entry ``ref`` (its id, or PATH:LINE) to bank/_archive/ with ``reason``; never deleted."""
        from memtree.lifecycle import edits

        with self.state.lock:
            return edits.forget(self.state, ref, reason, now or clock())

    def promote(self, ref: str, to: str = "user", now: datetime | None = None) -> Promoted:
        """Move the entry ``ref`` with its older versions up into the user root (``to="user"``) or down from it
        into this one (``"project"``): written there first, then removed here; id, time and history kept."""
        from memtree.errors import QueryError
        from memtree.lifecycle.promote import DIRECTIONS, promote

        if to not in DIRECTIONS:
            raise QueryError(f"--to must be user or project, got {to!r}")
        user = self.user_or_fail()
        source, target = (self, user) if to == "user" else (user, self)
        with self.state.lock, user.state.lock:
            return promote(source.state, target.state, ref, to, now or clock())

    def history(self, ref: str | None = None, limit: int | None = None) -> History:
        """memtree's journaled changes, newest first (of one node, note or entry id), and git's commits."""
        from memtree.write import history

        with self.state.lock:
            return history.history(self.state, ref, history.HISTORY_LIMIT if limit is None else limit)

    def undo(
        self, count: int = 1, dry_run: bool = False, now: datetime | None = None, change_id: str | None = None
    ) -> Undone:
        """Revert this actor's last ``count`` memtree writes (or the change ``change_id``), newest first,
        keeping later changes by others; refused when one touched the same lines or entries."""
        from memtree.write import history

        with self.state.lock:
            return history.undo(self.state, count, now or clock(), dry_run, change_id)

    # --- lifecycle ------------------------------------------------------------------------

    def decay(self, now: datetime | None = None) -> list[Aged]:
        """Every bank entry's decay weight, with why it is an archive candidate (if it is)."""
        with self.state.lock:
            return lifecycle.decay(self.state, now or clock())

    def archive(self, dry_run: bool = False, now: datetime | None = None) -> list[Aged]:
        """Move the archive candidates to bank/_archive/ (never deleted); returns them."""
        with self.state.lock:
            return lifecycle.archive(self.state, now or clock(), dry_run)

    def consolidate(self, dry_run: bool = False, now: datetime | None = None) -> ConsolidateReport:
        """Merge near-duplicates within each note (dropped text kept in bank/_archive/); list archive candidates."""
        with self.state.lock:
            return lifecycle.consolidate(self.state, now or clock(), dry_run)

    def recall(self, now: datetime | None = None) -> list[Excerpt]:
        """The excerpts in recall/, each with its source entry's recalls and weight."""
        with self.state.lock:
            return lifecycle.recall(self.state, now or clock())

    def recall_sync(self, dry_run: bool = False, now: datetime | None = None) -> Sync:
        """Reconcile recall/: drop stale excerpts, promote often-recalled entries, evict past the budget."""
        with self.state.lock:
            return lifecycle.recall_sync(self.state, now or clock(), dry_run)

    def distill(
        self,
        files: list[str] | None = None,
        since: date | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> DistillReport:
        """Find knowledge in memory/ logs with the rule detectors and write it through `add`."""
        with self.state.lock:
            return lifecycle.distill(self.state, now or clock(), files, since, dry_run)

    def ingest(
        self,
        turns: Iterable[Mapping[str, object]] | bytes,
        *,
        source: str = "transcript",
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> IngestReport:
        """Remember conversation turns (``{conversation, role, text, ts}`` dicts, or JSON-lines bytes).

        The new turns go to their days' memory/ logs, sanitized; every conversation whose cycle is
        due — ``extract.every_turns`` assistant turns, a gap, or quiet past ``extract.idle_flush_min``
        at ``now`` — is examined and what it teaches written to the ``auto`` bank. Validated whole
        first: a bad turn is a QueryError naming it (``<source> line N`` for bytes, else ``turn N``).
        """
        with self.state.lock:
            return lifecycle.ingest(self.state, turns, now or clock(), dry_run, source)

    def ingest_flush(self, now: datetime | None = None) -> IngestReport:
        """Examine the conversations quiet past ``extract.idle_flush_min`` at ``now`` (a daemon's tick calls this)."""
        with self.state.lock:
            return lifecycle.ingest(self.state, [], now or clock())

    def banks(self) -> list[Bank]:
        """The banks (top-level folders of bank/) with their counts and whether search sees them."""
        with self.state.lock:
            return lifecycle.banks(self.state)

    def set_bank(self, name: str, enabled: bool, now: datetime | None = None) -> tuple[str, ...]:
        """Enable or disable a bank in memtree.yaml; returns the disabled banks after the change."""
        with self.state.lock:
            return lifecycle.set_bank(self.state, name, enabled, now or clock())
