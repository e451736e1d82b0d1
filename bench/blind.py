"""Blind dev sets: every benchmark question inside a chat frame written without reading memtree's message reader.

``bench/verbose.py`` wraps each KorQuAD (Korean) and LoCoMo (English) dev question in greetings, lead-ins,
asides and closings. The frames here were written by someone who had not read how memtree reads a chat
message (issue 31, item 2), so a score on them says how memtree does on phrasings nobody tuned to:
requests before and after the question, conditions inside those requests, asides, typos in the filler,
emoji, casual and formal registers, a question embedded in a request ("…인지 알려줘", "tell me what …"),
a lead-in in the same sentence as the question, a question split over two sentences, and long
rambling context. Each message is one frame; the frames are in ``KO_FRAMES`` / ``EN_FRAMES`` below,
grouped by kind.

    python bench/blind.py ../shared/bench OUT [--datasets korquad,locomo] [--examples 5]

writes OUT/korquad-blind/ and OUT/locomo-blind/ exactly as ``verbose.py`` writes its -verbose trees:
the tree ``materialize.py`` makes for the short set (same docs, held-out groups, ids, categories,
answers, spans) with the framed ``queries.jsonl`` (the short one kept as ``queries.short.jsonl``).
``bench/quality.py --blind`` (or ``--datasets korquad-blind,locomo-blind``) indexes and scores them.

The question is kept verbatim, or changed by one mechanical, faithful step that the frame asks for:
its ending made indirect (``어디인가?`` → ``어디인지``; ``When did …?`` → ``when did …``), its closing
topic particle dropped (``…대학교는?`` → ``…대학교``) or, in English, the one speaker it names moved
to a sentence of its own and replaced by a pronoun (``What did Caroline research?`` → ``About
Caroline. What did she research?``). A frame whose filler shares a content word with the question
(``verbose.clashes``) is never used for it. The choice is deterministic: a ``random.Random`` seeded by a
SHA-256 of VERSION and the query id. Stdlib only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


def _verbose() -> ModuleType:
    """bench/verbose.py, by path when bench/ is not on sys.path (as in the tests)."""
    if "verbose" in sys.modules:
        return sys.modules["verbose"]
    spec = importlib.util.spec_from_file_location("verbose", Path(__file__).resolve().parent / "verbose.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


verbose = _verbose()
clashes, words, is_korean = verbose.clashes, verbose.words, verbose.is_korean
load_jsonl, write_jsonl, SHORT_QUERIES = verbose.load_jsonl, verbose.write_jsonl, verbose.SHORT_QUERIES

VERSION = "blind-v1"  # part of the seed: bump it to get a different (still deterministic) set
DATASETS = ("korquad", "locomo")
SUFFIX = "-blind"

# ---------------------------------------------------------------------------------------------
# Frames. A frame is (kind, template). Placeholders, one per template:
#   {q}      the question verbatim
#   {ji}     Korean: the question with its ending made indirect (…인가? → …인지), for "…인지 알려줘"
#   {wh}     English: the question run on in lower case without "?" (tell me when did …)
#   {ql}     English: the question verbatim but its first word lower-cased, after a lead-in and a comma
#   {topic}  split questions: Korean, the question minus its closing particle and "?"
#            (…대학교는? → …대학교); English, the one speaker the question names
#   {rest}   English split: the question with that speaker replaced by a pronoun
# A frame is used only for questions whose form its placeholder fits and whose words its filler avoids.
# ---------------------------------------------------------------------------------------------

KO_FRAMES: tuple[tuple[str, str], ...] = (
    # request before the question
    ("before", "내가 전에 적어둔 거 좀 뒤져봐 줄래? {q}"),
    ("before", "메모장에서 하나만 찾아줘. {q}"),
    # request after the question, holding its own condition
    ("after-cond", "{q} 찾게 되면 한두 줄로만 요약해 줘요. 못 찾으면 없다고 해주시고요."),
    ("after-cond", "{q} 확실하지 않으면 그냥 모른다고 해 주세요!"),
    ("after-cond", "{q} 근거도 같이 붙여주면 더 좋고, 바쁘면 답만 줘도 돼"),
    # an aside before or after the question
    ("aside", "{q} (급한 건 아니니까 천천히 봐주세요)"),
    ("aside", "밖에 비 와서 그런지 집중이 하나도 안 되네… 암튼 {q}"),
    # typos in the filler (the question itself is untouched)
    ("typo", "{q} 알려주세욤 ㅠㅠ 기억이 하나도 안나네여"),
    ("typo", "잠깐만 이거 머였더라… {q} 아시는분??"),
    ("typo", "질뮨 하나요ㅎㅎ {q} 빨리 답좀 해주새요"),
    # emoji
    ("emoji", "🙏 {q} 🙏"),
    ("emoji", "{q} 🤔🤔 도와줘요~ 😭"),
    # casual register (반말)
    ("casual", "야 {q} ㅋㅋ 나 이거 진짜 맨날 헷갈려"),
    ("casual", "ㅇㅋ 그럼 다음 거. {q}"),
    # formal register
    ("formal", "번거로우시겠지만 한 가지 문의드립니다. {q} 검토 후 회신 부탁드립니다."),
    ("formal", "실례를 무릅쓰고 여쭙겠습니다. {q} 답변 주시면 대단히 감사하겠습니다."),
    # the question embedded in a request
    ("embed", "{ji} 알려줘"),
    ("embed", "{ji} 좀 찾아봐 줄 수 있어? 어딘가 적어둔 게 있을 텐데"),
    ("embed", "{ji} 확인 부탁드려요. 제 기억엔 뭔가 있었던 것 같거든요."),
    # a lead-in in the same sentence as the question
    ("lead", "저번에 같이 정리했던 내용 중에 {q}"),
    ("lead", "자려고 누웠다가 갑자기 떠올랐는데 {q}"),
    # the question split over two sentences: its topic, then a generic ask
    ("split", "{topic} 말인데요. 혹시 아세요?"),
    ("split", "음 그러니까 {topic}. 그게 궁금해요!"),
    # long rambling context around the question
    (
        "ramble",
        "아 진짜 오늘 하루가 너무 길었다… 아침부터 미팅 세 개 연달아 하고 밥도 대충 먹고 이제야 좀 숨 돌리는 "
        "중인데, 문득 예전에 봤던 게 떠올라서요. {q} 이따 집에 가면서 다시 볼게요.",
    ),
    (
        "ramble",
        "제가 요즘 노트 앱을 바꿨는데 옮기다가 뭐가 빠졌는지 도통 모르겠어요. 옛날 앱에는 분명 있었던 거 "
        "같은데 새 앱에서는 검색해도 안 나오더라고요. 그래서 여기다 물어봅니다. {q}",
    ),
)

EN_FRAMES: tuple[tuple[str, str], ...] = (
    # request before the question
    ("before", "Could you dig through my notes for something? {q}"),
    ("before", "Need a fact check real quick. {q}"),
    # request after the question, holding its own condition
    ("after-cond", "{q} If you find it, just give me the short version, and if it's not in there, say so."),
    ("after-cond", "{q} Only answer if you're sure, otherwise tell me you don't know."),
    ("after-cond", "{q} Bullet points please, and point me to where you found it if you can."),
    # an aside before or after the question
    ("aside", "{q} (no rush btw, I'm heading out for a walk anyway)"),
    ("aside", "ugh my coffee went cold again. anyway, {ql}"),
    # typos in the filler (the question itself is untouched)
    ("typo", "quick qustion - {q} i cant rember for the life of me"),
    ("typo", "hey can u chekc somthing for me? {q} thx"),
    ("typo", "{q} pls hlep lol"),
    # emoji
    ("emoji", "👋 {q} 🙏"),
    ("emoji", "{q} 🤔 no idea tbh 😅"),
    # casual register
    ("casual", "yo {ql}"),
    ("casual", "ok next one: {q}"),
    # formal register
    (
        "formal",
        "Good afternoon. I would be grateful if you could assist me with the following query. {q} Kind regards.",
    ),
    ("formal", "Dear assistant, I hope this message finds you well. {q} Thank you for your time and attention."),
    # the question embedded in a request
    ("embed", "tell me {wh}"),
    ("embed", "I need to know {wh} - can you look it up?"),
    ("embed", "Can you find out {wh}? It's for a thing I'm writing."),
    # a lead-in in the same sentence as the question
    ("lead", "Since you keep track of everything, {ql}"),
    ("lead", "While I'm thinking of it, {ql}"),
    # the question split over two sentences: the speaker it names, then the question with a pronoun
    ("split", "About {topic}. {rest}"),
    ("split", "Quick one on {topic} - {rest}"),
    # long rambling context around the question
    (
        "ramble",
        "So I've been trying to get organised for once, clearing out old tabs, sorting emails into folders, that "
        "whole thing, and halfway through I realised there's one detail I never wrote down properly and it's been "
        "nagging at me all afternoon. {q} Anyway, sorry for the wall of text.",
    ),
    (
        "ramble",
        "Long story short, my laptop died last week, I lost a bunch of stuff I hadn't synced, and now I'm piecing "
        "things together from memory, which is going great as you can imagine. {q}",
    ),
)

FRAMES = {"ko": KO_FRAMES, "en": EN_FRAMES}
_SLOT = re.compile(r"\{(q|ji|wh|ql|topic|rest)\}")

# ---------------------------------------------------------------------------------------------
# The question's mechanical forms
# ---------------------------------------------------------------------------------------------

# LoCoMo's speakers (conversations 0-4) and the pronouns their questions may use: (subject, possessive)
SPEAKERS = {
    "Caroline": ("she", "her"),
    "Melanie": ("she", "her"),
    "Gina": ("she", "her"),
    "Maria": ("she", "her"),
    "Joanna": ("she", "her"),
    "Jon": ("he", "his"),
    "John": ("he", "his"),
    "Nate": ("he", "his"),
    "Tim": ("he", "his"),
}
_AUX = frozenset("did does do is was has had would will can could".split())
_EN_TOKEN = re.compile(r"[A-Za-z]+(?:'s)?")


def _en_split(q: str) -> tuple[str, str] | None:
    """(speaker, question with a pronoun) when q names one speaker once, as subject after an auxiliary or
    as a possessive; None otherwise ("What did Caroline research?" → ("Caroline", "What did she research?"))."""
    toks = _EN_TOKEN.findall(q)
    named = [(i, t) for i, t in enumerate(toks) if t.removesuffix("'s") in SPEAKERS]
    if len(named) != 1:
        return None
    i, tok = named[0]
    name = tok.removesuffix("'s")
    subject, possessive = SPEAKERS[name]
    if tok.endswith("'s"):
        pronoun, pattern = possessive, rf"\b{name}'s\b"
    elif i > 0 and toks[i - 1].casefold() in _AUX:
        pronoun, pattern = subject, rf"\b{name}\b(?!')"
    else:
        return None
    rest, n = re.subn(pattern, pronoun, q)
    return (name, rest) if n == 1 else None


def _ko_indirect(q: str) -> str | None:
    """…인가? → …인지, …는가? → …는지, …었나? → …었는지 (verbose.py's rewrite), else None."""
    for pat, glue in verbose._KO_JI:
        if pat.search(q):
            return str(pat.sub(glue, q))
    return None


_KO_TOPIC_END = re.compile(r"(?<=[\uac00-\ud7a3])[은는]\?\s*$")


def forms(q: str, lang: str) -> dict[str, str]:
    """The placeholders this question can fill, by name."""
    out = {"q": q}
    if lang == "ko":
        if (ji := _ko_indirect(q)) is not None:
            out["ji"] = ji
        if _KO_TOPIC_END.search(q):
            out["topic"] = _KO_TOPIC_END.sub("", q).rstrip()
        return out
    first = q.split(" ", 1)[0]
    out["ql"] = verbose._en_lower_first(q)
    if first.casefold() in verbose.WH and q.endswith("?"):
        out["wh"] = out["ql"][:-1].rstrip()
    if (split := _en_split(q)) is not None:
        out["topic"], out["rest"] = split
    return out


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Blind:
    """One framed question: the message, the frame's index in its language's list, its kind, and the filler."""

    text: str
    frame: int
    kind: str
    filler: tuple[str, ...]


def frame_filler(template: str) -> tuple[str, ...]:
    """The frame's own text: the pieces around its placeholders."""
    return tuple(p.strip() for p in _SLOT.split(template)[::2] if p.strip())


def usable(template: str, question: str, lang: str) -> bool:
    """The question has the form the frame needs and the frame shares no content word with it."""
    have = forms(" ".join(question.split()), lang)
    need = set(_SLOT.findall(template))
    return need <= set(have) and not any(clashes(f, question) for f in frame_filler(template))


def rng_for(qid: str) -> random.Random:
    digest = hashlib.sha256(f"{VERSION}:{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def compose(qid: str, question: str, lang: str | None = None) -> Blind:
    """The framed message for one question; the same (qid, question) always gives the same text."""
    lang = lang or ("ko" if is_korean(question) else "en")
    q = " ".join(question.split())
    frames = FRAMES[lang]
    ok = [i for i, (_, template) in enumerate(frames) if usable(template, q, lang)]
    if not ok:  # no frame fits (never seen on the dev sets): the question as it is
        return Blind(q, -1, "none", ())
    i = rng_for(qid).choice(ok)
    kind, template = frames[i]
    have = forms(q, lang)
    text = _SLOT.sub(lambda m: have[m.group(1)], template)
    return Blind(text, i, kind, frame_filler(template))


def blind_query(q: dict) -> dict:
    """A queries.jsonl record with its query framed; every other field unchanged, in order."""
    return {**q, "query": compose(str(q["id"]), q["query"]).text}


# ---------------------------------------------------------------------------------------------
# Files (as verbose.py)
# ---------------------------------------------------------------------------------------------


def rewrite_queries(src: Path, dst: Path) -> int:
    """Write the framed form of queries file src to dst; the number of queries."""
    return verbose.rewrite_queries(src, dst, blind_query)


def rewrite_tree(tree: Path) -> int:
    """Frame a freshly materialized tree's questions: queries.jsonl → queries.short.jsonl + framed queries.jsonl."""
    return verbose.rewrite_tree(tree, blind_query)


def materialize_blind(shared: Path, dataset: str, tree: Path) -> int:
    """SHARED/materialize.py SHARED/<dataset> TREE, then rewrite_tree(TREE)."""
    return verbose.materialize_verbose(shared, dataset, tree, blind_query)


def main(argv: list[str] | None = None) -> None:
    def summary(n: int, short: list[dict]) -> str:
        kinds = [compose(str(s["id"]), s["query"]).kind for s in short]
        return f"{n} framed queries ({', '.join(f'{k} {kinds.count(k)}' for k in dict.fromkeys(kinds))})"

    verbose.build_trees(argv, __doc__.splitlines()[0], SUFFIX, blind_query, summary)


if __name__ == "__main__":
    main()
