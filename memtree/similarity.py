"""How alike two memory entries are (retain's dedup): :func:`similarity`, and the candidates it was
chosen from, measured by ``bench/dedup.py``. All are symmetric, in [0, 1], and read entries as
:func:`memtree.entries.normalize` does (no metadata or list marker, NFC, casefold)."""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

from .entries import LIST_MARKER, normalize, strip_meta
from .text import relation, terms

# Why this function (bench/dedup.py on 149 hand-labelled pairs: 47 duplicate, 56 related,
# 46 unrelated; 70 ko, 30 mixed, 49 en), read with the fixed thresholds ≥ 0.8 merge, ≥ 0.5 conflict:
#   function           accuracy  dup. precision (merged)  dup. recall  related flagged  AUC dup vs rest
#   term Dice            0.651        0.853 (34)             0.617         0.536             0.929
#   char-bigram Dice     0.490        0.643 (14)             0.191         0.446             0.865
#   similarity           0.752        0.967 (30)             0.617         0.786             0.947
# No raw measure fits both thresholds: a related pair is often the same sentence with one value
# changed, so raw term Dice ≥ 0.8 merged five related pairs, yet only half of them reached 0.5.
# Character bigrams separate worse (`200`/`500`, `켜`/`꺼` sentences look near-identical). So the
# raw score is term Dice with search's Korean prefix matches, capped under the merge knot unless
# the entries state the same numbers in the same order, then mapped piecewise-linearly (monotone;
# knots fitted on the set and rounded): raw 0.35 → 0.5, the end of the plateau where 79 % of
# related and 87 % of unrelated pairs fall on their side, and raw 0.81 → 0.8, the lowest knot
# that merges no entry of five terms with one changed. The one false merge left reverses a
# preference with the same words (tabs over spaces / spaces over tabs).
NUMBER_CAP = 0.8
"""Ceiling of the raw score, just under RAW_MERGE, when the entries' numbers differ (in value or order).
Why: `pool 50` vs `pool 100` is a changed fact: flag it as a possible conflict, never merge it."""
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
    """Soft term Dice, capped at NUMBER_CAP unless both entries state the same numbers in the same order."""
    ta, tb = terms(_content(a)), terms(_content(b))
    if not ta or not tb:  # only function words, symbols or emoji: compare characters instead
        return 1.0 if normalize(a) == normalize(b) else bigram_dice(a, b)
    x, y = set(ta), set(tb)
    score = _soft_dice(x, y, x - y, y - x)
    # `t < ":"`: a term sorting before ":" starts with a digit (terms start with a letter or digit)
    if [t for t in ta if t < ":"] != [t for t in tb if t < ":"]:
        score = min(score, NUMBER_CAP)
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
