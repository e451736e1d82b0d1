"""When a conversation's turns are examined (`memtree ingest`): the cadence, as a pure function.

A conversation's turns after its watermark (the last turn examined) are *pending*. Walking them
oldest first, a **cycle** closes — its turns are examined together, then the watermark moves past
them — at the first of:

- ``cadence``: the cycle now holds ``extract.every_turns`` (5) assistant turns;
- ``topic-gap``: the next turn comes ``extract.topic_gap_min`` (30) minutes or more after this one —
  the episode before the gap is examined on its own, never mixed with the next one;
- ``idle``: the next turn comes ``extract.idle_flush_min`` (10) minutes or more after this one, or no
  next turn has come and ``now`` is that long after the last one (the idle flush);
- ``topic-shift`` (off by default): an assistant turn shares too few words with the assistant turn
  before it (unigram Jaccard under ``extract.topic_shift``): the cycle closes after that earlier
  assistant turn, and the user's turns in between open the new episode.

Why a gap between two turns flushes like quiet at ``now`` does: turns that arrive one by one (the
next ingest, or the daemon, flushing a quiet conversation first) and the same turns ingested in one
file later then close the very same cycles, so a transcript can be ingested at any time with the
result of having followed the conversation live.

A cycle's turns (system turns left out: they are instructions, not what happened) are cut into
windows of at most ``extract.window_turns`` (10) turns, of even size, which the detectors read one
at a time. Turns left pending wait for the next ingest or flush.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memtree.text.terms import terms

if TYPE_CHECKING:
    from memtree.config import ExtractSettings

MINUTE_S = 60.0
TRIGGERS = ("cadence", "topic-gap", "idle", "topic-shift")


@dataclass(frozen=True)
class Logged:
    """A turn as it stands in memory/: its number in the conversation, sanitized text, and log line."""

    conversation: str
    turn: int  # 1-based, per conversation
    role: str
    text: str  # sanitized, as logged
    ts: datetime  # aware
    key: str  # transcript.turn_key of the raw turn
    path: str  # memory/YYYY-MM-DD.md
    line: int  # the log line its entry starts on


@dataclass(frozen=True)
class Cycle:
    """Turns examined together, and what closed the cycle (one of TRIGGERS)."""

    conversation: str
    trigger: str
    turns: tuple[Logged, ...]


def plan(pending: Sequence[Logged], cfg: ExtractSettings, now: datetime) -> tuple[list[Cycle], list[Logged]]:
    """The cycles that close among one conversation's pending turns (oldest first), and the turns still pending."""
    cycles: list[Cycle] = []
    current: list[Logged] = []

    def close(turns: list[Logged], trigger: str) -> None:
        if turns:
            cycles.append(Cycle(turns[0].conversation, trigger, tuple(turns)))

    for turn in pending:
        if current:
            gap = (turn.ts - current[-1].ts).total_seconds() / MINUTE_S
            trigger = _gap_trigger(gap, cfg)
            if trigger is not None:
                close(current, trigger)
                current = []
            elif turn.role == "assistant" and cfg.topic_shift > 0:
                cut = _shift_cut(current, turn, cfg.topic_shift)
                if cut is not None:
                    close(current[:cut], "topic-shift")
                    current = current[cut:]
        current.append(turn)
        if cfg.every_turns > 0 and sum(t.role == "assistant" for t in current) >= cfg.every_turns:
            close(current, "cadence")
            current = []
    if current and cfg.idle_flush_min > 0:
        quiet = (now - current[-1].ts).total_seconds() / MINUTE_S
        if quiet >= cfg.idle_flush_min:
            close(current, "idle")
            current = []
    return cycles, current


def _gap_trigger(gap_min: float, cfg: ExtractSettings) -> str | None:
    """What a gap of ``gap_min`` minutes between two turns closes, if anything."""
    if cfg.topic_gap_min > 0 and gap_min >= cfg.topic_gap_min:
        return "topic-gap"
    if cfg.idle_flush_min > 0 and gap_min >= cfg.idle_flush_min:
        return "idle"
    return None


def _shift_cut(current: Sequence[Logged], turn: Logged, threshold: float) -> int | None:
    """Where the episode ends when assistant ``turn`` changes the subject: after the assistant turn before it."""
    for i in range(len(current) - 1, -1, -1):
        if current[i].role == "assistant":
            if jaccard(current[i].text, turn.text) < threshold:
                return i + 1
            return None
    return None


def jaccard(a: str, b: str) -> float:
    """Unigram Jaccard similarity of two texts' term sets (1.0 when both have none)."""
    left, right = set(terms(a)), set(terms(b))
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def windows(turns: Sequence[Logged], size: int) -> list[list[Logged]]:
    """A cycle's turns, system turns left out, cut into the fewest windows of at most ``size``, of even size."""
    said = [t for t in turns if t.role != "system"]
    if not said:
        return []
    count = -(-len(said) // max(1, size))
    base, extra = divmod(len(said), count)
    out: list[list[Logged]] = []
    start = 0
    for i in range(count):
        end = start + base + (1 if i < extra else 0)
        out.append(said[start:end])
        start = end
    return out
