"""Dates as index terms: a chunk's days (its text, section heading, entry metadata, note) and a query's.

Index terms look like ``@d2024-01-07``, ``@w2024-W01``, ``@m2024-01``, ``@y2024``:
``memtree.text.terms.terms`` never emits ``@`` or ``-``, so no word of any note can collide with them.
Recognising a date in text is memtree.text.dates. Pure: no I/O, no clock.
"""

from __future__ import annotations

import calendar
import functools
import re
import unicodedata
from datetime import date, datetime, timedelta
from typing import NamedTuple

from memtree.text.dates import MAX_DAY_TERMS, find_dates, valid_day

# --- index terms -------------------------------------------------------------------------------


def day_term(d: date) -> str:
    """The term of one day: ``@d2024-01-07``."""
    return f"@d{d.isoformat()}"


def week_term(d: date) -> str:
    """The term of the ISO week holding ``d``: ``@w2024-W01``."""
    y, w, _ = d.isocalendar()
    return f"@w{y:04d}-W{w:02d}"


def month_term(d: date) -> str:
    """The term of the month holding ``d``: ``@m2024-01``."""
    return f"@m{d.year:04d}-{d.month:02d}"


def year_term(d: date) -> str:
    """The term of the year holding ``d``: ``@y2024``."""
    return f"@y{d.year:04d}"


def day_terms(d: date) -> list[str]:
    """Index terms of a chunk about day ``d``: the day, its ISO week, month and year."""
    return [day_term(d), week_term(d), month_term(d), year_term(d)]


def range_days(first: date, last: date) -> list[date]:
    """Every day from ``first`` to ``last``, both included (empty when ``last`` is earlier)."""
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def range_terms(first: date, last: date) -> list[str]:
    """The fewest terms that cover exactly ``first``..``last`` (the query side).

    Whole years give ``@y``, whole months ``@m``, whole ISO weeks ``@w``, the rest ``@d`` terms;
    past ``MAX_DAY_TERMS`` leftover days the months touched stand in for them.
    """
    out: list[str] = []
    d = first
    while d <= last:
        year_end = date(d.year, 12, 31)
        month_end = date(d.year, d.month, calendar.monthrange(d.year, d.month)[1])
        sunday = d + timedelta(days=6)
        if d.month == 1 and d.day == 1 and year_end <= last:
            out.append(year_term(d))
            d = year_end
        elif d.day == 1 and month_end <= last:
            out.append(month_term(d))
            d = month_end
        elif d.weekday() == 0 and sunday <= last:
            out.append(week_term(d))
            d = sunday
        else:
            out.append(day_term(d))
        d += timedelta(days=1)
    if sum(t.startswith("@d") for t in out) > MAX_DAY_TERMS:
        days = [t for t in out if t.startswith("@d")]
        months = dict.fromkeys(f"@m{t[2:9]}" for t in days)
        out = [t for t in out if not t.startswith("@d")] + [m for m in months if m not in out]
    return out


def index_terms(first: date, last: date) -> list[str]:
    """Index terms of a chunk about ``first``..``last``: its exact cover plus every week, month and
    year that holds the whole range, so a coarser query (``2024년 3월``) finds a finer mention."""
    out = range_terms(first, last)
    if week_term(first) == week_term(last):
        out.append(week_term(first))
    if (first.year, first.month) == (last.year, last.month):
        out.append(month_term(first))
    if first.year == last.year:
        out.append(year_term(first))
    return list(dict.fromkeys(out))


# --- dates of files, headings and frontmatter --------------------------------------------------

_PATH_DAY = re.compile(r"^([0-9]{4})-?([0-9]{2})-?([0-9]{2})(?![0-9])")


def date_from_path(path: str) -> date | None:
    """The day a log file is about: ``memory/2024-01-07.md``, ``2024-01-07-standup.md``, ``2024/01/07.md``."""
    parts = [p for p in re.split(r"[\\/]", path) if p]
    if not parts:
        return None
    stem = parts[-1].split(".")[0]
    m = _PATH_DAY.match(stem)
    if m:
        return valid_day(int(m[1]), int(m[2]), int(m[3]))
    if len(parts) >= 3 and all(p.isdigit() for p in (parts[-3], parts[-2], stem)) and len(parts[-3]) == 4:
        return valid_day(int(parts[-3]), int(parts[-2]), int(stem))
    return None


def date_from_heading(heading: str) -> date | None:
    """The first absolute day named in a section heading (``## 2024-01-07 (일)``, ``## 2024년 1월 7일``)."""
    for mention in find_dates(heading, None):
        if mention.kind == "day":
            return mention.first
    return None


def date_from_value(value: object) -> date | None:
    """The day of a frontmatter value: YAML gives ``date``/``datetime`` objects, else a string."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        return date_from_heading(value)
    return None


# --- what search uses --------------------------------------------------------------------------

NOTE_DATE_KEYS = ("date", "created", "updated")
"""Frontmatter keys whose day a note is about, in order of preference."""


class QueryDates(NamedTuple):
    """The dates a query names, read once (:func:`query_dates`)."""

    text: str  # the query as read (NFC): the offsets below index it
    words: str  # the query with its relative date words blanked out
    mentions: tuple[tuple[int, int, tuple[str, ...]], ...]  # each date named: its start, end and terms, in order
    written: frozenset[str]  # the words of its written dates

    @property
    def days(self) -> tuple[str, ...]:
        """The terms of every date the query names, each once, in order."""
        if not self.mentions:
            return ()
        return tuple(dict.fromkeys(t for _, _, terms in self.mentions for t in terms))


def query_dates(query: str, anchor: date | None) -> QueryDates:
    """The dates ``query`` names, where they are, and the query with its relative date words blanked out.

    Why blank only ``yesterday`` / ``지난주``: no chunk holds them as the day they mean. A written
    date (``7 Jan 2024``, ``12월 18일``) keeps its words too — a note may write that day without
    its year — and memtree.search.evidence lets those words weigh nothing when no note holds them.
    """
    from memtree.text.terms import terms as word_terms

    query = unicodedata.normalize("NFC", query)
    found = find_dates(query, anchor)
    if not found:
        return QueryDates(query, query, (), frozenset())
    pieces, at, mentions, written = [], 0, [], set()
    for m in found:
        mentions.append((m.start, m.end, tuple(range_terms(m.first, m.last))))
        if any(c.isdigit() for c in m.text):  # a written date stays words as well
            written.update(word_terms(m.text))
            continue
        pieces.append(query[at : m.start])
        pieces.append(" " * (m.end - m.start))
        at = m.end
    pieces.append(query[at:])
    return QueryDates(query, "".join(pieces), tuple(mentions), frozenset(written))


def note_day(path: str, meta: dict[str, object]) -> date | None:
    """The day a note is about: its file name (``memory/2024-01-07.md``), else its frontmatter."""
    day = date_from_path(path)
    if day is not None:
        return day
    for key in NOTE_DATE_KEYS:
        if key in meta:
            day = date_from_value(meta[key])
            if day is not None:
                return day
    return None


_CREATED = re.compile(r"(?:^|;)\s*created=(\d{4}-\d{2}-\d{2})")
_DIGIT = re.compile("[0-9]").search


def chunk_terms(chunk_text: str, meta_bodies: list[str], section_day: date | None, note: date | None) -> list[str]:
    """The date terms of one chunk: dates in its text (relative ones read against its section's or
    note's day), its entries' ``created=`` days, its section heading's day and its note's day."""
    anchor = section_day or note
    # Why the digit check: without an anchor only a date written with its year resolves, and every
    # such date holds an ASCII digit; most chunks of a note with no day hold none (~4 µs a chunk saved)
    found = find_dates(chunk_text, anchor) if anchor is not None or _DIGIT(chunk_text) else []
    spans = [(m.first, m.last) for m in found]
    for body in meta_bodies:
        m = _CREATED.search(body)
        if m:
            day = valid_day(*(int(x) for x in m[1].split("-")))
            if day is not None:
                spans.append((day, day))
    for day in (section_day, note):
        if day is not None:
            spans.append((day, day))
    if not spans:
        return []
    out: list[str] = []
    for first, last in dict.fromkeys(spans):
        out.extend(_index_terms(first, last))
    return list(dict.fromkeys(out))


@functools.lru_cache(maxsize=4096)
def _index_terms(first: date, last: date) -> tuple[str, ...]:
    # Why: every chunk of a daily log carries its note's day, so a build asks for the same days again and again.
    return tuple(index_terms(first, last))
