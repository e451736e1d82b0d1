"""bench/blind.py: the benchmark questions inside chat frames written blind to memtree's message reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_bench

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"


blind = load_bench("blind")

QUESTIONS = [
    {"id": "k-1", "query": "임종석을 검거한 곳은 경희대 내 어디인가?", "relevant": ["임종석-0"], "answerable": True,
     "category": "korquad1-extractive", "answer": "학생회관 건물 계단"},
    {"id": "k-2", "query": "1989년 6월 30일 평양축전에 대표로 파견 된 인물은?", "relevant": ["임종석-0"],
     "answerable": True, "category": "korquad1-extractive", "answer": "임수경"},
    {"id": "k-3", "query": "헤이그가 공부한 대학교는?", "relevant": ["헤이그-0"], "answerable": False,
     "category": "not-in-corpus", "answer": "옥스퍼드"},
    {"id": "k-4", "query": "세종대왕이 훈민정음을 반포하였나?", "relevant": ["세종-1"], "answerable": True,
     "category": "korquad1-extractive", "answer": "1446년"},
    {"id": "conv0-q0", "query": "When did Caroline go to the LGBTQ support group?", "relevant": ["conv0-D1-3"],
     "answerable": True, "category": "temporal", "category_id": 2, "answer": "7 May 2023"},
    {"id": "conv0-q3", "query": "What is Melanie's favourite book?", "relevant": ["conv0-D2-8"], "answerable": True,
     "category": "multi-hop", "category_id": 1, "answer": "Charlotte's Web"},
    {"id": "conv1-q9", "query": "According to Jon, which painting inspired his pottery class?",
     "relevant": ["conv1-D4-2"], "answerable": True, "category": "single-hop", "category_id": 4,
     "answer": "Starry Night"},
    {"id": "conv2-q7", "query": "What did Tim realize after his charity race?", "relevant": ["conv2-D9-1"],
     "answerable": False, "category": "adversarial", "category_id": 5, "answer": None},
]  # fmt: skip

# every id gets its own seed: many ids so that every frame a question fits shows up
MANY = [dict(q, id=f"{q['id']}#{i}") for i in range(80) for q in QUESTIONS]

_PRONOUNS = {"she", "he", "her", "his"}


def _question_kept(question: str, b: object) -> bool:
    """The question is in the message verbatim, or changed only as its frame's placeholder says."""
    text = b.text  # type: ignore[attr-defined]
    question = " ".join(question.split())  # runs of spaces become one, as in verbose.py
    lang = "ko" if blind.is_korean(question) else "en"
    slots = set(blind._SLOT.findall(blind.FRAMES[lang][b.frame][1]))  # type: ignore[attr-defined]
    form = blind.forms(question, lang)
    if not all(form[s] in text for s in slots):
        return False
    if slots == {"q"}:
        return question in text
    if slots == {"topic", "rest"}:  # English split: the name in its own sentence, a pronoun in its place
        q_toks, r_toks = question.split(), form["rest"].split()
        diff = [(a, b) for a, b in zip(q_toks, r_toks, strict=True) if a != b]
        ((name_tok, pronoun),) = diff
        return name_tok.removesuffix("'s") == form["topic"] and pronoun in _PRONOUNS
    if slots == {"topic"}:  # Korean split: the closing topic particle and "?" dropped
        return question in (form["topic"] + "은?", form["topic"] + "는?")
    if slots == {"ji"}:  # only the last word's ending changes
        *head, last = question.split()
        *ji_head, ji_last = form["ji"].split()
        return head == ji_head and ji_last[:-1].startswith(last[: len(last) - 3]) and ji_last.endswith("지")
    if slots == {"ql"}:
        return form["ql"][1:] == question[1:] and form["ql"][0].lower() == question[0].lower()
    if slots == {"wh"}:
        return form["wh"][1:] == question[1:].removesuffix("?").rstrip() and form["wh"][0] == question[0].lower()
    return False


def test_deterministic() -> None:
    first = [blind.compose(q["id"], q["query"]).text for q in MANY]
    assert first == [blind.compose(q["id"], q["query"]).text for q in MANY]
    assert len(set(first)) > len(MANY) * 0.2  # the seeds do vary the frame


def test_question_kept_and_framed() -> None:
    for q in MANY:
        b = blind.compose(q["id"], q["query"])
        assert b.frame >= 0 and b.text != q["query"]
        assert _question_kept(q["query"], b), b.text


def test_filler_shares_no_word_with_the_question() -> None:
    for q in MANY:
        b = blind.compose(q["id"], q["query"])
        assert b.filler and not any(blind.clashes(f, q["query"]) for f in b.filler), b.text
        # every word of the message is the question's, the frame's, a pronoun, or the question's reworded last word
        extra = set(blind.words(b.text)) - set(blind.words(q["query"])) - {w for f in b.filler for w in blind.words(f)}
        assert len(extra - _PRONOUNS) <= 1, (b.text, extra)


def test_a_clashing_frame_is_never_used() -> None:
    question = "메모장에서 찾은 근거는 무엇인가?"  # shares 메모장, 근거 with two Korean frames
    for i in range(300):
        text = blind.compose(f"clash-{i}", question).text
        assert "메모장에서 하나만" not in text and "근거도 같이" not in text
    question = "What did Tim do for his coffee shop?"
    for i in range(300):
        assert "coffee went cold" not in blind.compose(f"clash-{i}", question).text


def test_frames_count_and_every_frame_used() -> None:
    for lang, frames in blind.FRAMES.items():
        assert len(frames) >= 20, lang
        assert len({t for _, t in frames}) == len(frames), lang
        used = {blind.compose(q["id"], q["query"]).frame for q in MANY if blind.is_korean(q["query"]) == (lang == "ko")}
        assert used == set(range(len(frames))), (lang, set(range(len(frames))) - used)


def test_split_needs_one_speaker_as_subject_or_possessive() -> None:
    assert blind._en_split("What did Caroline research?") == ("Caroline", "What did she research?")
    assert blind._en_split("What is Melanie's favourite book?") == ("Melanie", "What is her favourite book?")
    assert blind._en_split("What did Tim give Nate?") is None  # two speakers
    assert blind._en_split("Who gave Caroline a book?") is None  # an object: no faithful pronoun swap
    assert blind._en_split("When was the parade?") is None


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_written_queries_keep_ids_categories_answers(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _write(tree / "queries.jsonl", QUESTIONS)
    assert blind.rewrite_tree(tree) == len(QUESTIONS)
    assert blind.load_jsonl(tree / blind.SHORT_QUERIES) == QUESTIONS
    framed = blind.load_jsonl(tree / "queries.jsonl")
    for s, v in zip(QUESTIONS, framed, strict=True):
        assert list(v) == list(s)
        assert {k: x for k, x in v.items() if k != "query"} == {k: x for k, x in s.items() if k != "query"}
        assert v["query"] == blind.compose(s["id"], s["query"]).text != s["query"]
    again = tmp_path / "again.jsonl"
    blind.rewrite_queries(tree / blind.SHORT_QUERIES, again)
    assert again.read_bytes() == (tree / "queries.jsonl").read_bytes()


@pytest.mark.skipif(not (SHARED / "materialize.py").exists(), reason="shared benchmark data not present")
@pytest.mark.parametrize("dataset", blind.DATASETS)
def test_shared_dev_sets(tmp_path: Path, dataset: str) -> None:
    if not (SHARED / dataset / "queries.jsonl").exists():
        pytest.skip(f"{SHARED / dataset} not present")
    tree = tmp_path / f"{dataset}-blind"
    blind.materialize_blind(SHARED, dataset, tree)
    short = blind.load_jsonl(tree / blind.SHORT_QUERIES)
    rows = blind.load_jsonl(tree / "queries.jsonl")
    assert len(rows) == len(short) > 0
    assert (tree / "spans.jsonl").exists() and any((tree / "bank").rglob("*.md"))
    frames = set()
    for s, v in zip(short, rows, strict=True):
        assert {k: x for k, x in v.items() if k != "query"} == {k: x for k, x in s.items() if k != "query"}
        b = blind.compose(s["id"], s["query"])
        assert v["query"] == b.text
        assert _question_kept(s["query"], b), v["query"]
        assert not any(blind.clashes(f, s["query"]) for f in b.filler), v["query"]
        frames.add(b.frame)
    lang = "ko" if dataset == "korquad" else "en"
    assert frames == set(range(len(blind.FRAMES[lang])))  # every frame is used on the real questions
