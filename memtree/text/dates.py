"""Dates written in notes and queries: recognise them, resolve them, and turn them into index terms.

Pure: no I/O and no clock. Relative words (``yesterday``, ``지난주``) and year-less dates
(``Jan 7``, ``1월 7일``) are resolved against an ``anchor`` day passed in; with ``anchor=None`` they
are skipped, never guessed.

Forms recognised (case-insensitive; a Korean particle may follow: ``1월 7일에``, ``어제는``):

* numeric, with a four-digit year: ``2024-01-07``, ``2024/01/07``, ``2024.01.07``, ``2024. 1. 7.``;
  ``14.01.2024`` (day.month.year) and ``1/14/2024`` (month/day/year). When both leading parts are
  at most 12 the separator decides: a slash reads month/day (US), a dot day.month (European); when
  only the other reading is a valid date, that one is taken (``14/01/2024`` is 14 January);
* English month names (``Jan``/``January``, ``Sept``, ordinals ``7th``): ``7 Jan 2024``,
  ``7 January, 2024``, ``the 7th of January 2024``, ``January 7, 2024``, ``Jan 7 2024``; a month and
  year (``March 2024``) is a month range;
* Korean: ``2024년 1월 7일``, ``24년 1월 7일`` (two-digit years: 00–68 → 20xx, 69–99 → 19xx, as
  POSIX ``%y``), ``2024년 3월`` (month), ``2024년`` (year, 1900–2099 only: ``1000년`` is a span);
* year-less: ``Jan 7``, ``7 Jan``, ``1월 7일``, ``3월`` take the most recent such day (month) that
  is not after the anchor — notes mostly record the past;
* relative: ``today``/``tonight``, ``yesterday``, ``tomorrow``, ``the day before yesterday``,
  ``last|this|next week|month|year``, ``N days|weeks|months|years ago`` (digits or one…twelve),
  ``last|this|next Monday``; 오늘, 어제, 그제/그저께/엊그제, 내일, 모레, 지난주/저번 주, 이번 주,
  다음 주, 지난달, 이번 달, 다음 달, 작년/지난해, 올해, 내년, ``N일|주|달|개월|년 전``, ``N일 후``,
  ``지난 월요일``, ``지난주 월요일``, ``이번 주 금요일``, ``다음 주 월요일``.

Conventions: weeks are ISO weeks (Monday to Sunday, also the Korean calendar's); ``last Monday``
and ``지난 월요일`` are the most recent Monday strictly before the anchor, ``next Monday`` the first
strictly after, ``this Monday`` and ``이번 주 월요일`` the Monday of the anchor's week.

Not dates: invalid days (``2024-02-30``), version numbers and addresses (``1.2.3``, ``10.0.0.1``),
times (``14:20``), numbers without a year or month word (``3.14``, ``1/2``), two-digit numeric years
(``1/2/24``), a bare English year (``in 2022``: as often a count as a year), a bare month name
(``May``, ``March``: words) and a bare weekday (``월요일에``: past or future?). A lowercase ``may``
or ``march`` counts only with both a day and a year (``you may 7`` is not 7 May).

Turning dates into index terms, and the dates of files, headings and frontmatter, is
memtree.text.date_terms.

Why one module of ~500 lines: the grammar (one table of rules) and the resolvers its rules name are
read together — a rule is only understood next to the function that turns its groups into days.

Dependency decision — dateparser 1.5.0 was measured first and not adopted (``bench/dates.py``,
anchor 2024-03-13, CPU time on a shared 2-core machine):

* labelled cases (28 with a date, 12 without): this module 28/28 exactly right and no invented date;
  ``dateparser.search.search_dates(languages=["en", "ko"])`` 15/28 and 5 invented. It finds no
  Korean relative word in running text (어제는, 지난주에, 3일 전에, 지난 월요일에), misreads
  ``2024/01/07 오후`` and ``24년 1월 7일`` as 13 January, and reads ``may``, ``now``, ``1/2``,
  ``at 14:20`` and ``a day`` as dates;
* running text (the first 200 docs of KorQuAD and of LoCoMo): of its 503 mentions at least 128
  hold no digit or date word at all (``수`` 80 times — the "can" of 할 수 있다 — and ``we`` 35
  times, both read as Wednesday);
  none of this module's 438 does;
* speed: 1,055 µs per LoCoMo turn and 6,818 µs per KorQuAD paragraph (5.6–6.6 ms per KB), against
  4.5 and 13.8 µs here for text holding no date (13–33 µs per KB); 100k chunks would take
  minutes, not the few seconds the index has.

It would also bring four dependencies (regex, python-dateutil, pytz, tzlocal) to a package that
needs none of them for this.
"""

from __future__ import annotations

import calendar
import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

from memtree.text.terms import PARTICLES

Kind = Literal["day", "week", "month", "year"]

MIN_YEAR = 1000
MAX_YEAR = 2999
"""Four-digit numeric years outside this span are not read as years (``0001-01-01``, ``9999``)."""
BARE_YEAR_MIN = 1900
BARE_YEAR_MAX = 2099
"""``2024년`` alone is a year only in this span; why: ``1000년 동안`` is a thousand years."""
TWO_DIGIT_PIVOT = 69
"""``24년`` → 2024, ``98년`` → 1998 (the POSIX ``%y`` rule)."""
MAX_DAY_TERMS = 62
"""A range not made of whole weeks, months or years is listed day by day up to this many days."""


@dataclass(frozen=True)
class DateMention:
    """One date found in a text: where (``start``/``end`` offsets), what was written, and the days."""

    start: int
    end: int
    text: str
    kind: Kind
    first: date
    last: date

    @property
    def value(self) -> date | tuple[date, date]:
        """The day for a ``day`` mention, else the ``(first, last)`` range."""
        return self.first if self.kind == "day" else (self.first, self.last)


# --- the grammar -------------------------------------------------------------------------------

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
# Why: these month names are also common English words; lowercase, they need a day and a year.
_WORDLIKE_MONTHS = frozenset({"may", "march", "mar"})
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_KO_WEEKDAYS = {"월": 0, "화": 1, "수": 2, "목": 3, "금": 4, "토": 5, "일": 6}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

_MON = "(?P<{p}mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?(?![a-z])"
_DAY = r"(?P<{p}d>[0-3]?[0-9])(?:st|nd|rd|th)?(?![\d:])"
_YEAR = r"(?P<{p}y>[12][0-9]{{3}})(?![0-9]|:[0-9])"
_NUM = r"(?P<{p}n>[0-9]{{1,3}}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + ")"
_WD = "(?P<{p}wd>" + "|".join(_WEEKDAYS) + ")"
_KWD = "(?P<{p}wd>[월화수목금토일])요일"
# A Korean date word ends the word or takes a particle (어제는, 1월 7일에); why: 오늘날 is "nowadays",
# 6일 전쟁 a war, 이번 주말 a weekend — none of them a date.
_KO_END = "(?:자|경|쯤|께)?(?:" + "|".join(sorted(PARTICLES, key=len, reverse=True)) + r")?(?![가-힣])"
_KO_START = r"(?<![가-힣])"
_EN_START = r"(?<![a-z0-9])"
_EN_END = r"(?![a-z])"
_NUM_START = r"(?<![0-9a-z.\-/])"
# Why: `2024-01-07T14:20` is a date and a time; `2024-01-07.5` or `1.2.2024.1` is not a date.
_NUM_END = r"(?!(?!t\d)[0-9a-z]|[.\-/:]\d)"
_KO_NUM_START = r"(?<![\d.])"
_KO_YEAR = r"(?P<{p}y>[0-9]{{4}}|[0-9]{{2}})년\s*"
_SP = r"[ \t\u00a0]+"

_Groups = dict[str, Any]
_Resolved = tuple[Kind, date, date] | None
_Rule = tuple[str, str, Callable[[_Groups, date | None], _Resolved]]


def _rules() -> dict[str, list[_Rule]]:
    """The rules by where a scan tries them, each list in priority order (the first match wins):
    ``num`` at a run of digits, ``en`` at an English month name or relative word, ``ko`` at a Korean
    relative word, ``back`` in a short window ending at ``ago``/``yesterday``/``tomorrow``."""
    sp, of = _SP, "(?:" + _SP + "of)?"
    ko_rel = "(?P<{p}rel>지난|저번|이번|다음)"
    return {
        "num": [
            ("iso", _NUM_START + _YEAR + r"(?P<{p}sep>-|/|\.[ ]?)(?P<{p}m>[0-9]{{1,2}})(?P={p}sep)"
             r"(?P<{p}d>[0-9]{{1,2}})" + _NUM_END, _iso),
            ("dmy", _NUM_START + r"(?P<{p}a>[0-9]{{1,2}})(?P<{p}sep>[/.])(?P<{p}b>[0-9]{{1,2}})(?P={p}sep)" + _YEAR
             + _NUM_END, _dmy),
            ("dmy_name", _EN_START + _DAY + of + r"\s*" + _MON + ",?" + sp + _YEAR, _mdy),
            ("dm", _EN_START + _DAY + of + r"\s*" + _MON, _month_day),
            ("en_ago", _EN_START + _NUM + sp + "(?P<{p}unit>day|week|month|year)s?" + sp + "ago" + _EN_END, _ago),
            ("ko_ymd", _KO_NUM_START + "(?:" + _KO_YEAR + r")?(?P<{p}m>[0-9]{{1,2}})월\s*(?P<{p}d>[0-9]{{1,2}})일"
             + _KO_END, _ko_ymd),
            ("ko_ago", _KO_NUM_START + r"(?P<{p}n>[0-9]{{1,3}})\s*(?P<{p}unit>일|주|달|개월|년)\s*(?P<{p}dir>전|후|뒤)"
             + _KO_END, _ko_ago),
            ("ko_ym", _KO_NUM_START + _KO_YEAR + r"(?P<{p}m>[0-9]{{1,2}})월" + _KO_END, _ko_ym),
            ("ko_m", _KO_NUM_START + r"(?P<{p}m>[0-9]{{1,2}})월" + _KO_END, _ko_m),
            ("ko_y", _KO_NUM_START + r"(?P<{p}y>[0-9]{{4}})년" + _KO_END, _ko_y),
        ],
        "en": [
            ("mdy", _EN_START + _MON + sp + _DAY + ",?" + sp + _YEAR, _mdy),
            ("my", _EN_START + _MON + ",?" + sp + _YEAR, _month_year),
            ("md", _EN_START + _MON + sp + _DAY + r"(?!,?\s*[0-9])", _month_day),
            ("en_day", _EN_START + "(?P<{p}w>today|tonight|yesterday|tomorrow)" + _EN_END, _en_day),
            ("en_weekday", _EN_START + "(?P<{p}rel>last|this|next)" + sp + _WD + _EN_END, _en_weekday),
            ("en_unit", _EN_START + "(?P<{p}rel>last|this|next)" + sp + "(?P<{p}unit>week|month|year)" + _EN_END,
             _rel_unit),
        ],
        "back": [
            ("day_before", _EN_START + "the" + sp + "day" + sp + "(?P<{p}w>before" + sp + "yesterday|after" + sp
             + "tomorrow)" + _EN_END, _day_before),
            ("word_ago", _EN_START + _NUM + sp + "(?P<{p}unit>day|week|month|year)s?" + sp + "ago" + _EN_END, _ago),
        ],
        "ko": [
            ("ko_weekday", _KO_START + ko_rel + r"(?P<{p}wk>\s*주)?\s*" + _KWD + _KO_END, _ko_weekday),
            ("ko_unit", _KO_START + "(?:" + ko_rel + r"\s*(?P<{p}unit>주|달)|(?P<{p}word>지난해|작년|올해|금년|내년))"
             + _KO_END, _ko_unit),
            ("ko_day", _KO_START + "(?P<{p}w>오늘|어제|그제|그저께|엊그제|내일|모레)" + _KO_END, _ko_day),
        ],
    }  # fmt: skip


# --- resolvers: groups (without prefix) + anchor → (kind, first, last) or None -----------------


def valid_day(y: int, m: int, d: int) -> date | None:
    """The date ``y-m-d``, or None when it is no valid day of a year memtree reads (1000–2999)."""
    if not (MIN_YEAR <= y <= MAX_YEAR and 1 <= m <= 12 and 1 <= d <= calendar.monthrange(y, m)[1]):
        return None
    return date(y, m, d)


def _one(d: date | None) -> _Resolved:
    return None if d is None else ("day", d, d)


def _month(y: int, m: int) -> _Resolved:
    if not (MIN_YEAR <= y <= MAX_YEAR and 1 <= m <= 12):
        return None
    return "month", date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1])


def _year(y: int) -> _Resolved:
    if not MIN_YEAR <= y <= MAX_YEAR:
        return None
    return "year", date(y, 1, 1), date(y, 12, 31)


def _week(d: date) -> tuple[Kind, date, date]:
    monday = d - timedelta(days=d.weekday())
    return "week", monday, monday + timedelta(days=6)


def _shift_month(y: int, m: int, n: int) -> tuple[int, int]:
    k = y * 12 + (m - 1) + n
    return k // 12, k % 12 + 1


def _latest(m: int, d: int | None, anchor: date) -> _Resolved:
    """The most recent day (or month, when ``d`` is None) not after the anchor."""
    if not 1 <= m <= 12 or (d is not None and not 1 <= d <= 31):
        return None
    for y in range(anchor.year, anchor.year - 9, -1):  # 29 February recurs within 8 years
        if d is None:
            if date(y, m, 1) <= anchor:
                return _month(y, m)
        else:
            day = valid_day(y, m, d)
            if day is not None and day <= anchor:
                return _one(day)
    return None


def _iso(g: _Groups, anchor: date | None) -> _Resolved:
    return _one(valid_day(int(g["y"]), int(g["m"]), int(g["d"])))


def _dmy(g: _Groups, anchor: date | None) -> _Resolved:
    a, b, y = int(g["a"]), int(g["b"]), int(g["y"])
    # Why: slashes are mostly US (month first), dots European (day first); the other reading
    # only when the first is impossible (14/01/2024).
    first, second = ((a, b), (b, a)) if g["sep"] == "/" else ((b, a), (a, b))
    return _one(valid_day(y, *first) or valid_day(y, *second))


def _month_of(g: _Groups, need_both: bool) -> int | None:
    word = g["mon"]
    if not need_both and word in _WORDLIKE_MONTHS:
        return None
    return _MONTHS[word.casefold()]


def _mdy(g: _Groups, anchor: date | None) -> _Resolved:
    month = _month_of(g, need_both=True)
    return None if month is None else _one(valid_day(int(g["y"]), month, int(g["d"])))


def _month_year(g: _Groups, anchor: date | None) -> _Resolved:
    month = _month_of(g, need_both=False)
    return None if month is None else _month(int(g["y"]), month)


def _month_day(g: _Groups, anchor: date | None) -> _Resolved:
    month = _month_of(g, need_both=False)
    return None if month is None or anchor is None else _latest(month, int(g["d"]), anchor)


def _day_before(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    return _one(anchor + timedelta(days=-2 if g["w"].casefold().startswith("before") else 2))


_EN_DAYS = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}
_KO_DAYS = {"오늘": 0, "어제": -1, "그제": -2, "그저께": -2, "엊그제": -2, "내일": 1, "모레": 2}


def _en_day(g: _Groups, anchor: date | None) -> _Resolved:
    return None if anchor is None else _one(anchor + timedelta(days=_EN_DAYS[g["w"].casefold()]))


def _ko_day(g: _Groups, anchor: date | None) -> _Resolved:
    return None if anchor is None else _one(anchor + timedelta(days=_KO_DAYS[g["w"]]))


def _weekday(rel: str, wd: int, anchor: date, whole_week: bool) -> date:
    """``last``: strictly before; ``next``: strictly after; ``this`` (or a named week): in that week."""
    if whole_week or rel == "this":
        week = {"last": -7, "this": 0, "next": 7}[rel]
        return anchor - timedelta(days=anchor.weekday()) + timedelta(days=week + wd)
    if rel == "last":
        return anchor - timedelta(days=(anchor.weekday() - wd - 1) % 7 + 1)
    return anchor + timedelta(days=(wd - anchor.weekday() - 1) % 7 + 1)


def _en_weekday(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    return _one(_weekday(g["rel"].casefold(), _WEEKDAYS[g["wd"].casefold()], anchor, whole_week=False))


_KO_REL = {"지난": "last", "저번": "last", "이번": "this", "다음": "next"}


def _ko_weekday(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    return _one(_weekday(_KO_REL[g["rel"]], _KO_WEEKDAYS[g["wd"]], anchor, whole_week=g["wk"] is not None))


def _unit(unit: str, n: int, anchor: date) -> _Resolved:
    """The day, week, month or year ``n`` units from the anchor's."""
    if unit == "day":
        return _one(anchor + timedelta(days=n))
    if unit == "week":
        return _week(anchor + timedelta(days=7 * n))
    if unit == "month":
        return _month(*_shift_month(anchor.year, anchor.month, n))
    return _year(anchor.year + n)


def _rel_unit(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    return _unit(g["unit"].casefold(), {"last": -1, "this": 0, "next": 1}[g["rel"].casefold()], anchor)


def _ago(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    n = g["n"].casefold()
    return _unit(g["unit"].casefold(), -(int(n) if n.isdigit() else _NUMBER_WORDS[n]), anchor)


_KO_UNITS = {"일": "day", "주": "week", "달": "month", "개월": "month", "년": "year"}


def _ko_ago(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    n = int(g["n"]) * (-1 if g["dir"] == "전" else 1)
    return _unit(_KO_UNITS[g["unit"]], n, anchor)


_KO_YEAR_WORDS = {"지난해": -1, "작년": -1, "올해": 0, "금년": 0, "내년": 1}


def _ko_unit(g: _Groups, anchor: date | None) -> _Resolved:
    if anchor is None:
        return None
    if g["word"]:
        return _year(anchor.year + _KO_YEAR_WORDS[g["word"]])
    n = {"last": -1, "this": 0, "next": 1}[_KO_REL[g["rel"]]]
    return _unit("week" if g["unit"] == "주" else "month", n, anchor)


def _ko_year(g: _Groups) -> int | None:
    y = g["y"]
    if y is None:
        return None
    return int(y) if len(y) == 4 else int(y) + (2000 if int(y) < TWO_DIGIT_PIVOT else 1900)


def _ko_ymd(g: _Groups, anchor: date | None) -> _Resolved:
    y = _ko_year(g)
    if y is None:
        return None if anchor is None else _latest(int(g["m"]), int(g["d"]), anchor)
    return _one(valid_day(y, int(g["m"]), int(g["d"])))


def _ko_ym(g: _Groups, anchor: date | None) -> _Resolved:
    y = _ko_year(g)
    return None if y is None else _month(y, int(g["m"]))


def _ko_m(g: _Groups, anchor: date | None) -> _Resolved:
    return None if anchor is None else _latest(int(g["m"]), None, anchor)


def _ko_y(g: _Groups, anchor: date | None) -> _Resolved:
    y = int(g["y"])
    return _year(y) if BARE_YEAR_MIN <= y <= BARE_YEAR_MAX else None


_Table = dict[str, tuple[Callable[[_Groups, date | None], _Resolved], list[tuple[str, str]]]]


def _compile(rules: list[_Rule]) -> tuple[re.Pattern[str], _Table]:
    """One alternation of named rules, and for each rule its resolver and its groups' names (without
    and with the rule's prefix)."""
    parts = []
    table: _Table = {}
    for name, pattern, resolve in rules:
        prefix = name + "_"
        body = pattern.format(p=prefix)
        parts.append(f"(?P<{name}>{body})")
        table[name] = (resolve, [(g, prefix + g) for g in re.findall(rf"\?P<{prefix}(\w+)>", body)])
    return re.compile("|".join(parts), re.IGNORECASE), table


@functools.cache
def _scan(kind: str) -> tuple[re.Pattern[str], _Table]:
    """The compiled date patterns of one kind (num, en, ko, back); each compiled on first use, since
    compiling them costs ~25 ms that a CLI start which finds no date (or dates of one kind) should not pay."""
    return _compile(_rules()[kind])


# Why: the index runs this over every chunk (100k chunks in a few seconds) and most hold no date,
# but one big case-insensitive alternation tried at every position costs ~100 µs a chunk in CPython.
# So the big patterns are only tried where a date can start: at a run of digits, at a Korean
# trigger word (one C-level scan for both) and at an English trigger word (a bytes translate and a
# set of words, also in C).
_LETTERS = bytes(c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 else 32 for c in range(256))
"""ASCII letters lowercased, every other byte (digits, punctuation, UTF-8 of Hangul) a space."""
_EN_WORDS = frozenset(
    w.encode() for w in [*_MONTHS, "today", "tonight", "yesterday", "tomorrow", "last", "this", "next"]
)
_EN_BACK_WORDS = frozenset({b"ago", b"yesterday", b"tomorrow"})
_EN_ANY = _EN_WORDS | _EN_BACK_WORDS
_BACK_WINDOW = 32
"""Characters looked back from ``ago`` (``twelve months ago``) or ``yesterday`` (``the day before``)."""
_KO_TRIGGERS = "오늘 어제 그제 그저께 엊그제 내일 모레 지난 저번 이번 다음 작년 올해 금년 내년".split()
_STARTS = re.compile("|".join([*(f"{d}[0-9]*" for d in "0123456789"), *_KO_TRIGGERS]))
"""Where a numeric or Korean-word date can start. Why each alternative opens with one literal
character: CPython then skips to those characters in C; ``[0-9]+|오늘|…`` is 3× slower."""


def _lowered(text: str) -> str:
    low = text.lower()
    # Why: a few characters lowercase to two (İ → i̇) and would shift every offset after them.
    return low if len(low) == len(text) else "".join(c.lower() if c.isascii() else c for c in text)


def _positions(haystack: str, needle: str) -> list[int]:
    out, i = [], haystack.find(needle)
    while i >= 0:
        out.append(i)
        i = haystack.find(needle, i + 1)
    return out


def _candidates(text: str) -> list[tuple[re.Match[str], _Table]]:
    found = _numeric(text, skip_covered=True)
    # Why a set of words and not substring tests: in a Korean text nearly every byte becomes a
    # space, and a needle that starts with a space makes `in` crawl (150 µs a KB).
    words = text.encode("utf-8", "surrogatepass").translate(_LETTERS).split()  # a lone surrogate is no letter
    if _EN_ANY.isdisjoint(words):  # most texts: no set built at all
        return found
    hits = _EN_WORDS.intersection(words)
    backs = _EN_BACK_WORDS.intersection(words)
    english: list[tuple[re.Match[str], _Table]] = []
    if hits or backs:
        low = _lowered(text)
        pattern, table = _scan("en")
        for w in hits:
            for i in _positions(low, w.decode()):
                m = pattern.match(text, i)
                if m:
                    english.append((m, table))
        pattern, table = _scan("back")
        for w in backs:
            for i in _positions(low, w.decode()):
                m = pattern.search(text, max(0, i - _BACK_WINDOW), i + len(w))
                if m:
                    english.append((m, table))
    if not english:
        return found
    # Why every start again: an English match kept over a numeric one can free a start inside it
    return _numeric(text, skip_covered=False) + english


def _numeric(text: str, skip_covered: bool) -> list[tuple[re.Match[str], _Table]]:
    """Matches at each start of a numeric or Korean-word date, in order. ``skip_covered``: none is
    tried at a start inside the previous match (``1월 7일`` inside ``2024년 1월 7일``), which
    find_dates, leftmost first, would drop — exact while no English match overlaps that one."""
    found: list[tuple[re.Match[str], _Table]] = []
    end = 0
    for start in _STARTS.finditer(text):
        at = start.start()
        if at < end:
            continue
        pattern, table = _scan("num" if start.group()[0] in "0123456789" else "ko")
        m = pattern.match(text, at)
        if m:
            found.append((m, table))
            if skip_covered:
                end = m.end()
    return found


def find_dates(text: str, anchor: date | None) -> list[DateMention]:
    """Every date mention in ``text``, in order; relative and year-less ones need ``anchor``.

    Offsets index ``text`` as given, except that NFD Hangul (macOS file names and pastes) is read
    as NFC first — then they index ``unicodedata.normalize("NFC", text)``.
    """
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    candidates = _candidates(text)
    if not candidates:
        return []
    found = []
    end = 0
    # Leftmost first, then longest; a later match overlapping a kept one is dropped even when the
    # kept one resolves to nothing (`2024-02-30` is not a date, and neither is its `02-30`).
    for m, table in sorted(candidates, key=lambda c: (c[0].start(), -c[0].end())):
        if m.start() < end:
            continue
        end = m.end()
        name = m.lastgroup
        assert name is not None
        resolve, groups = table[name]
        resolved = resolve({k: m.group(full) for k, full in groups}, anchor)
        if resolved is not None:
            kind, first, last = resolved
            found.append(DateMention(m.start(), m.end(), m.group(), kind, first, last))
    return found
