"""Normalization and Korean-aware tokenization: text into index terms.

Every piece of text memtree compares — chunk bodies, queries, tree keywords — goes through
:func:`terms`, which yields *index terms*:

* Unicode NFC (macOS writes Hangul as NFD) and casefold;
* runs of one script are split apart (``Notion에`` → ``notion`` + ``에``), and a Korean particle
  glued to a Latin word or a number is dropped; a run mixing Latin letters and digits (``alpha0x0``,
  ``gpt4``) stays one word, but a number followed by letters (``500ms``) is a number and a word;
* a Korean word loses its particles and common verbal endings (``가치관이`` → ``가치관``,
  ``지명수배되었다`` → ``지명수배``), but only when at least two syllables remain, so that
  ``회의`` stays ``회의`` and never collapses onto ``회``;
* an English word loses plural, ``-ing`` and ``-ed`` inflections (``paintings`` → ``paint``).

How a query term matches an index term (exactly, by prefix, inside a compound) is the one rule
of :mod:`memtree.text.match`; the stems made here never fall below its ``MIN_STEM``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from operator import itemgetter

from memtree.text.irregular import IRREGULAR
from memtree.text.match import MIN_STEM, is_cjk, is_hangul

TOKENIZER_VERSION = 4
"""Bump when terms() changes: persisted indexes and caches made by another version are rebuilt."""
_HANGUL = "\uac00-\ud7a3\u3130-\u318f"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff"
_LETTER = rf"[^\W\d_{_HANGUL}{_HAN}]"
# Why a run mixing letters and digits is one word (``alpha0x0``, ``gpt4``, ``3f9a2c``, ``v1.2``): split, its
# pieces (``x``, ``f``, ``0``) would match queries that name nothing in it. A number then letters alone
# (``500ms``, ``3rd``, ``1990s``) stays a number and a word: a quantity and its unit.
_MIXED = rf"(?:{_LETTER}+\d|\d+{_LETTER}+\d)(?:{_LETTER}|\d|[.,]\d)*"
_WORD = re.compile(rf"[{_HANGUL}]+|[{_HAN}]+|{_MIXED}|{_LETTER}+(?:['’]{_LETTER}+)?|\d+(?:[.,]\d+)*")
_term_cache: dict[str, str] = {}
_TERM_CACHE_MAX = 1_000_000

# Particles (조사). Longest first when stripping; a stem must keep MIN_STEM syllables.
PARTICLES = frozenset(
    """이 가 을 를 은 는 에 에서 에게 에게서 한테 께 께서 으로 로 으로서 로서 으로써 로써 와 과
    의 도 만 까지 부터 보다 처럼 마다 조차 밖에 이나 이랑 랑 하고 에는 에서는 으로는 로는 에도
    에서도 으로도 로도 과는 와는 이라는 라는 이라고 라고 이란 이야 이며 이고 이다 이었다 였다
    이었던 였던 인가 일까 입니다 이에요 예요 이지 들 들이 들을 들은 들의 들에게 들도 들과 뿐 만큼
    대로 의해 에의 으로의 로의 에서의 과의 와의 까지의 부터의 에서부터 까지는 부터는 만은 만이 만을
    이든 든""".split()
)
# `Notion에`, `10에서`: a particle glued to a Latin word or a number is grammar, not content.
# A glued run is 1-4 syllables right after a non-Hangul word character; only one that starts with
# a particle's first syllable can be a particle. Why the pattern opens with that set: CPython then
# skips to those syllables in C instead of testing the lookbehind at every character (3-5x faster).
_PARTICLE_FIRST = "".join(sorted({p[0] for p in PARTICLES}))
_GLUED = re.compile(rf"[{_PARTICLE_FIRST}](?<=[^\W_{_HANGUL}][{_PARTICLE_FIRST}])[{_HANGUL}]{{0,3}}(?![{_HANGUL}])")


def _unglue(text: str) -> str:
    return _GLUED.sub(lambda m: " " if m.group() in PARTICLES else m.group(), text)


# Verbal endings that follow a Sino-Korean noun (설계했다, 지명수배된, 주도하여, 구조적인).
ENDINGS = frozenset(
    """하다 한다 하는 한 할 함 했다 했던 하였다 하였으며 하였고 하여 해서 하고 하며 하면 하지 해야
    했고 했으며 합니다 했습니다 하기 하게 하려 하려고 해 했 하던 할까 하자 되다 된다 되는 된 될
    됨 되었다 되었고 되었으며 되었던 되어 되어서 돼 됐다 됐고 되고 되며 되면 되지 되기 되게 됩니다
    되었습니다 시키다 시킨 시켰다 시키는 시켜 적 적인 적으로 적이다 적이 스럽다 스러운 스럽게 받은
    받았다 받는 당한 당했다""".split()
)
_SUFFIX_MAX = max(len(s) for s in PARTICLES | ENDINGS)

# Why: these carry no topic, appear in most questions and would otherwise count as
# "missing evidence" against every answerable question.
STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for
    with from as into about over after before is are was
    were be been being am do does did done have has had
    having i me my mine you your yours he him his she her
    hers it its we us our they them their this that these
    those there here what which who whom whose when where
    why how not no nor can could would should will shall
    may might must just also very too than any all some
    each both either neither such only own same other s t d
    ll m re ve don doesn didn isn aren wasn weren wouldn couldn shouldn hasn haven hadn mustn needn
    무엇 무엇을 무엇이 무엇인가 무엇인지 뭐 뭐야 뭔가 뭘 누구 누구인가 누가 언제
    어디 어디서 어디에 어떤 어떻게 어느 왜 몇 무슨 얼마 얼마나 그리고 또는 및 혹은 하지만 그러나
    그래서 인가 인지 일까""".split()
)


@functools.cache
def _cjk_char() -> re.Pattern[str]:
    """The scripts counted at 1.5 characters per token: Hangul (with Jamo) and Han/Kana.

    Why: a single U+1100..U+D7A3 range also swallowed punctuation, arrows and Latin Extended (—, →, ệ).
    Why compiled on first use: re builds these ranges' 65,536-entry map in Python (~4 ms), and a
    search without a token budget never estimates tokens."""
    return re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def normalize(text: str) -> str:
    """NFC + casefold: the one form every comparison uses."""
    return unicodedata.normalize("NFC", text).casefold()


_SURROGATE = re.compile("[\ud800-\udfff]")
_UNWRITABLE = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""A lone surrogate, or a control character other than tab, newline and carriage return."""


def well_formed(text: str) -> str:
    """``text`` with each character UTF-8 cannot carry — a lone surrogate: undecodable argv bytes, a JSON
    ``"\\ud800"`` — read as ``�``, so it can be printed as JSON and written to a file."""
    return _SURROGATE.sub("\ufffd", text)


def writable(text: str) -> str:
    """``text`` with each character a note cannot carry read as ``�``: a lone surrogate (:func:`well_formed`)
    and a control character other than tab and line ends (a NUL makes git read the note as binary; an
    escape sequence would drive the terminal of whoever prints it)."""
    return _UNWRITABLE.sub("\ufffd", text)


_korean_cache: dict[str, str] = {}
_english_cache: dict[str, str] = {}


def korean_stem(word: str) -> str:
    """Strip particles and common verbal endings from one Hangul word (two passes at most)."""
    cached = _korean_cache.get(word)
    if cached is not None:
        return cached
    stem = word
    for _ in range(2):
        cut = _strip_once(stem)
        if cut == stem:
            break
        stem = cut
    _korean_cache[word] = stem
    return stem


def _strip_once(word: str) -> str:
    n = len(word)
    for size in range(min(_SUFFIX_MAX, n - MIN_STEM), 0, -1):
        suffix = word[n - size :]
        if suffix in PARTICLES or suffix in ENDINGS:
            return word[: n - size]
    return word


def english_stem(word: str) -> str:
    """A light, deterministic stemmer: plural, -ing, -ed and a trailing e (bakes/baked/baking → bak); a
    common irregular verb's past forms as its base (bought → buy, taken → tak)."""
    cached = _english_cache.get(word)
    if cached is not None:
        return cached
    w = word.replace("’", "'").split("'")[0]  # Caroline's → caroline, I'm → i
    w = IRREGULAR.get(w, w)
    if len(w) > 3:
        if w.endswith("ies") and len(w) > 4:
            w = w[:-3] + "y"
        elif w.endswith(("sses", "xes", "ches", "shes", "zes")):
            w = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        if w.endswith("ing") and len(w) > 5 and _has_vowel(w[:-3]):
            w = _undouble(w[:-3])
        elif w.endswith("ied") and len(w) > 4:
            w = w[:-3] + "y"
        elif w.endswith("ed") and not w.endswith("eed") and len(w) > 4 and _has_vowel(w[:-2]):
            w = _undouble(w[:-2])
        if w.endswith("e") and len(w) > 3:
            w = w[:-1]
    _english_cache[word] = w
    return w


def _has_vowel(s: str) -> bool:
    return any(c in "aeiouy" for c in s)


def _undouble(s: str) -> str:
    if len(s) > 2 and s[-1] == s[-2] and s[-1] not in "lsz":
        return s[:-1]
    return s


def terms(text: str) -> list[str]:
    """Index terms of a text, in order, repeats kept (see the module docstring)."""
    out = words_and_terms(text)[1]
    return list(filter(None, out)) if "" in out else out


def words_and_terms(text: str) -> tuple[list[str], list[str]]:
    """The words of a text and, aligned with them, each word's index term ('' for a stopword)."""
    found = words(text)
    try:  # why itemgetter: one C-level pass over the words
        if len(found) > 1:
            return found, list(itemgetter(*found)(_term_cache))
        return found, [_term_cache[w] for w in found]
    except KeyError:  # a word seen for the first time
        return found, [_term(w) if t is None else t for w, t in zip(found, map(_term_cache.get, found))]


def words(text: str) -> list[str]:
    """The words of a text, normalized, in order: what :func:`term` makes index terms of."""
    return _WORD.findall(_unglue(normalize(text)))


def term(word: str) -> str:
    """The index term of one word of :func:`words` ('' for a stopword)."""
    found = _term_cache.get(word)
    return _term(word) if found is None else found


def terms_with_surface(text: str) -> list[tuple[str, str]]:
    """(index term, the word it came from) pairs: keywords show people the word, not the stem."""
    return list(_pairs(text))


def _pairs(text: str) -> Iterator[tuple[str, str]]:
    for tok in words(text):
        found = term(tok)
        if found:
            yield found, tok


def first_surfaces(text: str, wanted: set[str]) -> dict[str, str]:
    """The first word of ``text`` that yields each wanted term (keywords show words, not stems).

    Why not a process-wide term → word memo: the word would come from whatever the process read
    first (another note, a query), so tree-index.json would depend on the process's history.
    """
    found: dict[str, str] = {}
    for term, word in _pairs(text):
        if term in wanted and term not in found:
            found[term] = word
            if len(found) == len(wanted):
                break
    return found


def _term(tok: str) -> str:
    """The index term of one token ('' for a stopword), memoized."""
    if tok in STOPWORDS:
        term = ""
    elif is_hangul(tok):
        term = korean_stem(tok)
    elif not is_cjk(tok) and not tok[0].isdigit():
        term = english_stem(tok)
    else:
        term = tok
    if term in STOPWORDS:
        term = ""
    if len(_term_cache) < _TERM_CACHE_MAX:
        _term_cache[tok] = term
    return term


# Why: a question word typed together with its noun or counter (몇층, 몇년도, 어느나라, 무슨일) hides the
# word a note holds (3층, 1998년도, 나라) inside a term no note can hold
_ASKING = ("어떠한", "어떤", "어느", "무슨", "몇")


def _unask(term: str) -> str:
    """A query term without a question word glued to its front (``몇층`` → ``층``); '' if nothing is left."""
    if not term.startswith(_ASKING):  # most terms: one C call, not one per question word
        return term
    for head in _ASKING:
        if term.startswith(head) and len(term) > len(head) and is_hangul(term):
            rest = korean_stem(term[len(head) :])
            # a bare counter (층, 년, 명) prefixes half the vocabulary: it asks, it names nothing
            return "" if len(rest) < 2 or rest in STOPWORDS else rest
    return term


_HOW = frozenset("many much long often far old soon".split())
"""Words that ask with ``how`` (how many, how long, how often): part of the question word, like ``몇``;
the answer says "three weeks", not "many"."""


_WHAT = frozenset(english_stem(w) for w in "time day year month date kind sort type".split())
"""Words that ask with ``what`` or ``which`` (what time, which year, what kind): the answer says "9:30",
"2022" or "jazz", not "time"."""
_ASKS_WITH = {"how": _HOW, "what": _WHAT, "which": _WHAT}
_ASKING_WORDS = _HOW | _WHAT


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in first-seen order, without the question words: a Korean one glued to a
    noun split off (``몇층`` → ``층``), the word after an English ``how`` that asks a quantity, or after
    ``what``/``which`` that asks a time or a kind, dropped."""
    found, each = words_and_terms(text)
    asked = (
        t for i, t in enumerate(each) if t and not (t in _ASKING_WORDS and i and t in _ASKS_WITH.get(found[i - 1], ()))
    )
    return list(dict.fromkeys(t for t in map(_unask, asked) if t))


def estimate_tokens(text: str) -> int:
    """CJK-aware token estimate: 1.5 characters per token for CJK, 4.0 for everything else."""
    match = _cjk_char().match
    cjk = sum(1 for c in text if match(c))
    other = len(text) - cjk
    return int(cjk / 1.5 + other / 4.0 + 0.999)
