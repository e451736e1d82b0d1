"""`memtree ingest`: conversation turns kept whole in memory/, and remembered on a cadence.

One run, under the root's write lock:

1. the input is validated whole (memtree.lifecycle.transcript): one bad turn, nothing written;
2. turns already ingested are recognised (a turn older than its conversation's last one, or at
   the same time with the same role and text) and skipped, so a transcript can be given again,
   whole or as its new turns only;
3. the new turns are appended, their ``<private>`` spans cut (memtree.write.private) and sanitized,
   to the log of their own day (memtree.lifecycle.turnlog);
4. every conversation's pending turns — quiet conversations included: the idle flush — are cut
   into cycles (memtree.lifecycle.cadence); each cycle's windows go through distill's detectors and
   the optional ``extract.llm_command``; at most ``extract.max_entries`` candidates per cycle, the
   best first, are written through `add` as ``source=auto`` entries of the ``auto`` bank
   (``bank/auto/<section>.md``, created with its node), naming their log lines (``from=``), with
   `add`'s dedup against what is there; then the cycle's marker moves the watermark past it.

A candidate whose log lines are already named by a bank entry is skipped (``known``), so a cycle
examined again after a crash writes nothing twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.errors import QueryError
from memtree.lifecycle import cadence, extract, transcript, turnlog
from memtree.lifecycle.cadence import Cycle, Logged
from memtree.lifecycle.reflect import Proposal, known_provenance, provenance
from memtree.notes import entries, store
from memtree.write import retain
from memtree.write.journal import log_zone
from memtree.write.private import strip_private
from memtree.write.verbs import add

if TYPE_CHECKING:
    from memtree.state import RootState
    from memtree.write.sanitize import Sanitizer

WRITTEN = ("written", "merged", "conflict")


@dataclass(frozen=True)
class CycleReport:
    """One examined cycle: its conversation, what closed it, its turns, windows and entries written."""

    conversation: str
    trigger: str
    first: int
    last: int
    windows: int
    written: int


@dataclass(frozen=True)
class IngestReport:
    """What an ingest (or a flush) did: turns read, logged and known; cycles; proposals; pending turns."""

    turns: int
    logged: tuple[Logged, ...]
    known: int
    pending: int
    cycles: tuple[CycleReport, ...]
    proposals: tuple[Proposal, ...]
    written: int
    logs: tuple[str, ...]
    notices: tuple[str, ...] = ()
    dry_run: bool = False


def read(turns: Iterable[Mapping[str, object]] | bytes, source: str, now: datetime) -> list[transcript.Turn]:
    """Validated turns from a JSON-lines transcript (bytes: memtree's turns or a Claude Code session file;
    errors name ``<source> line N``) or from values."""
    if isinstance(turns, bytes):
        items = transcript.from_claude_code(transcript.read_jsonl(turns, source))
    else:
        items = transcript.numbered(turns)
    return transcript.validate(items, now)


def run(state: RootState, turns: Sequence[transcript.Turn], now: datetime, dry_run: bool = False) -> IngestReport:
    """Log the new turns, run every cycle that is due (the idle flush too); see the module docstring."""
    root = state.root
    sanitizer = retain.sanitizer_for(state.settings)
    for turn in turns:  # before anything is written: the id lands raw in every log line's metadata
        try:
            sanitizer.require_clean(turn.conversation, f"{turn.where}: conversation")
        except QueryError as exc:
            raise QueryError(f"{exc}; nothing was written") from None
    notices: list[str] = []
    with store.write_lock(root) if not dry_run else contextlib.nullcontext():
        book = turnlog.load(root)
        new, known = _new_turns(book, turns)
        logged = _log(root, book, new, sanitizer, dry_run, log_zone(state.settings, now))
        if (logged or book.read_again) and not dry_run:
            turnlog.save(root, book)  # the turns are in; a crash from here re-examines, and writes nothing twice
        cycles: list[CycleReport] = []
        proposals: list[Proposal] = []
        seen: set[str] | None = None  # read when a cycle is due: a flush with nothing to do stays cheap
        touched = {t.path for t in logged}
        for name in _order(book, turns):
            thread = book.threads[name]
            due, _ = cadence.plan(thread.pending, state.settings.extract, now)
            marks: dict[str, str] = {}
            for cycle in due:
                seen = known_provenance(root) if seen is None else seen
                report, found = _examine(state, cycle, seen, now, dry_run, notices)
                cycles.append(report)
                proposals += found
                last = cycle.turns[-1]
                marks[last.path] = marks.get(last.path, "") + turnlog.mark_line(name, last.turn)
                thread.mark(last.turn)
            if marks and not dry_run:  # one write per log: the markers of this conversation's cycles
                for rel, text in sorted(marks.items()):
                    book.files[rel] = turnlog.append(root, rel, text)
                touched.update(marks)
                turnlog.save(root, book)
    if touched and not dry_run:
        state.refresh_paths(sorted(touched))
    written = sum(c.written for c in cycles)
    pending = sum(len(t.pending) for t in book.threads.values())
    logs = tuple(sorted({t.path for t in logged}))
    return IngestReport(
        len(turns), tuple(logged), known, pending, tuple(cycles), tuple(proposals), written, logs,
        tuple(notices), dry_run,
    )  # fmt: skip


def _order(book: turnlog.Book, turns: Sequence[transcript.Turn]) -> list[str]:
    """Conversations in the order the input names them, then every other one (each may be due a flush)."""
    named = list(dict.fromkeys(t.conversation for t in turns))
    return named + sorted(n for n in book.threads if n not in set(named))


def _new_turns(book: turnlog.Book, turns: Sequence[transcript.Turn]) -> tuple[list[transcript.Turn], int]:
    """The turns not ingested before, and how many were.

    A turn is known when it is older than its conversation's last logged turn, or at that very
    time with the role and text of a turn logged then (each such turn recognised once).
    """
    last: dict[str, tuple[datetime | None, list[str]]] = {}
    new: list[transcript.Turn] = []
    known = 0
    for turn in turns:
        if turn.conversation not in last:
            thread = book.threads.get(turn.conversation)
            at = datetime.fromisoformat(thread.last_ts) if thread and thread.last_ts else None
            last[turn.conversation] = (at, list(thread.last_keys) if thread else [])
        at, keys = last[turn.conversation]
        if at is not None and (turn.ts < at or (turn.ts == at and turn.key in keys)):
            if turn.ts == at:
                keys.remove(turn.key)
            known += 1
            continue
        new.append(turn)
    return new, known


def _log(
    root: Path,
    book: turnlog.Book,
    new: Sequence[transcript.Turn],
    sanitizer: Sanitizer,
    dry_run: bool,
    zone: tzinfo | None,
) -> list[Logged]:
    """Append the new turns, sanitized, to their days' logs in ``zone`` (one write per log, in time
    order); the turns as logged."""
    numbers: dict[str, int] = {}
    drafts: list[Logged] = []
    for turn in new:
        number = numbers.get(turn.conversation, book.thread(turn.conversation).turns) + 1
        numbers[turn.conversation] = number
        clean = sanitizer.sanitize(entries.neutralize(strip_private(turn.text).strip())).text
        where = turnlog.day_log(turn.ts, zone)
        drafts.append(Logged(turn.conversation, number, turn.role, clean, turn.ts, turn.key, where, 0))
    by_log: dict[str, list[int]] = {}
    for i, d in enumerate(drafts):
        by_log.setdefault(d.path, []).append(i)
    logged = list(drafts)
    for rel, idx in sorted(by_log.items()):
        idx.sort(key=lambda i: drafts[i].ts)  # stable: turns of one moment keep the input's order
        blocks = [turnlog.turn_block(drafts[i], zone) for i in idx]
        text, starts = turnlog.planned_lines(root, rel, blocks)
        for i, line in zip(idx, starts):
            logged[i] = replace(drafts[i], line=line)
        if not dry_run:
            book.files[rel] = turnlog.append(root, rel, text)
    for done in logged:
        book.thread(done.conversation).take(done)
    return logged


def _examine(
    state: RootState, cycle: Cycle, seen: set[str], now: datetime, dry_run: bool, notices: list[str]
) -> tuple[CycleReport, list[Proposal]]:
    """Run the detectors (and the LLM command) over a cycle's windows; write the best candidates through `add`."""
    cfg = state.settings.extract
    min_score = state.settings.distill.min_score
    parts = cadence.windows(cycle.turns, cfg.window_turns)
    found: list[extract.Found] = []
    for window in parts:
        got, failure = extract.candidates(window, cfg, min_score)
        found += got
        if failure:
            notices.append(failure)
    found.sort(key=lambda f: (-f.candidate.score, f.candidate.source))
    proposals: list[Proposal] = []
    written = 0
    for f in found:
        c, origin = f.candidate, provenance(f.candidate)
        if c.score < min_score:
            proposals.append(Proposal(c, origin, "below-score"))
        elif origin in seen:
            proposals.append(Proposal(c, origin, "known"))
        elif len(c.text) > retain.AUTO_MAX_CHARS:
            proposals.append(Proposal(c, origin, "too-long"))
        elif written >= cfg.max_entries:
            proposals.append(Proposal(c, origin, "over-limit"))
        else:
            tags = (c.section.lower(), c.type.lower())
            decision = add(
                state, c.text, now, to=f.note, tags=tags, kind=f.kind, source="auto", dry_run=dry_run, origin=origin
            )
            name = type(decision).__name__.lower()
            outcome = "dry-run" if dry_run else {"created": "written"}.get(name, name)
            written += outcome in WRITTEN
            seen.add(origin)
            proposals.append(Proposal(c, origin, outcome, decision))
    first, last = cycle.turns[0].turn, cycle.turns[-1].turn
    return CycleReport(cycle.conversation, cycle.trigger, first, last, len(parts), written), proposals
