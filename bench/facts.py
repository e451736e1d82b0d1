#!/usr/bin/env python3
"""Facts that change (issue 30): is the value now ranked first, and the value on a past day found?

    python bench/facts.py [--out DIR] [--keep]

Writes a dev set into a fresh memory root (DIR, default a temporary folder): 24 facts, half Korean,
half English, each given three values over dated writes — ``add`` (a new entry; the newer one
replaces the older when the rule reads it so), ``update`` (memtree update of the current entry) and
``hand`` (a person edits the value in place in the note, as in an editor) — 30 days apart. Then
asks, through memtree's Python API with ``now`` fixed:

    now    the fact's question on day 100: right when the first hit states the last value
    as of  the same question with as_of = day 15, 45 and 75: right when the first hit states the value
           that held then (main has no as_of: its answer is the plain search's)

Prints Markdown: the share right per kind and language, and every miss with --errors. Runs on
main's code as well (it falls back when ``as_of`` or ``until`` is unknown), for the figures beside.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from memtree import MemTree
from memtree.notes.entries import strip_meta

KST = timezone(timedelta(hours=9))
DAY0 = datetime(2026, 1, 5, 10, 0, tzinfo=KST)
STEP_DAYS = 30
NOW_DAY = 100
PLANS = (("add", "add", "update"), ("add", "update", "hand"), ("add", "add", "hand"), ("add", "update", "update"))
"""How each fact's three values arrive, in turn per fact (the first value is always added)."""

FACTS: tuple[tuple[str, str, tuple[str, str, str]], ...] = (
    # (statement with {v}, question, three values in the order they held)
    ("Redis pool size is {v}", "what is the redis pool size", ("50", "80", "120")),
    ("The API request timeout is {v} seconds", "api request timeout", ("30", "10", "45")),
    ("The on-call engineer this month is {v}", "who is the on-call engineer", ("Alice", "Bob", "Carol")),
    ("Logs are retained for {v} days", "how long are logs retained", ("30", "90", "14")),
    ("The staging database is reset daily at {v} am", "when is the staging database reset", ("4", "2", "5")),
    ("Our CI runs on {v}", "what does our CI run on", ("Jenkins", "CircleCI", "Buildkite")),
    ("The mobile app minimum supported version is {v}", "mobile app minimum supported version", ("3.2", "3.5", "4.0")),
    ("Team lunch budget is {v} dollars per person", "team lunch budget per person", ("20", "25", "30")),
    ("The payments service owner is {v}", "who owns the payments service", ("Dana", "Evan", "Farah")),
    ("Kafka topic retention is {v} hours", "kafka topic retention", ("24", "72", "168")),
    ("The office wifi network name is {v}", "office wifi network name", ("acme-5g", "acme-guest", "acme-staff")),
    ("Max upload size is {v} MB", "max upload size", ("10", "25", "50")),
    ("Redis 커넥션 풀은 {v}개로 둔다", "Redis 커넥션 풀 크기", ("50", "80", "120")),
    ("배포는 매주 {v}에 한다", "배포는 무슨 요일에 하나", ("목요일", "화요일", "수요일")),
    ("온콜 담당은 {v}이다", "온콜 담당자는 누구", ("김민수", "이지우", "박서연")),
    ("로그 보관 기간은 {v}일이다", "로그 보관 기간", ("30", "90", "14")),
    ("스테이징 DB는 매일 새벽 {v}시에 초기화된다", "스테이징 DB 초기화 시간", ("4", "2", "5")),
    ("빌드 서버는 {v}를 쓴다", "빌드 서버는 뭘 쓰나", ("젠킨스", "깃랩", "드론")),
    ("API 요청 타임아웃은 {v}초다", "API 요청 타임아웃", ("30", "10", "45")),
    ("점심 회식 예산은 1인당 {v}만원이다", "점심 회식 예산", ("2", "3", "4")),
    ("결제 서비스 담당은 {v}이다", "결제 서비스 담당자", ("최유나", "정하늘", "한도윤")),
    ("카프카 토픽 보존 기간은 {v}시간이다", "카프카 토픽 보존 기간", ("24", "72", "168")),
    ("사무실 와이파이 이름은 {v}이다", "사무실 와이파이 이름", ("acme-5g", "acme-guest", "acme-staff")),
    ("업로드 최대 크기는 {v}MB다", "업로드 최대 크기", ("10", "25", "50")),
)
FILLER = {
    "en": ["Deploy approvals come from the team lead", "Dashboards live in Grafana", "Incidents go to #ops"],
    "ko": ["배포 승인은 팀장이 한다", "대시보드는 그라파나에 있다", "장애는 #ops 채널에 올린다"],
}


@dataclass(frozen=True)
class Question:
    """One question: the fact, its words, the day asked about (None: now), the right value, the plan."""

    fact: int
    query: str
    as_of: date | None
    want: str
    others: tuple[str, ...]
    plan: str
    lang: str


def lang_of(text: str) -> str:
    return "ko" if any("\uac00" <= c <= "\ud7a3" for c in text) else "en"


def day(n: int) -> datetime:
    return DAY0 + timedelta(days=n)


def build(root: Path) -> list[Question]:
    """Write the dev set into ``root`` (a fresh memory root); the questions about it."""
    (root / "bank").mkdir(parents=True)
    (root / "bank/readme.md").write_text("# readme\n\nNotes live here.\n", encoding="utf-8")
    mt = MemTree(root, refresh_interval=0)
    questions: list[Question] = []
    for i, (statement, query, values) in enumerate(FACTS):
        lang = lang_of(statement)
        plan = PLANS[i % len(PLANS)]
        node = f"facts/f{i:02d}"
        for j, filler in enumerate(FILLER[lang]):
            mt.add(f"{filler} ({i}-{j})", to=node, now=day(0))
        mt.add(statement.format(v=values[0]), to=node, now=day(1))
        for step, how in enumerate(plan[1:], 1):
            when = day(1 + STEP_DAYS * step)
            old, new = statement.format(v=values[step - 1]), statement.format(v=values[step])
            note = root / "bank" / f"{node}.md"
            if how == "add":
                mt.add(new, to=node, now=when)
            elif how == "update":
                mt.update(f"bank/{node}.md:{_line_of(note, old)}", new, now=when)
            else:  # a person edits the value in place, in an editor
                text = note.read_text(encoding="utf-8")
                note.write_text(text.replace(f"- {old} ", f"- {new} ", 1).replace(f"- {old}\n", f"- {new}\n", 1))
                os.utime(note, (when.timestamp(), when.timestamp()))  # the editor saved it on that day
        kinds = "+".join(plan)
        questions.append(Question(i, query, None, values[-1], values[:-1], kinds, lang))
        for step in range(3):
            asked = day(1 + STEP_DAYS * step + STEP_DAYS // 2).date()
            others = tuple(v for k, v in enumerate(values) if k != step)
            questions.append(Question(i, query, asked, values[step], others, kinds, lang))
    return questions


def _line_of(note: Path, text: str) -> int:
    """The line of the current (not superseded) entry saying ``text``."""
    for n, line in enumerate(note.read_text(encoding="utf-8").split("\n"), 1):
        if line.startswith(f"- {text}") and "superseded=" not in line:
            return n
    raise SystemExit(f"{note}: no current entry {text!r}")


def says(text: str, value: str) -> bool:
    # Why not \b: a Korean particle follows a value with no space (120개로, 박서연이다)
    return re.search(rf"(?<![0-9A-Za-z.]){re.escape(value)}(?!\.?[0-9])", strip_meta(text)) is not None


def answer(mt: MemTree, q: Question) -> str:
    """The first hit's text ('' when none), asked as of ``q.as_of`` when this memtree can."""
    now = day(NOW_DAY)
    try:
        result = mt.search(q.query, now=now, as_of=q.as_of) if q.as_of else mt.search(q.query, now=now)
    except TypeError:  # main: no as_of
        result = mt.search(q.query, now=now)
    return result.hits[0].text if result.hits else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="write the dev set here (a new folder); default: a temporary one")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--errors", action="store_true", help="list every miss")
    args = ap.parse_args(argv)
    root = args.out or Path(tempfile.mkdtemp(prefix="memtree-facts-")) / "root"
    try:
        questions = build(root)
        mt = MemTree(root, refresh_interval=0)
        right: dict[tuple[str, str], list[bool]] = {}
        misses = []
        for q in questions:
            text = answer(mt, q)
            ok = says(text, q.want) and not any(says(text, o) for o in q.others)
            kind = "now" if q.as_of is None else "as of"
            for key in ((kind, "all"), (kind, q.lang), (kind, q.plan)):
                right.setdefault(key, []).append(ok)
            if not ok:
                misses.append((kind, q, strip_meta(text).strip()[:80]))
        print(f"{len(FACTS)} facts, {len(questions)} questions (now: day {NOW_DAY}; as of: days 15, 45, 75)\n")
        print("| question | group | right | share |")
        print("|---|---|---:|---:|")
        for (kind, group), oks in right.items():
            print(f"| {kind} | {group} | {sum(oks)}/{len(oks)} | {sum(oks) / len(oks):.3f} |")
        if args.errors:
            print("\nmisses:\n")
            for kind, q, got in misses:
                print(f"- {kind} {q.as_of or ''} [{q.plan}] {q.query!r}: want {q.want}, first hit {got!r}")
    finally:
        if args.out is None and not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
