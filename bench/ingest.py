"""`memtree ingest` on the LoCoMo dev conversations: entries per 100 turns, bank vs raw-turn hit@5, time.

Builds a transcript from SHARED_BENCH/locomo/docs.jsonl — each conversation one ``conversation``,
its first speaker ``user`` and the other ``assistant``, each turn's text as LoCoMo gives it
(``Caroline: …``), each session's turns a minute apart from the session's date and time (UTC) —
and ingests it into a fresh root twice: in one call, and session by session (one call per session,
``now`` an hour after it, as an agent would send them). Both must write the same entries.

Then every answerable dev question is searched (k = 10, decay off: see SETTINGS) in the bank alone
(``--tier bank``: only the entries ingest extracted) and in the raw turns (``--tier memory``: the
logs ingest kept), and SHARED_BENCH/score.py scores both the same way: a turn is found when a hit's
lines overlap its log line; a bank hit stands for the log lines its entry names (``from=``). Also printed: the share of
questions whose answer turn any entry came from at all (what the bank could find at best).

    python bench/ingest.py ../shared/bench [--work DIR] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchlib import DEFAULT_SHARED, DEFAULT_WORK, check_shared, fail, import_memtree, load_jsonl, md_table, progress

SESSION_TIME = re.compile(r"(\d{1,2}):(\d{2}) ([ap]m) on (\d{1,2}) (\w+), (\d{4})")
MONTHS = {m: i for i, m in enumerate(("january february march april may june july august september october "
                                      "november december").split(), start=1)}  # fmt: skip
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
"""The moment of the one-call ingest: long after every session, so every conversation's tail is flushed."""
K = 10
SETTINGS = "search:\n  decay: false\n  reinforce: false\n"
"""Why decay off: the sessions span months and their logs are dated, so decay would rank the raw turns by date
(a session 60 days later weighs 4×) while every bank entry is created at NOW; reinforce off: a bench reads only."""


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shared", nargs="?", type=Path, default=DEFAULT_SHARED, metavar="SHARED_BENCH")
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK / "ingest", help="scratch folder (default: %(default)s)")
    ap.add_argument("--json-out", type=Path, help="write the figures to this JSON file")
    return ap.parse_args()


def session_start(title: str) -> datetime:
    """`… session 3, 1:56 pm on 8 May, 2023` → that moment (UTC: LoCoMo gives no zone)."""
    m = SESSION_TIME.search(title)
    if m is None:
        fail(f"no session date in title {title!r}")
        raise SystemExit(2)
    hour, minute, half, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if half == "pm" else 0)
    return datetime(int(year), MONTHS[month.lower()], int(day), h, int(minute), tzinfo=timezone.utc)


def transcript(docs: list[dict]) -> tuple[list[dict], list[str], list[list[int]]]:
    """The turns (in doc order), the doc id of each, and the turn indexes of each session."""
    turns: list[dict] = []
    ids: list[str] = []
    sessions: dict[str, list[int]] = {}
    first_speaker: dict[str, str] = {}
    position: Counter[str] = Counter()
    for doc in docs:
        conversation, _ = doc["group"].split("/")
        speaker = doc["text"].split(":", 1)[0]
        first_speaker.setdefault(conversation, speaker)
        ts = session_start(doc["title"]) + timedelta(minutes=position[doc["group"]])
        position[doc["group"]] += 1
        role = "user" if speaker == first_speaker[conversation] else "assistant"
        sessions.setdefault(doc["group"], []).append(len(turns))
        turns.append({"conversation": conversation, "role": role, "text": doc["text"], "ts": ts.isoformat()})
        ids.append(doc["id"])
    return turns, ids, list(sessions.values())


def fresh_root(path: Path) -> Path:
    """An empty root whose search ranks by match alone (see SETTINGS)."""
    from memtree.notes.root import init

    shutil.rmtree(path, ignore_errors=True)
    root = init(path)[0]
    (root / "memtree.yaml").write_text(SETTINGS, encoding="utf-8")
    return root


def provenance_of(root: Path) -> dict[tuple[str, int], tuple[str, int, int]]:
    """(bank note, line) → (log, first, last) of the entry on that line, from its ``from=``."""
    from memtree.notes.entries import parse_entries

    out: dict[tuple[str, int], tuple[str, int, int]] = {}
    for note in sorted((root / "bank").rglob("*.md")):
        rel = note.relative_to(root).as_posix()
        for e in parse_entries(note.read_text(encoding="utf-8")):
            origin = e.meta.extra.get("from", "")
            m = re.match(r"([^:,]+):(\d+)-(\d+)", origin)
            if m:
                for line in range(e.start, e.end + 1):
                    out[(rel, line)] = (m.group(1), int(m.group(2)), int(m.group(3)))
    return out


def entry_texts(root: Path) -> list[str]:
    """Every bank entry's text, sorted: what two ways of ingesting the same turns must agree on."""
    from memtree.notes.entries import parse_entries

    notes = sorted((root / "bank").rglob("*.md"))
    return sorted(e.content for n in notes for e in parse_entries(n.read_text(encoding="utf-8")))


def search_all(mt: Any, root: Path, queries: list[dict], tier: str) -> list[dict]:
    """score.py results: each query's hits as {path, lines}; a bank hit as the log lines its entry came from."""
    origin = provenance_of(root) if tier == "bank" else {}
    results = []
    for q in queries:
        result = mt.search(q["query"], k=K, tier=tier, cache=False, now=NOW)
        hits = []
        for h in result.hits:
            if tier == "bank":
                lines = range(h.lines[0], h.lines[1] + 1)
                found = next((origin[(h.path, n)] for n in lines if (h.path, n) in origin), None)
                if found is None:
                    continue
                hits.append({"path": found[0], "lines": [found[1], found[2]]})
            else:
                hits.append({"path": h.path, "lines": list(h.lines)})
        results.append({"id": q["id"], "hits": hits})
    return results


def score(shared: Path, tree: Path, results: list[dict], name: str) -> dict:
    out = tree / f"results-{name}.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in results), encoding="utf-8")
    figures = tree / f"score-{name}.json"
    subprocess.run(
        [sys.executable, str(shared / "score.py"), str(tree), "--results", str(out), "--json-out", str(figures)],
        check=True,
        capture_output=True,
    )
    return json.loads(figures.read_text(encoding="utf-8"))


def main() -> None:
    args = parse_args()
    shared = check_shared(args.shared, ["locomo/docs.jsonl", "locomo/queries.jsonl", "score.py"])
    memtree_cls = import_memtree()
    docs = load_jsonl(shared / "locomo/docs.jsonl")
    queries = load_jsonl(shared / "locomo/queries.jsonl")
    turns, ids, sessions = transcript(docs)
    conversations = len({t["conversation"] for t in turns})
    progress(f"{len(turns)} turns in {len(sessions)} sessions of {conversations} conversations")

    root = fresh_root(args.work / "once")
    mt = memtree_cls(root, refresh_interval=0)
    t0 = time.perf_counter()
    report = mt.ingest(turns, now=NOW)
    once_s = time.perf_counter() - t0
    progress(f"one call: {report.written} entries, {len(report.cycles)} cycles in {once_s:.2f} s")

    live = fresh_root(args.work / "live")
    mt_live = memtree_cls(live, refresh_interval=0)
    live_written, live_s, live_cycles = 0, 0.0, 0
    for idx in sessions:
        part = [turns[i] for i in idx]
        t0 = time.perf_counter()
        r = mt_live.ingest(part, now=datetime.fromisoformat(part[-1]["ts"]) + timedelta(hours=1))
        live_s += time.perf_counter() - t0
        live_written += r.written
        live_cycles += len(r.cycles)
    progress(f"session by session: {live_written} entries, {live_cycles} cycles in {live_s:.2f} s")
    if entry_texts(root) != entry_texts(live):
        progress("warning: one call and one call per session wrote different entries")

    spans = []
    for doc_id, logged in zip(ids, report.logged):
        spans.append({"id": doc_id, "path": logged.path, "lines": [logged.line, logged.line + logged.text.count("\n")]})
    (root / "spans.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")

    answerable = [q for q in queries if q["answerable"]]
    bank = score(shared, root, search_all(mt, root, answerable, "bank"), "bank")
    raw = score(shared, root, search_all(mt, root, answerable, "memory"), "memory")
    where = {s["id"]: s for s in spans}
    origins = set(provenance_of(root).values())
    covered = sum(
        any(
            o[0] == where[r]["path"] and o[1] <= where[r]["lines"][0] <= o[2]
            for r in q["relevant"]
            if r in where
            for o in origins
        )
        for q in answerable
    )
    rules = Counter(p.candidate.rule for p in report.proposals if p.outcome in ("written", "merged", "conflict"))
    outcomes = Counter(p.outcome for p in report.proposals)
    triggers = Counter(c.trigger for c in report.cycles)
    n = len(turns)
    figures = {
        "turns": n,
        "entries": report.written,
        "entries_per_100_turns": round(100 * report.written / n, 2),
        "entries_live": live_written,
        "cycles": dict(triggers),
        "outcomes": dict(outcomes),
        "written_by_rule": dict(rules),
        "ms_per_100_turns_one_call": round(100_000 * once_s / n, 1),
        "ms_per_100_turns_by_session": round(100_000 * live_s / n, 1),
        "answerable": len(answerable),
        "answer_turn_in_an_entry": covered,
        "bank": bank["all"],
        "memory": raw["all"],
    }
    print(md_table(["figure", "value"], [
        ["turns (LoCoMo dev, conversations 0-4)", n],
        ["entries written (one call / session by session)", f"{report.written} / {live_written}"],
        ["entries per 100 turns", figures["entries_per_100_turns"]],
        ["cycles by trigger", ", ".join(f"{k} {v}" for k, v in sorted(triggers.items()))],
        ["written by rule", ", ".join(f"{k} {v}" for k, v in sorted(rules.items())) or "none"],
        ["time per 100 turns, one call (ms)", figures["ms_per_100_turns_one_call"]],
        ["time per 100 turns, one call per session (ms)", figures["ms_per_100_turns_by_session"]],
        ["answerable questions", len(answerable)],
        ["… whose answer turn any entry came from", covered],
    ]))  # fmt: skip
    print()
    print(md_table(["search (k=10)", "n", "hit@1", "hit@5", "MRR@10", "left empty"], [
        [name, f["n"], f["hit@1"], f["hit@5"], f["mrr@10"], f["empty"]]
        for name, f in (("bank alone (`--tier bank`)", bank["all"]), ("raw turns (`--tier memory`)", raw["all"]))
    ]))  # fmt: skip
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
