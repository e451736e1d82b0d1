"""Verbose dev sets: every benchmark question rewritten as the chat message an agent would pass on.

memtree is measured on short, tidy questions ("임종석을 검거한 장소는 경희대 내 어디인가?"), but an
agent usually searches with the user's whole message: a greeting, some context, the question, an
unrelated second thought and a polite close. This script rewrites each question of the KorQuAD
(Korean) and LoCoMo (English) dev sets that way and writes trees that ``score.py`` scores exactly
like the short ones: same docs, same held-out groups, same ids, categories, answers and relevant
spans — only ``query`` differs.

    python bench/verbose.py ../shared/bench OUT [--datasets korquad,locomo]

writes OUT/korquad-verbose/ and OUT/locomo-verbose/: each is the tree ``materialize.py`` makes for the
short set, with the verbose ``queries.jsonl`` (the short one is kept as ``queries.short.jsonl``).
Build the index with ``memtree index --root OUT/korquad-verbose`` and score as usual;
``bench/quality.py --verbose`` does all of it beside the short sets.

The rewrite is deterministic: a ``random.Random`` seeded by a SHA-256 of the query id (no network, no
model, same text on every machine and run). The question itself is kept verbatim; sometimes only its
last ending is made polite (``어디인가?`` → ``어디인지 알려주실 수 있나요?``; ``When did …?`` →
``Can you tell me: when did …?``). Filler comes from generic pools (≥ 15 options per slot), and an
option that shares a word with the question is never chosen, so the filler adds noise but never
repeats the question's own words. Length mix: about 20 % short (greeting + question), 60 % medium
(2–4 clauses), 20 % long (a paragraph: 150–300 Korean characters / 60–120 English words).
Stdlib only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

VERSION = "verbose-v1"  # part of the seed: bump it to get a different (still deterministic) set
DATASETS = ("korquad", "locomo")
SUFFIX = "-verbose"
SHORT_QUERIES = "queries.short.jsonl"

# ---------------------------------------------------------------------------------------------
# Pools. Keep them generic: no word that would be topical for a particular article or session.
# ---------------------------------------------------------------------------------------------

KO: dict[str, tuple[str, ...]] = {
    "greet": (
        "안녕하세요!",
        "안녕하세요~",
        "저기요,",
        "혹시…",
        "안녕하세요, 혹시",
        "저기 혹시요,",
        "질문 하나만 드려도 될까요?",
        "실례지만",
        "잠깐 여쭤볼게요.",
        "안녕하세요 ㅎㅎ",
        "좋은 아침입니다!",
        "수고 많으십니다.",
        "질문 있어요!",
        "여쭤볼 게 있는데요,",
        "바쁘신데 죄송해요,",
        "저 왔어요~",
        "하나만 물어볼게요.",
    ),
    # context that leads into the question (ends in a connective or a short sentence)
    "lead": (
        "요즘 이것저것 공부하고 있는데",
        "어제 친구랑 얘기하다가 궁금해졌어요.",
        "발표 자료 준비 중인데",
        "보고서를 쓰다가 막혀서 그러는데",
        "아까 책을 읽다가 문득 생각났는데",
        "동생이 물어봤는데 저도 잘 모르겠어서요.",
        "시험 준비를 하다 보니",
        "예전에 들은 것 같은데 기억이 가물가물해서요.",
        "퀴즈에 나왔는데",
        "정리하던 메모를 다시 보다가",
        "회사 동료가 지나가면서 물어봤는데",
        "글을 쓰다가 확인이 필요해서요.",
        "부모님이 물어보셔서 찾아보는 중인데",
        "스터디 모임에서 얘기가 나왔는데",
        "방금 생각난 건데",
        "과제 때문에 그러는데",
        "기억이 잘 안 나서 그런데",
    ),
    # a second, unrelated clause
    "aside": (
        "그리고 내일 회의 시간도 다시 확인해야겠네요.",
        "아 맞다, 오후에 택배 올 거예요.",
        "그나저나 오늘 점심 뭐 먹을지 고민이에요.",
        "참고로 이번 주는 일정이 좀 빡빡해요.",
        "이따가 메일 답장도 보내야 하고요.",
        "그리고 저녁에 장 볼 것도 메모해 둬야겠어요.",
        "아 그리고 다음 주 약속도 잡아야 해요.",
        "휴대폰 배터리가 얼마 안 남았네요.",
        "내일 아침 알람 맞추는 거 잊지 말아야지.",
        "오늘따라 인터넷이 좀 느리네요.",
        "그리고 프린터 잉크도 사야 하는데.",
        "아 참, 이번 달 공과금도 내야 해요.",
        "그건 그렇고 주말에 대청소해야겠어요.",
        "나중에 화분에 물 주는 것도 잊으면 안 돼요.",
        "그리고 오늘 저녁 약속 장소도 정해야 하네요.",
        "커피를 너무 많이 마셨나 봐요.",
    ),
    "close": (
        "감사합니다!",
        "부탁드려요 ㅎㅎ",
        "미리 감사드려요.",
        "고맙습니다~",
        "답변 기다릴게요!",
        "알려주시면 정말 감사하겠습니다.",
        "도와주셔서 감사해요.",
        "늘 감사합니다 :)",
        "바쁘실 텐데 감사합니다.",
        "부탁 좀 드릴게요!",
        "고마워요!",
        "그럼 부탁드립니다.",
        "항상 고마워요 ㅎㅎ",
        "답 주시면 감사하겠습니다.",
        "좋은 하루 되세요!",
    ),
    # whole sentences, for long messages
    "long": (
        "사실 지난주부터 주말마다 자료를 찾아보고 있는데 정리가 생각보다 잘 안 되더라고요.",
        "메모를 여기저기 흩어 놓다 보니 막상 필요할 때 찾기가 너무 어렵네요.",
        "며칠 전에 분명히 어디선가 봤던 내용인데 도무지 떠오르지가 않아서 답답해요.",
        "같이 정리하는 문서가 있는데 제가 맡은 부분을 아직 못 채웠거든요.",
        "이런 걸 물어봐도 되나 싶긴 한데 혼자 찾다가 시간이 너무 많이 가서 여쭤봐요.",
        "오늘 하루 종일 이것저것 하느라 정신이 없어서 머리가 잘 안 돌아가네요.",
        "검색을 해 봐도 말이 조금씩 달라서 뭐가 맞는지 헷갈려요.",
        "다음 주까지 마무리해야 하는 일이 있어서 미리 확인해 두고 싶어요.",
        "예전에 한 번 정리해 둔 적이 있는 것 같은데 파일을 못 찾겠어요.",
        "친구들이랑 내기를 했는데 다들 기억하는 게 달라서 결론이 안 났어요.",
        "제가 잘못 알고 있는 건지 확인하고 싶어서 그래요.",
        "요즘 기억력이 예전 같지 않아서 자꾸 이렇게 여쭤보게 되네요.",
        "간단한 건데 막상 설명하려니까 정확하게 말을 못 하겠더라고요.",
        "자세히는 몰라도 되고 핵심만 짚어 주시면 충분할 것 같아요.",
        "틀리게 적으면 곤란해서 한 번 더 확인하려고요.",
        "아까부터 계속 찾고 있었는데 마땅한 답을 못 찾았어요.",
    ),
    # after "…인지" / "…는지" (a rewritten ending)
    "tail_ji": (
        "알려주실 수 있나요?",
        "궁금합니다.",
        "아시나요?",
        "알 수 있을까요?",
        "좀 알려주세요.",
        "궁금해요.",
        "여쭤봐도 될까요?",
        "확인해 주실 수 있을까요?",
        "아시는 분 계신가요?",
        "가르쳐 주실 수 있나요?",
        "궁금하네요.",
        "혹시 아세요?",
        "찾아봐 주실 수 있나요?",
        "알려주시면 감사하겠습니다.",
        "기억나시나요?",
    ),
    # after the whole question, "?" kept
    "tail_q": (
        "혹시 아시나요?",
        "이게 궁금해요.",
        "이거 알려주실 수 있나요?",
        "아시는 분 계실까요?",
        "알려주시면 좋겠어요.",
        "이게 계속 헷갈리네요.",
        "이 부분이 궁금합니다.",
        "답 좀 부탁드려요.",
        "이것 좀 알려주세요.",
        "찾아봐 주실 수 있을까요?",
        "이게 맞게 기억하는 건지 모르겠어요.",
        "확인 좀 부탁드릴게요.",
        "정확히 알고 싶어요.",
        "이거 아세요?",
        "짧게라도 답해 주시면 좋겠어요.",
    ),
}

EN: dict[str, tuple[str, ...]] = {
    "greet": (
        "Hi there!",
        "Hey, quick question.",
        "Hello!",
        "Hi,",
        "Hey!",
        "Morning!",
        "Hi again,",
        "Hey there,",
        "Hello, hope you're well.",
        "Sorry to bother you,",
        "Hiya,",
        "Good evening!",
        "Quick one:",
        "Hey, hope your day is going fine.",
        "Hi, hope all is good.",
        "Okay so,",
    ),
    "lead": (
        "I was going through my notes from last month and",
        "my sister asked me about this and I couldn't remember.",
        "I'm putting together a timeline and",
        "this came up over coffee yesterday and",
        "I was scrolling back through old messages and",
        "a friend brought this up earlier and",
        "I'm trying to refresh my memory here:",
        "I've been meaning to ask,",
        "I keep forgetting this one,",
        "for a summary I'm writing,",
        "before I forget,",
        "I was just thinking about this and",
        "my roommate and I were debating this,",
        "I'm updating my notes and",
        "I need this for something I'm drafting,",
        "it popped into my head earlier,",
    ),
    "aside": (
        "Also remind me to water the plants later.",
        "Oh and I still need to reply to that email.",
        "By the way, the meeting got moved again.",
        "And I should probably charge my phone soon.",
        "Also, don't let me forget the grocery list.",
        "Anyway, I have a call in an hour.",
        "Also can you remind me to back up my laptop tonight?",
        "Unrelated, but the wifi has been slow all day.",
        "And I need to book a dentist appointment sometime.",
        "Oh, and remind me to pay the electricity bill.",
        "Also I have to pick up a package tomorrow.",
        "Side note: my calendar is a mess this week.",
        "Plus I still haven't answered those texts.",
        "And remind me to renew the parking permit.",
        "Also, let's set a reminder for the printer ink.",
    ),
    "close": (
        "Thanks so much!",
        "Appreciate it.",
        "Thanks!",
        "Thank you in advance.",
        "Cheers!",
        "Thanks a bunch.",
        "Much appreciated!",
        "Thanks, you're a lifesaver.",
        "Let me know, thanks.",
        "No rush, thanks!",
        "Thanks again!",
        "Ty!",
        "Thank you!!",
        "Grateful for any help.",
        "Thanks, talk soon.",
    ),
    "long": (
        "I've been trying to get my notes in order because everything is scattered across different apps.",
        "It's one of those things I'm sure I knew at some point but it just won't come back to me.",
        "I looked for it myself for a while but honestly I'm not even sure where to start.",
        "There's a document I'm supposed to finish this week and I'm stuck on the details.",
        "I don't need a long explanation, just the key point is fine.",
        "My memory has been terrible lately so I'm double-checking everything.",
        "I'd rather ask than write down something wrong and have to fix it afterwards.",
        "It's been a really hectic day and my brain is a bit fried, sorry.",
        "We argued about it for a good ten minutes and nobody could settle it.",
        "I thought I had written it down somewhere but I can't find the page.",
        "It's a small thing but it has been bugging me since this morning.",
        "I want to make sure I get it right before I mention it to anyone else.",
        "I tried searching my messages but the results were all over the place.",
        "No need to be super precise, a rough answer would already help a lot.",
        "I keep mixing it up with something else, which is why I'm asking.",
        "Sorry if this seems random, I'm just tidying up loose ends.",
    ),
    # prefixes before the question (its first word lower-cased when it is a question word)
    "ask": (
        "Can you tell me:",
        "Do you remember?",
        "Quick check:",
        "I'm wondering,",
        "Any chance you know this:",
        "Could you remind me,",
        "Do you happen to know,",
        "Help me out here:",
        "Question for you:",
        "I can't recall,",
        "Remind me,",
        "Just curious,",
        "Let me ask this:",
        "Here's my question:",
        "Can you look this up for me?",
    ),
    # after the question
    "tail_q": (
        "Any idea?",
        "I can't remember.",
        "Do you know?",
        "Not sure myself.",
        "Can you check?",
        "I've forgotten.",
        "Would love to know.",
        "Any clue?",
        "It's slipped my mind.",
        "Can you look it up?",
        "I'm blanking on it.",
        "Drawing a total blank here.",
        "Curious about that one.",
        "Hmm?",
        "Could you find out?",
    ),
}

POOLS = {"ko": KO, "en": EN}

# English function words a filler may share with the question (they carry no topic).
EN_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from as into about over after
    before up out is are was were be been being am do does did done have has had i me my mine you
    your yours he him his she her hers it its we us our they them their this that these those there
    here what which who whom whose when where why how not no can could would should will may might
    must just also very too than any all some s t d ll m re ve don isn i'm it's""".split()
)
# a question starting with one of these may be lower-cased when it runs on from a lead-in
WH = frozenset(
    """what when where who whom whose which why how did does do is are was were has have had can could
    would will in for according around based after before at on from during""".split()
)

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def is_korean(text: str) -> bool:
    return bool(_HANGUL.search(text))


def words(text: str) -> list[str]:
    """Casefolded word tokens (apostrophes kept inside a word)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.casefold())]


def _en_norm(w: str) -> str:
    for suf in ("'s", "ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


# Korean question words a filler may share with the question ("어디선가" ~ "어디인가": no topic).
KO_WH = ("어디", "무엇", "누구", "누가", "언제", "어떻", "어떤", "어느", "얼마", "무슨", "뭐", "몇", "왜")


@lru_cache(maxsize=8192)
def _question_words(question: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    qw = words(question)
    q_ko = frozenset(w for w in qw if _HANGUL.match(w))
    q_ko2 = frozenset(w[:2] for w in q_ko if len(w) >= 2)
    q_en = frozenset(_en_norm(w) for w in qw if not _HANGUL.match(w) and w not in EN_STOP)
    return q_ko, q_ko2, q_en


@lru_cache(maxsize=4096)
def _filler_words(filler: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(Hangul words, other content words as crude English stems) of a filler string."""
    ko, en = [], []
    for w in words(filler):
        if _HANGUL.match(w):
            if not w.startswith(KO_WH):
                ko.append(w)
        elif w not in EN_STOP:
            en.append(w)
    return tuple(ko), tuple(en)


def clashes(filler: str, question: str) -> set[str]:
    """Words of filler that would repeat a word of question (what a filler must never do).

    Hangul words clash when equal or when they share their first two syllables (``있는데`` ~ ``있는``,
    ``역사`` ~ ``역사적``: a Korean-aware search would match them), question words (어디, 무엇…)
    excepted; other words when equal after a crude English stem, function words excepted.
    """
    q_ko, q_ko2, q_en = _question_words(question)
    ko, en = _filler_words(filler)
    out = {w for w in ko if w in q_ko or (len(w) >= 2 and w[:2] in q_ko2)}
    return out | {w for w in en if _en_norm(w) in q_en}


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


@dataclass
class Verbose:
    """One rewritten question: the message, its length class and the filler strings added."""

    text: str
    kind: str  # "short" | "medium" | "long"
    filler: list[str] = field(default_factory=list)


def rng_for(qid: str) -> random.Random:
    digest = hashlib.sha256(f"{VERSION}:{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class _Picker:
    """Draws pool options that clash with no word of the question, never the same one twice."""

    def __init__(self, rng: random.Random, question: str) -> None:
        self.rng, self.question, self.used, self.filler = rng, question, set(), []

    def __call__(self, options: tuple[str, ...]) -> str | None:
        ok = [o for o in options if o not in self.used and not clashes(o, self.question)]
        if not ok:
            return None
        choice = self.rng.choice(ok)
        self.used.add(choice)
        self.filler.append(choice)
        return choice


# "…인가?" → "…인지 <tail>"; "…했는가?" → "…했는지 <tail>"; "…되었나?" → "…되었는지 <tail>"
_KO_JI = (
    (re.compile(r"인가요?\?\s*$"), "인지"),
    (re.compile(r"는가\?\s*$"), "는지"),
    (re.compile(r"(?<=[었였았했됐웠겼졌])나\?\s*$"), "는지"),
)
_KO_TOPIC = re.compile(r"(?<=[\uac00-\ud7a3])[은는]\?\s*$")


def _ko_question(q: str, pick: _Picker) -> str:
    rng = pick.rng
    r = rng.random()
    if r < 0.40:
        return q
    if r < 0.75:
        for pat, glue in _KO_JI:
            if pat.search(q):
                tail = pick(KO["tail_ji"])
                if tail:
                    return pat.sub(glue, q) + " " + tail
        if _KO_TOPIC.search(q):
            how = pick(("어떻게 되나요?", "어떻게 되는지 궁금합니다.", "어떻게 되는지 알려주실 수 있나요?"))
            if how:
                return q.rstrip().rstrip("?") + " " + how
    tail = pick(KO["tail_q"])
    return q if tail is None else f"{q} {tail}"


def _en_lower_first(q: str) -> str:
    first = q.split(" ", 1)[0]
    return q[0].lower() + q[1:] if first.casefold() in WH else q


def _en_question(q: str, pick: _Picker) -> str:
    r = pick.rng.random()
    if r < 0.45:
        return q
    if r < 0.75:
        ask = pick(EN["ask"])
        if ask:
            return f"{ask} {_en_lower_first(q) if ask[-1] in ',:' else q}"
    tail = pick(EN["tail_q"])
    return q if tail is None else f"{q} {tail}"


def _size(text: str, lang: str) -> int:
    return len(text) if lang == "ko" else len(text.split())


def _en_case(part: str, prev: str, question: str) -> str:
    """Sentence case after ``.!?:``; after ``,`` / ``and`` the part runs on in lower case ("I" and names kept)."""
    if prev[-1:] in ".!?:" or not prev:
        return part[0].upper() + part[1:]
    if prev.endswith(",") or prev.endswith(" and"):
        if part == question or part.startswith(question):
            return _en_lower_first(part)
        first = part.split(" ", 1)[0]
        if first != "I" and not first.startswith("I'"):
            return part[0].lower() + part[1:]
    return part


def _join(parts: list[str], lang: str, question: str = "") -> str:
    parts = [p for p in parts if p]
    if lang == "en":
        parts = [_en_case(p, parts[i - 1] if i else "", question) for i, p in enumerate(parts)]
    return " ".join(parts)


_RUNS_ON = ("혹시", "혹시…", "혹시요,", "실례지만", "Okay so,", "Quick one:")


def compose(qid: str, question: str, lang: str | None = None) -> Verbose:
    """The chat message for one question; the same (qid, question) always gives the same text."""
    lang = lang or ("ko" if is_korean(question) else "en")
    pools = POOLS[lang]
    q = " ".join(question.split())
    rng = rng_for(qid)
    pick = _Picker(rng, q)
    r = rng.random()
    kind = "short" if r < 0.2 else "medium" if r < 0.8 else "long"
    asked = _ko_question(q, pick) if lang == "ko" else _en_question(q, pick)

    if kind == "short":
        parts = [pick(pools["greet"]), asked]
        return Verbose(_join(parts, lang, q), kind, pick.filler)

    if kind == "medium":  # greeting and question, plus 0-2 of lead / aside / close: 2-4 clauses
        extra = rng.sample(["lead", "aside", "close"], rng.choice((1, 1, 2, 2, 2)))
        greet = pick(pools["greet"]) if rng.random() < 0.8 or not extra else None
        lead = pick(pools["lead"]) if "lead" in extra else None
        aside = pick(pools["aside"]) if "aside" in extra else None
        close = pick(pools["close"]) if "close" in extra else None
        parts = [greet, lead, asked, aside, close]
        return Verbose(_join(parts, lang, q), kind, pick.filler)

    # long: a paragraph of 150-300 Korean characters or 60-120 English words
    lo, hi = (150, 300) if lang == "ko" else (60, 120)
    target = rng.randint(lo + (hi - lo) // 6, hi - (hi - lo) // 4)
    greet, lead = pick(pools["greet"]), pick(pools["lead"])
    before: list[str] = []  # long sentences between the greeting and the lead-in
    after = [p for p in (pick(pools["aside"]),) if p]
    close = pick(pools["close"])
    # question in the middle of the paragraph, else near the end; a greeting that runs on ("혹시…",
    # "Okay so,") must be followed by the lead-in or the question, so then everything goes after it
    q_mid = rng.random() < 0.4 or (greet or "").endswith(_RUNS_ON)

    def parts() -> list[str]:
        return [p for p in (greet, *before, lead, asked, *after, close) if p]

    while _size(_join(parts(), lang, q), lang) < target:
        sentence = pick(pools["long"])
        if sentence is None:
            break
        if _size(_join([*parts(), sentence], lang, q), lang) > hi:
            pick.filler.remove(sentence)
            break
        if (greet or "").endswith(_RUNS_ON) or (q_mid and rng.random() < 0.5):
            after.insert(rng.randrange(len(after) + 1), sentence)
        else:
            before.insert(rng.randrange(len(before) + 1), sentence)
    return Verbose(_join(parts(), lang, q), kind, pick.filler)


def verbose_query(q: dict) -> dict:
    """A queries.jsonl record with its query rewritten; every other field unchanged, in order."""
    return {**q, "query": compose(str(q["id"]), q["query"]).text}


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


Rewrite = Callable[[dict], dict]
"""A query record → the same record with its question rewritten (verbose_query; blind.py's blind_query)."""


def rewrite_queries(src: Path, dst: Path, rewrite: Rewrite | None = None) -> int:
    """Write the rewritten form (verbose by default) of queries file src to dst; the number of queries."""
    rows = [(rewrite or verbose_query)(q) for q in load_jsonl(src)]
    write_jsonl(dst, rows)
    return len(rows)


def rewrite_tree(tree: Path, rewrite: Rewrite | None = None) -> int:
    """Rewrite a freshly materialized tree's questions: queries.jsonl → queries.short.jsonl + the rewritten
    queries.jsonl."""
    short = tree / SHORT_QUERIES
    (tree / "queries.jsonl").replace(short)
    return rewrite_queries(short, tree / "queries.jsonl", rewrite)


def materialize_verbose(shared: Path, dataset: str, tree: Path, rewrite: Rewrite | None = None) -> int:
    """SHARED/materialize.py SHARED/<dataset> TREE, then rewrite_tree(TREE, rewrite)."""
    proc = subprocess.run(
        [sys.executable, str(shared / "materialize.py"), str(shared / dataset), str(tree)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"error: materialize.py failed: {proc.stderr.strip()[-500:]}")
    return rewrite_tree(tree, rewrite)


def build_trees(
    argv: list[str] | None,
    description: str,
    suffix: str,
    rewrite: Rewrite | None,
    summary: Callable[[int, list[dict]], str],
) -> None:
    """The command line of a chat-set builder (this script, blind.py): OUT/<dataset><suffix>/ trees, each
    described by ``summary(n, short queries)``, with ``--examples`` of its messages."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("shared", type=Path, help="the shared benchmark folder (materialize.py, korquad/, locomo/)")
    ap.add_argument("out", type=Path, help=f"writes OUT/<dataset>{suffix}/ trees")
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--examples", type=int, default=0, help="print this many example messages per dataset")
    args = ap.parse_args(argv)
    shared = args.shared.expanduser().resolve()
    for ds in (d.strip() for d in args.datasets.split(",") if d.strip()):
        if ds not in DATASETS:
            ap.error(f"unknown dataset {ds!r}; choose from {', '.join(DATASETS)}")
        if not (shared / "materialize.py").exists() or not (shared / ds / "queries.jsonl").exists():
            sys.exit(f"error: benchmark data not found under {shared}")
        tree = args.out / f"{ds}{suffix}"
        n = materialize_verbose(shared, ds, tree, rewrite)
        print(f"{tree}: {summary(n, load_jsonl(tree / SHORT_QUERIES))}; short ones kept in {SHORT_QUERIES}")
        for q in load_jsonl(tree / "queries.jsonl")[: args.examples]:
            print(f"  {q['id']}: {q['query']}")


def main(argv: list[str] | None = None) -> None:
    def summary(n: int, short: list[dict]) -> str:
        kinds = [compose(str(s["id"]), s["query"]).kind for s in short]
        mix = ", ".join(f"{k} {kinds.count(k) / max(1, n):.0%}" for k in ("short", "medium", "long"))
        return f"{n} verbose queries ({mix})"

    build_trees(argv, __doc__.splitlines()[0], SUFFIX, None, summary)


if __name__ == "__main__":
    main()
