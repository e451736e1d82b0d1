"""How alike two memory entries are (retain's dedup): :func:`similarity`, and the candidates it was
chosen from, measured by ``bench/dedup.py``. All are symmetric, in [0, 1], and read entries as
:func:`memtree.notes.entries.normalize` does (no metadata or list marker, NFC, casefold).

Why over 300 lines: the measured candidates stay beside the chosen function, with the figures that
chose it (bench/dedup.py scores them all).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from itertools import pairwise

from memtree.notes.entries import LIST_MARKER, normalize, strip_meta
from memtree.text.match import MIN_STEM, is_hangul, relation
from memtree.text.terms import ENDINGS, PARTICLES, terms

# Why this function (bench/dedup.py on 149 hand-labelled pairs: 47 duplicate, 56 related,
# 46 unrelated; 70 ko, 30 mixed, 49 en), read with the fixed thresholds ≥ 0.8 merge, ≥ 0.5 conflict:
#   function           accuracy  dup. precision (merged)  dup. recall  related flagged  AUC dup vs rest
#   term Dice            0.651        0.853 (34)             0.617         0.536             0.929
#   char-bigram Dice     0.490        0.643 (14)             0.191         0.446             0.865
#   similarity           0.752        0.967 (30)             0.617         0.786             0.947
# No raw measure fits both thresholds: a related pair is often the same sentence with one value
# changed, so raw term Dice ≥ 0.8 merged five related pairs, yet only half of them reached 0.5.
# Character bigrams separate worse (`200`/`500`, `켜`/`꺼` sentences look near-identical). So the
# raw score is term Dice with search's Korean prefix matches, capped under the merge knot when
# distinct_facts() finds two facts (numbers, negation, dates, names; it was numbers only when these
# figures were measured, and the extended guard changes no pair of the set), then mapped piecewise-linearly (monotone;
# knots fitted on the set and rounded): raw 0.35 → 0.5, the end of the plateau where 79 % of
# related and 87 % of unrelated pairs fall on their side, and raw 0.81 → 0.8, the lowest knot
# that merges no entry of five terms with one changed. The one false merge left reverses a
# preference with the same words (tabs over spaces / spaces over tabs).
DISTINCT_CAP = 0.8
"""Ceiling of the raw score, just under RAW_MERGE, when :func:`distinct_facts` finds two facts.
Why: `pool 50` vs `pool 100`, `allowed` vs `not allowed` are changed facts: flag them as a possible
conflict, never merge them."""
RAW_CONFLICT = 0.35
"""The raw score mapped to the design's conflict threshold (0.5)."""
RAW_MERGE = 0.81
"""The raw score mapped to the design's merge threshold (0.8)."""
_KNOTS = ((0.0, 0.0), (RAW_CONFLICT, 0.5), (RAW_MERGE, 0.8), (1.0, 1.0))


def _content(text: str) -> str:
    # Why not normalize(): terms() casefolds and ignores whitespace itself, and normalize()'s
    # whitespace pass is a third of the time of a comparison; the terms come out the same.
    if "memtree:" in text:
        text = strip_meta(text)
    return LIST_MARKER.sub("", text, count=1)


def term_set(text: str) -> set[str]:
    """The distinct index terms of an entry: those of normalize(text), particles and function words gone."""
    return set(terms(_content(text)))


def bigram_set(text: str) -> set[str]:
    """Character bigrams of the normalized entry with spaces removed (a one-character text is itself)."""
    s = normalize(text).replace(" ", "")
    return {s[i : i + 2] for i in range(len(s) - 1)} or ({s} if s else set())


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _dice(a: set[str], b: set[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def term_jaccard(a: str, b: str) -> float:
    """|A∩B| / |A∪B| over term sets."""
    return _jaccard(term_set(a), term_set(b))


def term_dice(a: str, b: str) -> float:
    """2|A∩B| / (|A|+|B|) over term sets."""
    return _dice(term_set(a), term_set(b))


def term_overlap(a: str, b: str) -> float:
    """|A∩B| / min(|A|,|B|) over term sets: one entry contained in the other scores 1."""
    x, y = term_set(a), term_set(b)
    return len(x & y) / min(len(x), len(y)) if x and y else 0.0


def term_cosine(a: str, b: str) -> float:
    """Cosine of term-frequency vectors."""
    x, y = Counter(terms(_content(a))), Counter(terms(_content(b)))
    dot = sum(n * y[t] for t, n in x.items() if t in y)
    norm = math.sqrt(sum(n * n for n in x.values()) * sum(n * n for n in y.values()))
    return dot / norm if norm else 0.0


def bigram_jaccard(a: str, b: str) -> float:
    """Jaccard over character bigrams (the design's consolidation measure)."""
    return _jaccard(bigram_set(a), bigram_set(b))


def bigram_dice(a: str, b: str) -> float:
    """Dice over character bigrams."""
    return _dice(bigram_set(a), bigram_set(b))


def max_blend(a: str, b: str) -> float:
    """The larger of term Dice and bigram Dice."""
    return max(term_dice(a, b), bigram_dice(a, b))


def mean_blend(a: str, b: str) -> float:
    """The mean of term Dice and bigram Dice."""
    return (term_dice(a, b) + bigram_dice(a, b)) / 2


def _partial(only_x: set[str], only_y: set[str]) -> float:
    """Prefix-match credit between terms the entries do not share (search's rule: `선호` ~ `선호한다고`, 0.7)."""
    heads: dict[str, list[str]] = {}  # a prefix match shares the first character
    for t in only_x:
        heads.setdefault(t[0], []).append(t)
    best: dict[str, float] = {}  # each term's best match; only_x and only_y are disjoint
    for u in only_y:
        for t in heads.get(u[0], ()):
            strength = max(relation(t, u), relation(u, t)) if u.startswith(t) or t.startswith(u) else 0.0
            if strength:
                best[t] = max(best.get(t, 0.0), strength)
                best[u] = max(best.get(u, 0.0), strength)
    return sum(best.values())


def _soft_dice(x: set[str], y: set[str], only_x: set[str], only_y: set[str]) -> float:
    score = 2.0 * (len(x) - len(only_x))
    if only_x and only_y:
        score += _partial(only_x, only_y) if len(only_x) <= len(only_y) else _partial(only_y, only_x)
    return min(1.0, score / (len(x) + len(y)))


def soft_dice(a: str, b: str) -> float:
    """Term Dice where a Korean/Han prefix match (`선호` ~ `선호한다고`) counts as search counts it (0.7)."""
    x, y = term_set(a), term_set(b)
    return _soft_dice(x, y, x - y, y - x) if x and y else 0.0


def raw_score(a: str, b: str) -> float:
    """Soft term Dice, capped at DISTINCT_CAP when :func:`distinct_facts` finds the entries state different facts."""
    ta, tb = terms(_content(a)), terms(_content(b))
    if not ta or not tb:  # only function words, symbols or emoji: compare characters instead
        score = 1.0 if normalize(a) == normalize(b) else bigram_dice(a, b)
    else:
        x, y = set(ta), set(tb)
        score = _soft_dice(x, y, x - y, y - x)
    if score > DISTINCT_CAP and _distinct_facts(a, b, ta, tb):
        score = DISTINCT_CAP
    return score


def calibrate(raw: float) -> float:
    """Piecewise-linear, monotone map of a raw score onto the design's thresholds (0 → 0, 1 → 1)."""
    for (x0, y0), (x1, y1) in pairwise(_KNOTS):
        if raw <= x1:
            return y0 + (y1 - y0) * (raw - x0) / (x1 - x0)
    return 1.0


def similarity(a: str, b: str) -> float:
    """How alike two entries are, in [0, 1]: 1.0 when equal after normalization, 0.0 when nothing is shared."""
    return calibrate(raw_score(a, b))


def classify(score: float, merge: float = 0.8, conflict: float = 0.5) -> str:
    """Retain's reading of a score: "duplicate" (merge), "related" (possible conflict) or "unrelated"."""
    if score >= merge:
        return "duplicate"
    return "related" if score >= conflict else "unrelated"


# --- distinct facts: the one guard both dedup paths call (retain's add, consolidate) ---
# Why: two entries can share almost every word and still state different facts — `limit 100` /
# `limit 1000`, `allowed` / `not allowed`, `Alice owns` / `Bob owns`, `월요일` / `화요일`. Word and
# character measures score such pairs as near-duplicates (bigram Jaccard 1.00 and 0.89 for the first
# two), and a merge would drop one fact. So every merge asks this guard first.

_EN_NEGATIONS = frozenset(
    """not no never none nothing nobody nowhere neither nor without cannot dont doesnt didnt isnt
    arent wasnt werent wont cant couldnt shouldnt wouldnt havent hasnt hadnt mustnt neednt""".split()
)
_LATIN_WORD = re.compile(r"[^\W\d_\uac00-\ud7a3\u3130-\u318f]+(?:['’][^\W\d_]+)?")
_KO_NEGATION = re.compile(
    r"않|없|못|아니|아닌|아님|아닙|아냐|금지|금물|불가|불허"  # -지 않다, 없다, 못 하다, 아니다, 금지, 불가(능)
    r"|안(?<![가-힣]안)(?=\s|[되돼됨됐된함해하했할])"  # 안 된다, 안됨 — not 안전, 안내, 방 안에
    r"|지\s*(?:말|맙|마(?![가-힣])|마[세라십요])"  # 하지 마, 쓰지 말 것, 하지 마세요 — not 마지막
    r"|말고(?<!지말고)(?<!지\s말고)"  # A 말고 B
)
# Why literal alternatives first and lookbehinds after: a pattern that opens with a lookbehind or a
# class is tried at every character, and this runs on every merge candidate (3× slower measured).

_EN_DATES = {
    **{m: m[:3] for m in "january february march april june july august september october november december".split()},
    **{m: m for m in ("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "oct", "nov", "dec")},
    **{d: d[:3] for d in "monday tuesday wednesday thursday friday saturday sunday".split()},
    **{d: d for d in ("mon", "tue", "wed", "thu", "fri")},
    **{"sept": "sep", "tues": "tue", "thur": "thu", "thurs": "thu"},
    **{w: w for w in "today tomorrow yesterday tonight morning afternoon evening night noon midnight".split()},
    **{w: w for w in "daily nightly weekly biweekly monthly quarterly yearly annually".split()},
    **{w: w.rstrip("s") for w in "weekend weekends weekday weekdays".split()},
}
"""English date words → one form. `may`, `am`, `pm` are words too: only beside a number (_DIGIT_DATE)."""
_KO_DATE = re.compile(
    "|".join(
        """오늘 내일 어제 모레 그제 그저께 오전 오후 아침 점심 저녁 새벽 자정 정오 주말 평일
        매일 매주 매월 매달 매년 격주 상반기 하반기 작년 올해 내년 연초 연말 월초 월말 요일 욜""".split()
    )
)
"""Korean date words; 요일/욜 stand for the weekday they end (월요일, 금욜)."""
_DIGIT_DATE = re.compile(
    r"(?=[\dm])(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"  # 2024-12-16, 12/16, 12/16/2024
    r"|\d{1,2}\s*월(?:\s*\d{1,2}\s*일)?|\d{1,2}\s*일"  # 12월 16일
    r"|may\s*\d{1,2}(?!\d)|\d{1,2}\s*(?:may\b|[ap]\.?m\b))"  # May 7, 7 May, 2 pm
)
_NOT_DATE_CHARS = re.compile(r"[\s.]")
_HANGUL = re.compile("[\uac00-\ud7a3]")
_DIGIT = re.compile(r"\d")


def _facts(text: str) -> tuple[int, Counter[str]]:
    """The negations a normalized entry states, and its date words in one form each."""
    words = _LATIN_WORD.findall(text)
    negations = sum(1 for w in words if w in _EN_NEGATIONS or w.endswith(("n't", "n’t")))
    dates = Counter(_EN_DATES[w] for w in words if w in _EN_DATES)
    if _HANGUL.search(text):
        negations += len(_KO_NEGATION.findall(text))
        for m in _KO_DATE.finditer(text):
            word = m.group()
            if word in ("요일", "욜"):
                before = text[max(0, m.start() - 2) : m.start()].rstrip()
                word = before[-1:] + "요일"
            dates[word] += 1
    if _DIGIT.search(text):
        dates.update(_NOT_DATE_CHARS.sub("", m) for m in _DIGIT_DATE.findall(text))
    return negations, dates


_FINAL_CONSONANT = re.compile("[\u11a8-\u11c2]")
_SUFFIX_MAX = max(len(s) for s in PARTICLES | ENDINGS)


def _jamo(term: str) -> str:
    return unicodedata.normalize("NFD", term)


def _variants(t: str, u: str) -> bool:
    """Two words one fact may be written with: one a prefix of the other (search's rule), or Korean
    forms that differ only by a particle, an ending or a final consonant (`보낸다` / `보냄`, `님이` / `님은`)."""
    if relation(t, u) or relation(u, t):
        return True
    if not (is_hangul(t) and is_hangul(u)):
        return False
    short, long_ = sorted((_jamo(t), _jamo(u)), key=len)
    if _FINAL_CONSONANT.match(short[-1]) and long_.startswith(short[:-1]):  # 보냄 = 보내 + ㅁ
        return True
    st, su = _strip_particle(t), _strip_particle(u)
    return st == su or (min(len(st), len(su)) >= MIN_STEM and (st.startswith(su) or su.startswith(st)))


def _strip_particle(word: str) -> str:
    for size in range(min(len(word) - 1, _SUFFIX_MAX), 0, -1):
        if word[-size:] in PARTICLES or word[-size:] in ENDINGS:
            return word[:-size]
    return word


SLOT_MAX = 3
"""The longest stretch of terms (per entry) the name rule reads as one substituted value.
Why: `Kim Minsu` / `Lee Jiwoo`, `React Native` / `Flutter` are names of up to three terms; a longer
stretch is a rewording, which retain's labelled paraphrases (reordered, one word changed) showed."""


def _slot(ta: list[str], tb: list[str]) -> tuple[list[str], list[str]]:
    """What is left of each term list between the longest common head and tail (variants count as equal)."""
    n = min(len(ta), len(tb))
    head = 0
    while head < n and _variants(ta[head], tb[head]):
        head += 1
    tail = 0
    while tail < n - head and _variants(ta[-1 - tail], tb[-1 - tail]):
        tail += 1
    return ta[head : len(ta) - tail], tb[head : len(tb) - tail]


def _substituted(xa: list[str], xb: list[str]) -> bool:
    """Each stretch holds a term with no variant in the other: one value put in place of another."""
    if not (0 < len(xa) <= SLOT_MAX and 0 < len(xb) <= SLOT_MAX):
        return False
    return any(not any(_variants(t, u) for u in xb) for t in xa) and any(
        not any(_variants(u, t) for t in xa) for u in xb
    )


def distinct_facts(a: str, b: str) -> str | None:
    """Why entries ``a`` and ``b`` state different facts, or None when they may state one.

    "negation" — a negation more in one (not, never, n't, without; 않, 없, 못, 아니, 안, 금지, -지 말);
    "date" — another date, weekday, month or time of day (2024-12-16, Jan, Friday, 2 pm; 12월 16일, 월요일, 오후);
    "number" — other numbers, or the same in another order;
    "name" — the same words in the same order but for one stretch of up to SLOT_MAX terms, where each
    has a word the other lacks (Alice / Bob, Datadog / Sentry, 박지훈 / 박지민, 인프라팀 / 보안팀).
    An extra word or clause on one side only is no other fact: the longer entry says it all.
    Both dedup paths ask it: retain caps its score under the merge threshold, consolidate never merges.
    """
    return _distinct_facts(a, b, terms(_content(a)), terms(_content(b)))


def _distinct_facts(a: str, b: str, ta: list[str], tb: list[str]) -> str | None:
    x, y = normalize(a), normalize(b)
    if x == y:
        return None
    (neg_x, dates_x), (neg_y, dates_y) = _facts(x), _facts(y)
    if neg_x != neg_y:
        return "negation"
    if dates_x != dates_y:
        return "date"
    # `t < ":"`: a term sorting before ":" starts with a digit (terms start with a letter or digit)
    if [t for t in ta if t < ":"] != [t for t in tb if t < ":"]:
        return "number"
    if _substituted(*_slot(ta, tb)):
        return "name"
    return None
