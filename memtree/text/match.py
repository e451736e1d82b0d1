"""The one matching rule: how an index term relates to a query term, and how strongly it counts.

Every part of memtree that matches terms takes the rule from here — BM25 segments (pure and
numpy), keyword routing, snippets and dedup — through :func:`match`, or through
:class:`SortedTerms`, its fast form over a sorted vocabulary:

* equal terms → ``EXACT`` (weight 1.0);
* for Hangul and Han, one term a prefix of the other with the shorter at least ``MIN_STEM``
  syllables long → ``PREFIX`` (``가치관`` ~ ``가치관이``; ``search.partial_match``, 0.7); a
  single-syllable query word matches itself and itself plus a particle (``집`` ~ ``집에``);
* a Hangul query word of at least ``INFIX_MIN`` syllables inside a longer Hangul term → ``INFIX``
  (``데이터베이스`` in ``분산데이터베이스``, ``배포`` in ``무중단배포``; ``search.infix_match``); a
  word shorter than ``INFIX_ANYWHERE`` syllables only as the compound's last part (Korean
  compounds end in their head noun), so that ``회의`` does not match ``국회의원``;
* a Korean past form (``태어났``, ``일으켰는가`` → ``일으켰``, ``벗어났던``) or a ``-던`` form
  (``기르던``) also matches the other forms of its verb (``태어나``, ``태어난``, ``일으킨``,
  ``기르고``) at the same weak strength, ``INFIX``: see :func:`verb_stem`;
* Latin words match only exactly (their stemming already folds inflections).

Single-syllable words never match inside another word. Terms are what
:func:`memtree.text.terms.terms` makes of text; this module imports nothing of memtree.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from enum import IntEnum

MIN_STEM = 2
"""Shortest stem (in syllables) that may match by prefix; why: ``회`` must not match ``회의``."""
INFIX_MIN = 2
"""Shortest Hangul query word (in syllables) that matches inside a compound; why: ``회`` is in
far too many words to mean anything there, while ``배포`` in ``무중단배포`` is the compound's head."""
INFIX_ANYWHERE = 3
"""Shortest Hangul query word that matches anywhere inside a compound; a shorter one (two
syllables) only at its end. Why: ``회의`` sits in ``국회의원`` and ``사회의식`` by accident, but a
two-syllable head noun ends its compound (``무중단배포``, ``분산서버``). On the KorQuAD dev set,
two-syllable words matched anywhere left fewer unanswerable questions empty (0.641 against 0.649)
for no hit gained; three syllables and up only gained half as much hit@1."""
# Particles that may follow a single-syllable word (집에, 물을, 탭보다). 의/도/과 are left out on purpose:
# 회의, 정도, 결과 are words, not 회+의, 정+도, 결+과. So are the copula's forms (이다, 이고, 이며, 이지,
# 였다) and 하고/라고, which also end verbs and nouns (보이다, 죽이고, 페이지, 하였다, 말하고, 자라고);
# the case and auxiliary particles of two syllables and more kept here end no word of the KorQuAD
# notes after a single syllable (내에서, 년까지, 월부터, 그에게, 집보다, 때마다, 것처럼).
ONE_SYLLABLE_PARTICLES = (
    *("이", "가", "을", "를", "은", "는", "에", "로", "만"),
    *("에서", "에게", "에게서", "한테", "께서", "으로", "으로서", "로서", "으로써", "로써", "까지", "부터"),
    *("보다", "처럼", "마다", "조차", "밖에", "만큼", "에는", "에서는", "으로는", "로는", "에도", "에서도"),
    *("으로도", "로도", "까지는", "부터는", "에서부터", "이나", "이랑"),
)

EXACT = 1.0
PARTIAL = 0.7


def is_hangul(term: str) -> bool:
    """True when the term starts with a Hangul syllable."""
    return "\uac00" <= term[:1] <= "\ud7a3"


def is_cjk(term: str) -> bool:
    """True for Hangul or Han/Kana terms: the scripts matched by prefix."""
    c = term[:1]
    return "\uac00" <= c <= "\ud7a3" or "\u3400" <= c <= "\u9fff" or "\u3040" <= c <= "\u30ff"


class Match(IntEnum):
    """How an index term relates to a query term, weakest first."""

    NONE = 0
    INFIX = 1  # weak: the query word inside a compound (배포 in 무중단배포), or a verb's other form
    PREFIX = 2  # one a prefix of the other: 가치관 ~ 가치관이, 집 ~ 집에
    EXACT = 3


def match(query_term: str, term: str) -> Match:
    """How ``term`` (an index term) relates to ``query_term``: the rule (see the module docstring)."""
    if query_term == term:
        return Match.EXACT
    if not (is_cjk(query_term) and is_cjk(term)):
        return Match.NONE
    if len(query_term) > len(term):  # the index term is a prefix (a stem) of the query word
        if len(term) >= MIN_STEM and query_term.startswith(term):
            return Match.PREFIX
    elif term.startswith(query_term):
        if len(query_term) >= MIN_STEM or term[len(query_term) :] in ONE_SYLLABLE_PARTICLES:
            return Match.PREFIX
        return Match.NONE
    if len(query_term) < INFIX_MIN or not (is_hangul(query_term) and is_hangul(term)):
        return Match.NONE
    if term.endswith(query_term) or (len(query_term) >= INFIX_ANYWHERE and query_term in term):
        return Match.INFIX
    stem = verb_stem(query_term)
    if stem and len(term) > len(stem) and term.startswith(stem):
        return Match.INFIX
    return Match.NONE


_PAST = 20
"""The final consonant ㅆ's index in a Hangul syllable (its code point's remainder mod 28)."""
_PAST_ENDINGS = ("던", "나", "가", "까")
"""Endings a past form may carry in a question word: 벗어났던, 돌아왔나, 태어났는가 (the tokenizer leaves 태어났)."""


def _has_past(syllable: str) -> bool:
    return is_hangul(syllable) and (ord(syllable) - 0xAC00) % 28 == _PAST


def verb_stem(word: str) -> str:
    """The stem a Korean verb form in a query shares with the verb's other forms, or ``""``.

    A past form ends its stem with a syllable carrying ㅆ (``태어났``, ``일으켰``, ``바꾸었``),
    optionally followed by ``-던`` or a question ending; the stem is what comes before that
    syllable (``태어``, ``일으``, ``바꾸``), since contraction changes the syllable itself
    (``키`` + ``었`` → ``켰``). A ``-던`` form without ㅆ (``기르던``) drops ``-던`` alone. The stem
    must keep ``MIN_STEM`` syllables, so that light verbs (``했던``, ``되었던``) match nothing more.

    Why only these forms: no Korean noun ends in ㅆ or in ``-던``, so a noun never loses its last
    syllable here (``아시안`` must not find ``아시아``). Why: a question asks in one form
    (``태어난 곳``, ``일으켰는가``) what a note says in another (``태어났다``, ``일으킨``); on the
    KorQuAD dev set this lifted MRR@10 from 0.9593 to 0.9604 (docs/concepts/scoring.md, "How search works").
    """
    if len(word) < MIN_STEM + 1 or not is_hangul(word):
        return ""
    w = word[:-1] if word.endswith(_PAST_ENDINGS) and _has_past(word[-2]) else word
    if _has_past(w[-1]):
        stem = w[:-1]
    elif word.endswith("던"):
        stem = word[:-1]
    else:
        return ""
    return stem if len(stem) >= MIN_STEM and is_hangul(stem[-1]) else ""


def weight(kind: Match, partial: float = PARTIAL, infix: float = 0.0) -> float:
    """The strength a match of this kind counts for: 1.0, ``partial`` (prefix), ``infix`` or 0.

    Why infix defaults to 0 here: callers that compare two words rather than search (dedup in
    :mod:`memtree.write.similarity`) must not call ``배포`` and ``무중단배포`` the same word; search
    passes ``search.infix_match``.
    """
    if kind is Match.EXACT:
        return EXACT
    if kind is Match.PREFIX:
        return partial
    if kind is Match.INFIX:
        return infix
    return 0.0


def relation(query_term: str, term: str, partial: float = PARTIAL, infix: float = 0.0) -> float:
    """Match strength of an index term for a query term: :func:`match`'s kind, weighted."""
    return weight(match(query_term, term), partial, infix)


_TOP = "\U0010ffff"


class SortedTerms:
    """:func:`match` over a sorted list of terms (repeats allowed), without scanning it.

    Exact and prefix matches are contiguous ranges found by bisection, each of one kind by
    :func:`match`'s own case analysis: the terms equal to ``q`` are EXACT; for a Hangul or Han
    ``q`` (terms starting alike are then CJK too), the longer terms starting with ``q`` and the
    terms that are ``q``'s first ``MIN_STEM`` syllables or more are PREFIX when ``q`` has
    ``MIN_STEM`` syllables, and only ``q`` plus one of ``ONE_SYLLABLE_PARTICLES`` when it has one
    (no term continues with U+10FFFF, the prefix range's end). Infix matches come from a
    syllable-bigram index over the Hangul terms, built on the first infix lookup: a query word's
    rarest bigram names the few terms to check, each checked by :func:`match` itself, so a
    lookup never walks the whole vocabulary. ``tests/test_match.py`` holds all of it to
    :func:`match`, term by term, on random vocabularies.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = terms
        self._bigrams: dict[str, list[int]] | None = None

    def related(self, q: str, infix: bool = True) -> list[tuple[int, int, Match]]:
        """Index ranges ``(lo, hi, kind)`` of every term :func:`match` relates to ``q``.

        Ranges never overlap; with ``infix=False`` infix matches are left out (weight 0).
        """
        terms = self.terms
        lo = bisect.bisect_left(terms, q)
        hi = bisect.bisect_right(terms, q, lo)
        out: list[tuple[int, int, Match]] = [(lo, hi, Match.EXACT)] if hi > lo else []
        if not is_cjk(q):
            return out
        if len(q) >= MIN_STEM:
            end = bisect.bisect_left(terms, q + _TOP, hi)
            if end > hi:
                out.append((hi, end, Match.PREFIX))
            for size in range(MIN_STEM, len(q)):
                out += self._equal(q[:size], Match.PREFIX)
        else:
            for particle in ONE_SYLLABLE_PARTICLES:
                out += self._equal(q + particle, Match.PREFIX)
        if infix and len(q) >= INFIX_MIN and is_hangul(q):
            out += self._infixes(q)
            stem = verb_stem(q)
            if stem:
                out = self._with_forms(stem, out)
        return out

    def weighted(self, q: str, partial: float, infix: float) -> list[tuple[int, int, float, Match]]:
        """Index ranges ``(lo, hi, weight, kind)`` of the terms related to ``q`` with a weight above 0."""
        out = []
        for lo, hi, kind in self.related(q, infix > 0):
            w = weight(kind, partial, infix)
            if w > 0:
                out.append((lo, hi, w, kind))
        return out

    def _equal(self, t: str, kind: Match) -> list[tuple[int, int, Match]]:
        terms = self.terms
        lo = bisect.bisect_left(terms, t)
        hi = bisect.bisect_right(terms, t, lo)
        return [(lo, hi, kind)] if hi > lo else []

    def _with_forms(self, stem: str, out: list[tuple[int, int, Match]]) -> list[tuple[int, int, Match]]:
        """``out`` plus, as INFIX, the terms longer than ``stem`` that start with it and that ``out``
        does not already hold (its own infix ranges there are dropped: the same kind, counted once)."""
        terms = self.terms
        lo = bisect.bisect_right(terms, stem)  # past the stem itself: a prefix match, if any
        hi = bisect.bisect_left(terms, stem + _TOP, lo)
        if hi == lo:
            return out
        kept = [r for r in out if not (r[2] is Match.INFIX and lo <= r[0] < hi)]
        at = lo
        for a, b, _ in sorted(r for r in kept if lo <= r[0] < hi):
            if a > at:
                kept.append((at, a, Match.INFIX))
            at = max(at, b)
        if hi > at:
            kept.append((at, hi, Match.INFIX))
        return kept

    def _infixes(self, q: str) -> list[tuple[int, int, Match]]:
        """Ranges of the Hangul compounds :func:`match` finds ``q`` inside."""
        index = self._bigrams if self._bigrams is not None else self._build()
        candidates = min((index.get(q[i : i + 2], ()) for i in range(len(q) - 1)), key=len)
        terms = self.terms
        out = []
        for i in candidates:
            t = terms[i]
            if match(q, t) is Match.INFIX:
                out.append((i, bisect.bisect_right(terms, t, i), Match.INFIX))
        return out

    def _build(self) -> dict[str, list[int]]:
        """Syllable bigram → first index of each Hangul term holding it past its first syllable."""
        terms = self.terms
        index: dict[str, list[int]] = {}
        lo, hi = bisect.bisect_left(terms, "\uac00"), bisect.bisect_left(terms, "\ud7a4")
        previous = ""
        for i in range(lo, hi):
            t = terms[i]
            if len(t) <= INFIX_MIN or t == previous:
                continue
            previous = t
            for b in {t[j : j + 2] for j in range(1, len(t) - 1)}:
                bucket = index.get(b)
                if bucket is None:
                    index[b] = [i]
                else:
                    bucket.append(i)
        self._bigrams = index
        return index
