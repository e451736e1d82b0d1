"""Decay, recency and scope (DESIGN §5): how much a chunk's keyword score counts today.

    w = 2^(−age_days / 30);  boosted = w × (1 + 0.1 × recalls), clamped to [0, 1]
    recalls ≥ 15 → 1.0 (permanent);  age ≤ 7 days → 1.0 (protected);  w < 0.02 → archive candidate

A chunk's age comes from its entries' metadata (``created=``), else its note's frontmatter date
(``updated``, ``date`` or ``created``), else a date in the note's file name
(``memory/2026-11-28.md``), else the file's modification time. Its recalls are the search hits
counted for its entries (memtree.lifecycle.usage); `get` accesses are kept apart and do not count.

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
from typing import Any

from memtree.errors import QueryError
from memtree.notes import entries

HALF_LIFE_DAYS = 30.0
PROTECT_DAYS = 7.0
RECALL_STEP = 0.1
PERMANENT_RECALLS = 15
ARCHIVE_BELOW = 0.02
"""Below this weight an entry is an archive candidate (`memtree decay`; never deleted)."""
DAY_S = 86_400.0

_FRONTMATTER_DATES = ("updated", "date", "created")
_NAME_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_SCOPE = re.compile(r"^(global|(?:project|workspace):[^\s/;,<>]+)$")


def weight(age_days: float, recalls: int) -> float:
    """The decay weight of an entry ``age_days`` old that search found ``recalls`` times."""
    if recalls >= PERMANENT_RECALLS or age_days <= PROTECT_DAYS:
        return 1.0
    w = 2.0 ** (-age_days / HALF_LIFE_DAYS) * (1.0 + RECALL_STEP * recalls)
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


def parse_scope(value: str) -> tuple[str, ...]:
    """A current scope (``global``, ``project:api``, ``project:api/workspace:alice``) → its chain."""
    parts = tuple(p.strip() for p in value.strip().split("/") if p.strip())
    bad = [p for p in parts if not _SCOPE.match(p)]
    if not parts or bad:
        raise QueryError(
            f"scope {value!r} is not global, project:NAME, workspace:NAME or a chain such as project:api/workspace:me"
        )
    return tuple(p for p in parts if p != "global")


def check_entry_scope(value: str, what: str = "scope") -> str:
    """An entry's own scope (one level); raises QueryError when malformed."""
    if not _SCOPE.match(value.strip()):
        raise QueryError(f"{what} {value!r} must be global, project:NAME or workspace:NAME")
    return value.strip()


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
    scope = scope.strip() if isinstance(scope, str) and _SCOPE.match(scope.strip()) else "global"
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
    """A chunk's time (the newest of its entries'), where it came from, and its entries' scopes."""

    time: float
    origin: str  # "entry", or the note's origin
    scopes: tuple[str, ...]


def chunk_facts(chunk_text: str, note: NoteFacts) -> ChunkFacts:
    """The time and scopes of a chunk: each entry's metadata, else its note's facts; the newest time."""
    if "memtree:" not in chunk_text:
        return ChunkFacts(note.time, note.origin, (note.scope,))
    times: list[tuple[float, str]] = []
    scopes: list[str] = []
    for e in entries.parse_entries(chunk_text):
        stamp = parse_time(e.meta.created)
        times.append((stamp, "entry") if stamp is not None else (note.time, note.origin))
        scopes.append(e.meta.scope or note.scope)
    if not times:
        return ChunkFacts(note.time, note.origin, (note.scope,))
    newest, origin = max(times)
    return ChunkFacts(newest, origin, tuple(dict.fromkeys(scopes)))


def visible(scopes: tuple[str, ...], chain: tuple[str, ...] | None) -> bool:
    """Whether a chunk whose entries have ``scopes`` is visible from the current scope ``chain``.

    ``None`` means no current scope was given: everything is visible. A chunk is visible only
    when every entry in it is, so text of a lower scope never leaks through a shared chunk.
    """
    if chain is None:
        return True
    return all(s == "global" or s in chain for s in scopes)


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
) -> Factors:
    """Decay weight, recency boost (under PROTECT_DAYS) and scope boost (the current scope)."""
    age = max(0.0, (now - facts.time) / DAY_S)
    if math.isnan(age):
        age = 0.0
    boost = _scope_boost(facts, chain, scope_boost)
    return Factors(
        weight(age, recalls),
        recency_boost if age < PROTECT_DAYS else 1.0,
        boost,
        round(age, 2),
        recalls,
        facts.origin,
    )


class Adjuster:
    """Scope filter and score multipliers for the chunks of one search."""

    def __init__(
        self,
        now: float,
        chain: tuple[str, ...] | None,
        recalls: Callable[[tuple[str, ...]], int],
        note: Callable[[str], NoteFacts],
        recency_boost: float,
        scope_boost: float,
        decay: bool = True,
    ) -> None:
        self.now, self.chain, self.recalls, self.note = now, chain, recalls, note
        self.recency_boost, self.scope_boost, self.decay = recency_boost, scope_boost, decay
        boost = scope_boost if chain else 1.0
        self.max_factor = max(1.0, recency_boost if decay else 1.0) * max(1.0, boost)
        """No chunk's multipliers exceed this (decay weights are at most 1)."""

    def factors(self, path: str, chunk_text: str, keys: tuple[str, ...]) -> Factors | None:
        """The chunk's multipliers, or None when it is out of the current scope."""
        facts = chunk_facts(chunk_text, self.note(path))
        if not visible(facts.scopes, self.chain):
            return None
        if not self.decay:
            boost = _scope_boost(facts, self.chain, self.scope_boost)
            return Factors(1.0, 1.0, boost, 0.0, 0, "")
        return factors(facts, self.recalls(keys), self.now, self.chain, self.recency_boost, self.scope_boost)
