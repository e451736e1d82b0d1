"""bench/verbose.py: the chat-message rewrite of the benchmark questions."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load_verbose() -> ModuleType:
    """bench/verbose.py by path: bench/ never goes on sys.path, where its names would shadow others'."""
    spec = importlib.util.spec_from_file_location("bench_verbose", BENCH / "verbose.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


verbose = _load_verbose()

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"

QUESTIONS = [
    {"id": "k-1", "query": "임종석을 검거한 곳은 경희대 내 어디인가?", "relevant": ["임종석-0"], "answerable": True,
     "category": "korquad1-extractive", "answer": "학생회관 건물 계단"},
    {"id": "k-2", "query": "1989년 6월 30일 평양축전에 대표로 파견 된 인물은?", "relevant": ["임종석-0"],
     "answerable": True, "category": "korquad1-extractive", "answer": "임수경"},
    {"id": "k-3", "query": "노무현 정부가 출범한 해에 시행된 정책은 무엇인가?", "relevant": ["노무현-3", "노무현-4"],
     "answerable": False, "category": "not-in-corpus", "answer": "참여정부"},
    {"id": "k-4", "query": "세종대왕이 훈민정음을 반포하였나?", "relevant": ["세종-1"], "answerable": True,
     "category": "korquad1-extractive", "answer": "1446년"},
    {"id": "k-5", "query": "조선 후기 실학자가 저술한 책의 제목은?", "relevant": ["실학-2"], "answerable": True,
     "category": "korquad1-extractive", "answer": "목민심서"},
    {"id": "conv0-q0", "query": "When did Caroline go to the LGBTQ support group?", "relevant": ["conv0-D1-3"],
     "answerable": True, "category": "temporal", "category_id": 2, "answer": "7 May 2023"},
    {"id": "conv0-q3", "query": "What did Caroline research?", "relevant": ["conv0-D2-8"], "answerable": True,
     "category": "multi-hop", "category_id": 1, "answer": "Adoption agencies"},
    {"id": "conv1-q9", "query": "According to Melanie, which painting inspired her pottery class?",
     "relevant": ["conv1-D4-2", "conv1-D4-5"], "answerable": True, "category": "single-hop", "category_id": 4,
     "answer": "Starry Night"},
    {"id": "conv2-q7", "query": "What did Jon realize after his charity race?", "relevant": ["conv2-D9-1"],
     "answerable": False, "category": "adversarial", "category_id": 5, "answer": None,
     "adversarial_answer": "self-care is important"},
]  # fmt: skip

# every id gets its own seed: use many ids so that every length class and template shows up
MANY = [dict(q, id=f"{q['id']}#{i}") for i in range(60) for q in QUESTIONS]


def _question_words_kept(question: str, message: str) -> bool:
    """Every word of the question is in the message; the last may have lost its ending (어디인가 → 어디인지)."""
    toks = verbose.words(question)
    low = message.casefold()
    for i, tok in enumerate(toks):
        if tok in low:
            continue
        if i == len(toks) - 1 and re.match(r"[\uac00-\ud7a3]", tok) and tok[: max(1, len(tok) - 2)] in low:
            continue
        return False
    return True


def test_deterministic() -> None:
    first = [verbose.compose(q["id"], q["query"]).text for q in MANY]
    second = [verbose.compose(q["id"], q["query"]).text for q in MANY]
    assert first == second
    assert verbose.compose("k-1", QUESTIONS[0]["query"]).text != verbose.compose("k-1x", QUESTIONS[0]["query"]).text
    assert len(set(first)) > len(MANY) * 0.9  # the seeds do vary the filler


def test_question_content_kept() -> None:
    for q in MANY:
        v = verbose.compose(q["id"], q["query"])
        assert _question_words_kept(q["query"], v.text), v.text
        assert v.text != q["query"]  # at least a greeting or a tail was added


def test_pools_share_no_word_with_questions() -> None:
    for lang, pools in verbose.POOLS.items():
        for slot, options in pools.items():
            assert len(options) >= 15, (lang, slot)
            assert len(set(options)) == len(options), (lang, slot)
            for option in options:
                for q in QUESTIONS:
                    assert not verbose.clashes(option, q["query"]), (option, q["query"])


def test_filler_is_what_was_added_and_never_repeats_the_question() -> None:
    for q in MANY:
        v = verbose.compose(q["id"], q["query"])
        message_words = set(verbose.words(v.text))
        filler_words = {w for f in v.filler for w in verbose.words(f)}
        question_words = set(verbose.words(q["query"]))
        # every word of the message is the question's, the filler's, or the question's last word reworded
        leftover = message_words - filler_words - question_words
        assert len(leftover) <= 1, (v.text, leftover)
        for f in v.filler:
            assert not verbose.clashes(f, q["query"])


def test_clash_rule() -> None:
    assert verbose.clashes("요즘 역사 공부를 하고 있는데", "역사적 사건은 무엇인가?") == {"역사"}
    assert verbose.clashes("my sister asked me about this", "What did Caroline's sister say?") == {"sister"}
    assert not verbose.clashes("What is it about?", "What did Caroline research?")  # function words only


def test_options_sharing_a_question_word_are_never_picked() -> None:
    question = "발표 자료에 나온 회의 시간은 언제인가?"  # shares 발표, 자료, 회의, 시간 with the Korean pools
    for i in range(200):
        v = verbose.compose(f"clash-{i}", question)
        assert not any(verbose.clashes(f, question) for f in v.filler), v.text
        assert "발표 자료 준비" not in v.text and "회의 시간도" not in v.text
    question = "What did my sister say about the meeting?"
    for i in range(200):
        v = verbose.compose(f"clash-{i}", question)
        assert "my sister asked" not in v.text.casefold() and "meeting got moved" not in v.text


def test_length_mix() -> None:
    kinds = {"short": 0, "medium": 0, "long": 0}
    for q in MANY:
        v = verbose.compose(q["id"], q["query"])
        kinds[v.kind] += 1
        if v.kind == "long":
            if verbose.is_korean(q["query"]):
                assert 150 <= len(v.text) <= 300, v.text
            else:
                assert 60 <= len(v.text.split()) <= 120, v.text
    n = len(MANY)
    assert 0.1 * n < kinds["short"] < 0.3 * n
    assert 0.45 * n < kinds["medium"] < 0.75 * n
    assert 0.1 * n < kinds["long"] < 0.3 * n


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_written_queries_keep_ids_categories_spans(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _write(tree / "queries.jsonl", QUESTIONS)
    assert verbose.rewrite_tree(tree) == len(QUESTIONS)
    short = verbose.load_jsonl(tree / verbose.SHORT_QUERIES)
    long_ = verbose.load_jsonl(tree / "queries.jsonl")
    assert short == QUESTIONS
    assert [q["id"] for q in long_] == [q["id"] for q in QUESTIONS]
    for s, v in zip(QUESTIONS, long_, strict=True):
        assert list(v) == list(s)  # same fields, same order
        assert {k: x for k, x in v.items() if k != "query"} == {k: x for k, x in s.items() if k != "query"}
        assert v["query"] == verbose.compose(s["id"], s["query"]).text
    # a second run over the same source writes the same bytes
    again = tmp_path / "again.jsonl"
    verbose.rewrite_queries(tree / verbose.SHORT_QUERIES, again)
    assert again.read_bytes() == (tree / "queries.jsonl").read_bytes()


@pytest.mark.skipif(not (SHARED / "materialize.py").exists(), reason="shared benchmark data not present")
@pytest.mark.parametrize("dataset", verbose.DATASETS)
def test_shared_dev_sets(tmp_path: Path, dataset: str) -> None:
    if not (SHARED / dataset / "queries.jsonl").exists():
        pytest.skip(f"{SHARED / dataset} not present")
    tree = tmp_path / f"{dataset}-verbose"
    verbose.materialize_verbose(SHARED, dataset, tree)
    short = verbose.load_jsonl(tree / verbose.SHORT_QUERIES)
    rows = verbose.load_jsonl(tree / "queries.jsonl")
    assert len(rows) == len(short) > 0
    assert (tree / "spans.jsonl").exists() and any((tree / "bank").rglob("*.md"))
    kinds = {"short": 0, "medium": 0, "long": 0}
    for s, v in zip(short, rows, strict=True):
        assert {k: x for k, x in v.items() if k != "query"} == {k: x for k, x in s.items() if k != "query"}
        c = verbose.compose(s["id"], s["query"])
        assert v["query"] == c.text
        assert _question_words_kept(s["query"], v["query"]), v["query"]
        assert not any(verbose.clashes(f, s["query"]) for f in c.filler), v["query"]
        kinds[c.kind] += 1
    for kind, count in kinds.items():
        assert count > 0.1 * len(rows), (kind, kinds)
