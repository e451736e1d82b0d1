"""A query read once, as an agent sends it: its terms, its clauses, which of them ask, and its dates.

A query is often the user's whole message: a greeting, some context, the question, an aside, a
polite close. memtree.search.evidence judges a chunk clause by clause, and the pipeline lifts the
question's words; both read the message through :func:`read`, which splits it and tokenizes each
clause once. The message's own terms are its clauses' terms, so it is not tokenized twice.

A clause is a sentence of the message (split at ``. ? !`` and line breaks) or a part of one cut at
a connective. A date is never cut: ``Jan. 7, 2024`` and ``2024. 1. 7.`` are one date each, read
in the whole message first, and belong to the clause they stand in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from datetime import date
from typing import NamedTuple

from memtree.text import date_terms as dates
from memtree.text import terms as text

READINGS_KEPT = 64
"""Messages whose reading is kept; why: one search reads the same message up to six times."""

# Why the connectives: -ㄴ데/-다가/-면서/-지만 end a Korean clause as surely as a full stop
# ("동료가 물어봤는데 1규빗은 몇 미터인가?"), and ", what …" / ": when …" / " - who …" / ", but where …" open
# an English question after a lead-in ("Hiya, what career path …", "quick check: what are …")
# A full stop after a title or a Latin abbreviation ends no sentence: "Would Caroline have Dr. Seuss books?"
_NOT_AN_END = "".join(rf"(?<!\b{a}\.)" for a in ("dr", "mr", "mrs", "ms", "st", "jr", "sr", "prof", "vs", "e.g", "i.e"))
# Korean chat ends a sentence with laughter or tears in bare jamo (ㅎㅎ, ㅋㅋ, ㅠㅠ), ^^ or an emoji as
# surely as with a mark: "오늘도 수고 많아 ㅎㅎ 근데 … 알아?" is a greeting, then the question
_CHAT_END = "(?<=[\u3131-\u318e]{2})|(?<=\\^\\^)|(?<=[\u2600-\u27bf\U0001f300-\U0001faff])"
_SENTENCE = rf"(?:(?<=[.?!。？！~…]){_NOT_AN_END}|{_CHAT_END})\s+|\n+"
# Hangul syllables closing with ㄴ (는, 은, 인, 런) and with ㄹ (을, 할): a syllable's final is its code's 28th part
_N_FINAL = "".join(chr(c) for c in range(0xAC00 + 4, 0xD7A4, 28))
_L_FINAL = "".join(chr(c) for c in range(0xAC00 + 8, 0xD7A4, 28))
# the connective -ㄴ데 after any syllable that closes with ㄴ: 는데, 은데, 인데, 그런데
CLAUSE_END = re.compile(
    _SENTENCE + rf"|(?<=[{_N_FINAL}]데|다가|면서|지만)[,\s]\s*"
    r"|(?:,?\s+(?:and|but|so)|[,:;]|\s[-–—])\s+(?=(?:what|when|where|who|whom|whose|why|how|which)\b)",
    re.IGNORECASE,
)
# Why: a sentence ends at its mark or a line break; the connectives above end a clause inside one
# ("레져파크화 되면서 생긴 반대운동은?" is one question in two clauses)
_SENTENCE_SPLIT = re.compile(_SENTENCE, re.IGNORECASE)
# Why: the full stop after ``2024. 1. 7`` is the date's own (Korean writes days so), not a sentence's end
_DOTTED_DAY = re.compile(r"\d+\.\s?\d+\.\s?\d+")

_QUESTION_END = re.compile(r"[?？]\s*$")
# Why: interrogative endings (하나요, 할까요, 인가, 는지 …) mark a Korean question without a "?"
_KO_QUESTION = tuple("나요 까요 니까 습니까 는가 은가 인가 는지 은지 인지 던가 을까 냐 니 나 죠 지요 시오".split())
# Why: a question embedded in a request or a wondering (어디인지 알려주세요, 되는지 궁금합니다, 언제인지 모르겠어요)
# asks as surely as a "?": an indirect-question ending (-는지, -ㄴ지, -ㄹ지) then a word that asks to know
_EMBEDDED = re.compile(rf"(?:[{_N_FINAL}{_L_FINAL}]|던)지\s+(?:\S+\s+)?(?:궁금|알려|알고\s*싶|모르|여쭤|물어)")
_EN_QUESTION = frozenset(
    "what when where who whom whose why how which do does did is are was were can could would will have has".split()
)
# Why: "Any idea?", "Can you check?", "Do you know?" beside a question ask the listener to act, not
# memory about a topic; their words (idea, check, know) are no more the question's than "thanks" is
_LISTENER = re.compile(r"\W*(?:(?:can|could|would|will|do|did)\s+you\b|any\s+(?:idea|clue|thoughts?)\b)", re.IGNORECASE)


class Part(NamedTuple):
    """One clause of a message that holds anything."""

    said: tuple[str, ...]  # its terms, in order: its words', then its days'
    asks: bool  # whether it asks (a request to the listener beside a real question does not)
    sentence: int  # the number of the sentence it is in


class Reading(NamedTuple):
    """A message as search reads it (:func:`read`)."""

    terms: tuple[str, ...]  # its distinct terms: its words' in first-seen order, then its days'
    parts: tuple[Part, ...]  # its clauses that hold anything; none when it is one clause, the whole query
    written: frozenset[str]  # the words of the dates it writes (``7``, ``jan``, ``2024``)


@functools.lru_cache(maxsize=READINGS_KEPT)
def read(query: str, today: date | None) -> Reading:
    """``query`` read once: its terms, its clauses and its dates (relative ones against ``today``)."""
    said = dates.query_dates(query, today)
    # Why the look first: most questions hold no clause end at all, and are read whole at once
    spans = list(_clauses(said)) if CLAUSE_END.search(said.text) else []
    if len(spans) < 2:
        named = said.days
        terms = text.query_terms(said.words)  # distinct already
        return Reading(tuple(dict.fromkeys([*terms, *named]) if named else terms), (), said.written)
    parts, to_listener, words = [], [], []
    for start, end, sentence in spans:
        own = text.query_terms(said.words[start:end])
        days = dict.fromkeys(t for at, _, terms in said.mentions if start <= at < end for t in terms)
        clause = said.text[start:end]
        asks = is_question(clause)
        parts.append(Part((*own, *days), asks, sentence))
        to_listener.append(asks and bool(_LISTENER.match(clause)))
        words += own
    if any(p.asks and not listener for p, listener in zip(parts, to_listener)):
        parts = [p._replace(asks=p.asks and not listener) for p, listener in zip(parts, to_listener)]
    return Reading(tuple(dict.fromkeys([*words, *said.days])), tuple(parts), said.written)


def clause_texts(query: str, today: date | None = None) -> list[str]:
    """The message's clauses as written, cut at any clause end (sentence or connective) but never into a
    date: what the semantic layer embeds a question as (memtree.search.semantic.query_texts)."""
    said = dates.query_dates(query, today)
    whole = said.text
    return [whole[lo:hi] for lo, hi in _between(whole, 0, CLAUSE_END, _dated(said)) if lo < hi]


def _clauses(said: dates.QueryDates) -> Iterator[tuple[int, int, int]]:
    """Each clause with anything but spaces in it: its start and end in ``said.text``, and its sentence's number."""
    whole = said.text
    keep = _dated(said)
    for sentence, (start, end) in enumerate(_between(whole, 0, _SENTENCE_SPLIT, keep)):
        for lo, hi in _between(whole[start:end], start, CLAUSE_END, keep):
            if lo < hi and not whole[lo:hi].isspace():
                yield lo, hi, sentence


def _dated(said: dates.QueryDates) -> list[tuple[int, int, bool]]:
    """Where no cut may fall: each date's start and end, and whether a full stop after it is its own.

    Why: the full stop after a dotted day is the date's (Korean writes ``2024. 1. 7. 회의``)."""
    whole = said.text
    return [
        (at, end, whole[end : end + 1] == "." and bool(_DOTTED_DAY.fullmatch(whole, at, end)))
        for at, end, _ in said.mentions
    ]


def _between(
    piece: str, offset: int, cuts: re.Pattern[str], keep: list[tuple[int, int, bool]]
) -> Iterator[tuple[int, int]]:
    """The spans of ``piece`` (at ``offset`` in the message) between its cuts, but for cuts into a date."""
    start = 0
    for m in cuts.finditer(piece):
        lo, hi = m.start() + offset, m.end() + offset
        if keep and any(
            (at < hi and lo < end) or (dotted and lo == end + 1 and "\n" not in m[0]) for at, end, dotted in keep
        ):
            continue
        yield start + offset, m.start() + offset
        start = m.end()
    yield start + offset, len(piece) + offset


def is_question(clause: str) -> bool:
    """A clause that asks: ends with ``?``, with a Korean interrogative ending, holds a question embedded in
    a request or a wondering (``어디인지 알려주세요``, ``되는지 궁금합니다``), or opens like an English question
    and does not end as a statement (``Would love to know.`` is one)."""
    clause = clause.strip()
    stripped = clause.rstrip(".!~… ")
    if not stripped:
        return False
    if _QUESTION_END.search(clause):
        return True
    words = stripped.split()
    last = words[-1]
    if text.is_hangul(last) and last.endswith(_KO_QUESTION):
        return True
    if _EMBEDDED.search(stripped):
        return True
    return text.normalize(words[0]) in _EN_QUESTION and clause[-1] not in ".!"
