"""The UserPromptSubmit hook on the dev sets: does it inject the evidence, only when sure, and briefly?

Each question of KorQuAD and LoCoMo is sent as a prompt, plain and as a chat message (bench/verbose.py's
rewrite), through the very function `memtree hook UserPromptSubmit` runs (memtree.hooks.respond.recall,
the tree's own settings), on the trees materialize.py writes (every 7th group held out: its questions
are unanswerable). Reported per dataset and form:

- injected: share of prompts that injected anything;
- precision: of the prompts that injected, the share whose injected block holds the evidence (a source
  overlapping a relevant doc's lines, and the answer itself when it is a span of that doc, as KorQuAD's
  are); an injection on an unanswerable prompt counts against it;
- recall: of the answerable prompts, the share whose injection holds the evidence;
- unanswerable empty: of the unanswerable prompts, the share that injected nothing;
- tokens: median and p90 of the injected blocks' estimated tokens.

``--replay`` (LoCoMo): each session of each conversation becomes a Claude Code session file, captured
at its end through ``respond.capture`` (the SessionEnd hook), into a new root with nothing else; then
every question is asked as a prompt, searching ``all`` tiers (memory/ logs too, the default) and only
``default`` (recall/ and bank/, where the auto bank's entries go), against searching the raw turns.
A hit holds the evidence when the relevant turn's text is in the injected block.

``--timing N``: N hook runs on the KorQuAD tree through a `memtree serve` daemon, N without it, and N
``python -c pass`` (medians).

    python bench/hooks.py ../shared/bench --work /tmp/hooks-bench [--recall-tokens 400] [--replay] [--timing 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import add_common_args, check_shared, load_jsonl, md_table, memtree_exe, percentile, progress
from serve import daemon
from verbose import SHORT_QUERIES, materialize_verbose

DATASETS = ("korquad", "locomo")
YAML = "search:\n  reinforce: false\nhooks:\n  recall_tokens: {tokens}\n"
"""Bench trees count no recalls (every run scores alike) and take the budget under test."""


def build(shared: Path, work: Path, ds: str, tokens: int) -> Path:
    tree = work / f"hooks-{ds}"
    if not (tree / "tree-index.json").exists():
        progress(f"building {tree}")
        materialize_verbose(shared, ds, tree)
        subprocess.run([memtree_exe(), "index", "--root", str(tree)], check=True, capture_output=True)
    (tree / "memtree.yaml").write_text(YAML.format(tokens=tokens), encoding="utf-8")
    return tree


def spans_of(tree: Path) -> dict[str, tuple[str, int, int]]:
    return {s["id"]: (s["path"], s["lines"][0], s["lines"][1]) for s in load_jsonl(tree / "spans.jsonl")}


def docs_of(shared: Path, ds: str) -> dict[str, str]:
    return {d["id"]: d["text"] for d in load_jsonl(shared / ds / "docs.jsonl")}


def evidence(found: Any, q: dict[str, Any], spans: dict[str, tuple[str, int, int]], docs: dict[str, str]) -> bool:
    """Whether an injected block holds the evidence: a source overlapping a relevant doc's lines and, when the
    answer is a span of that doc (KorQuAD's are), the answer itself (a chunk cut to the budget may lose it)."""
    if not holds(found.sources, q["relevant"], spans):
        return False
    answer = q.get("answer") or ""
    if answer and any(answer in docs.get(d, "") for d in q["relevant"]):
        return answer in found.markdown
    return True


def holds(sources: tuple[str, ...], relevant: list[str], spans: dict[str, tuple[str, int, int]]) -> bool:
    """Whether an injected block's sources ("path:start-end") overlap a relevant doc's lines."""
    for source in sources:
        path, _, lines = source.rpartition(":")
        start, _, end = lines.partition("-")
        for doc in relevant:
            span = spans.get(doc)
            if span and span[0] == path and int(start) <= span[2] and span[1] <= int(end):
                return True
    return False


def score(rows: list[tuple[bool, bool, bool, int]]) -> dict[str, Any]:
    """rows: (answerable, injected, holds the evidence, tokens) → the reported figures."""
    injected = [r for r in rows if r[1]]
    answerable = [r for r in rows if r[0]]
    unanswerable = [r for r in rows if not r[0]]
    tokens = [r[3] for r in injected]
    return {
        "prompts": len(rows),
        "injected": len(injected) / max(1, len(rows)),
        "precision": sum(r[2] for r in injected) / max(1, len(injected)),
        "recall": sum(r[2] for r in answerable) / max(1, len(answerable)),
        "unanswerable_empty": (
            sum(not r[1] for r in unanswerable) / len(unanswerable) if unanswerable else float("nan")
        ),
        "tokens_median": statistics.median(tokens) if tokens else 0,
        "tokens_p90": percentile(tokens, 90) if tokens else 0,
    }


def dev_sets(shared: Path, work: Path, datasets: list[str], tokens: int, limit: int) -> list[dict[str, Any]]:
    from memtree.api import MemTree
    from memtree.hooks.respond import recall

    out = []
    for ds in datasets:
        tree = build(shared, work, ds, tokens)
        spans, docs = spans_of(tree), docs_of(shared, ds)
        mt = MemTree(tree)
        now = datetime.now().astimezone()
        forms = {"plain": load_jsonl(tree / SHORT_QUERIES), "chat": load_jsonl(tree / "queries.jsonl")}
        for form, queries in forms.items():
            rows = []
            t0 = time.perf_counter()
            for q in queries[:limit] if limit else queries:
                found = recall(mt, q["query"], now)
                ok = found is not None and evidence(found, q, spans, docs)
                rows.append((bool(q.get("answerable", True)), found is not None, ok, found.tokens if found else 0))
            figures = score(rows)
            figures |= {"dataset": ds, "form": form, "ms_per_prompt": 1000 * (time.perf_counter() - t0) / len(rows)}
            progress(json.dumps(figures))
            out.append(figures)
    return out


# --- LoCoMo replayed as sessions --------------------------------------------------------------

_WHEN = re.compile(r"(\d{1,2}):(\d{2}) (am|pm) on (\d{1,2}) (\w+),? (\d{4})")
_MONTHS = "January February March April May June July August September October November December".split()


def session_start(title: str) -> datetime:
    m = _WHEN.search(title)
    if not m:
        raise ValueError(f"no time in {title!r}")
    hour = int(m[1]) % 12 + (12 if m[3] == "pm" else 0)
    return datetime(int(m[6]), _MONTHS.index(m[5]) + 1, int(m[4]), hour, int(m[2]), tzinfo=timezone.utc)


def transcripts(shared: Path, folder: Path) -> list[tuple[str, Path, datetime]]:
    """One Claude Code session file per LoCoMo session: the first speaker as the user, the other as the assistant."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for doc in load_jsonl(shared / "locomo" / "docs.jsonl"):
        sessions.setdefault(doc["group"], []).append(doc)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for group, docs in sessions.items():
        sid = group.replace("/", "-")
        start = session_start(docs[0]["title"])
        first = docs[0]["text"].partition(":")[0]
        lines = []
        for i, doc in enumerate(docs):
            role = "user" if doc["text"].partition(":")[0] == first else "assistant"
            at = (start + timedelta(seconds=30 * i)).isoformat().replace("+00:00", "Z")
            content: Any = doc["text"] if role == "user" else [{"type": "text", "text": doc["text"]}]
            message = {"role": role, "content": content}
            lines.append({"type": role, "sessionId": sid, "timestamp": at, "uuid": doc["id"], "message": message})
        path = folder / f"{sid}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        out.append((sid, path, start + timedelta(seconds=30 * len(docs))))
    return sorted(out, key=lambda x: x[2])


def replay(shared: Path, work: Path, tokens: int, limit: int) -> list[dict[str, Any]]:
    import shutil

    from memtree.api import MemTree
    from memtree.hooks.protocol import Event
    from memtree.hooks.respond import capture, recall
    from memtree.notes.root import init

    root = work / "hooks-replay"
    shutil.rmtree(root, ignore_errors=True)
    init(root)
    (root / "memtree.yaml").write_text(YAML.format(tokens=tokens), encoding="utf-8")
    mt = MemTree(root)
    sessions = transcripts(shared, work / "hooks-replay-sessions")
    progress(f"capturing {len(sessions)} sessions")
    turns = written = 0
    for sid, path, end in sessions:
        report = capture(mt, Event("SessionEnd", sid, str(path)), end + timedelta(minutes=1))
        assert report is not None
        turns += len(report.logged)
        written += report.written
    last = mt.ingest_flush(now=sessions[-1][2] + timedelta(days=1))  # every conversation quiet: all examined
    written += last.written
    texts = {d["id"]: d["text"] for d in load_jsonl(shared / "locomo" / "docs.jsonl")}
    queries = load_jsonl(shared / "locomo" / "queries.jsonl")
    queries = queries[:limit] if limit else queries
    now = sessions[-1][2] + timedelta(days=2)
    out = []
    # Why decay both ways: the sessions span months, and a day log's chunks weigh 2^(-age/30 days), so the
    # oldest sessions are all but gone at the last one; the raw-turn trees above are all as new as each other
    for tier, decay in (("all", True), ("all", False), ("default", False)):
        yaml = YAML.format(tokens=tokens) + f"  recall_tier: {tier}\n"
        (root / "memtree.yaml").write_text(yaml.replace("search:\n", f"search:\n  decay: {str(decay).lower()}\n"))
        mt = MemTree(root)
        rows = []
        for q in queries:
            found = recall(mt, q["query"], now)
            block = _flat(found.markdown) if found else ""
            ok = found is not None and any(_flat(texts[d].partition(": ")[2])[:80] in block for d in q["relevant"])
            rows.append((bool(q.get("answerable", True)), found is not None, ok, found.tokens if found else 0))
        form = f"tier {tier}, decay {'on' if decay else 'off'}"
        figures = score(rows) | {"dataset": "locomo-replayed", "form": form, "turns": turns}
        figures |= {"auto_entries": written, "auto_per_100_turns": 100 * written / max(1, turns)}
        progress(json.dumps(figures))
        out.append(figures)
    return out


def _flat(text: str) -> str:
    return " ".join(text.split())


# --- timing -----------------------------------------------------------------------------------


def timing(shared: Path, work: Path, runs: int, tokens: int) -> dict[str, float]:
    tree = build(shared, work, "korquad", tokens)
    prompts = [q["query"] for q in load_jsonl(tree / SHORT_QUERIES)][: runs * 3 : 3]
    exe = memtree_exe()

    def hook(prompt: str, no_daemon: bool) -> float:
        env = dict(os.environ)
        env.pop("MEMTREE_NO_DAEMON", None)
        if no_daemon:
            env["MEMTREE_NO_DAEMON"] = "1"
        payload = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(tree), "prompt": prompt})
        t0 = time.perf_counter()
        proc = subprocess.run([exe, "hook", "UserPromptSubmit"], input=payload.encode(), capture_output=True, env=env)
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or proc.stderr:
            sys.exit(f"error: the hook failed: {proc.stderr.decode()[-300:]}")
        return wall

    def bare() -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        return time.perf_counter() - t0

    def ms(walls: list[float]) -> float:
        return 1000 * statistics.median(walls)

    without = ms([hook(p, True) for p in prompts])
    through: list[float] = []
    interp: list[float] = []
    with daemon(exe, tree):
        for p in prompts:  # interleaved: a busy machine slows both alike
            interp.append(bare())
            through.append(hook(p, False))
    return {"python_c_pass_ms": ms(interp), "hook_daemon_ms": ms(through), "hook_in_process_ms": without}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--recall-tokens", type=int, default=400, help="hooks.recall_tokens (default: %(default)s)")
    ap.add_argument("--limit", type=int, default=0, help="questions per set (0: all)")
    ap.add_argument("--replay", action="store_true", help="also LoCoMo replayed as captured sessions")
    ap.add_argument("--only-replay", action="store_true", help="the replay alone (no dev-set rows)")
    ap.add_argument("--timing", type=int, default=0, metavar="N", help="also N timed hook runs each way")
    args = ap.parse_args()
    shared = check_shared(args.shared, ("materialize.py", "korquad/queries.jsonl", "locomo/queries.jsonl"))
    work = args.work.expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    datasets = [d for d in args.datasets.split(",") if d]
    rows = [] if args.only_replay else dev_sets(shared, work, datasets, args.recall_tokens, args.limit)
    if args.replay or args.only_replay:
        rows += replay(shared, work, args.recall_tokens, args.limit)
    keys = ("dataset", "form", "prompts", "injected", "precision", "recall", "unanswerable_empty", "tokens_median")
    table = [[r[k] if not isinstance(r[k], float) else f"{r[k]:.3f}" for k in keys] for r in rows]
    print(md_table(keys, table))
    if args.timing:
        print(json.dumps(timing(shared, work, args.timing, args.recall_tokens)))


if __name__ == "__main__":
    main()
