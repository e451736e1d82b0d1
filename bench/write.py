"""The write path: `add` latency, watch visibility, concurrent writers and the sanitizer, on a 1,000-file tree.

    python bench/write.py [SHARED_BENCH] [--work DIR] [--files 1000] [--adds 200] [--edits 20] [--clean]

1. ``SHARED_BENCH/synth.py OUT --chunks 20×FILES`` writes FILES bank notes of 20 bullets each;
   ``MemTree(OUT).index()`` gives every note a tree node.
2. ``add`` in-process: one ``MemTree(OUT)`` warmed by a search, then ADDS adds per routing mode,
   the modes interleaved: ``to=`` an existing node, ``tag="B"`` (TAG_ROUTING; the node is created on
   first use) and untagged (tree routing, or the inbox). Each fact joins a clause of one random
   sentence of the tree to a clause of another (Korean and English mixed). Every call is timed
   with ``perf_counter``; then as many fresh facts per mode with ``dry_run=True`` (route and dedup,
   no lock, no write, no refresh), where the time of the real adds went (memtree's step functions
   wrapped with timers for the duration), and a search for every written fact (found when its
   entry is among the top 5 hits).
3. Watch visibility: a ``memtree.serve.watch.Watcher`` runs in a background thread; EDITS times a line with
   a unique word is appended to a random bank note. A second long-lived ``MemTree(OUT,
   refresh_interval=3600)``, which never stats the notes itself, polls the index manifest's version
   every 5 ms, reloads the persisted index when it changes and searches the word: the edit is
   visible when that search returns the note. A whole ``memtree search`` process, watcher stopped,
   is timed once for contrast (it stats every note, so it needs no watcher).
4. Concurrency: WRITERS spawned processes add PER_WRITER distinct facts each to one new note;
   afterwards every entry of every bank note is parsed and each fact must be there exactly once.
5. Sanitizer: every sample secret of tests/test_sanitize.py is added inside a sentence (and logged
   with ``MemTree.log``); then every file under OUT is searched for the raw secret (as is and
   casefolded), against a count taken before.

Everything is printed as Markdown tables; ``--json-out`` also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import random
import re
import shutil
import statistics
import string
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib import (
    REPO,
    SEARCH_OK,
    add_common_args,
    check_shared,
    fmt,
    import_memtree,
    md_table,
    memtree_exe,
    percentile,
    progress,
    run,
)

PER_FILE = 20  # synth.py's default bullets per note
TARGET_ADD_MS = 50.0
TARGET_WATCH_S = 1.0
MODES = ("to", "tag", "tree")
MODE_LABEL = {
    "to": "`to=` existing node",
    "tag": '`tag="B"` (TAG_ROUTING)',
    "tree": "untagged (tree / inbox)",
}
TAG = "B"
KINDS = ("created", "merged", "duplicate", "conflict")
SENTENCE = re.compile(r"(?<=[.!?다])\s+")
HANGUL = re.compile(r"[가-힣]")
WORD = re.compile(r"\w{3,}", re.UNICODE)
FRAMES = ("메모:", "결정:", "Note:", "기억할 것:", "Decided:", "확인:", "FYI", "참고로", "Remember:", "요약:")
JOINERS = (", 그리고", " — also", "; 또", ", and", " / ")
CONCURRENT_NOTE = "bank/bench/concurrent.md"
SECRETS_NOTE = "bank/bench/secrets.md"
SECRET_FRAMES = (
    "설정 파일에서 찾은 값: {text}",
    "Pasted from the deploy chat: {text} — ask before reusing",
    "운영 서버 메모 {text} 다음 주 교체 예정",
    "From the onboarding doc, {text}",
    "고객 문의 기록: {text}",
    "{text} (found in an old shell history)",
)
POLL_S = 0.005
EDIT_TIMEOUT_S = 5.0
EDIT_GAP_S = 0.3


@dataclass(frozen=True)
class Fact:
    """A fact to add, and the query that should find it again."""

    text: str
    query: str


@dataclass
class AddRecord:
    """One timed ``add``."""

    mode: str
    seconds: float
    kind: str
    how: str
    path: str
    entry_id: str
    fact: Fact
    rebuilt: bool = False  # the index base was rebuilt during this add
    delta_notes: int = 0  # notes in the index delta after this add


@dataclass
class Report:
    """Everything measured, for --json-out."""

    tree: dict[str, Any] = field(default_factory=dict)
    add: dict[str, Any] = field(default_factory=dict)
    watch: dict[str, Any] = field(default_factory=dict)
    concurrency: dict[str, Any] = field(default_factory=dict)
    sanitizer: dict[str, Any] = field(default_factory=dict)


# --- facts ------------------------------------------------------------------------------


class FactMaker:
    """Distinct, realistic facts from the tree's own sentences: a frame, a clause of one, a clause of another."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        from memtree.write.sanitize import sanitize

        self._sanitize = sanitize
        self.rng = rng
        korean: set[str] = set()
        english: set[str] = set()
        for note in sorted((root / "bank").rglob("*.md")):
            for line in note.read_text(encoding="utf-8").splitlines():
                if not line.startswith("- "):
                    continue
                for s in SENTENCE.split(line[2:]):
                    if len(s.split()) >= 5:
                        (korean if HANGUL.search(s) else english).add(s)
        if not korean or not english:
            raise SystemExit(f"error: {root} has too few sentences to build facts from")
        self.korean = sorted(korean)
        self.english = sorted(english)
        self.seen: set[str] = set()

    def _clause(self, pool: Sequence[str]) -> str:
        words = self.rng.choice(pool).split()
        start = self.rng.randrange(0, max(1, len(words) - 5))
        return " ".join(words[start : start + self.rng.randint(5, 9)]).strip(" ,.;:!?\"'()《》")

    def make(self) -> Fact:
        """A new fact (never one made before) holding no secret the sanitizer would change."""
        while True:
            first = self._clause(self.korean if self.rng.random() < 0.7 else self.english)
            second = self._clause(self.english if self.rng.random() < 0.6 else self.korean)
            body = f"{self.rng.choice(FRAMES)} {first}{self.rng.choice(JOINERS)} {second}."
            if body in self.seen or self._sanitize(body).text != body:
                continue
            picks = [self._longest(first, 2), self._longest(second, 2)]
            if not all(picks):
                continue
            self.seen.add(body)
            return Fact(body, " ".join(w for p in picks for w in p))

    @staticmethod
    def _longest(clause: str, n: int) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in WORD.findall(clause) if not w.isdigit()))
        words.sort(key=len, reverse=True)
        return words[:n]


# --- helpers ----------------------------------------------------------------------------


class Attribution:
    """Wall time of the adds split by step: each step's time excludes the steps called inside it.

    The steps are memtree's own functions, wrapped for the duration of the adds (``install``) and
    put back afterwards (``restore``); memtree itself is not changed. A wrapper costs ~1 µs.
    """

    def __init__(self) -> None:
        self.totals: defaultdict[str, float] = defaultdict(float)
        self._stack: list[list[Any]] = []
        self._undo: list[tuple[Any, str, Any, bool]] = []

    def wrap(self, name: str, fn: Any, under: str | None = None) -> Any:
        def timed_step(*args: Any, **kwargs: Any) -> Any:
            if under is not None and (not self._stack or self._stack[-1][0] != under):
                return fn(*args, **kwargs)  # counted in whatever step called it
            now = time.perf_counter()
            if self._stack:
                self.totals[self._stack[-1][0]] += now - self._stack[-1][1]
            self._stack.append([name, now])
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.perf_counter()
                step, start = self._stack.pop()
                self.totals[step] += end - start
                if self._stack:
                    self._stack[-1][1] = end

        return timed_step

    def install(self, owner: Any, attr: str, name: str, under: str | None = None) -> None:
        in_dict = attr in vars(owner)
        original = getattr(owner, attr)
        self._undo.append((owner, attr, original, in_dict))
        setattr(owner, attr, self.wrap(name, original, under))

    def restore(self) -> None:
        for owner, attr, original, in_dict in reversed(self._undo):
            if in_dict:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)  # a method wrapped on the instance: the class's shows through again
        self._undo.clear()

    def take(self) -> defaultdict[str, float]:
        """The totals so far, and start again."""
        out, self.totals = self.totals, defaultdict(float)
        return out


ADD_STEPS = (
    ("route", "route: tree scores of an untagged text"),
    ("retain", "sanitize, re-read the note, dedup, entry (`retain.retain`)"),
    ("write", "durable atomic write of the note / tree-index.json"),
    ("tree", "re-parse + validate tree-index.json"),
    ("files", "stat every node's file (`tree.check_files`)"),
    ("walk", "refresh: stat every note (`store.walk`; at most once a second)"),
    ("apply", "refresh: re-read + re-chunk the changed and delta notes"),
    ("install", "refresh: build + write the delta segment and manifest"),
    ("refresh", "refresh: the rest (staleness check, lock)"),
    ("split", "split a note past 10 KB"),
    ("other", "the rest of `add`"),
)


def attribute_add(mt: Any, attribution: Attribution) -> None:
    """Wrap the steps of ``mt.add`` (see ADD_STEPS)."""
    from memtree.notes import store
    from memtree.notes import tree as treemod
    from memtree.write import retain
    from memtree.write import verbs as write_verbs

    attribution.install(write_verbs, "route_scores", "route")
    attribution.install(retain, "retain", "retain")
    attribution.install(store, "atomic_write", "write", under="retain")
    attribution.install(treemod, "load", "tree")
    attribution.install(treemod, "check_files", "files")
    attribution.install(store, "walk", "walk")
    attribution.install(mt.state.index, "_apply", "apply")
    attribution.install(mt.state.index, "_install", "install")
    attribution.install(mt.state, "refresh", "refresh")
    attribution.install(mt.state.index, "refresh", "refresh")
    attribution.install(write_verbs, "split", "split")


def stats_ms(seconds: Sequence[float]) -> dict[str, float]:
    """n, mean, p50, p95 and max in milliseconds."""
    ms = [1000 * s for s in seconds]
    if not ms:
        return {"n": 0, "mean": float("nan"), "p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    return {
        "n": len(ms),
        "mean": statistics.fmean(ms),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "max": max(ms),
    }


def kind_of(decision: Any) -> str:
    return type(decision).__name__.lower()


def tree_figures(root: Path) -> tuple[int, int]:
    """Bank notes and their bytes."""
    notes = [p for p in (root / "bank").rglob("*.md") if p.is_file()]
    return len(notes), sum(p.stat().st_size for p in notes)


def synth_notes(root: Path) -> list[str]:
    """The synth.py notes (bank/topicNN/subNN/noteNNNNNN.md), root-relative."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "bank").glob("topic*/sub*/note*.md"))


# --- 1. the tree ------------------------------------------------------------------------


def build_tree(shared: Path, out: Path, files: int, report: Report) -> None:
    MemTree = import_memtree()
    progress(f"synth.py {out} --chunks {files * PER_FILE}")
    synth_s, _ = run([sys.executable, str(shared / "synth.py"), str(out), "--chunks", str(files * PER_FILE)])
    progress("MemTree(OUT).index()")
    result = MemTree(out).index()
    notes, size = tree_figures(out)
    report.tree = {
        "path": str(out),
        "notes": notes,
        "bytes": size,
        "chunks": result.chunks,
        "nodes_added": len(result.nodes_added),
        "synth_s": synth_s,
        "index_s": result.seconds,
    }
    print("\n## 1. The tree\n")
    print(
        md_table(
            ["bank notes", "size", "chunks", "tree nodes added", "synth.py s", "index() s"],
            [
                [
                    notes,
                    f"{size / 1e6:.1f} MB",
                    f"{result.chunks:,}",
                    len(result.nodes_added),
                    fmt(synth_s, 2),
                    fmt(result.seconds, 2),
                ]
            ],
        )
    )


# --- 2. add latency ---------------------------------------------------------------------


def add_once(mt: Any, mode: str, fact: Fact, to_nodes: Sequence[str], rng: random.Random, dry_run: bool) -> Any:
    if mode == "to":
        return mt.add(fact.text, to=rng.choice(to_nodes), dry_run=dry_run)
    if mode == "tag":
        return mt.add(fact.text, tag=TAG, dry_run=dry_run)
    return mt.add(fact.text, dry_run=dry_run)


def delta_notes(mt: Any) -> int:
    index = mt.state.index  # a benchmark may look inside: how many notes live outside the base segment
    return sum(1 for e in index.files.values() if e.segment != index.base)


def bench_add(out: Path, adds: int, maker: FactMaker, rng: random.Random, report: Report) -> None:
    MemTree = import_memtree()
    mt = MemTree(out)
    mt.search("회의 일정")  # warm: loads the index, the tree and the keyword index
    to_nodes = [n.id for n in mt.tree.nodes if n.path and n.id.startswith("topic")]
    notes_before, _ = tree_figures(out)
    progress(f"{adds} adds per mode ({', '.join(MODES)}), interleaved")
    records: list[AddRecord] = []
    spent: dict[str, defaultdict[str, float]] = {m: defaultdict(float) for m in MODES}
    attribution = Attribution()
    attribute_add(mt, attribution)
    for _ in range(adds):
        for mode in MODES:
            fact = maker.make()
            base = mt.state.index.base
            attribution.take()
            t0 = time.perf_counter()
            d = add_once(mt, mode, fact, to_nodes, rng, dry_run=False)
            dt = time.perf_counter() - t0
            parts = attribution.take()
            parts["other"] = dt - sum(parts.values())
            for step, seconds in parts.items():
                spent[mode][step] += seconds
            records.append(
                AddRecord(
                    mode,
                    dt,
                    kind_of(d),
                    d.how,
                    d.path,
                    getattr(d, "entry_id", ""),
                    fact,
                    mt.state.index.base != base,
                    delta_notes(mt),
                )
            )
    attribution.restore()
    progress(f"{adds} dry-run adds per mode")
    dry: dict[str, list[float]] = {m: [] for m in MODES}
    dry_kinds: dict[str, Counter[str]] = {m: Counter() for m in MODES}
    for _ in range(adds):
        for mode in MODES:
            fact = maker.make()
            t0 = time.perf_counter()
            d = add_once(mt, mode, fact, to_nodes, rng, dry_run=True)
            dry[mode].append(time.perf_counter() - t0)
            dry_kinds[mode][kind_of(d)] += 1

    progress("searching every written fact")
    found: Counter[str] = Counter()
    checked: Counter[str] = Counter()
    ranks: list[int] = []
    for r in records:
        if r.kind not in ("created", "conflict"):
            continue
        checked[r.mode] += 1
        hits = mt.search(r.fact.query, k=5, cache=False).hits
        for rank, h in enumerate(hits, 1):
            if (r.entry_id and r.entry_id in h.text) or r.fact.text in h.text:
                found[r.mode] += 1
                ranks.append(rank)
                break
    notes_after, _ = tree_figures(out)

    print(f"\n## 2. `add` in-process ({adds} per mode, interleaved; target ≤ {TARGET_ADD_MS:g} ms)\n")
    rows: list[list[Any]] = []
    per_mode: dict[str, Any] = {}
    for mode in MODES:
        rs = [r for r in records if r.mode == mode]
        s = stats_ms([r.seconds for r in rs])
        d = stats_ms(dry[mode])
        within = sum(1 for r in rs if r.seconds * 1000 <= TARGET_ADD_MS) / len(rs)
        per_mode[mode] = {"add_ms": s, "dry_run_ms": d, "within_target": within}
        rows.append(
            [MODE_LABEL[mode]]
            + [fmt(s[k], 1) for k in ("mean", "p50", "p95", "max")]
            + [f"{100 * within:.0f} %"]
            + [fmt(d[k], 1) for k in ("mean", "p50", "p95", "max")]
        )
    everything = stats_ms([r.seconds for r in records])
    within_all = sum(1 for r in records if r.seconds * 1000 <= TARGET_ADD_MS) / len(records)
    dry_all = stats_ms([x for m in MODES for x in dry[m]])
    rows.append(
        ["**all**"]
        + [fmt(everything[k], 1) for k in ("mean", "p50", "p95", "max")]
        + [f"{100 * within_all:.0f} %"]
        + [fmt(dry_all[k], 1) for k in ("mean", "p50", "p95", "max")]
    )
    print(
        md_table(
            [
                "mode",
                "add ms mean",
                "p50",
                "p95",
                "max",
                f"≤ {TARGET_ADD_MS:g} ms",
                "dry_run ms mean",
                "p50",
                "p95",
                "max",
            ],
            rows,
        )
    )

    print("\nDecisions (real adds; dry runs in brackets) and where the entries went:\n")
    rows = []
    for mode in MODES:
        rs = [r for r in records if r.mode == mode]
        kinds = Counter(r.kind for r in rs)
        hows = Counter(r.how for r in rs)
        targets = Counter(r.path for r in rs)
        rows.append(
            [MODE_LABEL[mode]]
            + [f"{kinds[k]} ({dry_kinds[mode][k]})" for k in KINDS]
            + [", ".join(f"{h} {n}" for h, n in hows.most_common()), len(targets)]
        )
        per_mode[mode]["decisions"] = dict(kinds)
        per_mode[mode]["dry_run_decisions"] = dict(dry_kinds[mode])
        per_mode[mode]["routed"] = dict(hows)
        per_mode[mode]["found"] = [found[mode], checked[mode]]
    print(md_table(["mode", *KINDS, "routed", "distinct notes"], rows))

    print("\nLatency over the run (all modes; notes changed since the last base build live in small delta segments):\n")
    rows = []
    n_buckets = 5
    size = max(1, len(records) // n_buckets)
    for b in range(0, len(records), size):
        chunk = records[b : b + size]
        s = stats_ms([r.seconds for r in chunk])
        rows.append(
            [
                f"{b + 1}–{b + len(chunk)}",
                fmt(s["mean"], 1),
                fmt(s["p95"], 1),
                fmt(s["max"], 1),
                max(r.delta_notes for r in chunk),
                sum(r.rebuilt for r in chunk),
            ]
        )
    print(md_table(["adds", "mean ms", "p95", "max", "delta notes (max)", "base rebuilds"], rows))
    rebuild_ms = [1000 * r.seconds for r in records if r.rebuilt]

    print("\nWhere the time of the adds went, mean ms per add (each step without the steps inside it):\n")
    rows = []
    all_spent: defaultdict[str, float] = defaultdict(float)
    for mode in MODES:
        for step, seconds in spent[mode].items():
            all_spent[step] += seconds
    total_s = sum(all_spent.values()) or 1.0
    for key, label in ADD_STEPS:
        rows.append(
            [label]
            + [fmt(1000 * spent[m][key] / adds, 1) for m in MODES]
            + [fmt(1000 * all_spent[key] / len(records), 1), f"{100 * all_spent[key] / total_s:.0f} %"]
        )
    print(md_table(["step", *MODES, "all", "share"], rows))

    total_checked = sum(checked.values())
    total_found = sum(found.values())
    print(
        f"\nFound again by search (rank ≤ 5): {total_found} of {total_checked} created/conflict entries "
        + "("
        + ", ".join(f"{m} {found[m]}/{checked[m]}" for m in MODES)
        + f"; rank 1: {sum(1 for x in ranks if x == 1)}). Bank notes {notes_before} → {notes_after}"
        + f" (new nodes and splits). Base rebuilds during adds: {len(rebuild_ms)}"
        + (f" ({', '.join(f'{x:.0f}' for x in rebuild_ms)} ms)." if rebuild_ms else ".")
    )
    report.add = {
        "adds_per_mode": adds,
        "modes": per_mode,
        "all_ms": everything,
        "within_target": within_all,
        "found": [total_found, total_checked],
        "rank1": sum(1 for x in ranks if x == 1),
        "notes_before": notes_before,
        "notes_after": notes_after,
        "base_rebuild_ms": rebuild_ms,
        "steps_ms": {m: {k: 1000 * v / adds for k, v in spent[m].items()} for m in MODES},
    }


# --- 3. watch ---------------------------------------------------------------------------


def read_version(folder: Path) -> str:
    """The version the newest index manifest in ``folder`` names ("" when it cannot be read): the
    highest ``manifest-<n>.json``, or ``manifest.json`` of a checkout from before those."""
    try:
        numbered = [(int(m[1]), m[0]) for n in os.listdir(folder) if (m := re.fullmatch(r"manifest-(\d+)\.json", n))]
        name = max(numbered)[1] if numbered else "manifest.json"
        return str(json.loads((folder / name).read_bytes())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def bench_watch(out: Path, edits: int, rng: random.Random, report: Report) -> None:
    from memtree.serve.watch import Watcher

    MemTree = import_memtree()
    log: list[str] = []
    crashed: list[str] = []  # exceptions that ended another thread (watchdog's observer) while watching
    previous_hook = threading.excepthook

    def on_thread_error(info: Any) -> None:
        crashed.append(f"{info.thread.name if info.thread else '?'}: {info.exc_type.__name__}: {info.exc_value}")
        previous_hook(info)

    threading.excepthook = on_thread_error
    watcher = Watcher(MemTree(out), log.append)
    thread = threading.Thread(target=watcher.run, name="memtree-watch", daemon=True)
    progress("starting the watcher")
    thread.start()
    deadline = time.monotonic() + 30
    while not any(line.startswith("watching") for line in log):
        if time.monotonic() > deadline or not thread.is_alive():
            raise SystemExit(f"error: the watcher did not start: {log[-3:]}")
        time.sleep(0.02)
    time.sleep(0.5)  # let the observer settle

    reader = MemTree(out, refresh_interval=3600)
    reader.search("회의 일정")  # loads the index; from now on it never stats the notes itself
    version_file = out / ".memtree" / "index"
    notes = synth_notes(out)
    progress(f"{edits} edits under the watcher")
    found_s: list[float] = []
    indexed_s: list[float] = []
    reload_s: list[float] = []
    missed = 0
    for _ in range(edits):
        if crashed and not found_s:
            missed += 1  # a dead observer sees nothing more: do not wait out every edit
            continue
        token = "wprobe" + "".join(rng.choices(string.ascii_lowercase, k=8))
        note = rng.choice(notes)
        seen = read_version(version_file)
        t0 = time.perf_counter()
        with (out / note).open("a", encoding="utf-8") as f:
            f.write(f"- 감시 편집 {token} watch edit\n")
        t_indexed: float | None = None
        while True:
            now = time.perf_counter()
            if now - t0 > EDIT_TIMEOUT_S:
                missed += 1
                break
            version = read_version(version_file)
            if version and version != seen:
                if t_indexed is None:
                    t_indexed = now - t0
                r0 = time.perf_counter()
                if reader._index.load():  # the persisted index, as the watcher left it
                    reload_s.append(time.perf_counter() - r0)
                    seen = version
                    hits = reader.search(token, k=5, cache=False).hits
                    if any(h.path == note for h in hits):
                        found_s.append(time.perf_counter() - t0)
                        indexed_s.append(t_indexed)
                        break
            time.sleep(POLL_S)
        time.sleep(EDIT_GAP_S)
    watcher.stop()
    thread.join(timeout=10)
    threading.excepthook = previous_hook
    stopped = not thread.is_alive() and log[-1:] == ["stopped"]
    errors = [line for line in log if line.startswith(("error", "warning"))]

    # contrast: a fresh CLI process stats every note, so it finds an edit at once without a watcher
    token = "cliprobe" + "".join(rng.choices(string.ascii_lowercase, k=8))
    note = rng.choice(notes)
    with (out / note).open("a", encoding="utf-8") as f:
        f.write(f"- CLI 편집 {token} cli edit\n")
    cli_s, cli_out = run([memtree_exe(), "search", "--root", str(out), token, "--json"], ok=SEARCH_OK)
    cli_found = note in cli_out

    s = stats_ms(found_s)
    ix = stats_ms(indexed_s)
    all_within = missed == 0 and all(x <= TARGET_WATCH_S for x in found_s)
    print(f"\n## 3. An edit under `memtree watch` (target: visible to the next search within {TARGET_WATCH_S:g} s)\n")
    print(
        md_table(
            [
                "edits",
                "found",
                "edit → index version bumped ms (mean / p50 / max)",
                "edit → found by search ms (mean / p50 / max)",
                f"all ≤ {TARGET_WATCH_S:g} s",
            ],
            [
                [
                    edits,
                    len(found_s),
                    " / ".join(fmt(ix[k], 0) for k in ("mean", "p50", "max")),
                    " / ".join(fmt(s[k], 0) for k in ("mean", "p50", "max")),
                    "yes" if all_within else "no",
                ]
            ],
        )
    )
    print(
        f"\nThe reader is a long-lived `MemTree(OUT, refresh_interval=3600)` that never stats the notes itself: it"
        f" polls the version of the newest `.memtree/index/manifest-N.json` every {POLL_S * 1000:g} ms, reloads"
        " the persisted index when it changes"
        f" (`mt.state.index.load()`, {fmt(stats_ms(reload_s)['mean'], 1)} ms mean) and searches the new word, so"
        f" the time is the watcher's (debounce {watcher_debounce()} and its refresh) plus at most one poll. Watcher:"
        f" {watcher.actions} actions logged, {len(errors)} errors/warnings,"
        f" stopped cleanly: {'yes' if stopped else 'no'}."
    )
    if missed:
        print(f"\n**{missed} of {edits} edits were not found within {EDIT_TIMEOUT_S:g} s.**")
    for line in crashed:
        print(f"\n**A thread died while watching: {line}** (the watcher's log said nothing of it).")
    print(
        f"\nWithout a watcher, a new `memtree search` process (it stats every note) found an edit made just before it:"
        f" {'yes' if cli_found else 'no'}, in {cli_s * 1000:.0f} ms wall."
    )
    report.watch = {
        "edits": edits,
        "found": len(found_s),
        "found_ms": s,
        "indexed_ms": ix,
        "reload_ms": stats_ms(reload_s),
        "all_within_target": all_within,
        "watcher_actions": watcher.actions,
        "watcher_errors": errors,
        "stopped": stopped,
        "thread_errors": crashed,
        "missed": missed,
        "cli_ms": cli_s * 1000,
        "cli_found": cli_found,
    }


def watcher_debounce() -> str:
    from memtree.serve import watch

    return f"{watch.DEBOUNCE_S:g} s quiet, at most {watch.MAX_DELAY_S:g} s"


# --- 4. concurrency ---------------------------------------------------------------------


def _writer(root: str, facts: list[str], note: str) -> tuple[float, float, list[str]]:
    """One writer process: add every fact to one note; returns its wall span and the decisions."""
    from memtree import MemTree

    mt = MemTree(root)
    start = time.time()
    kinds = [kind_of(mt.add(text, to=note)) for text in facts]
    return start, time.time(), kinds


def bench_concurrency(out: Path, writers: int, per_writer: int, maker: FactMaker, report: Report) -> None:
    from memtree.notes.entries import parse_entries

    facts = [[maker.make().text for _ in range(per_writer)] for _ in range(writers)]
    progress(f"{writers} processes × {per_writer} adds into {CONCURRENT_NOTE}")
    ctx = multiprocessing.get_context("spawn")
    t0 = time.perf_counter()
    with ctx.Pool(writers) as pool:
        results = pool.starmap(_writer, [(str(out), f, CONCURRENT_NOTE) for f in facts])
    wall = time.perf_counter() - t0
    span = max(r[1] for r in results) - min(r[0] for r in results)
    kinds = Counter(k for r in results for k in r[2])
    expected = Counter(f for fs in facts for f in fs)
    on_disk: Counter[str] = Counter()
    notes = 0
    for p in (out / "bank").rglob("*.md"):
        hold = [e.content for e in parse_entries(p.read_text(encoding="utf-8")) if e.content in expected]
        if hold:
            notes += 1
            on_disk.update(hold)
    total = writers * per_writer
    written = kinds["created"] + kinds["conflict"]
    present = sum(1 for f in expected if on_disk[f] >= 1)
    twice = sum(1 for f in expected if on_disk[f] > 1)
    lost = total - present - kinds["merged"] - kinds["duplicate"]
    print(f"\n## 4. Concurrency: {writers} processes × {per_writer} adds into one note (spawn)\n")
    print(
        md_table(
            [
                "adds",
                "wall s (with process start)",
                "adds span s",
                "adds/s",
                "decisions",
                "entries on disk",
                "in notes",
                "lost",
                "twice",
            ],
            [
                [
                    total,
                    fmt(wall, 2),
                    fmt(span, 2),
                    fmt(total / span, 1),
                    ", ".join(f"{k} {n}" for k, n in kinds.most_common()),
                    present,
                    notes,
                    lost,
                    twice,
                ]
            ],
        )
    )
    print(
        f"\nEvery entry is looked for in every bank note (the note is split past 10 KB on the way). "
        f"{'0 entries lost' if lost == 0 and written == present else f'{lost} entries lost'} out of {total}."
    )
    report.concurrency = {
        "writers": writers,
        "per_writer": per_writer,
        "wall_s": wall,
        "span_s": span,
        "adds_per_s": total / span,
        "decisions": dict(kinds),
        "present": present,
        "notes": notes,
        "lost": lost,
        "twice": twice,
    }


# --- 5. sanitizer -----------------------------------------------------------------------


def sample_secrets() -> tuple[list[tuple[str, str, str]], str]:
    """(kind, text, secret) samples: those of tests/test_sanitize.py, else a dozen made here."""
    path = REPO / "tests" / "test_sanitize.py"
    try:
        spec = importlib.util.spec_from_file_location("memtree_test_sanitize", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return list(module.SAMPLE_SECRETS), "tests/test_sanitize.py SAMPLE_SECRETS"
    except Exception as exc:  # pytest or hypothesis missing, or the module changed
        progress(f"cannot import {path} ({type(exc).__name__}: {exc}); using built-in samples")
    # Fake secrets, assembled from pieces so that secret scanners do not flag this file.
    github = "ghp" + "_Q9w8E7r6T5y4U3i2O1p0A9s8D7f6G5h4J3k2"
    aws_id = "AKIA" + "ZQ3EXAMPLE7BENCH01"
    slack = "xox" + "b-1234509876-1234509876123-ZyXwVuTsRqPoNmLkJiHgFeDc"
    openai = "sk-proj" + "-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp"
    stripe = "sk_" + "live_9fK2LmN4pQ6rS8tU0vW2xY4z"
    google = "AIza" + "SyZ9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J"
    jwt = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJiZW5jaCJ9" + ".c2lnbmF0dXJlLWJlbmNoLXdyaXRl"
    return [
        ("github-token", f"토큰은 {github} 입니다", github),
        ("aws-access-key", f"AWS 키는 {aws_id} 이다", aws_id),
        ("slack-token", f"slack bot: {slack}", slack),
        ("openai-key", f"OpenAI key {openai} (rotated)", openai),
        ("stripe-key", f"결제 키 {stripe}", stripe),
        ("google-api-key", f"maps key={google}", google),
        ("jwt", f"세션 토큰 {jwt} 만료됨", jwt),
        ("password", "DB 비밀번호: " + "blue" + "Whale42!", "blue" + "Whale42!"),
        ("url-password", "postgres://app:" + "Pa55-bench" + "@db.example.com/app", "Pa55-bench"),
        ("email", "연락은 " + "jiwoo.park" + "@example.co.kr 로", "jiwoo.park" + "@example.co.kr"),
        ("phone", "연락처 010-" + "9876-5432로", "010-" + "9876-5432"),
        ("korean-rrn", "주민번호 880203-" + "2345678 확인", "880203-" + "2345678"),
    ], "built-in samples"


def count_on_disk(root: Path, needles: Sequence[bytes]) -> Counter[bytes]:
    """Occurrences of each needle in every file under root (the index and conflicts.json included)."""
    found: Counter[bytes] = Counter()
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        try:
            data = p.read_bytes()
        except OSError:
            continue
        for n in needles:
            if n in data:
                found[n] += data.count(n)
    return found


def bench_sanitizer(out: Path, report: Report) -> None:
    MemTree = import_memtree()
    samples, source = sample_secrets()
    progress(f"sanitizer: {len(samples)} samples ({source})")
    forms: dict[str, list[bytes]] = {
        secret: list(dict.fromkeys([secret.encode(), secret.casefold().encode()])) for _, _, secret in samples
    }
    needles = [n for ns in forms.values() for n in ns]
    before = count_on_disk(out, needles)
    mt = MemTree(out)
    added: list[bool] = []
    logged: list[bool] = []
    kinds: list[str] = []
    for i, (_kind, text, _secret) in enumerate(samples):
        sentence = SECRET_FRAMES[i % len(SECRET_FRAMES)].format(text=text)
        d = mt.add(sentence, to=SECRETS_NOTE)
        added.append(bool(d.redacted))
        kinds.append(kind_of(d))
        logged.append(bool(mt.log(f"세션 {i}: {text}").redacted))
    after = count_on_disk(out, needles)
    leaked = [(kind, secret) for kind, _, secret in samples if any(after[n] > before[n] for n in forms[secret])]
    by_kind: dict[str, list[int]] = {}
    for (kind, _, secret), a, lg in zip(samples, added, logged):
        row = by_kind.setdefault(kind, [0, 0, 0, 0])
        row[0] += 1
        row[1] += a
        row[2] += lg
        row[3] += (kind, secret) in leaked
    n = len(samples)
    print(f"\n## 5. Sanitizer ({n} samples from {source}; each added inside a sentence and logged)\n")
    print(
        md_table(
            ["kind", "samples", "redacted by `add`", "redacted by `log`", "reached disk"],
            [[k, *v] for k, v in by_kind.items()],
        )
    )
    print(
        f"\n`add`: {sum(added)} of {n} redacted; `log`: {sum(logged)} of {n} redacted; "
        f"{len(leaked)} reached disk (every file under the root searched, as is and casefolded, against a count"
        f" taken before). `add` decisions: {', '.join(f'{k} {c}' for k, c in Counter(kinds).most_common())}."
    )
    if leaked:
        print("\nLeaked: " + "; ".join(f"{k} ({s[:6]}…)" for k, s in leaked))
    report.sanitizer = {
        "source": source,
        "samples": n,
        "redacted_add": sum(added),
        "redacted_log": sum(logged),
        "leaked": [k for k, _ in leaked],
        "decisions": dict(Counter(kinds)),
    }


# --- main -------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.add_argument("--files", type=int, default=1000, help="bank notes in the tree, 20 bullets each (default 1000)")
    ap.add_argument("--adds", type=int, default=200, help="adds per routing mode, and as many dry runs (default 200)")
    ap.add_argument("--edits", type=int, default=20, help="edits timed under the watcher (default 20)")
    ap.add_argument("--writers", type=int, default=4, help="concurrent writer processes (default 4)")
    ap.add_argument("--per-writer", type=int, default=100, help="adds per writer process (default 100)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--json-out", type=Path, help="also write all figures to this JSON file")
    ap.add_argument("--clean", action="store_true", help="delete the scratch tree under --work at the end")
    args = ap.parse_args(argv)
    for name in ("files", "adds", "edits", "writers", "per_writer"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    shared = check_shared(args.shared, ["synth.py", "korquad/docs.jsonl", "locomo/docs.jsonl"])
    import_memtree()
    work = args.work.expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"write-{args.files}"
    rng = random.Random(args.seed)
    report = Report()
    t0 = time.perf_counter()
    print(f"# memtree write path — {args.files} notes, {args.adds} adds per mode")
    build_tree(shared, out, args.files, report)
    maker = FactMaker(out, rng)
    bench_add(out, args.adds, maker, rng, report)
    bench_watch(out, args.edits, rng, report)
    bench_concurrency(out, args.writers, args.per_writer, maker, report)
    bench_sanitizer(out, report)
    progress(f"done in {time.perf_counter() - t0:.0f} s")
    if args.json_out:
        data = {name: getattr(report, name) for name in ("tree", "add", "watch", "concurrency", "sanitizer")}
        args.json_out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        progress(f"wrote {args.json_out}")
    if args.clean:
        shutil.rmtree(out, ignore_errors=True)
        progress(f"removed {out}")


if __name__ == "__main__":
    main()
