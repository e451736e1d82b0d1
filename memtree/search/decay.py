"""Decay, recency and scope (DESIGN §5): how much a chunk's keyword score counts today.

    w = 2^(−age_days / half_life_days);  boosted = w × (1 + boost_factor × recalls), clamped to [0, 1]
    recalls ≥ permanent_threshold → 1.0 (permanent);  age ≤ protect_days → 1.0 (protected)
    w < archive_below → archive candidate (memtree.lifecycle.aging)

The numbers are memtree.yaml's ``decay:`` keys (memtree.config.DecaySettings: 30 days, 0.1, 15
recalls, 7 days, 0.02 by default), passed in as ``curve``.

A chunk's age comes from its entries' metadata (``created=``), else its note's frontmatter date
(``updated``, ``date`` or ``created``), else a date in the note's file name
(``memory/2026-11-28.md``), else the file's modification time. Its recalls are the search hits
counted for its entries (memtree.notes.usage); `get` accesses are kept apart and do not count.

Scopes: ``global`` ⊃ ``project:NAME`` ⊃ ``workspace:NAME``. The current scope is a chain from the
top, e.g. ``project:api/workspace:alice``; an entry is visible when its scope is ``global`` or in
that chain (an upper scope is visible below, never the reverse), and the chain's last, most
specific scope gets the scope boost.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree.notes import entries
from memtree.notes.scopes import SCOPE_RE, visible

if TYPE_CHECKING:
    from memtree.config import DecaySettings
    from memtree.notes.links import Retirements

DAY_S = 86_400.0

_FRONTMATTER_DATES = ("updated", "date", "created")
_NAME_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


def weight(age_days: float, recalls: int, curve: DecaySettings) -> float:
    """The decay weight, on ``curve``, of an entry ``age_days`` old that search found ``recalls`` times."""
    if recalls >= curve.permanent_threshold or age_days <= curve.protect_days:
        return 1.0
    w = 2.0 ** (-age_days / curve.half_life_days) * (1.0 + curve.boost_factor * recalls)
    return min(1.0, max(0.0, w))


def parse_time(value: Any) -> float | None:
    """An ISO date or date-time (string, or what YAML makes of one) → epoch seconds, else None."""
    if isinstance(value, dt.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return stamp.timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc).timestamp()
    if not isinstance(value, str) or not value.strip():
        return None
    raw = value.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"  # Python 3.10's fromisoformat does not read 'Z'
    try:
        return parse_time(dt.datetime.fromisoformat(raw))
    except ValueError:
        try:
            return parse_time(dt.date.fromisoformat(raw[:10]))
        except ValueError:
            return None


@dataclass(frozen=True)
class NoteFacts:
    """What decay and scopes need from a whole note: its fallback time and scope."""

    time: float
    origin: str  # "frontmatter", "file name" or "modified"
    scope: str


def note_facts(path: str, lines: list[str], mtime: float) -> NoteFacts:
    """A note's fallback time and scope from its frontmatter, its file name, its mtime."""
    meta = _frontmatter_fields(lines)
    scope = meta.get("scope")
    scope = scope.strip() if isinstance(scope, str) and SCOPE_RE.match(scope.strip()) else "global"
    for key in _FRONTMATTER_DATES:
        stamp = parse_time(meta.get(key))
        if stamp is not None:
            return NoteFacts(stamp, "frontmatter", scope)
    named = _NAME_DATE.search(path.rsplit("/", 1)[-1])
    stamp = parse_time(named.group(1)) if named else None
    if stamp is not None:
        return NoteFacts(stamp, "file name", scope)
    return NoteFacts(mtime, "modified", scope)


_FIELD = re.compile(r"^(updated|date|created|scope)\s*:\s*(.*?)\s*$")


def _frontmatter_fields(lines: list[str]) -> dict[str, str]:
    """The few top-level frontmatter keys decay needs, read line by line.

    Why not YAML: loading PyYAML costs a cold search ~15 ms, and these keys are plain scalars.
    """
    found: dict[str, str] = {}
    if not lines or lines[0].strip() != "---":
        return found
    for line in lines[1:500]:
        if line.strip() in ("---", "..."):
            return found
        m = _FIELD.match(line)
        if m and m.group(1) not in found:
            value = m.group(2).split(" #", 1)[0].strip()
            found[m.group(1)] = value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value
    return {}  # no closing line: not frontmatter


@dataclass(frozen=True)
class ChunkFacts:
    """A chunk's time (the newest of its entries'), where it came from, its entries' scopes, and
    whether any of its entries held on the day asked (memtree.notes.entries.held)."""

    time: float
    origin: str  # "entry", or the note's origin
    scopes: tuple[str, ...]
    held: bool = True


def chunk_facts(
    chunk_text: str,
    note: NoteFacts,
    day: dt.date | None = None,
    retired: Retirements | None = None,
    path: str = "",
) -> ChunkFacts:
    """The time and scopes of a chunk: each entry's metadata, else its note's facts; the newest time.

    With ``day``: whether the chunk held then — a chunk of entries all superseded, expired or not
    yet written on that day did not; one without entries (a heading, a table) always does, unless
    its whole note was superseded. ``retired``: what hand-written ``supersedes`` links retire
    (memtree.notes.links.retirements), ``path``: the chunk's note.
    """
    if "memtree:" not in chunk_text and not (retired and path in retired.notes):
        return ChunkFacts(note.time, note.origin, (note.scope,))
    times: list[tuple[float, str]] = []
    scopes: list[str] = []
    found = entries.parse_entries(chunk_text)
    metas = [e.meta for e in found]
    if retired:
        metas = [retired.of(path, m) for m in metas or [entries.EntryMeta()]]  # a heading: with its note
    for e in found:
        stamp = parse_time(e.meta.created)
        times.append((stamp, "entry") if stamp is not None else (note.time, note.origin))
        scopes.append(e.meta.scope or note.scope)
    held = day is None or not metas or any(entries.held(m, day) for m in metas)
    if not times:
        return ChunkFacts(note.time, note.origin, (note.scope,), held)
    newest, origin = max(times)
    return ChunkFacts(newest, origin, tuple(dict.fromkeys(scopes)), held)


@dataclass(frozen=True)
class Factors:
    """The multipliers on a chunk's keyword score, and what they came from."""

    decay: float
    recency: float
    scope: float
    age_days: float
    recalls: int
    origin: str

    @property
    def total(self) -> float:
        return self.decay * self.recency * self.scope


def _scope_boost(facts: ChunkFacts, chain: tuple[str, ...] | None, boost: float) -> float:
    """``boost`` when the chunk belongs to the current scope (the chain's last), else 1."""
    return boost if chain and chain[-1] in facts.scopes else 1.0


def factors(
    facts: ChunkFacts,
    recalls: int,
    now: float,
    chain: tuple[str, ...] | None,
    recency_boost: float,
    scope_boost: float,
    curve: DecaySettings,
) -> Factors:
    """Decay weight on ``curve``, recency boost (under its protect_days) and scope boost (the current scope)."""
    age = max(0.0, (now - facts.time) / DAY_S)
    if math.isnan(age):
        age = 0.0
    boost = _scope_boost(facts, chain, scope_boost)
    return Factors(
        weight(age, recalls, curve),
        recency_boost if age < curve.protect_days else 1.0,
        boost,
        round(age, 2),
        recalls,
        facts.origin,
    )


class Adjuster:
    """Scope and time filter, and score multipliers, for the chunks of one search.

    ``day``: the day facts must hold on (today, or an ``--as-of`` day); a chunk whose entries did not
    hold then is hidden and counted in ``past_hidden``, unless ``past`` lets it through (the
    fallback when nothing current answers).
    """

    def __init__(
        self,
        now: float,
        chain: tuple[str, ...] | None,
        recalls: Callable[[tuple[str, ...]], int],
        note: Callable[[str], NoteFacts],
        recency_boost: float,
        scope_boost: float,
        curve: DecaySettings,
        decay: bool = True,
        day: dt.date | None = None,
        past: bool = False,
        retired: Retirements | None = None,
    ) -> None:
        self.now, self.chain, self.recalls, self.note = now, chain, recalls, note
        self.day, self.past, self.past_hidden, self.retired = day, past, 0, retired
        self.weighs = decay or chain is not None
        """Whether it changes scores at all (decay or a scope); else it only filters by ``day``."""
        self.recency_boost, self.scope_boost, self.curve, self.decay = recency_boost, scope_boost, curve, decay
        boost = scope_boost if chain else 1.0
        self.max_factor = max(1.0, recency_boost if decay else 1.0) * max(1.0, boost)
        """No chunk's multipliers exceed this (decay weights are at most 1)."""

    def factors(self, path: str, chunk_text: str, keys: tuple[str, ...]) -> Factors | None:
        """The chunk's multipliers, or None when it is out of the current scope or did not hold on ``day``."""
        facts = chunk_facts(chunk_text, self.note(path), self.day, self.retired, path)
        if not visible(facts.scopes, self.chain):
            return None
        if not facts.held and not self.past:
            self.past_hidden += 1
            return None
        if not self.decay:
            boost = _scope_boost(facts, self.chain, self.scope_boost)
            return Factors(1.0, 1.0, boost, 0.0, 0, "")
        return factors(
            facts, self.recalls(keys), self.now, self.chain, self.recency_boost, self.scope_boost, self.curve
        )
