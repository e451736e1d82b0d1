"""memtree.text.dates: finding and resolving dates in notes and queries, and their index terms."""

from __future__ import annotations

import unicodedata
from datetime import date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memtree.text import date_terms as dates
from memtree.text import terms as text
from memtree.text.dates import DateMention, find_dates

# A fixed anchor (never today's date): Wednesday 13 March 2024, in a leap year.
ANCHOR = date(2024, 3, 13)
D = date


def found(s: str, anchor: date | None = ANCHOR) -> list[tuple[str, date | tuple[date, date]]]:
    return [(m.text, m.value) for m in find_dates(s, anchor)]


def only(s: str, anchor: date | None = ANCHOR) -> date | tuple[date, date]:
    mentions = find_dates(s, anchor)
    assert len(mentions) == 1, (s, mentions)
    return mentions[0].value


@pytest.mark.parametrize(
    ("written", "day"),
    [
        ("2024-01-07", D(2024, 1, 7)),
        ("2024/01/07", D(2024, 1, 7)),
        ("2024.01.07", D(2024, 1, 7)),
        ("2024.1.7.", D(2024, 1, 7)),
        ("2024. 1. 7.", D(2024, 1, 7)),
        ("14.01.2024", D(2024, 1, 14)),
        ("1/14/2024", D(2024, 1, 14)),
        ("14/01/2024", D(2024, 1, 14)),  # only day/month is valid
        ("7 Jan 2024", D(2024, 1, 7)),
        ("7 January 2024", D(2024, 1, 7)),
        ("8 May, 2023", D(2023, 5, 8)),
        ("7th of January 2024", D(2024, 1, 7)),
        ("January 7, 2024", D(2024, 1, 7)),
        ("Jan. 7, 2024", D(2024, 1, 7)),
        ("Jan 7 2024", D(2024, 1, 7)),
        ("Jan 7 2024: kickoff", D(2024, 1, 7)),
        ("October 13th, 2023", D(2023, 10, 13)),
        ("Sept 3, 2023", D(2023, 9, 3)),
        ("may 3, 2023", D(2023, 5, 3)),  # lowercase may is fine with a day and a year
        ("3June, 2022", D(2022, 6, 3)),  # LoCoMo writes dates glued like this
        ("2024년 1월 7일", D(2024, 1, 7)),
        ("2024년1월7일", D(2024, 1, 7)),
        ("24년 1월 7일", D(2024, 1, 7)),
        ("98년 3월 1일", D(1998, 3, 1)),
        ("2024-01-07T14:20:00", D(2024, 1, 7)),
    ],
)
def test_absolute_days_need_no_anchor(written: str, day: date) -> None:
    assert only(written, None) == day
    assert only(written, ANCHOR) == day


def test_ambiguous_numeric_days_follow_the_separator() -> None:
    assert only("3/4/2024", None) == D(2024, 3, 4)  # slash: month/day (US)
    assert only("3.4.2024", None) == D(2024, 4, 3)  # dot: day.month (European)


@pytest.mark.parametrize(
    ("sentence", "written", "day"),
    [
        ("회의는 2024-01-07에 했다", "2024-01-07", D(2024, 1, 7)),
        ("1월 7일에 배포했다", "1월 7일에", D(2024, 1, 7)),
        ("2024년 1월 7일부터 휴가", "2024년 1월 7일부터", D(2024, 1, 7)),
        ("1월 7일자 공문", "1월 7일자", D(2024, 1, 7)),
        ("어제는 비가 왔다", "어제는", D(2024, 3, 12)),
        ("오늘도 회의", "오늘도", ANCHOR),
        ("내일까지 보내 주세요", "내일까지", D(2024, 3, 14)),
        ("그저께 만났다", "그저께", D(2024, 3, 11)),
        ("그제 만났다", "그제", D(2024, 3, 11)),
        ("3일 전에 고쳤다", "3일 전에", D(2024, 3, 10)),
        ("지난 월요일에 출시", "지난 월요일에", D(2024, 3, 11)),
        ("지난주 월요일에 출시", "지난주 월요일에", D(2024, 3, 4)),
        ("이번 주 금요일까지", "이번 주 금요일까지", D(2024, 3, 15)),
        ("다음 주 월요일에", "다음 주 월요일에", D(2024, 3, 18)),
        ("Deployed yesterday.", "yesterday", D(2024, 3, 12)),
        ("Yesterday's meeting", "Yesterday", D(2024, 3, 12)),
        ("due today", "today", ANCHOR),
        ("see you tomorrow!", "tomorrow", D(2024, 3, 14)),
        ("the day before yesterday", "the day before yesterday", D(2024, 3, 11)),
        ("3 days ago", "3 days ago", D(2024, 3, 10)),
        ("two days ago", "two days ago", D(2024, 3, 11)),
        ("last Monday", "last Monday", D(2024, 3, 11)),
        ("this Friday", "this Friday", D(2024, 3, 15)),
        ("next Monday", "next Monday", D(2024, 3, 18)),
        ("last Wednesday", "last Wednesday", D(2024, 3, 6)),  # strictly before the anchor
        ("met on Jan 7", "Jan 7", D(2024, 1, 7)),
        ("met on 7 Jan", "7 Jan", D(2024, 1, 7)),
        ("on May 20", "May 20", D(2023, 5, 20)),  # the most recent 20 May not after the anchor
        ("12월 18일~20일 사이", "12월 18일", D(2023, 12, 18)),
    ],
)
def test_relative_and_yearless_days_resolve_against_the_anchor(sentence: str, written: str, day: date) -> None:
    assert found(sentence) == [(written, day)]


@pytest.mark.parametrize(
    ("written", "first", "last"),
    [
        ("지난주에", D(2024, 3, 4), D(2024, 3, 10)),
        ("지난 주", D(2024, 3, 4), D(2024, 3, 10)),
        ("이번 주", D(2024, 3, 11), D(2024, 3, 17)),
        ("이번주에는", D(2024, 3, 11), D(2024, 3, 17)),
        ("last week", D(2024, 3, 4), D(2024, 3, 10)),
        ("this week", D(2024, 3, 11), D(2024, 3, 17)),
        ("2 weeks ago", D(2024, 2, 26), D(2024, 3, 3)),
        ("지난달", D(2024, 2, 1), D(2024, 2, 29)),
        ("다음 달부터", D(2024, 4, 1), D(2024, 4, 30)),
        ("last month", D(2024, 2, 1), D(2024, 2, 29)),
        ("작년", D(2023, 1, 1), D(2023, 12, 31)),
        ("올해는", D(2024, 1, 1), D(2024, 12, 31)),
        ("last year", D(2023, 1, 1), D(2023, 12, 31)),
        ("10 years ago", D(2014, 1, 1), D(2014, 12, 31)),
        ("3월에", D(2024, 3, 1), D(2024, 3, 31)),
        ("5월에", D(2023, 5, 1), D(2023, 5, 31)),
    ],
)
def test_relative_ranges(written: str, first: date, last: date) -> None:
    assert only(written) == (first, last)
    assert find_dates(written, None) == []


@pytest.mark.parametrize(
    ("written", "first", "last", "kind"),
    [
        ("March 2024", D(2024, 3, 1), D(2024, 3, 31), "month"),
        ("in January, 2023 we", D(2023, 1, 1), D(2023, 1, 31), "month"),
        ("Feb 2024", D(2024, 2, 1), D(2024, 2, 29), "month"),
        ("2024년 3월", D(2024, 3, 1), D(2024, 3, 31), "month"),
        ("2024년 3월에", D(2024, 3, 1), D(2024, 3, 31), "month"),
        ("1989년에", D(1989, 1, 1), D(1989, 12, 31), "year"),
    ],
)
def test_absolute_ranges(written: str, first: date, last: date, kind: str) -> None:
    (mention,) = find_dates(written, None)
    assert (mention.first, mention.last, mention.kind) == (first, last, kind)


@pytest.mark.parametrize(
    "written",
    ["yesterday", "어제", "지난주", "last Monday", "3 days ago", "3일 전", "Jan 7", "7 Jan", "1월 7일", "3월"],
)
def test_without_an_anchor_relative_and_yearless_dates_are_skipped(written: str) -> None:
    assert find_dates(written, None) == []
    assert find_dates(written, ANCHOR) != []


@pytest.mark.parametrize(
    "written",
    [
        "2024-02-30",
        "2023-02-29",
        "13/45/2024",
        "2024-13-01",
        "version 1.2.3",
        "host 10.0.0.1",
        "at 14:20",
        "pi is 3.14",
        "half is 1/2",
        "1/2/24",  # two-digit numeric years are not read
        "v2024.01.07",
        "1.2.2024.1",
        "010-2024-0107",
        "2020-2024",
        "오늘날의 한국",  # nowadays
        "6일 전쟁",  # the Six-Day War
        "이번 주말에",  # this weekend
        "다음 주제로",  # next topic
        "1000년 동안",  # a thousand years
        "you may 7 times",
        "we march 3 miles",
        "in 2022",  # a bare English year
        "Maybe next time",
        "March",
        "월요일에",
    ],
)
def test_not_dates(written: str) -> None:
    assert find_dates(written, ANCHOR) == []


def test_mentions_carry_offsets_into_the_text() -> None:
    s = "Met Caroline on 8 May, 2023 and again yesterday; 회의는 2024년 1월 7일에."
    mentions = find_dates(s, ANCHOR)
    assert [s[m.start : m.end] for m in mentions] == [m.text for m in mentions]
    assert [m.value for m in mentions] == [D(2023, 5, 8), D(2024, 3, 12), D(2024, 1, 7)]
    assert all(isinstance(m, DateMention) for m in mentions)


def test_a_date_inside_a_longer_one_is_not_read_twice_unless_an_english_one_took_the_start() -> None:
    found = find_dates("회의는 2024년 1월 7일, 12월 3일", ANCHOR)
    assert [(m.text, m.first) for m in found] == [("2024년 1월 7일", date(2024, 1, 7)), ("12월 3일", date(2023, 12, 3))]
    # `March 2024` keeps 2024 for itself, so `1월 7일` stands alone (a year-less day)
    found = find_dates("March 2024년 1월 7일", ANCHOR)
    assert [(m.text, m.kind, m.first) for m in found] == [
        ("March 2024", "month", date(2024, 3, 1)),
        ("1월 7일", "day", date(2024, 1, 7)),
    ]


def test_nfd_hangul_is_read_as_nfc() -> None:
    nfd = unicodedata.normalize("NFD", "2024년 1월 7일에 어제는")
    assert [m.value for m in find_dates(nfd, ANCHOR)] == [D(2024, 1, 7), D(2024, 3, 12)]


def test_mention_is_frozen() -> None:
    (mention,) = find_dates("2024-01-07", None)
    with pytest.raises(AttributeError):
        mention.start = 3  # type: ignore[misc]


def test_yearless_29_february_goes_back_to_a_leap_year() -> None:
    assert only("Feb 29", D(2023, 6, 1)) == D(2020, 2, 29)


# --- index terms ---------------------------------------------------------------------------------


def test_day_terms() -> None:
    assert dates.day_terms(D(2024, 1, 7)) == ["@d2024-01-07", "@w2024-W01", "@m2024-01", "@y2024"]
    assert dates.week_term(D(2024, 12, 30)) == "@w2025-W01"  # the ISO week year


def test_range_days() -> None:
    assert dates.range_days(D(2024, 2, 28), D(2024, 3, 1)) == [D(2024, 2, 28), D(2024, 2, 29), D(2024, 3, 1)]
    assert dates.range_days(D(2024, 3, 1), D(2024, 2, 1)) == []


@pytest.mark.parametrize(
    ("written", "terms"),
    [
        ("2024-01-07", ["@d2024-01-07"]),
        ("지난주", ["@w2024-W10"]),
        ("March 2024", ["@m2024-03"]),
        ("작년", ["@y2023"]),
    ],
)
def test_a_mention_is_one_query_term(written: str, terms: list[str]) -> None:
    (m,) = find_dates(written, ANCHOR)
    assert dates.range_terms(m.first, m.last) == terms


def test_range_terms_cover_exactly() -> None:
    # Sat 2 Mar .. Sun 17 Mar 2024: two loose days then two whole ISO weeks.
    assert dates.range_terms(D(2024, 3, 2), D(2024, 3, 17)) == [
        "@d2024-03-02",
        "@d2024-03-03",
        "@w2024-W10",
        "@w2024-W11",
    ]
    assert dates.range_terms(D(2023, 12, 1), D(2024, 12, 31)) == ["@m2023-12", "@y2024"]


def test_a_finer_mention_is_indexed_under_what_holds_it() -> None:
    day = dates.index_terms(D(2024, 3, 5), D(2024, 3, 5))
    assert day == dates.day_terms(D(2024, 3, 5))
    for query in ("2024-03-05", "2024년 3월", "지난주", "올해"):
        (m,) = find_dates(query, ANCHOR)
        assert set(dates.range_terms(m.first, m.last)) <= set(day), query
    assert dates.index_terms(D(2024, 3, 1), D(2024, 3, 31)) == ["@m2024-03", "@y2024"]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_the_tokenizer_never_emits_a_date_term(s: str) -> None:
    assert not any(t.startswith("@") for t in text.terms(s))


def test_date_terms_survive_a_typed_query_as_words_only() -> None:
    # Someone typing the term itself gets words, never the term: the two vocabularies stay apart.
    typed = text.terms(" ".join(dates.day_terms(D(2024, 1, 7))))
    assert "y2024" in typed and "01" in typed  # words: a run of letters and digits is one, the rest numbers
    assert not set(typed) & set(dates.day_terms(D(2024, 1, 7)))


# --- files, headings, frontmatter ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "day"),
    [
        ("memory/2024-01-07.md", D(2024, 1, 7)),
        ("memory/2024-01-07-standup.md", D(2024, 1, 7)),
        ("memory\\20240107.md", D(2024, 1, 7)),
        ("logs/2024/01/07.md", D(2024, 1, 7)),
        ("memory/2024-02-30.md", None),
        ("bank/project.md", None),
        ("memory/12345678.md", None),
        ("", None),
    ],
)
def test_date_from_path(path: str, day: date | None) -> None:
    assert dates.date_from_path(path) == day


@pytest.mark.parametrize(
    ("heading", "day"),
    [
        ("## 2024-01-07", D(2024, 1, 7)),
        ("## 2024-01-07 (일) 회고", D(2024, 1, 7)),
        ("### 2024년 1월 7일", D(2024, 1, 7)),
        ("## Standup, January 7, 2024", D(2024, 1, 7)),
        ("conv0 (conv-26: Caroline & Melanie) session 1, 1:56 pm on 8 May, 2023", D(2023, 5, 8)),  # LoCoMo
        ("## March 2024", None),
        ("## 어제", None),
        ("## Notes", None),
    ],
)
def test_date_from_heading(heading: str, day: date | None) -> None:
    assert dates.date_from_heading(heading) == day


def test_date_from_value() -> None:
    assert dates.date_from_value(D(2024, 1, 7)) == D(2024, 1, 7)
    assert dates.date_from_value(datetime(2024, 1, 7, 23, 59)) == D(2024, 1, 7)
    assert dates.date_from_value("2024-01-07") == D(2024, 1, 7)
    assert dates.date_from_value(20240107) is None
    assert dates.date_from_value(None) is None


# --- round trip: any day written in any supported form is found and resolved back to itself ----

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip

ABSOLUTE_FORMS = [
    lambda d: d.isoformat(),
    lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
    lambda d: f"{d.year}.{d.month}.{d.day}",
    lambda d: f"{d.year}. {d.month}. {d.day}.",
    lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    lambda d: f"{d.month}/{d.day}/{d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]}, {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{MONTHS[d.month - 1][:3]} {d.day} {d.year}",
    lambda d: f"{d.year}년 {d.month}월 {d.day}일",
    lambda d: f"{d.year}년 {d.month}월 {d.day}일에",
]
YEARLESS_FORMS = [
    lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]}",
    lambda d: f"{d.month}월 {d.day}일에",
]
days = st.dates(min_value=D(1900, 1, 1), max_value=D(2099, 12, 31))
context = (
    st.sampled_from(["", "on ", "회의는 ", "(", "Met Caroline on "]),
    st.sampled_from(["", ".", " 했다", ")", ", ok"]),
)


@given(days, st.sampled_from(range(len(ABSOLUTE_FORMS))), *context)
def test_any_written_day_is_found_and_resolved(day: date, form: int, before: str, after: str) -> None:
    written = ABSOLUTE_FORMS[form](day)
    mentions = find_dates(before + written + after, None)
    assert [(m.value, m.start) for m in mentions] == [(day, len(before))]


@given(days, st.sampled_from(range(len(YEARLESS_FORMS))), st.integers(min_value=0, max_value=364))
def test_any_yearless_day_resolves_within_the_year_before_the_anchor(day: date, form: int, later: int) -> None:
    written = YEARLESS_FORMS[form](day)
    anchor = day + timedelta(days=later)
    if day.month == 2 and day.day == 29:
        anchor = day  # the next 29 February is years away
    assert only(written, anchor) == day


@given(days, st.integers(min_value=-3, max_value=3))
def test_relative_days_round_trip(anchor: date, offset: int) -> None:
    words = {-2: "그저께", -1: "yesterday", 0: "오늘", 1: "tomorrow", 2: "모레"}
    if offset in words:
        assert only(words[offset], anchor) == anchor + timedelta(days=offset)
    n = abs(offset) or 1
    assert only(f"{n} days ago", anchor) == anchor - timedelta(days=n)
    assert only(f"{n}일 전에", anchor) == anchor - timedelta(days=n)


@given(days, st.sampled_from(["monday", "Tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]))
def test_last_weekday_is_within_the_week_before_the_anchor(anchor: date, weekday: str) -> None:
    day = only(f"last {weekday}", anchor)
    assert isinstance(day, date)
    assert anchor - timedelta(days=7) <= day < anchor
    assert day.strftime("%A").casefold() == weekday.casefold()


_DATE_WORDS = (
    "yesterday today tomorrow tonight last this next week month year ago day before after the of a one "
    "twelve January Jan March May Sept December Monday 7th , . - / 어제 오늘 내일 모레 그저께 지난 지난주 "
    "저번 이번 다음 주 달 작년 올해 내년 월요일 년 월 일 전 후 에 는 전에 7일 3월"
).split()


@given(
    st.one_of(
        st.text(alphabet=st.characters(blacklist_characters="0123456789"), max_size=80),
        st.lists(st.sampled_from(_DATE_WORDS), max_size=12).map(" ".join),
    ).filter(lambda body: not any(c in "0123456789" for c in body))
)
def test_without_an_anchor_no_date_is_found_in_a_text_without_digits(body: str) -> None:
    # date_terms.chunk_terms skips find_dates on such a text when it has no anchor: this is why it may
    assert find_dates(body, None) == []


@pytest.mark.parametrize(
    "body",
    [
        "yesterday, last Monday, 3 days ago, the day before yesterday, next week, this year",
        "어제 그저께 지난주 월요일에 이번 달 작년 올해 내일 모레 지난 화요일",
        "January March May, 7th of January, Jan 7, 지난주에",
        "Deadline Jan 7, 2024 or 2024-01-07 or 2024년 1월 7일",
    ],
)
def test_chunk_terms_without_an_anchor_are_those_of_find_dates(body: str) -> None:
    expected = [t for m in find_dates(body, None) for t in dates.index_terms(m.first, m.last)]
    assert dates.chunk_terms(body, [], None, None) == list(dict.fromkeys(expected))


def test_a_lone_surrogate_is_no_date_and_no_error() -> None:
    # Why: a JSON query may carry "\ud800"; hypothesis found it raising UnicodeEncodeError
    assert find_dates("\ud800 yesterday", date(2026, 3, 2)) != []
    assert find_dates("\ud800", None) == []
