"""memtree.search.evidence: long, polite, chatty queries are judged by the clause the memory answers."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memtree import MemTree
from memtree.search import evidence, message
from memtree.text import terms as text


@pytest.mark.parametrize("term", ["있나요", "궁금합니다", "하셨어요", "해요", "ㅎㅎ", "알려주시겠어요", "하는데"])
def test_conversational_predicates_are_recognised(term: str) -> None:
    assert evidence.is_predicate_form(term)


@pytest.mark.parametrize("term", ["가치관", "배포", "노무현", "데이터베이스", "필요", "중요", "롤백", "kst", "집"])
def test_nouns_and_names_are_not_predicates(term: str) -> None:
    assert not evidence.is_predicate_form(term)


def test_a_message_is_cut_into_its_sentences() -> None:
    query = "안녕하세요! 배포할 때 롤백은 어떻게 하나요? 지난주에 스테이징에서 문제가 있었어요.\n감사합니다"
    qterms = text.query_terms(query)
    parts = evidence.clauses(query, qterms)
    assert len(parts) == 4
    assert [qterms[i] for i in parts[1]] == text.query_terms("배포할 때 롤백은 어떻게 하나요?")


def test_a_plain_question_is_one_clause_judged_as_a_whole() -> None:
    qterms = text.query_terms("크론 스케줄 설계 KST")
    assert evidence.clauses("크론 스케줄 설계 KST", qterms) == [tuple(range(len(qterms)))]


def test_coverage_is_the_best_clauses_share_and_a_missing_predicate_weighs_nothing() -> None:
    query = "안녕하세요. 롤백 절차 알려주세요?"
    qterms = text.query_terms(query)
    idfs = [3.0] * len(qterms)
    dfs = [0 if evidence.is_predicate_form(q) else 5 for q in qterms]
    judged = evidence.weigh(query, qterms, idfs, dfs)
    strengths = [1.0 if q in ("롤백", "절차") else 0.0 for q in qterms]
    assert judged.coverage(strengths) == 1.0  # the greeting's clause is unmatched; the question's is whole


def test_a_missing_name_still_counts_against_the_clause() -> None:
    query = "노무현 정부가 시행한 정책"
    qterms = text.query_terms(query)
    dfs = [0 if q == "노무현" else 9 for q in qterms]
    idfs = [7.0 if q == "노무현" else 2.0 for q in qterms]
    judged = evidence.weigh(query, qterms, idfs, dfs)
    assert judged.coverage([0.0 if q == "노무현" else 1.0 for q in qterms]) < 0.5


@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), min_size=1, max_size=8).flatmap(
        lambda weights: st.tuples(
            st.just(weights),
            st.lists(st.lists(st.integers(0, len(weights) - 1), min_size=1, max_size=5, unique=True), max_size=4),
            st.lists(st.sampled_from([0.0, 0.3, 0.7, 1.0]), min_size=len(weights), max_size=len(weights)),
        )
    )
)
def test_coverage_is_the_formula_over_every_clause(case: tuple[list[float], list[list[int]], list[float]]) -> None:
    # Why: coverage reads only the clauses a matched term is in; every other clause's share is 0
    weights, clauses, strengths = case
    judged = evidence.Weights(tuple(weights), tuple(map(tuple, clauses)))
    weighed = [c for c in clauses if sum(weights[i] for i in c) > 0]  # a clause of no weight judges nothing
    shares = [sum(weights[i] * strengths[i] for i in c) / sum(weights[i] for i in c) for c in weighed]
    assert judged.coverage(strengths) == max(shares, default=0.0)


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=200))
def test_a_long_query_keeps_its_rarest_present_terms_in_query_order(dfs: list[int]) -> None:
    qterms = [f"w{i}" for i in range(len(dfs))]
    kept = evidence.bounded(qterms, dfs, limit=10)
    assert len(kept) <= 10
    assert kept == [q for q in qterms if q in set(kept)]  # query order
    if len(dfs) > 10 and any(dfs):
        worst_kept = max(dfs[int(q[1:])] for q in kept)
        dropped = [df for q, df in zip(qterms, dfs) if q not in set(kept) and df > 0]
        assert all(df >= worst_kept for df in dropped)
    assert evidence.bounded(qterms, dfs, limit=10) == kept  # the same every time


ROLLBACK = {
    "bank/work/deploy.md": "# 배포\n\n- 롤백 절차: 이전 태그로 되돌리고 헬스체크를 확인한 뒤 팀 채널에 알린다.\n"
    "- 배포는 금요일 오후에 하지 않는다.\n",
    "bank/work/people.md": "# 사람\n\n- 팀장님은 코드 리뷰를 꼼꼼히 본다.\n",
}


def test_the_issues_chat_message_finds_the_rollback_procedure(make_root: Callable[..., Path]) -> None:
    root = make_root(ROLLBACK, None)
    mt = MemTree(root, refresh_interval=0)
    query = (
        "배포할 때 롤백은 어떻게 하나요? 지난주에 스테이징에서 문제가 있었고 팀장님이 절차를 다시 확인하라고 하셨어요"
    )
    result = mt.search(query)
    assert result.rejected is None, result.rejected
    assert result.hits[0].path == "bank/work/deploy.md" and "롤백" in result.hits[0].text


def test_a_1300_word_message_is_answered_and_bounded(make_root: Callable[..., Path]) -> None:
    root = make_root(ROLLBACK, None)
    filler = " ".join(f"잡담{i}번째 이야기를 했어요." for i in range(650))
    result = MemTree(root, refresh_interval=0).search(f"{filler} 롤백 절차는 어떻게 되나요? {filler}")
    assert result.rejected is None
    assert "롤백" in result.hits[0].text
    assert len(result.terms) <= evidence.MAX_TERMS


def test_a_short_question_about_something_absent_is_still_rejected(make_root: Callable[..., Path]) -> None:
    root = make_root(ROLLBACK, None)
    assert MemTree(root, refresh_interval=0).search("양자역학 블랙홀 증발").rejected


@pytest.mark.parametrize(
    ("clause", "asks"),
    [
        ("배포할 때 롤백은 어떻게 하나요?", True),
        ("임종석을 검거한 곳은 어디인가", True),
        ("When did Melanie paint a sunrise", True),
        ("Thanks so much!", False),
        ("감사합니다.", False),
        ("그리고 내일 회의 시간도 다시 확인해야겠네요.", False),
        ("Would love to know.", False),
        ("Do let me know!", False),
        ("would Caroline move back soon", True),
    ],
)
def test_questions_are_told_from_asides(clause: str, asks: bool) -> None:
    assert message.is_question(clause) is asks


def test_a_message_that_asks_ranks_by_its_questions_words() -> None:
    query = "Hey, hope your day is going fine. When did Melanie paint a sunrise? Thanks so much!"
    qterms = text.query_terms(query)
    lift = evidence.boosts(query, qterms, None, 0.3)
    assert lift is not None
    assert {q for q, b in zip(qterms, lift) if b == 1.0} == set(text.query_terms("When did Melanie paint a sunrise?"))
    assert (
        evidence.boosts(
            "When did Melanie paint a sunrise?", text.query_terms("When did Melanie paint a sunrise"), None, 0.3
        )
        is None
    )


@pytest.mark.parametrize(
    ("query", "question"),
    [
        *(
            (f"Hi, how long has John been surfing? {follow_up} Thanks!", "how long has John been surfing")
            for follow_up in ["Any idea?", "Can you check?", "Do you know?", "Could you look it up?"]
        ),
        # a request to the listener is the question when nothing else asks
        ("Hi! Can you tell me where John surfs? Thanks!", "Can you tell me where John surfs"),
    ],
)
def test_a_request_to_the_listener_beside_a_question_is_an_aside(query: str, question: str) -> None:
    qterms = text.query_terms(query)
    lift = evidence.boosts(query, qterms, None, 0.3)
    assert lift is not None
    assert {q for q, b in zip(qterms, lift) if b == 1.0} == set(text.query_terms(question))


def test_korean_connectives_and_a_second_english_question_end_a_clause() -> None:
    query = "회사 동료가 물어봤는데 1규빗은 몇 미터인가?"
    parts = [[text.query_terms(query)[i] for i in c] for c in evidence.clauses(query, text.query_terms(query))]
    assert parts[-1] == text.query_terms("1규빗은 몇 미터인가?")
    query = "I was reading my notes and where was the forest picture taken?"
    assert len(evidence.clauses(query, text.query_terms(query))) == 2


@pytest.mark.parametrize(
    ("chat", "query", "answer"),
    [
        (
            "- Melanie painted a sunrise in May.\n"
            "- Caroline: hope your day is going fine, my day is going great and fine!",
            "Hey, hope your day is going fine. When did Melanie paint a sunrise? Thanks!",
            "Melanie",
        ),
        (  # a follow-up asking the listener to act is an aside too
            "- Tim: That's ok! I can look some up later, can you check the list?\n\n"
            "- John: I have been surfing for five years now, since I was in college.",
            "Hi, how long has John been surfing? Can you look it up? Can you check?",
            "surfing",
        ),
        (  # a chunk holding the whole greeting answers nothing asked
            "- Melanie: hello there.\n\n- Nate: Good luck on that! People will love the book even more.\n\n"
            "- Caroline: I've got lots of kids' books, classics and stories from different cultures.\n\n"
            + "\n\n".join(f"- Melanie: Good hike today, even in the rain, trail {i}." for i in range(6)),
            "Good evening! Would Caroline likely have kids' books on her bookshelf?",
            "Caroline",
        ),
    ],
)
def test_the_question_words_lift_the_chunk_that_answers(
    make_root: Callable[..., Path], chat: str, query: str, answer: str
) -> None:
    root = make_root({"bank/chat.md": f"# chat\n\n{chat}\n"}, None)
    assert answer in MemTree(root, refresh_interval=0).search(query).hits[0].text


def test_the_question_is_the_sentences_that_ask() -> None:
    def asked(query: str) -> list[list[str]]:
        qterms = text.query_terms(query)
        return [[qterms[i] for i in c] for c in evidence.clauses(query, qterms, asking=True)]

    assert asked("Hi there! What books has Tim read? Plus I still haven't answered those texts.") == [
        text.query_terms("What books has Tim read")
    ]
    # a connective cuts a clause, not the sentence: the whole sentence is the question
    assert asked("안녕하세요! 회사 동료가 물어봤는데 1규빗은 몇 미터인가?") == [
        text.query_terms("회사 동료가 물어봤는데"),
        text.query_terms("1규빗은 몇 미터인가"),
    ]
    # a title's full stop ends no sentence
    assert asked("Hi! Would Caroline have Dr. Seuss books? Thanks.") == [
        text.query_terms("Would Caroline have Dr. Seuss books")
    ]
    # nothing stands apart when every sentence asks, or none does
    assert asked("뉘르부르크링이 레져파크화 되면서 생긴 반대운동은?") == []
    assert asked("What books has Tim read? Where does he read them?") == []
    assert asked("Tim reads books. He likes fantasy.") == []


def test_a_chunk_answers_the_question_not_the_greeting() -> None:
    query = "Good evening! Would Caroline have Dr. Seuss books?"
    qterms = text.query_terms(query)
    judged = evidence.weigh(query, qterms, [1.0] * len(qterms), [1] * len(qterms))
    greeting = [1.0 if q in text.query_terms("Good evening") else 0.0 for q in qterms]
    question = [0.0 if q in text.query_terms("Good evening") else 1.0 for q in qterms]
    assert judged.coverage(question) == 1.0
    assert judged.coverage(greeting) == 0.0  # rejection judges the question: the greeting answers nothing
    assert judged.answered(greeting, 0.3) == pytest.approx(0.3)  # rank: what else it holds orders the misses
    assert judged.answered(question, 0.3) == 1.0
    plain = "Would Caroline have Dr. Seuss books?"
    terms = text.query_terms(plain)
    judged = evidence.weigh(plain, terms, [1.0] * len(terms), [1] * len(terms))
    some = [1.0] + [0.0] * (len(terms) - 1)
    assert not judged.question and judged.answered(some, 0.3) == 1 / len(terms)
    assert judged.coverage(some) == 1 / len(terms)


def test_an_english_lead_in_ends_where_the_question_begins() -> None:
    query = "Hiya, what career path has Caroline decided to pursue? Side note: my calendar is a mess."
    parts = evidence.clauses(query, text.query_terms(query))
    assert [text.query_terms(query)[i] for i in parts[1]] == text.query_terms(
        "what career path has Caroline decided to pursue"
    )


def test_lazy_weighing_returns_what_weighing_every_candidate_returns(
    sample_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Why: the ceilings only skip work; with evidence re-ranking they must never change a result.
    # No reinforcement: the first pass's recall counts would lift the second pass's decay.
    from memtree.search import pipeline as search_module

    (sample_root / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    mt = MemTree(sample_root, refresh_interval=0)
    queries = ["가치관이 뭐야?", "크론 스케줄 설계 KST", "안녕하세요! Reflect 파이프라인은 어떻게 도나요? 감사해요."]
    lazy = [[(h.path, h.lines, h.score) for h in mt.search(q, k=3, cache=False).hits] for q in queries]
    real = search_module._weigh_lazily

    def weigh_all(wanted, k, ceiling, *rest):  # type: ignore[no-untyped-def]
        return real(wanted, len(wanted) + 1, ceiling, *rest)  # a k no bound can reach: every one is weighed

    monkeypatch.setattr(search_module, "_weigh_lazily", weigh_all)
    full = [[(h.path, h.lines, h.score) for h in mt.search(q, k=3, cache=False).hits] for q in queries]
    assert lazy == full and all(lazy)


def _judged(query: str) -> tuple[list[str], evidence.Weights]:
    qterms = text.query_terms(query)
    return qterms, evidence.weigh(query, qterms, [3.0] * len(qterms), [5] * len(qterms))


def _adjacency(chunk: str, qterms: list[str], judged: evidence.Weights, lift: list[float] | None = None) -> float:
    """Adjacency of a chunk that holds every query word."""
    return evidence.pairs(qterms, judged, lift).adjacency(chunk, qterms, [1.0] * len(qterms))


@pytest.mark.parametrize(
    ("chunk", "share"),
    [
        ("노아는 명령에 따라 노아의 방주를 만들었다", 1.0),  # a particle between: side by side
        ("노아는 하나님의 명령에 따라 긴 항해 끝에 방주를 만들었다", 0.0),  # the same words, apart
        ("방주, 그 노아의 배", 1.0),  # either order, one word between
        ("노아 방주", 1.0),
        ("노아노아방주", 1.0),  # one compound holds both
        ("노아는 떠났다. 방주는 남았다", 0.0),  # a sentence ends between them
        ("노아\n방주", 0.0),  # so does a line
        ("노아  \t방주", 1.0),  # one gap, however wide
        ("노아 옛 방주", 1.0),  # one word between
        ("노아 옛 큰 방주", 0.0),  # two words between
        ("노아 \n 방주", 0.0),
        ("", 0.0),
    ],
)
def test_adjacency_is_the_share_of_the_questions_word_pairs_side_by_side(chunk: str, share: float) -> None:
    qterms, judged = _judged("노아의 방주")
    assert _adjacency(chunk, qterms, judged) == share


def test_adjacency_weighs_each_pair_by_its_lighter_word_and_reads_latin_words_whole() -> None:
    query = "time management technique"
    qterms = text.query_terms(query)
    judged = evidence.weigh(query, qterms, [1.0, 2.0, 4.0], [5, 5, 5])
    # (time, management) weighs 1, (management, technique) weighs 2
    assert _adjacency("good time management, and a technique", qterms, judged) == pytest.approx(1 / 3)
    assert _adjacency("sometime management technique", qterms, judged) == pytest.approx(2 / 3)


def test_a_one_word_question_and_an_aside_pair_judge_nothing() -> None:
    qterms, judged = _judged("롤백")
    assert _adjacency("아무 말", qterms, judged) == 1.0  # no pair: every chunk ranks as before
    query = "Thanks for the cake recipe! When did Melanie paint a sunrise?"
    qterms = text.query_terms(query)
    judged = evidence.weigh(query, qterms, [3.0] * len(qterms), [5] * len(qterms))
    lift = evidence.boosts(query, qterms, None, 0.3)
    # the aside's "cake recipe" stands together, the question's words do not: only the question counts
    assert _adjacency("a cake recipe; Melanie once said a sunrise", qterms, judged, lift) == 0.0


@given(st.lists(st.sampled_from(["노아", "방주", "는", " ", ".", "\n", "노아의", "방주를", "배"]), max_size=30))
def test_adjacency_never_exceeds_what_the_words_held_allow(words: list[str]) -> None:
    # Why: lazy weighing bounds a candidate by possible() before its text is read; adjacency above it
    # would make the lazy cut skip a chunk that belongs in the top k
    qterms, judged = _judged("노아의 방주 이야기")
    paired = evidence.pairs(qterms, judged)
    chunk = "".join(words)
    for strengths in ([1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.0, 0.7, 0.7]):
        assert 0.0 <= paired.adjacency(chunk, qterms, strengths) <= paired.possible(strengths) <= 1.0


@given(st.text(alphabet="ab가 \t\n\u3000.?!。", max_size=24), st.data())
def test_side_by_side_counts_the_gaps_between_two_places(low: str, data: st.DataObject) -> None:
    # the rule in plain words: at most two runs of spaces, none with a line break, and no sentence end
    lo = data.draw(st.integers(0, len(low)))
    hi = data.draw(st.integers(lo, len(low)))
    gaps = re.findall(r"\s+", low[lo:hi])
    plain = len(gaps) <= 2 and not any("\n" in gap for gap in gaps) and not re.search(r"[.?!。？！]\s", low[lo:hi])
    assert evidence._side_by_side(low, lo, hi) == plain


def test_casefold_leaves_hangul_spaces_and_sentence_marks_as_they_are_and_makes_none() -> None:
    # Why: adjacency reads a chunk in NFC alone, without casefold, when every word it looks for is Hangul
    kept = re.compile(r"[\s.?!。？！\uac00-\ud7a3\u3130-\u318f]")
    for c in map(chr, range(0x110000)):
        folded = c.casefold()
        if folded != c:
            assert folded and not kept.match(c) and not kept.search(folded), hex(ord(c))


@given(
    st.lists(
        st.sampled_from(["노아", "방주", "의", "는", "İ", "ß", "A", "x", " ", ". ", "\n", "ᄀ", "방"]), max_size=20
    )
)
def test_hangul_words_stand_where_casefold_would_put_them(words: list[str]) -> None:
    qterms, judged = _judged("노아의 방주 방")
    paired = evidence.pairs(qterms, judged)
    assert paired.hangul
    chunk = unicodedata.normalize("NFD", "".join(words))
    held = [1.0] * len(qterms)
    casefolded = evidence.Pairs(paired.pairs, paired.total)  # not taken as Hangul: the text is casefolded
    assert paired.adjacency(chunk, qterms, held) == casefolded.adjacency(chunk, qterms, held)


def test_the_paragraph_saying_the_words_together_ranks_first(make_root: Callable[..., Path]) -> None:
    notes = {
        "bank/ark.md": "# 옛이야기\n\n"
        "노아는 하나님의 명령을 들었다. 그 뒤 방주 이야기는 여러 문헌에 남았다.\n\n"
        "노아의 방주는 세 층으로 되어 있었다. 하나님의 명령이 그렇게 정했다.\n",
    }
    root = make_root(notes, None)
    hits = MemTree(root, refresh_interval=0).search("노아의 방주", k=2, cache=False).hits
    # the factor 1 − 0.5 + 0.5 × share: a sentence's end parts the first paragraph's pair
    assert [h.signals["adjacency"] for h in hits] == [1.0, 0.5]
    assert "세 층" in hits[0].text and hits[0].score > hits[1].score
    (root / "memtree.yaml").write_text("search:\n  adjacency_weight: 0\n", encoding="utf-8")
    off = MemTree(root, refresh_interval=0).search("노아의 방주", k=2, cache=False).hits
    assert [h.signals["adjacency"] for h in off] == [1.0, 1.0]  # 0 turns it off


def test_a_word_that_frames_the_question_is_no_evidence_even_when_memory_holds_it() -> None:
    query = "What did Tim say about the trip? Answer yes or no."
    qterms = text.query_terms(query)
    judged = evidence.weigh(query, qterms, [3.0] * len(qterms), [5] * len(qterms))
    weighs = dict(zip(qterms, judged.weights))
    assert weighs[text.term("say")] == weighs[text.term("yes")] == weighs[text.term("answer")] == 0.0
    assert weighs[text.term("trip")] == 3.0
    # a chunk holding only the framing words covers nothing of the question
    strengths = [1.0 if q in {text.term("say"), text.term("yes")} else 0.0 for q in qterms]
    assert judged.coverage(strengths) == 0.0


def test_a_candidates_ceiling_is_never_below_its_tight_bound_and_shares_agree() -> None:
    # Why: the lazy cut skips a candidate whose ceiling cannot reach the top k; a ceiling below the
    # evidence and adjacency factors it is then weighed by would drop a hit. Every strength pattern of
    # a message with an aside and a question, in a note routed by one of its words and in one not routed.
    from memtree.config import SearchSettings
    from memtree.index.routing import Route
    from memtree.search import pipeline as search_module

    query = "Good evening! What did Melanie paint last year? Thanks."
    qterms = text.query_terms(query)
    idfs = [1.0 + i % 3 for i in range(len(qterms))]
    judged = evidence.weigh(query, qterms, idfs, [1] * len(qterms))
    paired = evidence.pairs(qterms, judged)
    assert judged.question and 4 <= len(qterms) <= 8 and paired.total
    settings = SearchSettings(evidence_weight=1.0, aside_weight=0.3, adjacency_weight=0.5)
    without_pairs = SearchSettings(evidence_weight=1.0, aside_weight=0.3, adjacency_weight=0.0)
    ref = (0, 0)
    painted = qterms.index(text.term("paint"))
    tightened = 0
    for route in (None, Route("n", 0.5, {painted: (1.0, "painting")})):
        for strengths in itertools.product((0.0, 0.7, 1.0), repeat=len(qterms)):
            row = list(strengths)
            held = sum(w * s for w, s in zip(judged.weights, row))
            places = {ref: (None, route)}

            def ceiling(s: SearchSettings, row: list[float] = row, held: float = held, places: dict = places) -> float:
                return search_module._ceilings([(1.0, ref)], [held], [row], places, {}, judged, paired, 1.0, s)[0]  # type: ignore[arg-type]

            raised = row if route is None else search_module._stronger(row, route.terms)  # as evidenced() raises it
            coverage, answered = judged.shares(raised, 0.3)
            tight = 1.0 * (1.0 - 1.0 + 1.0 * answered) * (1.0 - 0.5 + 0.5 * paired.possible(raised)) * 1.0
            assert ceiling(settings) >= tight - 1e-12
            assert ceiling(settings) <= ceiling(without_pairs)
            tightened += ceiling(settings) < ceiling(without_pairs)
            # one look at the clauses gives what looking at the message's and the question's apart gives
            assert coverage == judged.coverage(raised)
            whole = evidence.Weights(judged.weights, judged.clauses).coverage(raised)  # every clause's best
            if judged.question:
                assert coverage == evidence.Weights(judged.weights, judged.question).coverage(raised)
            assert answered == max(coverage, 0.3 * whole)
    assert tightened  # a candidate holding no pair of the question's words is bounded by it
