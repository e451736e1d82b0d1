"""A long hit cut to the sentences that match the prompt, so a prompt's injection stays short.

Pure. A hit whose text (metadata stripped) is within the limit is kept whole. A longer one keeps its
best sentence — the one holding most of the hit's matched query words, the earliest of equals —
then grows by its neighbours, the next one first, while the excerpt stays within the limit; an
ellipsis marks each side that was cut. Headings are left out (the block names the note). Sentences
end at sentence punctuation followed by white space (memtree.notes.entries.SENTENCE_END) or at a
line break.
"""

from __future__ import annotations

import re
from dataclasses import replace

from memtree.notes.entries import SENTENCE_END, strip_meta
from memtree.search.result import Hit
from memtree.text.terms import estimate_tokens

ELLIPSIS = "…"
_PARTS = re.compile(rf"{SENTENCE_END.pattern}|\n+")


def focus(hit: Hit, limit: int) -> Hit:
    """``hit`` with its text cut to the sentences around its best-matching one, within ``limit`` tokens."""
    body = strip_meta(hit.text).strip("\n")
    if limit <= 0 or estimate_tokens(body) <= limit:
        return hit
    parts = [p.strip() for p in _PARTS.split(body) if p.strip() and not p.lstrip().startswith("#")]
    if not parts:
        return hit
    words = [w.lower() for w in hit.matched]
    held = [sum(w in part.lower() for w in words) for part in parts]
    best = max(range(len(parts)), key=lambda i: (held[i], -i))
    lo = hi = best
    while True:
        for j in (hi + 1, lo - 1):
            if 0 <= j < len(parts) and estimate_tokens(" ".join(parts[min(lo, j) : max(hi, j) + 1])) <= limit:
                lo, hi = min(lo, j), max(hi, j)
                break
        else:
            break
    text = " ".join(parts[lo : hi + 1])
    if estimate_tokens(text) > limit:  # one sentence longer than the limit: the block's own cut handles it
        return hit
    head = f"{ELLIPSIS} " if lo > 0 else ""
    tail = f" {ELLIPSIS}" if hi < len(parts) - 1 else ""
    return replace(hit, text=f"{head}{text}{tail}")
