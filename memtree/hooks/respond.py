"""What each hook event does against a memory root, and the text the hook answers.

- SessionStart: a briefing (memtree.hooks.briefing) within ``hooks.briefing_tokens``, of this root and the
  user's own;
- UserPromptSubmit: the context block (memtree.search.context) of the prompt's search within
  ``hooks.recall_tokens``, searching ``hooks.recall_tier``, of the hits scoring near the best one (each
  longer than ``hooks.hit_tokens`` cut to its sentences that match, memtree.hooks.focus) — nothing
  when search refuses (no confident match), when the best hit covers less than ``hooks.min_coverage`` of
  the prompt's words, when the prompt is a slash command, or when nothing fits;
- PreCompact, SessionEnd: the session's transcript ingested (Claude Code's format, read by
  memtree.lifecycle.transcript), so its turns reach memory/ and, on ingest's cadence, the auto bank;
  ingest's watermark takes no turn twice;
- Stop (after every reply): the same, throttled — only when the session's last captured turn is
  ``hooks.stop_every_min`` old.

``<private>`` spans of the prompt are cut before it is searched (memtree.write.private); ingest cuts
them, and sanitizes, before a turn is logged.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.errors import EmptyMemory, QueryError
from memtree.hooks import protocol
from memtree.hooks.protocol import Event

if TYPE_CHECKING:
    from memtree.api import MemTree
    from memtree.lifecycle.ingest import IngestReport
    from memtree.search.context import Context

SLASH = "/"
RECALL_HITS = 10
"""Hits a prompt's search considers; the budget and RELATIVE_SCORE usually keep one or two."""
RELATIVE_SCORE = 0.8
"""Only hits scoring at least this share of the best are injected. Why: the context block fills its budget
with whole chunks, so when the best chunk did not fit, a weak shorter one took its place (KorQuAD's first
1,000 questions at min_coverage 0.5: the injected sources overlapped the passage in 0.80 of injections with
every hit, 0.94 with this cut)."""


def respond(mt: MemTree, event: Event, now: datetime) -> str:
    """Run ``event`` against ``mt`` at ``now``; what the hook prints (JSON, or nothing)."""
    if event.name == "SessionStart":
        return protocol.answer(event.name, brief(mt))
    if event.name == "UserPromptSubmit":
        found = recall(mt, event.prompt, now)
        return protocol.answer(event.name, found.markdown if found else "")
    capture(mt, event, now)
    return ""


def brief(mt: MemTree) -> str:
    """SessionStart's briefing, or "" when memory holds nothing for it."""
    from memtree.hooks import briefing
    from memtree.write.conflicts import load

    settings = mt.settings
    budget = settings.hooks.briefing_tokens
    if budget <= 0:
        return ""
    items = briefing.collect(mt.root, settings.disabled_banks)
    user, _ = mt.beside()  # a broken user root is no reason to brief on nothing
    if user is not None:
        theirs = briefing.collect(user.root, user.settings.disabled_banks, mark="user:")
        items = briefing.newest_first([*items, *theirs])
    return briefing.render(load(mt.root), items, budget)


def recall(mt: MemTree, prompt: str, now: datetime) -> Context | None:
    """The context block for a prompt, or None when nothing is to be injected (see the module docstring)."""
    from memtree.hooks.focus import focus
    from memtree.search import message
    from memtree.search.context import render
    from memtree.write.private import strip_private

    hooks = mt.settings.hooks
    query = strip_private(prompt).strip()
    if hooks.recall_tokens <= 0 or not query or query.startswith(SLASH):
        return None
    if not message.read(query, now.date()).terms:  # "thanks", "ok?": no word search could match
        return None
    try:
        result = mt.search(query, k=RECALL_HITS, tier=hooks.recall_tier, now=now)
    except EmptyMemory:  # a new root: nothing to recall yet
        return None
    if not result.hits or result.hits[0].signals.get("coverage", 0.0) < hooks.min_coverage:
        return None
    best = result.hits[0].score
    kept = tuple(focus(h, hooks.hit_tokens) for h in result.hits if h.score >= RELATIVE_SCORE * best)
    found = render(replace(result, hits=kept), hooks.recall_tokens)
    return found if found.markdown else None


def capture(mt: MemTree, event: Event, now: datetime) -> IngestReport | None:
    """Ingest the event's transcript (None when it names none, or a Stop is throttled)."""
    if not event.transcript_path:
        return None
    if event.name == "Stop" and throttled(mt, event.session_id, now):
        return None
    path = Path(event.transcript_path).expanduser()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise QueryError(f"cannot read the transcript {path}: {exc.strerror}") from None
    # Why: the agent appends to its session file as it goes; a last line without its newline is still
    # being written, and is taken whole by the next capture
    return mt.ingest(data[: data.rfind(b"\n") + 1], source=str(path), now=now)


def throttled(mt: MemTree, session: str, now: datetime) -> bool:
    """Whether a Stop is too soon: the session's last captured turn is younger than ``hooks.stop_every_min``."""
    from memtree.lifecycle import turnlog

    every = mt.settings.hooks.stop_every_min
    if every <= 0 or not session:
        return False
    thread = turnlog.load(mt.root).threads.get(session)
    if thread is None or not thread.last_ts:
        return False
    return (now - datetime.fromisoformat(thread.last_ts)).total_seconds() < every * 60
