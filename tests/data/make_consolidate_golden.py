#!/usr/bin/env python3
"""Write tests/data/consolidate_golden.{md,json}: a fixed note and what `consolidate` made of it.

    python tests/data/make_consolidate_golden.py

Run once, on the code before consolidate's candidate search was made near-linear (issue 27,
item 11): tests/test_consolidate.py checks that today's code merges that note exactly so. The
note mixes what the search must get right: random sentences from a small vocabulary (every
bigram shared by hundreds of entries, so consolidate.POSTING_SCAN binds), restatements (a full
stop, an exclamation mark, a word's case), number-only lines, chains (`limit 100` ~ `limit 100!`
~ `limit 1000`), the look-alike pairs (distinct facts that must stay apart), and entries with
ids and tags (merged= and the tags united). Regenerate only on purpose, saying why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOW = 1_780_000_000.0


def note_text() -> str:
    rng = random.Random(27)
    words = sorted({"".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 5))) for _ in range(120)})
    words += ["배포", "설정", "테스트", "금요일", "연결", "풀은", "값은", "서버"]
    lines: list[str] = []
    for i in range(1400):
        r = rng.random()
        if i > 10 and r < 0.08:
            lines.append(rng.choice(lines[-30:]).rstrip(".!") + rng.choice([".", "!", "!!", ""]))
        elif i > 10 and r < 0.12:
            base = rng.choice(lines[-30:])
            lines.append(base[:1].swapcase() + base[1:])
        elif r < 0.30:
            lines.append(str(rng.randint(0, 10 ** rng.randint(1, 7))))
        else:
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))).capitalize())
    for k in range(40):
        limit = f"The API rate limit is {100 * k} requests per minute"
        lines += [limit, limit + "!"]
    for row in (HERE / "lookalike_pairs.jsonl").read_text(encoding="utf-8").splitlines():
        pair = json.loads(row)
        lines += [pair["a"], pair["b"]]
    out = ["# Golden note", ""]
    for i, line in enumerate(lines):
        if i % 7 == 0:
            out.append(f"- {line} <!-- memtree: id=g-{i}; tags=t{i % 5} -->")
        else:
            out.append(f"- {line}")
    return "\n".join(out) + "\n"


def main() -> int:
    sys.path.insert(0, str(HERE.parent.parent))
    from memtree import MemTree

    text = note_text()
    (HERE / "consolidate_golden.md").write_text(text, encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for tier in ("bank/golden", "memory", "recall"):
            (root / tier).mkdir(parents=True)
        (root / "bank/golden/note.md").write_text(text, encoding="utf-8")
        report = MemTree(root, refresh_interval=0).consolidate(now=datetime.fromtimestamp(NOW).astimezone())
        after = (root / "bank/golden/note.md").read_bytes()
        # the archive's date is the local day of NOW: a placeholder, so that any time zone reads the same
        archive = (root / "bank/_archive/golden/note.md").read_bytes()
        archive = re.sub(rb"archived=\d{4}-\d{2}-\d{2}", b"archived=DATE", archive)
    merges = [[m.keep.entry.start, [d.entry.start for d in m.drop], m.similarity] for m in report.merges]
    golden = {
        "merges": merges,
        "note_sha256": hashlib.sha256(after).hexdigest(),
        "archive_sha256": hashlib.sha256(archive).hexdigest(),
    }
    (HERE / "consolidate_golden.json").write_text(json.dumps(golden) + "\n", encoding="utf-8")
    print(f"{len(merges)} merges, {sum(len(m[1]) for m in merges)} entries folded")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
