"""Date recognition: memtree.text.dates against dateparser (when installed) on the same cases and text.

    .venv/bin/python bench/dates.py ../shared/bench [--lines 200] [--no-dateparser]

Prints four things:

1. Labelled cases (Korean and English, particles attached, relative words against a fixed anchor,
   and sentences holding no date): how many each tool gets exactly right and how many dates it
   invents in the negative sentences. dateparser's ``search_dates`` returns single datetimes, so a
   range case (``지난주``) counts as right for it when its date falls inside the range.
2. Running text: the first ``--lines`` docs of KorQuAD and of LoCoMo. There is no gold there, so
   a found mention whose text holds no digit and no date word (month, weekday, relative word) is
   counted as a certain false positive; the most frequent mentions are listed to read the rest.
3. Speed: µs per chunk and per KB, CPU time (the machine may be shared), for memtree.text.dates on
   every doc and on the docs holding no date; dateparser on the running-text sample.
4. LoCoMo questions naming a date memtree.text.dates recognises without an anchor, by category.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import date, datetime
from pathlib import Path

from benchlib import add_common_args, check_shared

from memtree.text.dates import find_dates

ANCHOR = date(2024, 3, 13)  # a Wednesday; fixed so every run gives the same figures
Expected = list[date | tuple[date, date]]
W = (date(2024, 3, 4), date(2024, 3, 10))  # the week before the anchor's

CASES: list[tuple[str, Expected]] = [
    ("회의는 2024-01-07에 했다", [date(2024, 1, 7)]),
    ("배포는 2024/01/07 오후", [date(2024, 1, 7)]),
    ("2024.01.07. 회의록", [date(2024, 1, 7)]),
    ("Invoice dated 14.01.2024.", [date(2024, 1, 14)]),
    ("Due 1/14/2024 at noon", [date(2024, 1, 14)]),
    ("We met on 7 Jan 2024 in Seoul.", [date(2024, 1, 7)]),
    ("We met on 7 January 2024.", [date(2024, 1, 7)]),
    ("Released January 7, 2024 to everyone", [date(2024, 1, 7)]),
    ("Jan 7 2024: kickoff", [date(2024, 1, 7)]),
    ("Caroline called on Jan 7 about the adoption.", [date(2024, 1, 7)]),
    ("2024년 1월 7일에 배포했다", [date(2024, 1, 7)]),
    ("1월 7일에 배포했다", [date(2024, 1, 7)]),
    ("24년 1월 7일 회의", [date(2024, 1, 7)]),
    ("I went to a support group yesterday.", [date(2024, 3, 12)]),
    ("See you tomorrow!", [date(2024, 3, 14)]),
    ("It broke 3 days ago.", [date(2024, 3, 10)]),
    ("We shipped it last Monday.", [date(2024, 3, 11)]),
    ("We shipped it last week.", [W]),
    ("어제는 비가 왔다", [date(2024, 3, 12)]),
    ("오늘 회의에서 정했다", [ANCHOR]),
    ("그저께 만났다", [date(2024, 3, 11)]),
    ("내일까지 보내 주세요", [date(2024, 3, 14)]),
    ("지난주에 만났다", [W]),
    ("3일 전에 고쳤다", [date(2024, 3, 10)]),
    ("지난 월요일에 출시했다", [date(2024, 3, 11)]),
    ("지난달 매출이 늘었다", [(date(2024, 2, 1), date(2024, 2, 29))]),
    ("Revenue grew in March 2023.", [(date(2023, 3, 1), date(2023, 3, 31))]),
    ("2023년 3월에 입사했다", [(date(2023, 3, 1), date(2023, 3, 31))]),
    # no date in these
    ("Upgrade to version 1.2.3 before Friday's deploy.", []),
    ("The server at 10.0.0.1 restarted at 14:20.", []),
    ("Pi is about 3.14 and half is 1/2.", []),
    ("You may want to check it again.", []),
    ("The second option is better for now.", []),
    ("2024-02-30 is not a day.", []),
    ("The ratio was 13/45/2024 in the log.", []),
    ("오늘날의 기술은 빠르게 변한다", []),
    ("이번 주말에는 쉰다", []),
    ("다음 주제로 넘어가자", []),
    ("그는 10번 시도했고 3명이 남았다", []),
    ("I have 2 kids and 3 dogs.", []),
]

_DATE_WORD = re.compile(
    r"\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday|today|tonight|yesterday|tomorrow|week|month|year|ago|오늘|어제|그제|그저께|내일"
    r"|모레|지난|이번|다음|작년|올해|내년|요일",
    re.IGNORECASE,
)


def ours(text: str) -> list[tuple[str, date | tuple[date, date]]]:
    """memtree.text.dates' mentions as (text, value)."""
    return [(m.text, m.value) for m in find_dates(text, ANCHOR)]


def make_dateparser() -> Callable[[str], list[tuple[str, date | tuple[date, date]]]] | None:
    """dateparser's search_dates in English and Korean, past-preferring, against the same anchor."""
    try:
        from dateparser.search import search_dates
    except ImportError:
        return None
    settings = {"RELATIVE_BASE": datetime.combine(ANCHOR, datetime.min.time()), "PREFER_DATES_FROM": "past"}

    def run(text: str) -> list[tuple[str, date | tuple[date, date]]]:
        found = search_dates(text, languages=["en", "ko"], settings=settings) or []
        return [(s, d.date()) for s, d in found]

    return run


def _hit(value: date | tuple[date, date], expected: date | tuple[date, date]) -> bool:
    if isinstance(expected, tuple):
        if isinstance(value, tuple):
            return value == expected
        return expected[0] <= value <= expected[1]
    return value == expected


def score_cases(tool: Callable[[str], list[tuple[str, date | tuple[date, date]]]]) -> dict[str, object]:
    """Exactly right positive cases, and dates invented in the negative sentences."""
    right = invented = positives = 0
    wrong: list[str] = []
    for text, expected in CASES:
        values = [v for _, v in tool(text)]
        if expected:
            positives += 1
            if len(values) == len(expected) and all(_hit(v, e) for v, e in zip(values, expected)):
                right += 1
            else:
                wrong.append(f"{text!r} → {values}")
        else:
            invented += len(values)
            if values:
                wrong.append(f"{text!r} → {tool(text)}")
    negatives = len(CASES) - positives
    return {"right": f"{right}/{positives}", "invented": f"{invented} in {negatives} sentences", "wrong": wrong}


def read_docs(shared: Path, dataset: str) -> list[str]:
    """The text of every doc of a dataset, in file order."""
    with (shared / dataset / "docs.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def running_text(tool: Callable[[str], list[tuple[str, object]]], lines: Iterable[str]) -> dict[str, object]:
    """Mentions found in ordinary text: how many, how many certainly false, the most frequent."""
    mentions = [s for line in lines for s, _ in tool(line)]
    false = [s for s in mentions if not _DATE_WORD.search(s)]
    return {
        "mentions": len(mentions),
        "certainly false": len(false),
        "top": Counter(s.strip().casefold() for s in mentions).most_common(12),
    }


def cpu_per_chunk(fn: Callable[[str], object], texts: list[str], repeat: int = 3) -> tuple[float, float]:
    """(µs per chunk, µs per KB), best of ``repeat`` passes, CPU time."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for t in texts:
            fn(t)
        best = min(best, time.process_time() - t0)
    kb = sum(len(t.encode()) for t in texts) / 1024
    return best / len(texts) * 1e6, best / kb * 1e6


def locomo_questions(shared: Path) -> dict[str, tuple[int, int, list[str]]]:
    """Per category: (questions naming a recognised date, questions, examples)."""
    out: dict[str, tuple[int, int, list[str]]] = {}
    with (shared / "locomo" / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            n, total, examples = out.get(q["category"], (0, 0, []))
            mentions = find_dates(q["query"], None)
            if mentions:
                n += 1
                examples.append(f"{q['query']}  [{', '.join(m.text for m in mentions)}]")
            out[q["category"]] = (n, total + 1, examples)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--lines", type=int, default=200, help="docs of each dataset for the running-text check")
    ap.add_argument("--no-dateparser", action="store_true", help="measure memtree.text.dates alone")
    args = ap.parse_args(argv)
    shared = check_shared(args.shared, ["korquad/docs.jsonl", "locomo/docs.jsonl", "locomo/queries.jsonl"])
    dp = None if args.no_dateparser else make_dateparser()
    tools = {"memtree.text.dates": ours} | ({"dateparser": dp} if dp else {})
    if not args.no_dateparser and dp is None:
        print("dateparser is not installed: measuring memtree.text.dates alone (pip install dateparser)\n")

    print(f"## 1. Labelled cases ({len(CASES)}), anchor {ANCHOR}\n")
    for name, tool in tools.items():
        s = score_cases(tool)
        print(f"- {name}: exactly right {s['right']}; dates invented: {s['invented']}")
        for w in s["wrong"]:  # type: ignore[attr-defined]
            print(f"    {w}")

    docs = {ds: read_docs(shared, ds) for ds in ("korquad", "locomo")}
    print(f"\n## 2. Running text: the first {args.lines} docs of each dataset\n")
    for ds, texts in docs.items():
        sample = texts[: args.lines]
        for name, tool in tools.items():
            r = running_text(tool, sample)
            print(f"- {ds} / {name}: {r['mentions']} mentions, {r['certainly false']} certainly false")
            print(f"    most frequent: {r['top']}")

    print("\n## 3. Speed (CPU µs)\n")
    print("| dataset | tool | docs | µs/chunk | µs/KB |\n|---|---|---|---|---|")
    for ds, texts in docs.items():
        nodate = [t for t in texts if not find_dates(t, ANCHOR)]
        for label, sample in (("all", texts), ("no date", nodate)):
            per_chunk, per_kb = cpu_per_chunk(ours, sample)
            print(f"| {ds} | memtree.text.dates | {label} ({len(sample)}) | {per_chunk:.1f} | {per_kb:.1f} |")
        if dp:
            per_chunk, per_kb = cpu_per_chunk(dp, texts[: args.lines], repeat=1)
            print(f"| {ds} | dateparser | first {args.lines} | {per_chunk:.0f} | {per_kb:.0f} |")
    per_chunk, _ = cpu_per_chunk(ours, docs["locomo"])
    print(f"\nAt the LoCoMo rate, 100,000 chunks take {per_chunk * 1e5 / 1e6:.1f} s of CPU.")

    print("\n## 4. LoCoMo questions naming a date (no anchor: questions have no 'today')\n")
    for category, (n, total, examples) in sorted(locomo_questions(shared).items()):
        print(f"- {category}: {n}/{total}")
        if category == "temporal":
            for e in examples:
                print(f"    {e}")


if __name__ == "__main__":
    main()
