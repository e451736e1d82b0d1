"""memtree.search.evaluate and `memtree eval`: the query file, matching, metrics, errors, agreement with score.py."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from helpers import assert_one_line_error
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

import memtree.cli.eval  # registers `eval` on the app
from memtree import schema
from memtree.api import MemTree, clock
from memtree.cli.app import app
from memtree.errors import QueryError
from memtree.notes import tree as treemod
from memtree.notes import usage
from memtree.search.evaluate import (
    Found,
    Query,
    QueryFileError,
    Target,
    build_queries,
    decode_lines,
    evaluate,
    judge,
    load_queries,
    outcome_json,
    parse_spans,
    ranks,
    run,
    summarize,
)

SHARED = Path(os.environ.get("MEMTREE_SHARED_BENCH") or Path(__file__).resolve().parents[2] / "shared" / "bench")
needs_shared = pytest.mark.skipif(
    not (SHARED / "score.py").is_file() or not (SHARED / "materialize.py").is_file(),
    reason=f"the shared benchmark is not at {SHARED} (set MEMTREE_SHARED_BENCH)",
)


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def score_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shared_score", SHARED / "score.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hits(*spots: tuple[str, int, int]) -> tuple[Found, ...]:
    return tuple(Found(path, (start, end)) for path, start, end in spots)


# --- the query file ------------------------------------------------------------------------------


def test_every_form_of_expected_answer_is_read(sample_root: Path, tmp_path: Path) -> None:
    rows = [
        {"query": "가치관", "expected": ["identity/values"], "category": "who", "id": "q1"},
        {"query": "크론", "expected": ["bank/technical/cron-design.md", "./bank/project/rules.md"], "id": 7},
        {"query": "크론 KST", "expected": [{"path": "bank/technical/cron-design.md", "lines": [6, 8]}]},
        {"query": "규칙", "expected": [{"path": "bank/project/rules.md"}, {"node": "technical/heartbeat-reflect"}]},
        {"query": "정체성", "expected": ["identity"]},
    ]
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    path.write_text(path.read_text(encoding="utf-8").replace("\n", "\n\n", 1), encoding="utf-8")  # a blank line
    q = load_queries(path, treemod.load(sample_root), sample_root)
    assert [x.id for x in q] == ["q1", "7", "line-4", "line-5", "line-6"]
    assert [x.category for x in q] == ["who", None, None, None, None]
    assert q[0].targets == (Target(frozenset({"bank/identity/values.md"}), node="identity/values"),)
    assert q[1].targets == (
        Target(frozenset({"bank/technical/cron-design.md"})),
        Target(frozenset({"bank/project/rules.md"})),  # "./" is dropped, so it compares with hit paths
    )
    assert q[2].targets == (Target(frozenset({"bank/technical/cron-design.md"}), (6, 8)),)
    assert q[3].targets[1] == Target(
        frozenset({"bank/technical/heartbeat-reflect.md"}), node="technical/heartbeat-reflect"
    )
    # a category node has no note: any note below it is right
    assert q[4].targets == (
        Target(frozenset({"bank/identity/values.md", "bank/identity/personality.md"}), node="identity"),
    )
    assert all(x.answerable for x in q)


@pytest.mark.parametrize(
    "row",
    [
        {"query": "양자역학"},
        {"query": "양자역학", "expected": []},
        {"query": "양자역학", "expected": None},
        {"query": "양자역학", "expected": ["identity/values"], "unanswerable": True},
        {"query": "양자역학", "expected": ["identity/values"], "answerable": False},
        {"query": "양자역학", "answerable": False, "unanswerable": True},
    ],
)
def test_unanswerable_queries(sample_root: Path, row: dict[str, Any]) -> None:
    (q,) = build_queries([(1, row)], "q.jsonl", treemod.load(sample_root), lambda p: p)
    assert not q.answerable and q.targets == ()


def test_shared_bench_queries_resolve_doc_ids_through_spans(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "bank" / "wiki").mkdir(parents=True)
    (root / "bank" / "wiki" / "a.md").write_text("# a\n\nfirst\n\nsecond\n", encoding="utf-8")
    write_jsonl(
        root / "spans.jsonl",
        [
            {"id": "a-0", "path": "bank/wiki/a.md", "lines": [3, 3]},
            {"id": "a-1", "path": "bank/wiki/a.md", "lines": [5, 5]},
        ],
    )
    rows = [
        {"id": "x1", "query": "first", "relevant": ["a-0", "held-out-9"], "answerable": True, "category": "c"},
        {"id": "x2", "query": "second", "relevant": ["a-9"], "answerable": False, "category": "not-in-corpus"},
        {"id": "x3", "query": "both", "relevant": ["a-1", "a-0"], "answerable": True, "answer": "ignored"},
    ]
    path = write_jsonl(root / "queries.jsonl", rows)
    q = load_queries(path, treemod.Tree(), root)  # spans.jsonl found beside the queries
    assert q[0].targets == (Target(frozenset({"bank/wiki/a.md"}), (3, 3)),)  # the held-out doc is ignored
    assert not q[1].answerable and q[1].category == "not-in-corpus"
    assert [t.lines for t in q[2].targets] == [(5, 5), (3, 3)]
    moved = tmp_path / "elsewhere.jsonl"
    moved.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_queries(moved, treemod.Tree(), root, spans=root / "spans.jsonl") == q
    with pytest.raises(QueryFileError, match="give --spans FILE"):
        load_queries(moved, treemod.Tree(), root)


# --- matching ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hit", "max_span", "chunk"),
    [
        (Found("bank/a.md", (10, 12)), 30, True),
        (Found("bank/a.md", (5, 10)), 30, True),  # touches the first line
        (Found("bank/a.md", (12, 20)), 30, True),  # touches the last line
        (Found("bank/a.md", (13, 20)), 30, False),  # just after
        (Found("bank/a.md", (1, 9)), 30, False),  # just before
        (Found("bank/a.md", (1, 30)), 30, True),  # spans exactly 30 lines
        (Found("bank/a.md", (1, 31)), 30, False),  # 31 lines: too coarse to count
        (Found("bank/a.md", (1, 31)), 31, True),  # unless allowed
        (Found("bank/b.md", (10, 12)), 30, False),  # another note
    ],
)
def test_lines_answers_need_an_overlap_within_the_span(hit: Found, max_span: int, chunk: bool) -> None:
    target = Target(frozenset({"bank/a.md"}), (10, 12))
    assert target.holds(hit, max_span) is chunk
    assert target.in_file(hit) is (hit.path == "bank/a.md")


def test_whole_note_and_node_answers() -> None:
    note = Target(frozenset({"bank/a.md"}))
    assert note.holds(Found("bank/a.md", (1, 500))) and not note.holds(Found("bank/b.md", (1, 1)))
    node = Target(frozenset({"bank/a.md"}), node="a")
    assert node.holds(Found("bank/a.md", (1, 200)))  # in the node's note
    assert node.holds(Found("bank/moved.md", (1, 2), node="a"))  # the node's hit
    assert not node.holds(Found("bank/b.md", (1, 2), node="b"))


def test_ranks_are_first_chunk_hit_and_first_file_hit() -> None:
    targets = (Target(frozenset({"bank/a.md"}), (10, 12)), Target(frozenset({"bank/c.md"}), (1, 1)))
    found = hits(("bank/b.md", 1, 1), ("bank/a.md", 1, 40), ("bank/c.md", 1, 1))
    assert ranks(found, targets) == (3, 2)
    assert ranks(found[:2], targets) == (None, 2)
    assert ranks((), targets) == (None, None)


# --- metrics -------------------------------------------------------------------------------------

A = Target(frozenset({"bank/a.md"}), (10, 12))
NOISE = ("bank/b.md", 1, 1)


def hand_made() -> list[Any]:
    """Five answerable queries (ranks 1, 3, 7, 11 and none) and three unanswerable ones."""
    q = [
        Query("q1", "one", (A,), "x"),
        Query("q2", "two", (A,), "x"),
        Query("q3", "three", (A,), "y"),
        Query("q4", "four", (A,), "y"),
        Query("q5", "five", (A,), "y"),
        Query("u1", "six", (), "z"),
        Query("u2", "seven", (), "z"),
        Query("u3", "eight", (), "x"),
    ]
    found = [
        hits(("bank/a.md", 10, 12)),
        hits(NOISE, NOISE, ("bank/a.md", 12, 20)),
        hits(("bank/a.md", 1, 40), *[NOISE] * 5, ("bank/a.md", 11, 11)),  # the file at 1, the chunk at 7
        hits(*[NOISE] * 10, ("bank/a.md", 10, 10)),  # found at 11: past MRR@10
        (),
        (),
        hits(NOISE),
        (),
    ]
    return [judge(query, f) for query, f in zip(q, found, strict=True)]


def test_metrics_on_hand_made_hits() -> None:
    outcomes = hand_made()
    assert [(o.rank, o.file_rank) for o in outcomes[:5]] == [(1, 1), (3, 3), (7, 1), (11, 11), (None, None)]
    m = summarize(outcomes, k=12, tier="default").overall
    assert (m.queries, m.answerable, m.unanswerable) == (8, 5, 3)
    assert m.hit_at_1 == 1 / 5 and m.hit_at_5 == 2 / 5 and m.file_hit_at_5 == 3 / 5
    assert m.mrr_at_10 == pytest.approx((1 + 1 / 3 + 1 / 7) / 5)
    assert m.answerable_empty == 1 / 5 and m.unanswerable_empty == 2 / 3


def test_depths_are_inclusive_hit_at_5_and_mrr_at_10() -> None:
    at = [judge(Query(f"q{r}", "q", (A,)), hits(*[NOISE] * (r - 1), ("bank/a.md", 10, 10))) for r in (5, 6, 10, 11)]
    m = summarize(at, k=11, tier="default").overall
    assert [o.rank for o in at] == [5, 6, 10, 11]
    assert m.hit_at_5 == 1 / 4 and m.file_hit_at_5 == 1 / 4 and m.hit_at_1 == 0
    assert m.mrr_at_10 == pytest.approx((1 / 5 + 1 / 6 + 1 / 10) / 4)


def test_metrics_per_category() -> None:
    cats = summarize(hand_made(), k=12, tier="default").categories
    assert list(cats) == ["x", "y", "z"]
    x, y, z = cats["x"], cats["y"], cats["z"]
    assert (x.queries, x.answerable, x.hit_at_1, x.hit_at_5, x.file_hit_at_5) == (3, 2, 0.5, 1.0, 1.0)
    assert x.mrr_at_10 == pytest.approx(2 / 3) and x.answerable_empty == 0 and x.unanswerable_empty == 1.0
    assert (y.queries, y.hit_at_1, y.hit_at_5, y.file_hit_at_5, y.answerable_empty) == (3, 0, 0, 1 / 3, 1 / 3)
    assert y.mrr_at_10 == pytest.approx(1 / 21) and y.unanswerable_empty is None
    assert (z.queries, z.answerable, z.unanswerable_empty) == (2, 0, 0.5)
    assert z.hit_at_1 is None and z.mrr_at_10 is None and z.answerable_empty is None
    doc = schema.evaluation(summarize(hand_made(), k=12, tier="default"))
    assert doc["categories"]["z"]["hit@5"] is None and doc["overall"]["mrr@10"] == round((1 + 1 / 3 + 1 / 7) / 5, 4)


class ScriptedMemTree:
    """Answers each query with the hits scripted for it (or raises), recording every call."""

    def __init__(self, answers: dict[str, tuple[Found, ...] | Exception]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, int | None, str, bool]] = []

    def search(self, query: str, k: int | None = None, tier: str = "default", cache: bool = True) -> Any:
        self.calls.append((query, k, tier, cache))
        answer = self.answers[query]
        if isinstance(answer, Exception):
            raise answer
        found = [SimpleNamespace(path=h.path, lines=h.lines, node=h.node) for h in answer]
        return SimpleNamespace(hits=found, rejected=None if found else "no confident match")

    def __call__(self, query: str, k: int, tier: str) -> Any:
        """What evaluate.run calls: one search without the query cache."""
        return self.search(query, k, tier, cache=False)


def test_run_warms_up_once_times_each_search_and_counts_unsearchable_queries_as_empty() -> None:
    queries = [Query("a", "뭐야?", (A,)), Query("b", "alpha", (A,)), Query("c", "beta", ()), Query("d", "gamma", (A,))]
    mt = ScriptedMemTree(
        {
            "뭐야?": QueryError("the query has no searchable term"),
            "alpha": hits(("bank/a.md", 10, 10)),
            "beta": (),
            "gamma": hits(NOISE),
        }
    )
    ticks = iter([0.0, 0.5, 1.0, 1.004, 2.0, 2.001, 3.0, 3.010])
    seen: list[tuple[int, int]] = []
    outcomes = run(mt, queries, k=3, progress=lambda i, n: seen.append((i, n)), clock=lambda: next(ticks))  # type: ignore[arg-type]
    assert mt.calls[:2] == [("뭐야?", 3, "default", False), ("alpha", 3, "default", False)]  # the warm-up
    assert [c[0] for c in mt.calls[2:]] == ["뭐야?", "alpha", "beta", "gamma"]
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert outcomes[0].error == "the query has no searchable term" and outcomes[0].found == ()
    assert outcomes[1].rank == 1 and outcomes[2].rejected and outcomes[3].rank is None
    report = summarize(outcomes, k=3, tier="default")
    assert report.errors == 1 and report.rejected == 1 and report.first_error == "the query has no searchable term"
    assert report.overall.answerable_empty == 1 / 3 and report.overall.unanswerable_empty == 1.0
    lat = report.latency  # the failed search is left out: 4, 1 and 10 ms
    assert lat.n == 3 and lat.mean == pytest.approx(5.0)
    assert lat.p50 == pytest.approx(4.0) and lat.p95 == pytest.approx(4 + 6 * 0.9)


@pytest.mark.parametrize(("k", "tier"), [(0, "default"), (5, "everything")])
def test_run_refuses_bad_options_before_searching(k: int, tier: str) -> None:
    mt = ScriptedMemTree({})
    with pytest.raises(QueryError):
        run(mt, [Query("a", "alpha", (A,))], k=k, tier=tier)  # type: ignore[arg-type]
    assert mt.calls == []


# --- agreement with the shared score.py ----------------------------------------------------------

# small line numbers and spans around the limit, so that edges (touching lines, 30 vs 31 lines) come up often
docs_st = st.lists(
    st.tuples(st.sampled_from(["bank/a.md", "bank/b.md"]), st.integers(1, 12), st.integers(0, 3)),
    min_size=1,
    max_size=6,
)
hit_st = st.tuples(
    st.sampled_from(["bank/a.md", "bank/b.md", "bank/c.md"]),
    st.integers(1, 16),
    st.one_of(st.integers(0, 3), st.integers(3, 7), st.integers(28, 31)),
)


@needs_shared
@settings(max_examples=150, deadline=None)
@given(data=st.data(), docs=docs_st, max_span=st.sampled_from([30, 5]))
def test_figures_equal_score_py_on_random_hits(
    data: st.DataObject, docs: list[tuple[str, int, int]], max_span: int
) -> None:
    spans = [{"id": f"d{i}", "path": p, "lines": [s, s + n]} for i, (p, s, n) in enumerate(docs)]
    ids = [s["id"] for s in spans]
    rows, results = [], {}
    for i in range(data.draw(st.integers(1, 12))):
        answerable = data.draw(st.booleans())
        relevant = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
        relevant += data.draw(st.sampled_from([[], ["held-out"]]))  # left out of the corpus: ignored by both
        category = data.draw(st.sampled_from(["x", "y"]))
        rows.append(
            {"id": f"q{i}", "query": f"q {i}", "relevant": relevant, "answerable": answerable, "category": category}
        )
        drawn = data.draw(st.lists(hit_st, max_size=12))
        results[f"q{i}"] = [{"path": p, "lines": [s, s + n]} for p, s, n in drawn]
    with tempfile.TemporaryDirectory() as tmp:
        write_jsonl(Path(tmp) / "spans.jsonl", spans)
        write_jsonl(Path(tmp) / "queries.jsonl", rows)
        expected = score_py().score(Path(tmp), results, max_span)
        text = (Path(tmp) / "queries.jsonl").read_text(encoding="utf-8")
        table = parse_spans((Path(tmp) / "spans.jsonl").read_text(encoding="utf-8"), "spans.jsonl")
    queries = build_queries(decode_lines(text, "queries.jsonl"), "queries.jsonl", treemod.Tree(), lambda p: p, table)
    outcomes = [
        judge(q, [Found(h["path"], tuple(h["lines"])) for h in results[q.id]], max_span)  # type: ignore[misc]
        for q in queries
    ]
    assert_agrees(schema.evaluation(summarize(outcomes, 10, "default", max_span)), expected)


def assert_agrees(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Our overall figures are score.py's "all" and "unanswerable" rows, to its 4 places."""
    o = ours["overall"]
    if o["answerable"]:
        mine = {
            "n": o["answerable"],
            "empty": o["answerable_empty"],
            **{k: o[k] for k in ("hit@1", "hit@5", "mrr@10", "file_hit@5")},
        }
        assert mine == theirs["all"]
    else:
        assert "all" not in theirs
    if o["unanswerable"]:
        assert {"n": o["unanswerable"], "empty": o["unanswerable_empty"]} == theirs["unanswerable"]
    else:
        assert "unanswerable" not in theirs


def materialize(src: Path, out: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, str(SHARED / "materialize.py"), str(src), str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    MemTree(out).index()
    return out


def agreement(tree: Path) -> dict[str, Any]:
    """evaluate() on a materialized tree, its per-query hits scored by score.py, both figures compared."""
    report, outcomes = evaluate(tree / "queries.jsonl", tree, now=clock())
    results = {line["id"]: line["hits"] for line in map(outcome_json, outcomes)}
    theirs = score_py().score(tree, results, 30)
    assert theirs["missing_results"] == 0
    ours = schema.evaluation(report)
    assert_agrees(ours, theirs)
    return ours


@needs_shared
def test_agrees_with_score_py_on_a_small_materialized_tree(tmp_path: Path) -> None:
    sessions = {
        1: ["Mina: 나는 주말마다 한강에서 자전거를 탄다.", "Joon: I adopted a beagle named Coco last spring."],
        2: ["Mina: 요즘 파이썬으로 가계부 앱을 만들고 있어.", "Joon: My sister moved to Busan for a nursing job."],
        3: ["Mina: 제주도 여행에서 한라산 등반을 했어.", "Joon: I started learning the cello in March."],
        4: ["Mina: 회사에서 쿠버네티스 클러스터를 이전했다.", "Joon: Coco chewed my running shoes again."],
        5: ["Mina: 동생 결혼식이 10월에 있어.", "Joon: I ran the Seoul half marathon in 1:52."],
        6: ["Mina: 김치찌개 레시피를 엄마한테 배웠다.", "Joon: My cello teacher is from Vienna."],
        7: ["Mina: 다음 달에 오사카 출장을 간다.", "Joon: I sold my old motorbike."],  # held out by materialize
        8: ["Mina: 새 키보드는 적축이라 조용하다.", "Joon: We repainted the kitchen green."],
    }
    docs = [
        {"id": f"c0-s{s}-{t}", "group": f"conv0/session{s}", "title": f"conv0 session {s}", "text": text}
        for s, turns in sessions.items()
        for t, text in enumerate(turns)
    ]
    asks = [
        ("한강 자전거는 언제 타?", ["c0-s1-0"], "single-hop"),
        ("What is the name of Joon's beagle?", ["c0-s1-1"], "single-hop"),
        ("가계부 앱은 무슨 언어로 만들어?", ["c0-s2-0"], "single-hop"),
        ("Where did Joon's sister move?", ["c0-s2-1"], "temporal"),
        ("한라산 등반은 어디 여행이었어?", ["c0-s3-0"], "multi-hop"),
        ("What did Coco chew?", ["c0-s4-1", "c0-s1-1"], "multi-hop"),
        ("동생 결혼식은 언제야?", ["c0-s5-0"], "temporal"),
        ("Where is the cello teacher from?", ["c0-s6-1", "c0-s3-1"], "single-hop"),
        ("오사카 출장은 언제 가?", ["c0-s7-0"], "temporal"),  # its session is held out: unanswerable
        ("What colour is the kitchen?", ["c0-s8-1"], "single-hop"),
        ("Which marathon did Mina run?", ["c0-s5-1"], "adversarial"),  # answerable: false
    ]
    queries = [
        {"id": f"q{i}", "query": text, "relevant": rel, "answerable": cat != "adversarial", "category": cat}
        for i, (text, rel, cat) in enumerate(asks)
    ]
    src = tmp_path / "src"
    src.mkdir()
    write_jsonl(src / "docs.jsonl", docs)
    write_jsonl(src / "queries.jsonl", queries)
    ours = agreement(materialize(src, tmp_path / "tree"))
    assert (ours["overall"]["answerable"], ours["overall"]["unanswerable"]) == (9, 2)
    assert set(ours["categories"]) == {"single-hop", "multi-hop", "temporal", "not-in-corpus", "adversarial"}
    assert ours["overall"]["hit@5"] > 0.5  # the words are all there: a working search finds most of them


@needs_shared
@pytest.mark.parametrize(("dataset", "groups"), [("korquad", 30), ("locomo", 12)])
def test_agrees_with_score_py_on_real_data(tmp_path: Path, dataset: str, groups: int) -> None:
    if not (SHARED / dataset / "docs.jsonl").is_file():
        pytest.skip(f"{SHARED / dataset} is not there")
    docs = [json.loads(line) for line in (SHARED / dataset / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    kept_groups = list(dict.fromkeys(d["group"] for d in docs))[:groups]
    docs = [d for d in docs if d["group"] in kept_groups]
    kept = {d["id"] for d in docs}
    rows = [json.loads(line) for line in (SHARED / dataset / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [q for q in rows if q["relevant"] and set(q["relevant"]) <= kept]
    src = tmp_path / "src"
    src.mkdir()
    write_jsonl(src / "docs.jsonl", docs)
    write_jsonl(src / "queries.jsonl", rows)
    ours = agreement(materialize(src, tmp_path / "tree"))
    assert ours["overall"]["unanswerable"] > 0 and ours["overall"]["answerable"] > 20


# --- the command ---------------------------------------------------------------------------------

SAMPLE_QUERIES = [
    {"id": "values", "query": "가치관이 뭐야?", "expected": ["identity/values"], "category": "identity"},
    {"id": "cron", "query": "크론 스케줄", "expected": ["bank/technical/cron-design.md"], "category": "ops"},
    {
        "id": "reflect",
        "query": "Reflect 파이프라인 구조",
        "expected": [{"node": "technical/heartbeat-reflect"}],
        "category": "ops",
    },
    {"id": "wrong", "query": "heartbeat", "expected": ["project/decisions"], "category": "ops"},
    {"id": "nothing", "query": "양자역학 블랙홀 증명", "category": "none"},
]


def test_cli_json_round_trip_and_per_query_lines(sample_root: Path, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "q.jsonl", SAMPLE_QUERIES)
    result = cli("eval", "q.jsonl", "--root", str(sample_root), "--json", "--per-query", "ranks.jsonl")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # no counter when stderr is not a terminal
    doc = json.loads(result.stdout)
    assert doc["overall"] == {
        "n": 5,
        "answerable": 4,
        "unanswerable": 1,
        "hit@1": 0.75,
        "hit@5": 0.75,
        "mrr@10": 0.75,
        "file_hit@5": 0.75,
        "answerable_empty": 0.0,
        "unanswerable_empty": 1.0,
    }
    assert doc["categories"]["ops"]["n"] == 3 and doc["categories"]["ops"]["hit@1"] == round(2 / 3, 4)
    assert doc["categories"]["none"]["unanswerable_empty"] == 1.0
    assert (doc["k"], doc["tier"], doc["max_span"], doc["rejected_count"], doc["error_count"], doc["first_error"]) == (
        10,
        "default",
        30,
        1,
        0,
        None,
    )
    assert doc["latency_ms"]["n"] == 5 and 0 < doc["latency_ms"]["p50"] <= doc["latency_ms"]["p95"]
    lines = [json.loads(line) for line in (tmp_path / "ranks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["id"] for line in lines] == [q["id"] for q in SAMPLE_QUERIES]
    assert [line["rank"] for line in lines] == [1, 1, 1, None, None]
    assert lines[0]["hits"][0] == {
        "path": "bank/identity/values.md",
        "lines": lines[0]["hits"][0]["lines"],
        "node": "identity/values",
    }
    assert lines[4]["hits"] == [] and lines[4]["rejected"]
    report, _ = evaluate(tmp_path / "q.jsonl", sample_root, now=clock())
    assert {k: v for k, v in schema.evaluation(report).items() if k != "latency_ms"} == {
        k: v for k, v in doc.items() if k != "latency_ms"
    }


def test_cli_table_has_an_overall_row_and_one_per_category(sample_root: Path, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "q.jsonl", SAMPLE_QUERIES)
    result = cli("eval", "q.jsonl", "--root", str(sample_root), "-k", "3", "--tier", "bank")
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.splitlines()
    assert rows[0].split() == ["set", "n", "unans.", "hit@1", "hit@5", "MRR@10", "file@5", "empty", "unans.", "empty"]
    assert rows[1].split() == ["all", "5", "1", "0.750", "0.750", "0.750", "0.750", "0.000", "1.000"]
    assert (
        rows[2].split()[0] == "identity" and rows[3].split()[0] == "none" and rows[4].split()[:3] == ["ops", "3", "0"]
    )
    assert rows[3].split() == ["none", "1", "1", "—", "—", "—", "—", "—", "1.000"]
    assert "k 3, tier bank" in rows[5] and "1 rejected" in rows[5]


def test_eval_does_not_count_its_searches_as_recalls(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(usage, "FLUSH_EVERY_S", 0.0)  # a counted recall would reach usage.json at once
    write_jsonl(tmp_path / "q.jsonl", SAMPLE_QUERIES)
    assert cli("eval", "q.jsonl", "--root", str(sample_root)).exit_code == 0
    assert not (sample_root / ".memtree" / "usage.json").exists()
    MemTree(sample_root).search("가치관이 뭐야?")  # while an ordinary search is counted
    assert (sample_root / ".memtree" / "usage.json").exists()


BAD_LINES = [
    ('{"query": "가치관", "expected": ["identity/values"]', "line 2: not valid JSON"),
    ('["query"]', "line 2: expected a JSON object, got list"),
    ('{"expected": ["identity/values"]}', 'line 2: "query" must be a non-empty string'),
    ('{"query": "  "}', 'line 2: "query" must be a non-empty string'),
    ('{"query": "가치관", "id": 1.5}', 'line 2: "id" must be a string or an integer'),
    ('{"query": "가치관", "id": "first"}', "line 2: id 'first' was already used on line 1"),
    ('{"query": "가치관", "category": 3}', 'line 2: "category" must be a string'),
    ('{"query": "가치관", "expected": "identity/values"}', 'line 2: "expected" must be a list'),
    ('{"query": "가치관", "expected": ["identity/value"]}', "line 2: 'identity/value' is neither a node id"),
    ('{"query": "가치관", "expected": [{"node": "identity/value"}]}', "line 2: unknown node 'identity/value'"),
    ('{"query": "가치관", "expected": [{"path": "bank/nope.md"}]}', "line 2: 'bank/nope.md' is not a note"),
    ('{"query": "가치관", "expected": ["../sample/bank/identity/values.md"]}', "is neither a node id"),
    ('{"query": "가치관", "expected": [{"path": "bank/identity/values.md", "lines": [9, 3]}]}', "lines must be"),
    ('{"query": "가치관", "expected": [{"path": "bank/identity/values.md", "lines": [0, 3]}]}', "lines must be"),
    ('{"query": "가치관", "expected": [{"path": "bank/identity/values.md", "lines": [3]}]}', "lines must be"),
    ('{"query": "가치관", "expected": [{"path": "bank/identity/values.md", "line": [3, 4]}]}', "an expected item is"),
    ('{"query": "가치관", "expected": [42]}', "an expected item is"),
    ('{"query": "가치관", "unanswerable": "yes"}', '"unanswerable" must be true or false'),
    ('{"query": "가치관", "answerable": true, "unanswerable": true}', "contradict each other"),
    ('{"query": "가치관", "answerable": true, "expected": []}', 'marked answerable, but "expected" is empty'),
]


@pytest.mark.parametrize(("line", "needle"), BAD_LINES)
def test_a_bad_query_line_is_one_error_line_naming_file_and_line(
    sample_root: Path, tmp_path: Path, line: str, needle: str
) -> None:
    first = json.dumps({"id": "first", "query": "크론", "expected": ["technical/cron-design"]}, ensure_ascii=False)
    (tmp_path / "q.jsonl").write_text(f"{first}\n{line}\n", encoding="utf-8")
    assert_one_line_error(cli("eval", "q.jsonl", "--root", str(sample_root)), "q.jsonl, line 2", needle)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "q.jsonl: no queries (the file is empty)"),
        (b"\n  \n", "q.jsonl: no queries (the file is empty)"),
        (b'{"query": "\xff\xfe"}\n', "is not UTF-8 text"),
        (b'{"query": "x", "relevant": ["d1"], "answerable": true}\n', "give --spans FILE"),
    ],
)
def test_an_unusable_query_file_is_one_error_line(
    sample_root: Path, tmp_path: Path, content: bytes, needle: str
) -> None:
    (tmp_path / "q.jsonl").write_bytes(content)
    assert_one_line_error(cli("eval", "q.jsonl", "--root", str(sample_root)), needle)


def test_bad_spans_and_options_are_one_error_line(sample_root: Path, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "q.jsonl", [{"query": "x", "relevant": ["d1", "d2"], "answerable": True}])
    write_jsonl(tmp_path / "spans.jsonl", [{"id": "d1", "path": "bank/identity/values.md", "lines": [2, 1]}])
    assert_one_line_error(cli("eval", "q.jsonl", "--root", str(sample_root)), "spans.jsonl, line 1: lines must be")
    write_jsonl(tmp_path / "spans.jsonl", [{"id": "d9", "path": "bank/identity/values.md", "lines": [1, 1]}])
    assert_one_line_error(
        cli("eval", "q.jsonl", "--root", str(sample_root)), "q.jsonl, line 1: none of its relevant docs"
    )
    root = str(sample_root)
    assert_one_line_error(cli("eval", "missing.jsonl", "--root", root), "query file missing.jsonl does not exist")
    write_jsonl(tmp_path / "q.jsonl", SAMPLE_QUERIES)
    assert_one_line_error(cli("eval", "q.jsonl", "--root", root, "--spans", "nope.jsonl"), "spans file nope.jsonl")
    assert_one_line_error(cli("eval", "q.jsonl", "--root", root, "--tier", "everything"), "unknown tier")
    assert_one_line_error(cli("eval", "q.jsonl", "--root", root, "-k", "0"), "at least 1")
    assert_one_line_error(cli("eval", "q.jsonl", "--root", root, "--per-query", "no/such/dir/x.jsonl"), "--per-query")


def test_help_describes_the_query_file() -> None:
    result = cli("eval", "--help")
    assert result.exit_code == 0
    assert "expected" in result.stdout and "--per-query" in result.stdout and "--spans" in result.stdout


def test_progress_counter_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert memtree.cli.eval._counter(False)[0] is None
    now = iter([100.0, 100.1, 101.0, 101.05, 101.5])  # start, too early, shown, too soon, shown
    monkeypatch.setattr(memtree.cli.eval.time, "monotonic", lambda: next(now))
    progress, done = memtree.cli.eval._counter(True)
    assert progress is not None
    for i in range(1, 5):
        progress(i, 40)
    done()
    err = capsys.readouterr().err
    assert err == "\rmemtree eval: 2/40 queries\rmemtree eval: 4/40 queries\r\x1b[K"
