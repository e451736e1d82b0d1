"""Index segments: sorted terms, CSR postings and per-chunk columns (pure, no I/O).

A segment keeps its distinct index terms sorted, so that every term related to a query term
by prefix is one contiguous range of term ids (and terms holding it inside are found through
:class:`memtree.text.match.SortedTerms`), and its postings in CSR form (``offsets``, ``post_doc``,
``post_tf``). Which terms relate, and how strongly, is :func:`memtree.text.match.match`. Segments
are immutable once built; a newer version of a note lives in a later segment and the old one's
chunks are marked dead. Scoring them is memtree.index.bm25 (pure) and memtree.index.dense (numpy).

Why one module over 300 lines: a segment's columns, the layouts that build them (from terms or from
a build's term ids) and the merge that rebuilds them must agree column for column.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any, NamedTuple

from memtree.index.protocol import Location
from memtree.text.match import Match, SortedTerms

MAX_TF = 65_535
"""Term frequencies are stored as uint16; a term repeated more often in one chunk counts this much."""
NUMPY_MIN_TERMS = 200_000
"""A segment built from fewer term entries lays out its postings in pure Python; why: importing
numpy (~50 ms) costs more than it saves on a refresh of a few notes."""


class TierStats(NamedTuple):
    """What BM25's statistics count in one segment for a search over some tiers."""

    n_docs: int
    total_len: int
    mask: bytearray | None  # 1 for each chunk counted; None when every live chunk is


def counted(acc_docs: Iterable[int], mask: bytearray | None, n: int) -> int:
    """How many of a term's chunks (``n`` of them) the tier mask counts."""
    return n if mask is None else sum(mask[d] for d in acc_docs)


@dataclass
class Segment:
    """One immutable index segment: sorted terms, CSR postings and per-chunk columns."""

    terms: list[str]
    offsets: array[int]  # len(terms) + 1
    post_doc: array[int]
    post_tf: array[int]
    doc_len: array[int]
    doc_file: array[int]  # index into files
    doc_start: array[int]
    doc_end: array[int]
    files: list[str]
    file_start: array[int]  # chunks of file f are file_start[f] .. file_start[f + 1] - 1
    file_len: array[int]  # total length (in terms) of each file's chunks
    dead_files: frozenset[int] = frozenset()
    live: bytearray = field(init=False, repr=False)
    n_live: int = field(init=False)
    live_len: int = field(init=False)

    def __post_init__(self) -> None:
        self.set_dead(self.dead_files)

    def set_dead(self, dead_files: frozenset[int]) -> None:
        """Mark every chunk of the given files dead (their newer version lives elsewhere)."""
        self.dead_files = dead_files
        self.__dict__.pop("_tier_stats", None)
        n_docs = len(self.doc_len)
        self.live = bytearray(b"\x01") * n_docs
        self.n_live, self.live_len = n_docs, sum(self.file_len)
        starts = self.file_start
        for f in dead_files:
            lo, hi = starts[f], starts[f + 1]
            self.live[lo:hi] = bytes(hi - lo)
            self.n_live -= hi - lo
            self.live_len -= self.file_len[f]

    def tier_stats(self, tiers: frozenset[str] | None) -> TierStats:
        """Live chunks, their total length, and a per-chunk mask (None: every live chunk counts) for
        the statistics of a search over ``tiers`` (None: all of them)."""
        if tiers is None:
            return TierStats(self.n_live, self.live_len, None)
        cache = self.__dict__.setdefault("_tier_stats", {})
        found = cache.get(tiers)
        if found is None:
            inside = self.files_in(tiers)
            if len(inside) == len(self.files):
                found = TierStats(self.n_live, self.live_len, None)
            else:
                mask = bytearray(len(self.doc_len))
                n = length = 0
                for f in inside:
                    if f in self.dead_files:
                        continue
                    lo, hi = self.file_start[f], self.file_start[f + 1]
                    mask[lo:hi] = b"\x01" * (hi - lo)
                    n += hi - lo
                    length += self.file_len[f]
                found = TierStats(n, length, mask)
            cache[tiers] = found
        return found

    def file_id(self, path: str) -> int | None:
        """Index of ``path`` in this segment's files, or None."""
        ids = self.__dict__.get("_file_ids")
        if ids is None:
            ids = self.__dict__["_file_ids"] = {p: i for i, p in enumerate(self.files)}
        return ids.get(path)

    def files_in(self, tiers: frozenset[str] | None, skip: tuple[str, ...] = ()) -> set[int]:
        """Indexes of this segment's files in the given tiers (None: all), except those under a ``skip`` prefix."""
        cache = self.__dict__.setdefault("_tier_files", {})
        key = (tiers, skip)
        if key not in cache:
            cache[key] = {
                i
                for i, p in enumerate(self.files)
                if (tiers is None or p.split("/", 1)[0] in tiers) and not p.startswith(skip)
            }
        return cache[key]

    def chunks(self, tiers: frozenset[str] | None = None, skip: tuple[str, ...] = ()) -> Iterator[tuple[int, Location]]:
        """Every live chunk of the files :meth:`files_in` names, file by file, and where it is."""
        inside = self.files_in(tiers, skip)
        starts, doc_start, doc_end = self.file_start, self.doc_start, self.doc_end
        for f, path in enumerate(self.files):
            if f in inside and f not in self.dead_files:
                for d in range(starts[f], starts[f + 1]):
                    yield d, Location(path, doc_start[d], doc_end[d])

    def routed(self, routes: Mapping[str, float]) -> dict[int, float]:
        """File id → route score, for the live files of this segment among ``routes`` (path → score)."""
        out = {}
        for path, route in routes.items():
            f = self.file_id(path)
            if f is not None and f not in self.dead_files:
                out[f] = route
        return out

    def first_doc(self, file_id: int) -> int | None:
        """The first chunk of a file, or None for a file without chunks."""
        lo, hi = self.file_start[file_id], self.file_start[file_id + 1]
        return lo if hi > lo else None

    def expand(self, q: str, partial: float, infix: float) -> list[tuple[int, int, float, Match]]:
        """Term-id ranges ``(lo, hi, weight, kind)`` of the terms :func:`memtree.text.match.match`
        relates to query term ``q`` with a weight above 0."""
        lookup = self.__dict__.get("_lookup")
        if lookup is None:
            lookup = self.__dict__["_lookup"] = SortedTerms(self.terms)
        return lookup.weighted(q, partial, infix)

    def starting(self, prefix: str) -> list[str]:
        """The segment's terms that start with ``prefix``, sorted (those of dead notes too)."""
        lo = bisect.bisect_left(self.terms, prefix)
        return self.terms[lo : bisect.bisect_left(self.terms, prefix + "\U0010ffff", lo)]

    def locate(self, doc: int) -> Location:
        """Where a chunk is: its note's path and its lines."""
        return Location(self.files[self.doc_file[doc]], self.doc_start[doc], self.doc_end[doc])

    def chunk_ids(self) -> list[int]:
        """Chunk number → one int object for it, the same every time (made on first use).

        Why: a search's dicts and sets are all keyed by chunk, and a lookup that finds the very
        object it looks for skips comparing two equal ints.
        """
        ids = self.__dict__.get("_chunk_ids")
        if ids is None:
            ids = self.__dict__["_chunk_ids"] = list(range(len(self.doc_len)))
        return ids

    def soft_tf(self, ranges: list[tuple[int, int, float, Match]]) -> tuple[dict[int, float], set[int], set[int]]:
        """Soft term frequency per live chunk for one query term, the chunks matching exactly, and
        the chunks matching only inside a compound (infix)."""
        acc: dict[int, float] = {}
        exact: set[int] = set()
        strong: set[int] = set()
        infix: set[int] = set()
        offsets, post_doc, post_tf, live = self.offsets, self.post_doc, self.post_tf, self.live
        check = self.n_live != len(self.doc_len)
        has_infix = any(kind is Match.INFIX for *_, kind in ranges)
        chunk = self.chunk_ids()
        for lo, hi, w, kind in ranges:
            s, e = offsets[lo], offsets[hi]
            docs = list(map(chunk.__getitem__, post_doc[s:e]))
            get = acc.get
            if kind is Match.EXACT:
                exact.update(docs)
            if has_infix:
                (infix if kind is Match.INFIX else strong).update(docs)
            for d, tf in zip(docs, post_tf[s:e]):
                acc[d] = get(d, 0.0) + w * tf
        weak = infix - strong
        if check:
            acc = {d: v for d, v in acc.items() if live[d]}
            exact = {d for d in exact if live[d]}
            weak = {d for d in weak if live[d]}
        return acc, exact, weak


def build_segment(notes: Iterable[tuple[str, Sequence[tuple[int, int, list[str] | dict[str, int]]]]]) -> Segment:
    """Build a segment from ``(path, [(start line, end line, terms), ...])`` per note.

    Terms come as a list (repeats counted) or as a term → frequency mapping. The postings are
    laid out as CSR, by :func:`_csr_numpy` for a large build and :func:`_csr_python` otherwise;
    both give the same columns.
    """
    columns = _Columns()
    chunk_terms: list[list[str] | dict[str, int]] = []
    for path, chunks in notes:
        columns.add(path, chunks, [_length(terms) for _, _, terms in chunks])
        chunk_terms.extend([c[2] for c in chunks])
    size = sum(map(len, chunk_terms))  # term entries over all chunks: what laying out the postings costs
    layout = _csr_numpy if size >= NUMPY_MIN_TERMS and _numpy_available() else _csr_python
    return columns.segment(*layout(chunk_terms))


def build_segment_ids(
    notes: Iterable[tuple[str, Sequence[tuple[int, int, Sequence[int]]]]], terms: Sequence[str]
) -> Segment:
    """:func:`build_segment` for chunks whose terms come as ids into ``terms`` (``NO_TERM``, 0, marks a
    stopword's place and counts for nothing), as an index build numbers them (memtree.index.vocab):
    the same columns as for the terms themselves."""
    columns = _Columns()
    chunk_ids: list[Sequence[int]] = []
    for path, chunks in notes:
        columns.add(path, chunks, [len(ids) - ids.count(0) for _, _, ids in chunks])
        chunk_ids.extend([c[2] for c in chunks])
    if sum(columns.file_len) >= NUMPY_MIN_TERMS and _numpy_available():
        return columns.segment(*_csr_ids_numpy(chunk_ids, terms))
    return columns.segment(*_csr_python([[terms[i] for i in ids if i] for ids in chunk_ids]))


class _Columns:
    """A segment's per-chunk and per-note columns, filled note by note (a build sees 100k chunks)."""

    def __init__(self) -> None:
        self.doc_len, self.doc_file, self.doc_start, self.doc_end = array("i"), array("i"), array("i"), array("i")
        self.files: list[str] = []
        self.file_start, self.file_len = array("q", [0]), array("q")

    def add(self, path: str, chunks: Sequence[tuple[int, int, Any]], lengths: list[int]) -> None:
        """One note's chunks ``(start line, end line, terms)`` and their lengths in terms."""
        self.doc_len.extend(lengths)
        self.doc_file.extend(repeat(len(self.files), len(chunks)))
        self.doc_start.extend([c[0] for c in chunks])
        self.doc_end.extend([c[1] for c in chunks])
        self.files.append(path)
        self.file_len.append(sum(lengths))
        self.file_start.append(self.file_start[-1] + len(chunks))

    def segment(self, terms: list[str], offsets: array[int], post_doc: array[int], post_tf: array[int]) -> Segment:
        """The segment of these columns and these CSR postings."""
        return Segment(
            terms,
            offsets,
            post_doc,
            post_tf,
            self.doc_len,
            self.doc_file,
            self.doc_start,
            self.doc_end,
            self.files,
            self.file_start,
            self.file_len,
        )


_Csr = tuple[list[str], "array[int]", "array[int]", "array[int]"]


def _csr_python(chunk_terms: Sequence[list[str] | dict[str, int]]) -> _Csr:
    """Sorted terms and CSR postings (offsets, chunks, frequencies), term by term in chunk order."""
    postings: dict[str, tuple[array[int], array[int]]] = {}
    for d, terms in enumerate(chunk_terms):
        for t, tf in (terms if isinstance(terms, dict) else Counter(terms)).items():
            p = postings.get(t)
            if p is None:
                p = postings[t] = (array("i"), array("H"))
            p[0].append(d)
            p[1].append(tf if tf < MAX_TF else MAX_TF)
    terms_sorted = sorted(postings)
    offsets, post_doc, post_tf = array("q", [0]), array("i"), array("H")
    for t in terms_sorted:
        docs, tfs = postings[t]
        post_doc.extend(docs)
        post_tf.extend(tfs)
        offsets.append(len(post_doc))
    return terms_sorted, offsets, post_doc, post_tf


def _csr_numpy(chunk_terms: Sequence[list[str] | dict[str, int]]) -> _Csr:
    """:func:`_csr_python`'s columns from one sort of (term id, chunk) keys instead of a Python
    step per posting. Why: on 100k chunks the per-posting loop took 1.8 s of a 10 s build."""
    import numpy as np

    flat: list[str] = []  # every term entry of every chunk, chunk after chunk
    entries = array("q")  # entries per chunk
    weights: array[int] | None = None  # frequency per entry, once a chunk came as a mapping
    for terms in chunk_terms:
        if isinstance(terms, dict):
            if weights is None:
                weights = array("q", [1]) * len(flat)
            weights.extend(terms.values())
        elif weights is not None:
            weights.extend(repeat(1, len(terms)))
        flat.extend(terms)
        entries.append(len(terms))
    vocab = sorted(set(flat))
    if not vocab:
        return vocab, array("q", [0]), array("i"), array("H")
    ids = {t: i for i, t in enumerate(vocab)}
    n_docs = len(entries)
    key = np.fromiter(map(ids.__getitem__, flat), dtype=np.int64, count=len(flat)) * n_docs
    key += np.repeat(np.arange(n_docs, dtype=np.int64), np.frombuffer(entries, dtype=np.int64))
    if weights is None:
        key, tf = np.unique(key, return_counts=True)
    else:
        order = np.argsort(key, kind="stable")
        key = key[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        tf = np.add.reduceat(np.frombuffer(weights, dtype=np.int64)[order], first)
        key = key[first]
    term_of = key // n_docs
    offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_of, minlength=len(vocab)), out=offsets[1:])
    return (
        vocab,
        _to_array("q", offsets),
        _to_array("i", key - term_of * n_docs),
        _to_array("H", np.minimum(tf, MAX_TF)),
    )


def _csr_ids_numpy(chunk_ids: Sequence[Sequence[int]], terms: Sequence[str]) -> _Csr:
    """:func:`_csr_numpy` for chunks given as term ids (0: no term): with ids at hand, not even a
    dictionary lookup per term entry is left in Python."""
    import numpy as np

    entries = np.fromiter(map(len, chunk_ids), dtype=np.int64, count=len(chunk_ids))
    n_docs = len(entries)
    ids_all = np.fromiter(chain.from_iterable(chunk_ids), dtype=np.int64, count=int(entries.sum()))
    docs = np.repeat(np.arange(n_docs, dtype=np.int64), entries)
    kept = ids_all != 0
    ids_all, docs = ids_all[kept], docs[kept]
    used = np.flatnonzero(np.bincount(ids_all, minlength=len(terms))).tolist()
    if not used:
        return [], array("q", [0]), array("i"), array("H")
    order = sorted(used, key=terms.__getitem__)
    rank = np.zeros(len(terms), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    key, tf = np.unique(rank[ids_all] * n_docs + docs, return_counts=True)
    term_of = key // n_docs
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_of, minlength=len(order)), out=offsets[1:])
    return (
        [terms[i] for i in order],
        _to_array("q", offsets),
        _to_array("i", key - term_of * n_docs),
        _to_array("H", np.minimum(tf, MAX_TF)),
    )


def _to_array(code: str, values: Any) -> array[int]:
    """A numpy vector as an ``array`` of type ``code`` (native byte order)."""
    out = array(code)
    out.frombytes(values.astype(f"={code}", copy=False).tobytes())
    return out


def _numpy_available() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _length(terms: list[str] | dict[str, int]) -> int:
    return sum(terms.values()) if isinstance(terms, dict) else len(terms)


def merge_segments(segments: Sequence[Segment]) -> Segment:
    """One segment holding the live notes of ``segments``, rebuilt from their postings."""
    notes: list[tuple[str, list[tuple[int, int, list[str] | dict[str, int]]]]] = []
    for seg in segments:
        counts: list[dict[str, int]] = [{} for _ in range(len(seg.doc_len))]
        offsets, post_doc, post_tf, live = seg.offsets, seg.post_doc, seg.post_tf, seg.live
        for ti, term in enumerate(seg.terms):
            for j in range(offsets[ti], offsets[ti + 1]):
                d = post_doc[j]
                if live[d]:
                    counts[d][term] = post_tf[j]
        for f, path in enumerate(seg.files):
            if f in seg.dead_files:
                continue
            docs = range(seg.file_start[f], seg.file_start[f + 1])
            notes.append((path, [(seg.doc_start[d], seg.doc_end[d], counts[d]) for d in docs]))
    return build_segment(notes)


def in_order(segments: Sequence[Segment], ranked: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """(score, segment, chunk) best first; ties by path and line, so results never depend on how
    the index happens to be cut into segments."""

    def key(c: tuple[float, int, int]) -> tuple[float, str, int]:
        seg = segments[c[1]]
        return (-c[0], seg.files[seg.doc_file[c[2]]], seg.doc_start[c[2]])

    return sorted(ranked, key=key)
