"""memtree.search.message: a message read once — its terms, its clauses, what asks — and no date cut apart."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memtree import MemTree
from memtree.search import evidence, message
from memtree.text import date_terms as dates
from memtree.text import terms as text

TODAY = date(2026, 12, 1)


def whole(query: str) -> tuple[str, ...]:
    """The message's terms tokenized as one piece: what its clauses' terms must add up to."""
    said = dates.query_dates(query, TODAY)
    return tuple(dict.fromkeys([*text.query_terms(said.words), *said.days]))


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("What did Elise buy on Jan. 7, 2024? Thanks!", "What did Elise buy on Jan. 7, 2024?"),
        ("What did Elise buy on 7 Jan. 2024? Thanks!", "What did Elise buy on 7 Jan. 2024?"),
        ("Hi! What did we agree on Sept. 3rd, 2023? Cheers.", "What did we agree on Sept. 3rd, 2023?"),
        ("2024. 1. 7. 회의에서 뭘 정했지? 고마워요.", "2024. 1. 7. 회의에서 뭘 정했지?"),
        ("안녕하세요. 2024. 1. 7. 회의에서 뭘 정했나요? 감사합니다", "2024. 1. 7. 회의에서 뭘 정했나요?"),
    ],
)
def test_a_date_is_never_cut_from_its_question(query: str, asked: str) -> None:
    reading = message.read(query, TODAY)
    question = [p.said for p in reading.parts if p.asks]
    assert question == [whole(asked)]
    assert any(t.startswith("@d") for t in question[0])  # the day belongs to the question that names it


def test_a_sentence_still_ends_after_a_date() -> None:
    reading = message.read("We met on Jan. 7. What did we decide? Thanks", TODAY)
    assert [p.said for p in reading.parts] == [whole("We met on Jan. 7."), whole("What did we decide?"), ("thank",)]
    assert [p.asks for p in reading.parts] == [False, True, False]
    # a dotted day's own full stop ends nothing, but a line break after it does
    split = message.read("2024. 1. 7.\n회의에서 뭘 정했지?", TODAY)
    assert [p.said for p in split.parts] == [whole("2024. 1. 7."), whole("회의에서 뭘 정했지?")]


def test_a_plain_question_is_read_whole() -> None:
    reading = message.read("What did Elise buy on 7 Jan 2024?", TODAY)
    assert reading.parts == ()
    assert reading.terms == whole("What did Elise buy on 7 Jan 2024?")
    assert reading.written == frozenset(text.terms("7 Jan 2024"))


_FRAGMENTS = [
    "안녕하세요",
    "배포할 때 롤백은 어떻게 하나요",
    "지난주에 스테이징에서 문제가 있었어요",
    "What did Elise buy",
    "on 7 Jan 2024",
    "on Jan. 7, 2024",
    "2024년 1월 7일 회의에서",
    "2024. 1. 7. 회의",
    "yesterday we shipped it",
    "Thanks so much",
    "can you check",
    "Any idea",
    "how many books did Tim read",
    "회사 동료가 물어봤는데",
    "notion에 적어둔 거",
    "Dr. Seuss books",
]
_SEPARATORS = [". ", "? ", "! ", "\n", ", ", " ", ", and what ", ": ", "… ", "~ "]


@given(st.lists(st.tuples(st.sampled_from(_FRAGMENTS), st.sampled_from(_SEPARATORS)), min_size=1, max_size=6))
def test_a_messages_terms_are_its_clauses_terms_and_every_day_is_in_a_clause(pieces: list[tuple[str, str]]) -> None:
    query = "".join(f + s for f, s in pieces)
    reading = message.read(query, TODAY)
    assert reading.terms == whole(query)  # read clause by clause, the same terms as read whole
    if reading.parts:
        said = {t for p in reading.parts for t in p.said}
        assert said == set(reading.terms)  # every term, each day too, is in a clause
        qterms = list(reading.terms)
        assert sorted({i for c in evidence.clauses(query, qterms, TODAY) for i in c}) == list(range(len(qterms)))


@given(
    st.lists(
        st.tuples(
            st.sampled_from([f for f in _FRAGMENTS if not any(c.isdigit() for c in f)]), st.sampled_from(_SEPARATORS)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_without_a_date_a_message_is_cut_at_every_clause_end(pieces: list[tuple[str, str]]) -> None:
    query = "".join(f + s for f, s in pieces)
    assert message.clause_texts(query) == [p for p in message.CLAUSE_END.split(query) if p]


def test_a_question_naming_a_day_in_a_chat_message_finds_that_days_entry(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/meetings.md": (
                "# 회의록\n\n## 2024-01-07\n\n- 회의에서 배포 일정을 3월로 확정했다\n\n"
                "## 2024-01-08\n\n- 회의에서 예산 배분을 논의했다\n"
            ),
            "bank/shopping.md": (
                "# Elise\n\n## 2024-01-07\n\n- Elise bought a red bicycle\n\n"
                "## 2024-01-09\n\n- Elise bought new boots\n"
            ),
        },
        None,
    )
    mt = MemTree(root, refresh_interval=0)
    hit = mt.search("안녕하세요. 2024. 1. 7. 회의에서 뭘 정했나요? 감사합니다", k=1).hits[0]
    assert "3월로 확정" in hit.text
    hit = mt.search("Hey there! What did Elise buy on Jan. 7, 2024? Thanks so much!", k=1).hits[0]
    assert "red bicycle" in hit.text


def test_a_lead_in_before_a_dash_is_not_the_question() -> None:
    reading = message.read("hey, quick one - what did Elise buy yesterday? thx", TODAY)
    assert [p.said for p in reading.parts if p.asks] == [whole("what did Elise buy yesterday?")]


@pytest.mark.parametrize("term", ["sunday", text.term("tuesdays"), "일요일", "알려줘", "찾아줘", "거", "것"])
def test_a_weekday_a_casual_request_and_a_bare_thing_prove_little(term: str) -> None:
    assert evidence.proves_little(term)


def test_a_chat_message_with_a_weekday_or_a_casual_request_still_finds_the_answer(
    make_root: Callable[..., Path],
) -> None:
    root = make_root(
        {
            "bank/meetings.md": (
                "# 회의록\n\n## 2024-01-07\n\n- 배포 회의에서 3월 출시로 확정했다\n\n"
                "## 2024-01-08\n\n- 예산 회의에서 배분을 논의했다\n"
            ),
            "bank/elise.md": "# Elise\n\n- Elise keeps her bicycle in the garage\n",
        },
        None,
    )
    mt = MemTree(root, refresh_interval=0)
    assert "3월 출시" in mt.search("일요일 배포 회의에서 확정한 거 알려줘", k=1).hits[0].text
    assert "garage" in mt.search("hey, quick one - where does Elise keep her bicycle on Sundays? thx", k=1).hits[0].text


@pytest.mark.parametrize("end", [" ㅎㅎ ", " ㅋㅋㅋ ", " ㅠㅠ ", "^^ ", " 🙏 "])
def test_laughter_tears_and_emoji_end_a_sentence_in_chat(end: str) -> None:
    reading = message.read(f"오늘도 수고 많아{end}근데 배포는 언제 해요?", TODAY)
    greeting, *question = reading.parts
    assert not greeting.asks and {"수고", "많아"} <= set(greeting.said)
    # 근데 (by the way) is -ㄴ데's own clause, in the question's sentence
    assert [p.said for p in question] == [("근데",), tuple(whole("배포는 언제 해요?"))]
    assert {p.sentence for p in question} == {1} and question[-1].asks


@pytest.mark.parametrize("term", ["근데", "혹시", "알아", "기억나요"])
def test_a_chats_by_the_way_and_do_you_know_prove_little(term: str) -> None:
    assert evidence.proves_little(term)


def test_a_casual_korean_message_finds_what_it_asks(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {
            "bank/log.md": (
                "# 작업 기록\n\n- `.memtree/` 폴더는 이번 주에 수동으로 네 번 지웠다\n\n"
                "- cron 작업은 예약 실행과 겹치지 않는다\n\n"
                "- 오늘도 수고 많았다고 팀장님이 말했다 ㅎㅎ 폴더 정리는 다음 주에\n"
            ),
        },
        None,
    )
    query = "안녕! 오늘도 수고 많아 ㅎㅎ 근데 혹시 .memtree 폴더 수동으로 몇 번 지웠는지 알아? 고마워~"
    assert "네 번 지웠다" in MemTree(root, refresh_interval=0).search(query, k=1).hits[0].text


def test_what_time_and_which_year_ask_with_their_question_word() -> None:
    assert text.query_terms("What time is standup?") == ["standup"]
    assert text.query_terms("In which year did Caroline move to Sweden?") == text.query_terms("Caroline move Sweden")
    assert "day" in text.query_terms("what a day it was")  # not asked with what
    assert text.terms("what time") == [text.term("time")]  # notes are indexed as written


def test_a_chats_fillers_in_the_questions_own_sentence_do_not_count_against_it(
    make_root: Callable[..., Path],
) -> None:
    assert all(evidence.proves_little(text.term(w)) for w in ("sorry", "bother", "quick", "thanks"))
    query = "Sorry to bother you again, but what time was the standup and where?"
    asked = {t for p in message.read(query, TODAY).parts if p.asks for t in p.said}
    assert asked == set(whole("what time was the standup and where?")) == {"standup"}
    root = make_root(
        {"bank/misc.md": "# Misc\n\n- The wifi password is rotated monthly\n\n- Standup is at 9:30 in room B\n"}, None
    )
    assert "9:30" in MemTree(root, refresh_interval=0).search(query, k=1).hits[0].text


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("부모님이 물어보셔서 찾아보는 중인데 커크 해밋은 어느 그룹 소속인가?", "커크 해밋은 어느 그룹 소속인가?"),
        ("기억이 잘 안 나서 그런데 반기문이 맡은 직위는?", "반기문이 맡은 직위는?"),
        ("동료가 물어봤는데 1규빗은 몇 미터인가?", "1규빗은 몇 미터인가?"),
    ],
)
def test_the_connective_n_de_ends_a_lead_in_after_any_syllable_closing_with_n(query: str, asked: str) -> None:
    # Why: -ㄴ데 is one connective whatever its syllable (는데, 인데, 그런데); the lead-in is its own clause
    parts = message.read(query, TODAY).parts
    assert len(parts) == 2 and parts[-1].said == tuple(whole(asked))


@pytest.mark.parametrize(
    ("clause", "asks"),
    [
        ("강정호가 신인상을 수상한 해는 어떻게 되는지 궁금합니다.", True),
        ("진출하려고 경쟁하는 곳은 어디인지 알려주시면 감사하겠습니다.", True),
        ("누가 이길지 알고 싶어요.", True),
        ("오늘 점심 뭐 먹을지 고민이에요.", False),  # wondering what to do, not asking memory
        ("지금까지 알려진 사실이다.", False),
    ],
)
def test_a_question_embedded_in_a_request_or_a_wondering_asks(clause: str, asks: bool) -> None:
    assert message.is_question(clause) is asks


def test_a_chat_message_is_refused_when_memory_holds_only_its_greeting_and_aside(
    make_root: Callable[..., Path],
) -> None:
    # Why: the words around a question are no answer to it; an agent injecting memory into every
    # prompt must hear "not in memory" here, not the note that shares the small talk
    root = make_root(
        {
            "bank/chat.md": (
                "# Chat\n\n- 안녕하세요 오늘 저녁 약속 장소는 아직 정해야 한다\n\n"
                "- Good evening! The weather is lovely and dinner plans are still open\n"
            ),
            "bank/infra.md": "# Infra\n\n- 배포는 매주 목요일에 한다\n",
        },
        None,
    )
    mt = MemTree(root, refresh_interval=0)
    refused = mt.search("안녕하세요! 사내 위키의 관리자는 누구인가? 그리고 오늘 저녁 약속 장소도 정해야 하네요.", k=3)
    assert refused.hits == () and refused.rejected
    refused = mt.search("Good evening! Who maintains the payroll spreadsheet? Dinner plans are still open.", k=3)
    assert refused.hits == () and refused.rejected
    found = mt.search("안녕하세요! 배포는 무슨 요일에 하나요? 그리고 오늘 저녁 약속 장소도 정해야 하네요.", k=1)
    assert "목요일" in found.hits[0].text


def test_a_greeting_neither_rescues_nor_sinks_a_question(make_root: Callable[..., Path]) -> None:
    chat = (
        "- Melanie: Good luck on that! People will love the book even more.\n\n"
        "- Caroline: I've got lots of kids' books, classics and stories from different cultures.\n\n"
        + "\n\n".join(f"- Melanie: Good hike today, even in the rain, trail {i}." for i in range(6))
    )
    mt = MemTree(make_root({"bank/chat.md": f"# chat\n\n{chat}\n"}, None), refresh_interval=0)
    for question in ("Would Caroline likely have Dr. Seuss books on her bookshelf?", "Has Caroline got kids' books?"):
        plain, chatty = mt.search(question, k=3), mt.search(f"Good evening! {question} Good hike today!", k=3)
        assert bool(plain.hits) == bool(chatty.hits)
        assert [h.text for h in plain.hits[:1]] == [h.text for h in chatty.hits[:1]]


def test_a_question_that_names_nothing_leaves_the_message_judged_whole(make_root: Callable[..., Path]) -> None:
    # "X 말인데요. 혹시 아세요?": the only sentence that asks is a do-you-know; the topic is the one before
    root = make_root({"bank/ark.md": "# 방주\n\n- 노아의 방주를 만든 재질은 고페르 나무다\n"}, None)
    found = MemTree(root, refresh_interval=0).search("노아의 방주를 만든 재질 말인데요. 혹시 아세요?", k=1)
    assert found.hits and "고페르" in found.hits[0].text
    query = "노아의 방주를 만든 재질 말인데요. 혹시 아세요?"
    qterms = text.query_terms(query)
    held = [0 if q in ("말인데요", "혹시", "아세요") else 1 for q in qterms]
    assert not evidence.weigh(query, qterms, [1.0] * len(qterms), held).question
    query = "노아의 방주 말인데요. 그 재질이 뭔지 아세요?"  # a question that names something still stands apart
    qterms = text.query_terms(query)
    assert evidence.weigh(query, qterms, [1.0] * len(qterms), [1] * len(qterms)).question
