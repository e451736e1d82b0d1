"""Does a change to the build keep what it writes byte for byte? Two memtree checkouts, one tree each.

For every tree given, each checkout builds a fresh index (``MemTree(root).index()``, in its own
process, with ``PYTHONPATH`` set to that checkout) on a copy of the tree that keeps every file's
mtime; then the index files (``.memtree/index/``), ``.memtree/keywords.json`` when there, and
``tree-index.json`` are compared file by file. ``--edge DIR`` first writes a tree of awkward notes
there (NFD Hangul, CRLF, NUL, dates of every form, frontmatter, entry metadata, a non-UTF-8 note,
an empty one, glued particles, long lines, mixed scripts) to check along.

    python bench/same_index.py --base ../wt-base --new . TREE [TREE ...] [--edge /tmp/edge-tree]

Both builds set ``memtree.config.INDEX_PARALLEL_MIN_BYTES`` to ``--parallel-min-bytes`` (default 0),
so even a small tree is parsed with the helper process (memtree.index.helper) where there is one;
``--parallel-min-bytes 1000000000`` checks the one-process build, ``--helper all`` the helper's
outcomes alone (the new build waits for it to parse every note).

Exit status 1 when any file differs (each difference is named).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

BUILD = """
import sys, time
import memtree.config as c
from memtree.api import MemTree
c.INDEX_PARALLEL_MIN_BYTES = int(sys.argv[2])
try:  # a helper even on a busy machine (the build starts one only while a core is idle)
    from memtree.index import helper
    helper._idle = lambda: 1.0
except ImportError:  # a checkout from before the helper
    pass
if sys.argv[3] == "all":
    reached = helper.Helper.reached
    def wait(self):  # the build takes no note itself until the helper has parsed them all
        while reached(self) > 0 and self.proc.poll() is None:
            time.sleep(0.005)
        return reached(self)
    helper.Helper.reached = wait
MemTree(sys.argv[1]).index()
"""


def digests(root: Path) -> dict[str, str]:
    """What a build wrote: relative path → blake2b of the bytes."""
    out = {}
    picked = [root / "tree-index.json", root / ".memtree" / "keywords.json"]
    picked += sorted(p for p in (root / ".memtree" / "index").rglob("*") if p.is_file() and p.name != "index.lock")
    for p in picked:
        if p.is_file():
            out[p.relative_to(root).as_posix()] = hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()
    return out


def build(checkout: Path, tree: Path, scratch: Path, min_bytes: int, share: str) -> tuple[dict[str, str], float]:
    """A fresh index of a copy of ``tree`` by ``checkout``: its files' digests, and the seconds it took."""
    copy = scratch / tree.name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns(".memtree", "tree-index.json"))
    env = dict(os.environ, PYTHONPATH=str(checkout.resolve()))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", BUILD, str(copy), str(min_bytes), share], env=env, check=True, cwd=scratch)
    took = time.perf_counter() - t0
    found = digests(copy)
    shutil.rmtree(copy)
    return found, took


# --- an edge-case tree -------------------------------------------------------------------------

PIECES = [
    "배포는 2024-01-07에 했다",
    "회의록: 2024년 3월 12일 오후 회의",
    "지난주 월요일에 Notion에 정리했다",
    "어제는 3일 전에 본 문서를 다시 읽었다",
    "We met yesterday and again last Monday; 3 days ago it rained.",
    "the day before yesterday, twelve months ago, next week",
    "Deadline: Jan 7, 2024 — or 7 January 2024, or 14/01/2024, 1/14/2024, 14.01.2024.",
    "version 1.2.3 at 10.0.0.1, 14:20, 3.14, 1/2/24, 2024-02-30",
    "가치관이 지명수배되었다 설계했다 구조적인 회의 회의를",
    "Caroline's paintings were baked; she's baking cookies.",
    "İstanbul straße ΣΊΣΥΦΟΣ ﬁle Ⅻ ½ ①②",
    "摂政宮 섭정궁 東京タワー ひらがな カタカナ",
    "emoji 🙂 👩‍💻 and zero-width\u200bjoin",
    "numbers 1,234,567 and 3.5 and 2024년 and 24년 1월 7일",
    "10에서 API를 GPT-4로 Python3은",
    "tab\tseparated\tvalues",
    "a vertical\x0btab, a form\x0cfeed, a line\u2028separator",
    "this month, this year, 올해, 내년, 작년, 다음 달",
    "May I ask? march on, 7 may 2024, May 7 2024",
]


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def edge_tree(out: Path, seed: int = 7) -> Path:
    """A small memory root of awkward notes (deterministic for a seed)."""
    rng = random.Random(seed)
    shutil.rmtree(out, ignore_errors=True)
    for folder in ("bank/a/b", "bank/c", "memory", "recall"):
        (out / folder).mkdir(parents=True)

    def para(n: int) -> str:
        return " ".join(rng.choice(PIECES) for _ in range(n))

    for i in range(40):
        lines = []
        if i % 5 == 0:
            lines += ["---", f"date: 2023-0{1 + i % 9}-1{i % 10}", "tags: [x, y]", "---"]
        if i % 7 == 3:
            lines += ["---", "broken: [yaml", "---"]
        lines.append(f"# 노트 {i} 2024-02-{10 + i % 19:02d}")
        for j in range(rng.randint(1, 12)):
            if j % 4 == 0:
                lines.append(f"## {rng.choice(['Session 3', '2024년 1월 7일', '배포', 'Jan 7 2024', 'misc'])}")
            kind = rng.randrange(5)
            if kind == 0:
                lines.append(f"- {para(2)} <!-- memtree: created=2024-0{1 + j % 9}-0{1 + j % 9}; id=e{i}{j} -->")
            elif kind == 1:
                lines += ["```", para(1), "```"]
            elif kind == 2:
                lines += ["| a | b |", "|---|---|", f"| {para(1)} | x |"]
            else:
                lines.append(para(rng.randint(1, 4)))
            lines.append("")
        text = "\n".join(lines)
        if i % 6 == 1:
            text = _nfd(text)
        if i % 8 == 2:
            text = text.replace("\n", "\r\n")
        folder = ["bank/a/b", "bank/c", "bank"][i % 3]
        (out / folder / f"note{i:02d}.md").write_text(text, encoding="utf-8", newline="")
    (out / "memory" / "2024-01-07.md").write_text("- 오늘 배포\n- yesterday: fixed the cron\n", encoding="utf-8")
    (out / "memory" / "2024-01-08.md").write_text(para(30) + "\n", encoding="utf-8")
    (out / "recall" / "hot.md").write_text("- " + "긴 줄 " * 5000 + "\n", encoding="utf-8")
    (out / "bank" / "empty.md").write_bytes(b"")
    (out / "bank" / "latin1.md").write_bytes("caf\xe9 not UTF-8\n".encode("latin-1"))
    (out / "bank" / "nul.md").write_text("- a NUL \x00 inside\n", encoding="utf-8")
    (out / "bank" / "c" / "한글 이름.md").write_text(_nfd("# 한글\n- 가치관이 중요하다\n"), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", type=Path, help="memory roots to build (copied; never written)")
    ap.add_argument("--base", type=Path, required=True, help="the checkout to compare against (e.g. main's)")
    ap.add_argument("--new", type=Path, default=Path(__file__).resolve().parent.parent, help="the changed checkout")
    ap.add_argument("--edge", type=Path, help="write an edge-case tree here and check it too")
    ap.add_argument(
        "--parallel-min-bytes",
        type=int,
        default=0,
        help="memtree.config.INDEX_PARALLEL_MIN_BYTES in both builds (default 0: a helper process for any tree)",
    )
    ap.add_argument(
        "--helper",
        choices=("race", "all"),
        default="race",
        help="race: the new build and its helper share the notes as they do; all: the helper parses every note",
    )
    args = ap.parse_args(argv)
    trees = list(args.trees) + ([edge_tree(args.edge)] if args.edge else [])
    if not trees:
        ap.error("no tree to check: give TREE arguments or --edge DIR")
    differ = 0
    with tempfile.TemporaryDirectory(prefix="same-index-") as tmp:
        scratch = Path(tmp)
        for tree in trees:
            base, base_s = build(args.base, tree, scratch, args.parallel_min_bytes, "race")
            new, new_s = build(args.new, tree, scratch, args.parallel_min_bytes, args.helper)
            bad = sorted(p for p in base.keys() | new.keys() if base.get(p) != new.get(p))
            differ += bool(bad)
            verdict = "same bytes" if not bad else f"{len(bad)} files differ: {', '.join(bad[:8])}"
            print(f"{tree}: {len(base)} files, {verdict} (build {base_s:.2f} s base, {new_s:.2f} s new)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
