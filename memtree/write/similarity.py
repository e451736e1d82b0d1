"""How alike two memory entries are (retain's dedup): :func:`similarity`, and the candidates it was
chosen from, measured by ``bench/dedup.py``. All are symmetric, in [0, 1], and read entries as
:func:`memtree.notes.entries.normalize` does (no metadata or list marker, NFC, casefold).

Why over 300 lines: the measured candidates stay beside the chosen function, with the figures that
chose it (bench/dedup.py scores them all).
"""

from __future__ import annotations

import functools
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
    **{d + "s": d[:3] for d in "monday tuesday wednesday thursday friday saturday sunday".split()},  # on Mondays
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


def _ends(ta: list[str], tb: list[str]) -> tuple[int, int]:
    """How many terms the two lists share at their head and at their tail (variants count as equal)."""
    n = min(len(ta), len(tb))
    head = 0
    while head < n and _variants(ta[head], tb[head]):
        head += 1
    tail = 0
    while tail < n - head and _variants(ta[-1 - tail], tb[-1 - tail]):
        tail += 1
    return head, tail


def _slot(ta: list[str], tb: list[str]) -> tuple[list[str], list[str]]:
    """What is left of each term list between the longest common head and tail (variants count as equal)."""
    head, tail = _ends(ta, tb)
    return ta[head : len(ta) - tail], tb[head : len(tb) - tail]


def _substituted(xa: list[str], xb: list[str]) -> bool:
    """Each stretch holds a term with no variant in the other: one value put in place of another."""
    if not (0 < len(xa) <= SLOT_MAX and 0 < len(xb) <= SLOT_MAX):
        return False
    return any(not any(_variants(t, u) for u in xb) for t in xa) and any(
        not any(_variants(u, t) for t in xa) for u in xb
    )


def frame(a: str, b: str) -> float:
    """The share of the longer entry's terms the two share at their head and tail (variants equal): 1.0
    when they are one sentence, ~0.8 when one value in it changed, 0 when the words come in another order.

    Why: retain's conflict rule (memtree.write.retain.verdict) reads a changed value as a replacement
    only in the same frame — `pool size is 50` / `pool size is 80`, not `logs are kept 30 days` /
    `we keep logs for 30 days` (bench/conflicts.py).
    """
    ta, tb = terms(_content(a)), terms(_content(b))
    longest = max(len(ta), len(tb))
    if not longest:
        return 1.0
    xa, _ = _slot(ta, tb)
    return (len(ta) - len(xa)) / longest


def one_value(a: str, b: str, reason: str) -> bool:
    """Whether ``a`` and ``b``, which :func:`distinct_facts` finds to differ for ``reason``, differ in
    one value of one statement — what a replacement changes — rather than being the same fact in other
    words or another fact on the topic.

    A number or a date changes into another: both entries state one (`deploys are on Thursdays` /
    `deploy approval comes from the team lead` states no other day, it states another fact). A
    "name" stretch is no value when:

    - the two stretches share a word: the words moved (`logs are retained for 30 days` / `we keep
      logs for 30 days`), a sentence said in another order;
    - it holds two or more words on both sides: more than one thing changed, a verb and its object
      (`is written in Go` / `runs on Kubernetes`) — another statement;
    - it is a Korean sentence's closing verb and nothing else (`진행한다` / `한다`, `쓴다` / `사용한다`):
      every value agrees, only the verb is said otherwise;
    - it opens both sentences within what they are about — an English subject with a determiner (`the
      batch server runs on t3.medium` / `the staging server …`), a Korean topic marked 은/는 (`배치
      서버는` / `스테이징 서버는`): another thing, another fact. A bare name (`Alice is on call`, `김민수가
      맡는다`) may be the value.

    Why: bench/conflicts.py's tune half; a restatement agrees on every value, an update differs in
    one, a different fact differs in its subject or its relation.
    """
    if reason in ("number", "date"):
        return all(_states(t, reason) for t in (a, b))
    if reason != "name":
        return True
    ta, tb = terms(_content(a)), terms(_content(b))
    head, tail = _ends(ta, tb)
    xa, xb = ta[head : len(ta) - tail], tb[head : len(tb) - tail]
    if any(_variants(t, u) for t in xa for u in xb):
        return False
    if len(xa) > 1 and len(xb) > 1:
        return False
    if tail == 0 and _closing_verb(a) and _closing_verb(b):
        return False
    return not (head == 0 and _described_subject(a) and _described_subject(b))


def _states(text: str, reason: str) -> bool:
    """Whether an entry states a number (a term that starts with a digit) or a date (:func:`_facts`)."""
    if reason == "number":
        return any(t < ":" for t in terms(_content(text)))
    return bool(_facts(normalize(_content(text)))[1])


_HANGUL_BASE = 0xAC00
_VERB_FINALS = frozenset({4, 18, 20})
"""Final consonants (jongseong index) of the syllable before a closing 다 that make it a verb form:
ㄴ (한다, 쓴다, 돈다: the present), ㅄ (없다), ㅆ (있다, 했다: the past); none, or another, is a noun
with the copula (김민수다, 30일이다) or an adjective."""
_DETERMINERS = frozenset("the a an our my your their its his her this that these those each every".split())
"""English words that open a described noun phrase (`the staging server`), never a bare name (`Alice`)."""
_TOPIC = re.compile(r"[\uac00-\ud7a3](?:은|는)$")


def _closing_verb(text: str) -> bool:
    """Whether a Korean sentence closes with a verb form (`…한다`, `…있다`, `…합니다`), not a copula."""
    words = normalize(_content(text)).rstrip(" .!?。").split()
    if not words:
        return False
    last = words[-1]
    if last.endswith("니다"):
        return not last.endswith("입니다") and len(last) > 2
    if len(last) < 2 or last[-1] != "다" or not _HANGUL.match(last[-2]):
        return False
    return (ord(last[-2]) - _HANGUL_BASE) % 28 in _VERB_FINALS


def _described_subject(text: str) -> bool:
    """Whether a sentence opens with what it is about: a Korean topic (the first word with a particle
    takes 은/는), an English noun phrase opened by a determiner."""
    words = normalize(_content(text)).split()
    if not words:
        return False
    if _HANGUL.search(text):
        marked = next((w for w in words if _HANGUL.match(w[-1]) and _strip_particle(w) != w), None)
        return marked is not None and bool(_TOPIC.search(marked))
    return words[0] in _DETERMINERS


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
    if _DIGIT.search(x) and _other_unit(x, y):
        return "unit"
    if reason := _exclusive(unicodedata.normalize("NFC", _content(a)), unicodedata.normalize("NFC", _content(b))):
        return reason
    if _DIGIT.search(x):
        ta, tb = _same_units(ta), _same_units(tb)
    if _substituted(*_slot(ta, tb)):
        return "name"
    return None


# --- mutually exclusive values: states, bounds, environments, regions, units ---
# Why: `flag is on` / `flag is off`, `in eu` / `in us`, `500 ms` / `500 s` share every term but one,
# and terms() drops `on`, `us`, `s` as function words, so neither the term score nor the name rule sees
# them. Each class below is a closed set of values that exclude each other; one entry saying one value
# where the other says another (each has a value the other lacks) states another fact. A value only
# one side mentions is an added detail, as elsewhere in this guard.
_EXCLUSIVE: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    # (reason, ((English words, Korean pattern) per value, ...)); one class per line of values
    ("state", (("on", r"켜|켬"), ("off", r"꺼(?![내낼냈냄])|끄[고기는며면자]|끈다|끔"))),
    ("state", (("enabled enable enables enabling", r"(?<!비)활성"), ("disabled disable disables disabling", "비활성"))),
    ("state", (("active", ""), ("inactive", ""))),
    ("state", (("online", "온라인"), ("offline", "오프라인"))),
    ("state", (("open opened", "열림|열려"), ("closed close", "닫힘|닫혀"))),
    ("state", (("locked lock", r"잠금(?!\s*해제)|잠김|잠겨"), ("unlocked unlock", "잠금\\s*해제"))),
    ("state", (("visible shown show", "표시|노출"), ("hidden hide", "숨김|숨겨"))),
    (
        "state",
        (
            ("allow allowed allows allowing permit permitted accept accepted", "허용|허가|승인|수락"),
            (
                "deny denied denies block blocked blocks forbid forbidden reject rejected prohibited",
                "차단|거부|거절|불허|금지",
            ),
        ),
    ),
    (
        "state",
        (
            ("allowlist whitelist allowlisted whitelisted", "화이트리스트"),
            ("denylist blocklist blacklist blacklisted", "블랙리스트"),
        ),
    ),
    ("state", (("true", ""), ("false", ""))),
    (
        "state",
        (("success succeed succeeded succeeds pass passed passes", "성공|통과"), ("fail failed fails failure", "실패")),
    ),
    ("state", (("required mandatory", "필수"), ("optional", "선택"))),
    ("state", (("public", "(?<!비)공개"), ("private", "비공개"))),
    ("state", (("sync synchronous synchronously", "(?<!비)동기"), ("async asynchronous asynchronously", "비동기"))),
    ("state", (("encrypted", "(?<!비)암호화"), ("unencrypted plaintext", "평문|비암호화"))),
    ("state", (("start started starts", "시작"), ("stop stopped stops", "중지|정지|중단|종료"))),
    ("state", (("include included includes", "포함"), ("exclude excluded excludes", "제외"))),
    ("state", (("increase increased increases", "증가|상승|인상"), ("decrease decreased decreases", "감소|하락|인하"))),
    (
        "state",
        (
            ("primary master leader", "마스터|프라이머리"),
            ("replica secondary standby follower", "레플리카|복제본|스탠바이"),
        ),
    ),
    ("state", (("inbound ingress", "인바운드"), ("outbound egress", "아웃바운드"))),
    ("state", (("internal", "내부"), ("external", "외부"))),
    ("state", (("ascending asc", "오름차순"), ("descending desc", "내림차순"))),
    ("state", (("left", "왼쪽|좌측"), ("right", "오른쪽|우측"))),
    ("state", (("first earliest oldest", "처음|최초|첫"), ("last latest newest", "마지막|최신"))),
    (
        "state",
        (
            ("above over more greater higher upper max maximum most", "이상|초과|최대|상한"),
            ("below under less fewer lower min minimum least", "이하|미만|최소|하한"),
        ),
    ),
    (
        "order",
        (
            ("before pre prior earlier", r"이전|(?<![가-힣])전에|(?<![가-힣])전(?![가-힣])|먼저"),
            ("after post later", r"이후|(?<![가-힣])후에|(?<![가-힣])후(?![가-힣])|다음에|나중"),
        ),
    ),
    (
        "unit",
        (
            ("second seconds", ""),
            ("minute minutes", ""),
            ("hour hours hourly", ""),
            ("day days", ""),
            ("week weeks", ""),
            ("month months", ""),
            ("year years", ""),
        ),
    ),
    (
        "environment",
        (
            ("production prod prd", "운영|프로덕션|상용"),
            ("staging stage stg preprod", "스테이징"),
            ("development dev", "개발"),
            ("test testing", "테스트"),
            ("qa", ""),
            ("uat", ""),
            ("sandbox", "샌드박스"),
            ("local localhost", "로컬"),
        ),
    ),
    (
        "region",
        (
            ("US usa america american", "미국"),
            ("eu europe european", "유럽"),
            ("uk britain british", "영국"),
            ("apac asia asian", "아시아"),
            ("emea", ""),
            ("latam", ""),
            ("kr korea korean", "한국|국내"),
            ("jp japan japanese", "일본"),
            ("cn china chinese", "중국"),
            ("sg singapore", "싱가포르"),
            ("au australia australian", "호주"),
            ("ca canada canadian", "캐나다"),
            ("de germany german", "독일"),
            ("abroad overseas", "해외"),
        ),
    ),
    (
        "region",
        (
            ("east eastern", "동부"),
            ("west western", "서부"),
            ("north northern", "북부"),
            ("south southern", "남부"),
            ("central", "중부"),
        ),
    ),
)
"""Closed classes of values that exclude each other (see above). An English word in capitals (US) is
matched only when written so: `us` is also the pronoun."""


_KoAlternative = tuple[re.Pattern[str], int, int]


def _exclusive_tables() -> tuple[
    dict[str, tuple[int, int]], frozenset[str], re.Pattern[str], dict[str, list[_KoAlternative]]
]:
    words: dict[str, tuple[int, int]] = {}
    upper: set[str] = set()
    by_first: dict[str, list[_KoAlternative]] = {}
    for c, (_, values) in enumerate(_EXCLUSIVE):
        for v, (english, korean) in enumerate(values):
            for w in english.split():
                if w.isupper():
                    upper.add(w.casefold())
                words[w.casefold()] = (c, v)
            for alt in korean.split("|") if korean else ():
                first = re.sub(r"^\(\?<[!=](?:\[[^]]*\]|[^)])*\)", "", alt)[0]
                by_first.setdefault(first, []).append((re.compile(alt), c, v))
    starts = re.compile(f"[{''.join(sorted(by_first))}]")
    return words, frozenset(upper), starts, by_first


_EX_WORDS, _EX_UPPER, _EX_KO_START, _EX_KO = _exclusive_tables()


def _exclusive_values(text: str) -> dict[int, set[int]]:
    """Per class of _EXCLUSIVE, the values an entry (NFC, not casefolded) says."""
    out: dict[int, set[int]] = {}
    for w in _LATIN_WORD.findall(text):
        key = w.casefold()
        hit = _EX_WORDS.get(key)
        if hit is not None and (key not in _EX_UPPER or w.isupper()):
            out.setdefault(hit[0], set()).add(hit[1])
    if _HANGUL.search(text):
        # Why a scan for first syllables, then only the patterns that start there: one alternation
        # of all of them, tried at every character, took 1.9 ms for 200 Korean characters
        end = 0
        for s in _EX_KO_START.finditer(text):
            i = s.start()
            if i < end:
                continue
            for rx, c, v in _EX_KO[s.group()]:
                m = rx.match(text, i)
                if m is not None:
                    out.setdefault(c, set()).add(v)
                    end = m.end()
                    break
    return out


def _exclusive(a: str, b: str) -> str | None:
    """The reason of the first class in which each entry says a value the other does not."""
    va, vb = _exclusive_values(a), _exclusive_values(b)
    for c in sorted(va.keys() & vb.keys()):
        if va[c] - vb[c] and vb[c] - va[c]:
            return _EXCLUSIVE[c][0]
    return None


_UNITS: dict[str, str] = {
    **dict.fromkeys("ns nanosecond nanoseconds 나노초".split(), "ns"),
    **dict.fromkeys("µs μs microsecond microseconds 마이크로초".split(), "µs"),
    **dict.fromkeys("ms msec msecs millisecond milliseconds 밀리초".split(), "ms"),
    **dict.fromkeys("s sec secs second seconds 초".split(), "s"),
    **dict.fromkeys("min mins minute minutes 분".split(), "min"),
    **dict.fromkeys("h hr hrs hour hours 시간".split(), "h"),
    **dict.fromkeys("d day days 일".split(), "d"),
    **dict.fromkeys("w wk wks week weeks 주".split(), "w"),
    **dict.fromkeys("mo month months 개월 달".split(), "mo"),
    **dict.fromkeys("y yr yrs year years 년".split(), "y"),
    **dict.fromkeys("b byte bytes 바이트".split(), "b"),
    **dict.fromkeys("kb kilobyte kilobytes 킬로바이트".split(), "kb"),
    **dict.fromkeys("mb megabyte megabytes 메가 메가바이트".split(), "mb"),
    **dict.fromkeys("gb gigabyte gigabytes 기가 기가바이트".split(), "gb"),
    **dict.fromkeys("tb terabyte terabytes 테라 테라바이트".split(), "tb"),
    **{u: u for u in "kib mib gib tib bit bits kbps mbps gbps rps qps rpm tps mm cm m km k".split()},
    **dict.fromkeys("% percent pct 퍼센트 프로".split(), "%"),
    **dict.fromkeys("x 배".split(), "x"),
    **dict.fromkeys("$ usd dollar dollars 달러".split(), "usd"),
    **dict.fromkeys("€ eur euro euros 유로".split(), "eur"),
    **dict.fromkeys("₩ krw won 원".split(), "krw"),
    **dict.fromkeys("¥ jpy yen 엔".split(), "jpy"),
    **dict.fromkeys("£ gbp pound pounds 파운드".split(), "gbp"),
    **{u: u for u in "천 만 억 명 개 건 회 번 대 core cores vcpu".split()},
}
"""Units a number may carry → one form each (`500 ms` = `500 milliseconds`, `30초` = `30 s`)."""
_KO_UNITS = sorted((u for u in _UNITS if _HANGUL.match(u)), key=len, reverse=True)
_NUMBER_UNIT = re.compile(r"([$€₩¥£]?)\s?(\d+(?:[.,]\d+)*)\s?([^\W\d_\uac00-\ud7a3]+|[\uac00-\ud7a3]+|%)?")


def _unit_of(prefix: str, word: str | None) -> str | None:
    if prefix:
        return _UNITS[prefix]
    if not word:
        return None
    if word in _UNITS:
        return _UNITS[word]
    if _HANGUL.match(word):  # a Korean unit takes particles: 30초로, 2시간마다
        return next((_UNITS[u] for u in _KO_UNITS if word.startswith(u)), None)
    return None


@functools.cache
def _unit_terms() -> dict[str, str]:
    """The index term of each unit word → its one form (`milliseconds` → `millisecond` → ms)."""
    return {t[0]: unit for word, unit in _UNITS.items() if len(t := terms(word)) == 1 and not _HANGUL.match(word)}


def _same_units(ts: list[str]) -> list[str]:
    """Terms with a unit after a number in its one form, so `500 ms` and `500 milliseconds` read alike."""
    table = _unit_terms()
    out = list(ts)
    for i in range(1, len(ts)):
        if ts[i - 1] < ":":  # after a number (see the number rule)
            out[i] = _unit_of("", ts[i]) or table.get(ts[i], ts[i])
    return out


def _units(text: str) -> list[str | None]:
    """The unit each number of a normalized entry carries (None: none known), in order."""
    return [_unit_of(m.group(1), m.group(3)) for m in _NUMBER_UNIT.finditer(text)]


def _other_unit(x: str, y: str) -> bool:
    """A number that carries one unit in ``x`` and another in ``y`` (`500 ms` / `500 s`)."""
    ux, uy = _units(x), _units(y)
    return len(ux) == len(uy) and any(u and v and u != v for u, v in zip(ux, uy, strict=True))


# --- the safety net: what a merge would make vanish ---
_FACT_WORDS = frozenset(
    """on off up down over under out before after not no never nor neither none cannot all any some only
    each both can must should may might could will would""".split()
)
"""Function words that terms() drops but that carry a fact (`on`/`in`, `must`/`may`, `all`/`some`)."""


def net_words(text: str) -> set[str]:
    """The content words of an entry a merge must not lose: its terms and the _FACT_WORDS it says."""
    content = _content(text)
    return set(terms(content)) | {w for w in _LATIN_WORD.findall(normalize(content)) if w in _FACT_WORDS}


def lost_words(kept: str, dropped: str) -> list[str]:
    """The content words of ``dropped`` that ``kept`` lacks (a prefix or Korean form of one counts as
    had): a merge that keeps ``kept`` in place of ``dropped`` is safe only when this is empty."""
    have = net_words(kept)
    return sorted(w for w in net_words(dropped) - have if not any(_variants(w, h) for h in have))
