"""The lifecycle verbs over a root's state: decay, archive, consolidate, recall sync, distill, ingest, status.

Each takes the ``RootState`` and the moment ``now`` the caller read at the edge (memtree.api).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import date, datetime
from typing import TYPE_CHECKING

from memtree.notes import store
from memtree.write.verbs import recording

if TYPE_CHECKING:
    from memtree.lifecycle.aging import Aged
    from memtree.lifecycle.banks import Bank
    from memtree.lifecycle.consolidate import Report as ConsolidateReport
    from memtree.lifecycle.ingest import IngestReport
    from memtree.lifecycle.recall import Excerpt, Sync
    from memtree.lifecycle.reflect import DistillReport
    from memtree.lifecycle.status import Status
    from memtree.state import RootState


def decay(state: RootState, now: datetime) -> list[Aged]:
    """Every bank entry's decay weight at ``now``, with why it is an archive candidate (if it is)."""
    return _survey(state, now.timestamp())


def _survey(state: RootState, moment: float) -> list[Aged]:
    """Every bank entry aged at ``moment`` (epoch s) by the root's decay and consolidate settings."""
    from memtree.lifecycle.aging import survey

    s = state.settings
    return survey(state.root, state.bank_notes(), state.usage().retrievals(), moment, s.decay, s.consolidate)


def archive(state: RootState, now: datetime, dry_run: bool = False) -> list[Aged]:
    """Move the archive candidates at ``now`` to bank/_archive/ (never deleted); returns them."""
    from memtree.lifecycle.aging import archive as archive_

    if dry_run:
        return [a for a in decay(state, now) if a.candidate]
    with store.write_lock(state.root), recording(state, "archive", now):
        found = _survey(state, now.timestamp())
        moved = archive_(state.root, [a for a in found if a.candidate], now.timestamp())
    if moved:
        state.refresh()
    return moved


def consolidate(state: RootState, now: datetime, dry_run: bool = False) -> ConsolidateReport:
    """Merge near-duplicates within each note (dropped text kept in bank/_archive/); list archive candidates."""
    from memtree.lifecycle import consolidate as con

    jaccard = state.settings.consolidate.jaccard
    started = now.timestamp()
    t0 = time.perf_counter()  # how long the run took is a duration, not a moment: it may come from the clock
    with con.single_flight(state.root, dry_run=dry_run):
        try:
            if dry_run:
                merges = con.plan(state.root, state.bank_notes(), jaccard)
                aged = _survey(state, started)
            else:
                # Why note by note, the plan without the lock: planning a big note takes seconds, and
                # writes to other notes must not wait for it. Each note's merges are one change,
                # applied under the lock to the note as it is then (planned again if it changed).
                merges = []
                for path in sorted(state.bank_notes()):
                    text = con.read_text(state.root, path)
                    planned = con.plan_note(path, text, jaccard) if text is not None else []
                    if planned:
                        with recording(state, "consolidate", now), store.write_lock(state.root):
                            merges += con.apply_note(state.root, path, text or "", planned, jaccard, started)
                if merges:
                    state.refresh()
                _, aged = _recall_sync(state, now)  # its survey, made under the lock, is the candidates' too
        except Exception as exc:
            if not dry_run:
                con.record(state.root, started, started + time.perf_counter() - t0, f"{type(exc).__name__}: {exc}")
            raise
        candidates = tuple(a for a in aged if a.candidate)
        seconds = time.perf_counter() - t0
        if not dry_run:
            con.record(state.root, started, started + seconds, None, sum(len(m.drop) for m in merges), len(candidates))
    return con.Report(tuple(merges), candidates, dry_run, seconds)


def recall_sync(state: RootState, now: datetime, dry_run: bool = False) -> Sync:
    """Reconcile recall/: drop stale excerpts, promote often-recalled entries, evict past the budget."""
    from memtree.lifecycle import recall

    cfg = state.settings.recall
    if dry_run:
        aged = _survey(state, now.timestamp())
        return recall.plan(state.root, aged, cfg.promote_after, cfg.budget_tokens, cfg.excerpt_chars)
    return _recall_sync(state, now)[0]


def _recall_sync(state: RootState, now: datetime) -> tuple[Sync, list[Aged]]:
    """recall_sync's write, with the survey it was planned on (consolidate lists its candidates from it)."""
    from memtree.lifecycle import recall

    cfg = state.settings.recall
    moment = now.timestamp()
    state.usage().flush()
    with store.write_lock(state.root), recording(state, "recall sync", now):
        aged = _survey(state, moment)
        sync = recall.plan(state.root, aged, cfg.promote_after, cfg.budget_tokens, cfg.excerpt_chars)
        recall.write(state.root, sync, moment)
    state.refresh()
    return sync, aged


def distill(
    state: RootState, now: datetime, files: list[str] | None = None, since: date | None = None, dry_run: bool = False
) -> DistillReport:
    """Find knowledge in memory/ logs with the rule detectors and write it through `add`."""
    from memtree.lifecycle.reflect import run

    if dry_run:
        return run(state, now, state.settings.distill, files, since, dry_run)
    # one change for the run; the write lock is taken at its first write, not during an LLM call
    with recording(state, "distill", now):
        return run(state, now, state.settings.distill, files, since, dry_run)


def ingest(
    state: RootState,
    turns: Iterable[Mapping[str, object]] | bytes,
    now: datetime,
    dry_run: bool = False,
    source: str = "transcript",
) -> IngestReport:
    """Keep conversation turns in memory/ and examine every conversation whose cycle is due (the idle flush too)."""
    from memtree.lifecycle import ingest as ingest_

    read = ingest_.read(turns, source, now)
    if dry_run:
        return ingest_.run(state, read, now, dry_run)
    with recording(state, "ingest", now):  # one change for its entries (memory/ logs are append-only, not journaled)
        return ingest_.run(state, read, now, dry_run)


def status(state: RootState, now: datetime) -> Status:
    """Files, bytes, nodes and chunks per tier; oversized notes; stale index; dangling nodes; watcher."""
    from memtree.lifecycle.banks import list_banks
    from memtree.lifecycle.consolidate import last_run
    from memtree.lifecycle.recall import status as recall_status
    from memtree.lifecycle.status import collect
    from memtree.search.query import semantic_status

    if not state.index.segments:
        state.index.load()
    found = collect(state.root, state.index, state.settings, now.timestamp())
    return replace(
        found,
        archive_candidates=sum(1 for a in decay(state, now) if a.candidate),
        consolidation=last_run(state.root),
        banks=tuple(list_banks(state.root)),
        recall=recall_status(state.root, state.settings.recall.budget_tokens),
        semantic=semantic_status(state),
    )


def recall(state: RootState, now: datetime) -> list[Excerpt]:
    """The excerpts in recall/, each with its source entry's recalls and weight at ``now``."""
    from memtree.lifecycle import recall as recall_

    s = state.settings
    return recall_.read(state.root, now.timestamp(), s.decay, s.consolidate, state.usage().retrievals())


def banks(state: RootState) -> list[Bank]:
    """The banks (top-level folders of bank/) with their counts and whether search sees them."""
    from memtree.lifecycle.banks import list_banks

    return list_banks(state.root)


def set_bank(state: RootState, name: str, enabled: bool, now: datetime | None = None) -> tuple[str, ...]:
    """Enable or disable a bank in memtree.yaml; the state reads its settings again."""
    from memtree.lifecycle.banks import set_enabled

    with recording(state, "banks enable" if enabled else "banks disable", now, summary=name):
        disabled = set_enabled(state.root, name, enabled)  # under the write lock
    state.reload_settings()
    return disabled
