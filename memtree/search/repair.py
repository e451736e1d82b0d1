"""Query words the memory cannot hold as typed, repaired to what it does hold.

A query term no chunk holds (df 0) is, for rejection, the best sign that the memory cannot answer
(memtree.search.evidence): a missing name usually means a missing topic. Two slips make a term
absent that names nothing missing, so each is repaired before the query is scored — and only
when the memory's own vocabulary says so:

* **a typo in a word** (``educaton``, ``tennesee``, ``recieved``): one edit — a letter inserted,
  dropped, changed, or two swapped — from a term the memory holds that starts with the same
  ``PREFIX`` letters → that term (the one in most chunks when several are). Words shorter than
  ``TYPO_MIN`` letters are left alone: one edit from a short word is another word.
* **a one-syllable Korean noun with its particle** (``집의``, ``열을``, ``씨가``): the stemmer keeps
  two syllables at least (``회의`` is a word, not ``회`` + ``의``), so the pair stays whole; when
  the memory holds no such word, the noun alone, which matches itself and itself plus a particle
  (memtree.text.match).

A repair is taken only when the repaired term occurs in the tiers searched. Nothing here reads a
note; the engine's :meth:`~memtree.index.protocol.Engine.vocabulary` lists candidate terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtree.search import evidence
from memtree.text import terms as text

if TYPE_CHECKING:
    from memtree.config import SearchSettings
    from memtree.index.protocol import Engine

PREFIX = 3
"""Letters a typo's repair must share with it at the front; why: typing slips are rarely in the first letters, and the
shared prefix bounds the vocabulary scanned to a few terms."""
TYPO_MIN = 5
"""Shortest word repaired as a typo (``tim`` is not a slip of ``time``)."""
_PARTICLES_AFTER_ONE = frozenset("이 가 을 를 은 는 에 의 도 와 과 로 만".split())


def repairs(
    index: Engine,
    qterms: Sequence[str],
    dfs: Sequence[int],
    tiers: frozenset[str],
    settings: SearchSettings,
    vectorize: bool,
) -> dict[str, str]:
    """Absent query term → the term it is read as; empty when nothing needs repair."""
    wanted: dict[str, list[str]] = {}
    for q, df in zip(qterms, dfs):
        if df or evidence.proves_little(q):
            continue
        if text.is_hangul(q):
            if len(q) == 2 and q[1] in _PARTICLES_AFTER_ONE:
                wanted[q] = [q[0]]
        elif len(q) >= TYPO_MIN and q.isascii() and q.isalpha():
            near = sorted({t for t in index.vocabulary(q[:PREFIX]) if one_edit(q, t)})
            if near:
                wanted[q] = near
    out: dict[str, str] = {}
    if wanted:
        candidates = list(dict.fromkeys(c for cs in wanted.values() for c in cs))
        held = {st.term: st.df for st in index.score(candidates, tiers, settings, None, vectorize).stats}
        for q, cs in wanted.items():
            best = max(cs, key=lambda c: (held.get(c, 0), c))  # the most common reading; ties by the word itself
            if held.get(best, 0) > 0:
                out[q] = best
    return out


def one_edit(a: str, b: str) -> bool:
    """Whether ``b`` is one insertion, deletion, substitution or swap of neighbours away from ``a``."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        i, j = diff[0], diff[-1]
        return len(diff) == 2 and j == i + 1 and a[i] == b[j] and a[j] == b[i]
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]
