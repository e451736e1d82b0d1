"""The IDF cache: each query term's matches and statistics, kept between queries until the index changes.

memtree.index.bm25 and memtree.index.dense fill it (their ``score``); memtree.index.chunk_index owns one
per index and empties it whenever its segments change.
"""

from __future__ import annotations

import contextlib
from typing import Any

from cachetools import LRUCache

TERM_CACHE_POSTINGS = 300_000
"""How many matched chunks the IDF cache keeps, over all its terms (see :class:`TermCache`)."""


class TermCache(LRUCache[Any, Any]):
    """The IDF cache: each query term's matches and statistics, kept until the index changes.

    Sized by the chunks its terms match (``limit``, :data:`TERM_CACHE_POSTINGS`), so a few common
    terms of a large memory cannot hold much more memory than many rare ones (the BM25 shares kept
    beside the matches about double it); the least recently used terms leave first. A term matching
    more chunks than the whole limit is not kept. Why not a count of terms emptied when full, as
    before: a warm process that has answered a few hundred questions knows a few thousand terms,
    and emptying the cache at once made every one of them a miss again.
    """

    def __init__(self, limit: int = TERM_CACHE_POSTINGS) -> None:
        super().__init__(limit, getsizeof=_matched)

    def __setitem__(self, key: Any, entry: Any) -> None:
        with contextlib.suppress(ValueError):  # cachetools' "value too large": more than the whole limit
            super().__setitem__(key, entry)


def _matched(entry: Any) -> int:
    """How many chunks a cached term matches, plus one for the entry: memtree.index.bm25's and
    memtree.index.dense's ``score`` both keep a term's per-segment matches first, the chunks first in each."""
    return 1 + sum(len(per_segment[0]) for per_segment in entry[0])
