"""How much of a query a chunk answers: clause-level, IDF-weighted evidence (pure, no I/O).

A query is what an agent sends: often the user's whole message — a greeting, some context, the
question, an unrelated aside, a polite close. Judging a chunk by the share of *every* query word
it holds punishes a question for being polite or long, so evidence is judged per clause:

    coverage(chunk) = max over clauses K of  Σ_{q∈K} w(q)·strength(q) / Σ_{q∈K} w(q)

with ``w(q)`` the term's IDF. A term the memory does not hold (df = 0) keeps its full weight —
a missing name is the best sign that the memory cannot answer — unless its form says it is a
conversational predicate (``알려주실``, ``궁금합니다``, ``하셨어요``) or stray jamo (``ㅎㅎ``):
those carry no topic, and no memory would hold them. A word that frames the question (``likely``,
``answer`` yes or no, what did X ``say``) weighs nothing, held or not. A day (memtree.text.dates) counts when a note is
about it and weighs nothing when none is: most notes carry no date. The clauses, and which of them ask, are
memtree.search.message's (a sentence of the message, or part of one cut at a connective); a
one-sentence question is judged exactly as a whole. A request to the listener beside another
question (``Any idea?``, ``Can you check?``) asks nothing of memory: it is an aside.

Very long inputs are bounded: past ``MAX_TERMS`` distinct terms, the most informative present
terms (highest IDF) are kept, so a pasted page is searched by its rarest words, the same way
every time.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from operator import itemgetter, mul

from memtree.search import message
from memtree.text import terms as text

MAX_TERMS = 48
"""Distinct query terms searched at most; why: a pasted 3,000-character prompt has hundreds."""
_JAMO = re.compile(r"[\u3130-\u318f]+")
# Why: endings of Korean conversational predicates — polite, interrogative and connective forms
# that never name a topic. Nouns (names above all) do not end this way.
_PREDICATE_ENDINGS = tuple(
    """요 니다 니까 습니까 나요 까요 죠 지요 네요 군요 는데 은데 건데 던데 는지 은지 건지 던지 거든
    거든요 면서 다가 려고 려면 겠다 겠어 었어 았어 였어 했어 셨어 세요 으세요 실까 드려 드릴 었지 았지 였지
    했지 겠지 었나 았나 였나 했나 었니 았니 했니 시오 줘 줄래""".split()
)


_SHORT_PREDICATES = frozenset("해요 돼요 봐요 줘요 와요 가요 나요 까요 네요 세요 죠요 데요 게요 래요".split())


def is_predicate_form(term: str) -> bool:
    """A Hangul term shaped like a conversational predicate (``있나요``, ``궁금합니다``), or stray jamo."""
    if _JAMO.fullmatch(term):
        return True
    if not text.is_hangul(term) or len(term) < 2 or not term.endswith(_PREDICATE_ENDINGS):
        return False
    # Why: 필요, 중요, 주요 are nouns; a bare 요 ending marks a predicate only after a stem (했어요, 하셨어요)
    return len(term) >= 3 or not term.endswith("요") or term in _SHORT_PREDICATES


_DATE_UNITS = frozenset(
    """월 일 년 시 분 jan january feb february mar march apr april may jun june jul july aug august sep sept
    september oct october nov november dec december st nd rd th""".split()
    # a weekday says when, not what: "on Sunday", "일요일 회의" (a note writes the day as a date, if at all)
    + [text.term(w) for w in "monday tuesday wednesday thursday friday saturday sunday".split()]
    + "월요일 화요일 수요일 목요일 금요일 토요일 일요일".split()
)


# Why: words that frame a question (would X *likely* …, *answer* yes or no, what did X *say* or
# *mention*, the *topic* of *discussion*) rather than name its topic: a chunk holding them proves
# nothing, and a memory lacking them may still answer
_FRAMING = frozenset(
    text.english_stem(w)
    for w in """likely unlikely probably possibly perhaps maybe answer answering yes guess based
    mention mentioned say said tell told talk talked discuss discussed discussion topic""".split()
) | frozenset(
    # 거/것: "정한 거", the thing asked about, named by the words before it; a chat's by-the-way and
    # perhaps (근데, 혹시) and its do-you-know, do-you-remember (알아?, 기억나?)
    "거 것 근데 그런데 그럼 혹시 혹시나 알아 알아요 아세요 아니 기억나 기억나요 기억나니".split()
)


# Why: a chat's fillers — a greeting, thanks, an apology, "quick question" — said in the question's own
# sentence ("Sorry to bother you again, but what …"); a memory of chats holds them, and then they count
_CHAT = frozenset(
    text.term(w)
    for w in "quick q question hey hi hello thanks thx sorry bother again please pls btw ugh ok okay lol".split()
)


def proves_little(term: str) -> bool:
    """A term whose absence from memory is no sign the memory cannot answer.

    Why: a conversational predicate, a chat's filler (``sorry``, ``quick question``), or a word that
    frames the question (``likely``, ``answer`` yes or no), names no topic; a day (``@d…``), a day or
    month number (``3``, ``12``), a date unit (``월``, ``일``) or a weekday is how a date was written —
    most notes carry none, or write it another way (``2026-03-02``); a four-digit year still counts.
    """
    if is_predicate_form(term) or term in _FRAMING or term.startswith("@") or term in _DATE_UNITS or term in _CHAT:
        return True
    return term.isdigit() and len(term) <= 2


def clauses(
    query: str,
    qterms: Sequence[str],
    today: date | None = None,
    aliases: Mapping[str, str] | None = None,
    asking: bool = False,
) -> list[tuple[int, ...]]:
    """The query's clauses as indexes into ``qterms`` (its distinct terms); one clause for a plain question.

    A day a clause names (memtree.text.dates' ``@d…`` terms, relative ones read against ``today``)
    belongs to that clause alone: "last week we had a problem" is context, not a filter on the rest.
    With ``asking``, only the clauses of the sentences that ask — and none (an empty list) when
    every sentence asks or none does, so that nothing stands apart as the question. Why a whole
    sentence: a Korean connective cuts a question in clauses (``…화 되면서 생긴 반대운동은?``).
    """
    parts = message.read(query, today).parts
    asked = {at for _, asks, at in parts if asks}  # the sentences that ask, each with all its clauses
    if asking and (not asked or all(at in asked for _, _, at in parts)):
        return []
    where = {t: i for i, t in enumerate(qterms)}
    out: list[tuple[int, ...]] = []
    for said, _, at in parts:
        if asking and at not in asked:
            continue
        if aliases:
            said = tuple(aliases.get(t, t) for t in said)
        idx = tuple(dict.fromkeys(where[t] for t in said if t in where))
        if idx and idx not in out:
            out.append(idx)
    return out or ([] if asking else [tuple(range(len(qterms)))])


@dataclass(frozen=True)
class Weights:
    """Per query term: its evidence weight (IDF, or 0 for a predicate form memory cannot hold)."""

    weights: tuple[float, ...]
    clauses: tuple[tuple[int, ...], ...]
    whole: float = 0.0  # the total weight when the one clause is the whole query: coverage's fast path
    question: tuple[tuple[int, ...], ...] = ()  # the clauses of the sentences that ask, when others do not
    # per clause with any weight: its terms' weights and indexes, and its total weight
    weighed: tuple[tuple[tuple[float, ...], tuple[int, ...], float], ...] = field(init=False, repr=False)
    # per query term, the weighed clauses holding it; per weighed clause, what reads its terms' strengths
    _touching: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    _gather: tuple[Callable[[Sequence[float]], tuple[float, ...]], ...] = field(init=False, repr=False, compare=False)
    # per weighed clause, whether it is one of the question's (``question.clauses``)
    _asked: tuple[bool, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        w = self.weights
        weighed = []
        for clause in self.clauses:
            total = sum(w[i] for i in clause)
            if total > 0:
                weighed.append((tuple(w[i] for i in clause), clause, total))
        touching: list[list[int]] = [[] for _ in w]
        for c, (_, clause, _) in enumerate(weighed):
            for i in clause:
                touching[i].append(c)
        object.__setattr__(self, "weighed", tuple(weighed))
        object.__setattr__(self, "_touching", tuple(map(tuple, touching)))
        object.__setattr__(self, "_gather", tuple(_gatherer(clause) for _, clause, _ in weighed))
        asked = frozenset(self.question)
        object.__setattr__(self, "_asked", tuple(clause in asked for _, clause, _ in weighed))

    def coverage(self, strengths: Sequence[float]) -> float:
        """The weighted share of the question a chunk holds, which rejection judges (strengths 0..1 per term).

        The best clause's share among the sentences that ask, when some sentence stands apart as the
        question; else the best clause's of the whole message. Why the question alone: a chunk that
        holds the greeting, the request or the aside of a message ("Good evening!", "…약속도 잡아야
        해요") answers nothing asked, and judged by every clause it would keep an agent from hearing
        "not in memory" for one in two chat messages memory cannot answer (docs/concepts/scoring.md, "Long prompts").
        """
        return self.shares(strengths, 1.0)[0]

    def answered(self, strengths: Sequence[float], aside: float) -> float:
        """The share of the question a chunk answers, which its rank is scaled by (0..1).

        :meth:`coverage`, or ``aside`` × the best clause's of the whole message when larger, so that
        of two chunks missing the question, the one holding more of the message ranks first.
        """
        return self.shares(strengths, aside)[1]

    def shares(self, strengths: Sequence[float], aside: float) -> tuple[float, float]:
        """(:meth:`coverage`, :meth:`answered`) in one look at the clauses: the question's clauses
        are among the message's."""
        if self.whole:  # a plain question: one weighted share
            got = sum(map(mul, self.weights, strengths)) / self.whole
            return got, got
        # Why only the clauses a matched term is in: a chunk holds few words of a long message, and a
        # clause it holds none of has a share of 0
        touched: set[int] = set()
        touching = self._touching
        for i in itertools.compress(range(len(touching)), strengths):
            touched.update(touching[i])
        best = in_question = 0.0
        weighed, gather, asked = self.weighed, self._gather, self._asked
        for c in touched:
            got = sum(map(mul, weighed[c][0], gather[c](strengths))) / weighed[c][2]
            if got > best:
                best = got
            if got > in_question and asked[c]:
                in_question = got
        if not self.question:
            return best, best
        return in_question, max(in_question, aside * best)

    def lightest(self) -> tuple[float, float]:
        """The smallest total weight of a weighed clause, and of a weighed clause of the question (0 if none)."""
        totals = [total for _, _, total in self.weighed]
        asked = [total for total, a in zip(totals, self._asked) if a]
        return min(totals, default=0.0), min(asked, default=0.0)


def _gatherer(clause: tuple[int, ...]) -> Callable[[Sequence[float]], tuple[float, ...]]:
    """What reads a clause's terms' strengths, in the clause's order, from a row of all of them."""
    if len(clause) == 1:
        only = clause[0]
        return lambda strengths: (strengths[only],)
    return itemgetter(*clause)


def weigh(
    query: str,
    qterms: Sequence[str],
    idfs: Sequence[float],
    dfs: Sequence[int],
    today: date | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Weights:
    """Evidence weights and clauses for a query whose terms have these IDFs and document frequencies."""
    # a written date's words (7, jan, 2024) are evidenced by its day term, matched or not; a framing
    # word weighs nothing, held or not
    written = message.read(query, today).written
    weights = tuple(
        0.0 if q in written or q in _FRAMING or (df == 0 and proves_little(q)) else idf
        for q, idf, df in zip(qterms, idfs, dfs)
    )
    parts = tuple(clauses(query, qterms, today, aliases))
    whole = sum(weights) if len(parts) == 1 and len(parts[0]) == len(weights) else 0.0
    asked = tuple(clauses(query, qterms, today, aliases, asking=True))
    if not any(weights[i] for clause in asked for i in clause):
        # Why: a question that names nothing memory could hold ("혹시 아세요?" after "X 말인데요.") is no
        # question to judge by; its topic is in the sentences around it, so the message is judged whole
        asked = ()
    return Weights(weights, parts, whole, asked)


def bounded(qterms: Sequence[str], dfs: Sequence[int], limit: int = MAX_TERMS) -> list[str]:
    """At most ``limit`` terms: the rarest the memory holds (ties by first use), in query order."""
    if len(qterms) <= limit:
        return list(qterms)
    present = sorted((df, i) for i, df in enumerate(dfs) if df > 0)
    if not present:  # nothing the memory holds: the first words make the rejection's reason
        return list(qterms[:limit])
    keep = sorted(i for _, i in present[:limit])
    return [qterms[i] for i in keep]


# at most two gaps between words, none a line break: words side by side, or one word apart
_NEAR = re.compile(r"\S*(?:[^\S\n]+\S*){0,2}")
_SENTENCE_END = re.compile(r"[.?!。？！]\s")


@dataclass(frozen=True)
class Pairs:
    """The question's neighbouring word pairs, as query-term indexes with their weights.

    Why: of two paragraphs of one article holding the same query words, the one that answers
    usually says them together (``노아의 방주``, ``time management``) — the one that mentions
    them apart is about something else. A clause's weighted terms taken in query order make the
    pairs (a message's aside clauses left out when one clause asks, as :func:`boosts` reads
    them; a day term is no word of the text); each pair weighs its lighter term's weight.
    """

    pairs: tuple[tuple[int, int, float], ...] = ()
    total: float = 0.0
    hangul: bool = False  # every pair's words are written in Hangul alone, which casefold leaves as they are

    def possible(self, strengths: Sequence[float]) -> float:
        """The most adjacency a chunk can have before its text is read: a pair needs both its words."""
        if not self.total:
            return 1.0
        held = 0.0  # added in the order adjacency adds, so a chunk with every pair side by side reaches it exactly
        for a, b, w in self.pairs:
            if strengths[a] and strengths[b]:
                held += w
        return held / self.total

    def adjacency(self, chunk_text: str, qterms: Sequence[str], strengths: Sequence[float]) -> float:
        """The weighted share of the pairs that stand side by side in the chunk (1.0 with no pair to judge).

        A pair stands side by side when its words are in the same word, neighbouring words, or
        one word apart (``first half *of* September``, a particle or an article between), in one
        sentence of one line. Only pairs whose words the chunk holds (``strengths``) are looked
        for, so it never exceeds :meth:`possible`.
        """
        if not self.total:
            return 1.0
        low = ""
        found: dict[int, list[int]] = {}  # each word's places, looked up once per chunk
        near = 0.0
        for a, b, w in self.pairs:
            if not (strengths[a] and strengths[b]):
                continue
            if not low:
                # Why NFC alone for Hangul words: casefold changes no Hangul letter, space or sentence mark
                # and makes none (tests/test_evidence.py asks every character), so where they stand and what
                # stands between them read the same, and casefolding a Korean paragraph costs more than the rest
                low = unicodedata.normalize("NFC", chunk_text) if self.hangul else text.normalize(chunk_text)
            at_a = found.get(a)
            if at_a is None:
                at_a = found[a] = _occurrences(low, qterms[a])
            at_b = found.get(b)
            if at_b is None:
                at_b = found[b] = _occurrences(low, qterms[b])
            if at_a and at_b and _any_side_by_side(low, at_a, at_b):
                near += w
        return near / self.total


def pairs(qterms: Sequence[str], judged: Weights, lift: Sequence[float] | None = None) -> Pairs:
    """The pairs :class:`Pairs` judges, for a query's terms, evidence weights and question lift."""
    w = judged.weights
    out: list[tuple[int, int, float]] = []
    for clause in judged.clauses:
        asked = [i for i in clause if w[i] > 0 and qterms[i][0] != "@" and (lift is None or lift[i] >= 1.0)]
        out.extend((a, b, min(w[a], w[b])) for a, b in itertools.pairwise(asked))
    # a term that starts with a Hangul syllable holds Hangul alone: the tokenizer cuts words where the script changes
    hangul = all(text.is_hangul(qterms[i]) for a, b, _ in out for i in (a, b))
    return Pairs(tuple(out), sum(weight for _, _, weight in out), hangul)


def _occurrences(low: str, term: str) -> list[int]:
    """Where a term stands in a chunk's normalized text, in order: a Hangul stem of two syllables or more
    anywhere (its particles and its compounds follow or precede it), any other term where a word starts —
    after a space or a mark, or where the script changes (``2017년``, ``notion에``)."""
    at = low.find(term)
    if at < 0:
        return []
    hangul = text.is_hangul(term)
    anywhere = hangul and len(term) >= 2
    out = []
    while at >= 0:
        if anywhere or at == 0:
            out.append(at)
        else:
            before = low[at - 1]
            if not before.isalnum() or hangul != text.is_hangul(before):
                out.append(at)
        at = low.find(term, at + 1)
    return out


def _any_side_by_side(low: str, at_a: list[int], at_b: list[int]) -> bool:
    """Whether an occurrence of one word is side by side with one of the other: only the nearest on each
    side needs a look, as any farther one has at least as many words and sentence ends between."""
    for x in at_a:
        j = bisect.bisect_left(at_b, x)
        if j < len(at_b) and at_b[j] == x:  # one word the prefix of the other, at one place: the next
            j += 1
        if (j < len(at_b) and _side_by_side(low, x, at_b[j])) or (j > 0 and _side_by_side(low, at_b[j - 1], x)):
            return True
    return False


def _side_by_side(low: str, lo: int, hi: int) -> bool:
    """Whether the words at offsets ``lo`` < ``hi`` are the same word, neighbours, or one word apart, in
    one sentence of one line."""
    # Why one match from lo: it stops at a third gap or a line break, so words far apart cost a few words' scan
    return _NEAR.fullmatch(low, lo, hi) is not None and not _SENTENCE_END.search(low, lo, hi)


def boosts(
    query: str, qterms: Sequence[str], today: date | None, aside: float, aliases: Mapping[str, str] | None = None
) -> list[float] | None:
    """Per query term, how much of the BM25 score it may carry: the question's words 1, the rest ``aside``.

    None for a plain question, or a message whose clauses all ask (or none does): then every word
    counts alike.
    """
    parts = message.read(query, today).parts
    if len(parts) < 2:
        return None
    asking = [asks for _, asks, _ in parts]
    if all(asking) or not any(asking):
        return None
    where = {t: i for i, t in enumerate(qterms)}
    out = [aside] * len(qterms)
    for said, asks, _ in parts:
        if asks:
            for t in said:
                t = aliases.get(t, t) if aliases else t
                if t in where:
                    out[where[t]] = 1.0
    return out
