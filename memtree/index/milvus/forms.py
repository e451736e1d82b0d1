"""memtree's matching rule as sparse vectors, so a Milvus collection finds the chunks memtree would (no I/O).

Milvus's analyzers do not match Korean the way memtree does (memtree.text.match: a query word
matches a longer word by prefix, ``가치`` ~ ``가치관이``, and a compound by its head, ``배포`` in
``무중단배포``), so memtree hands Milvus its own analysed terms, each with the *forms* a query word
can reach it by, as one sparse vector per chunk:

* the term itself (``가치관``), weight its BM25 term-frequency part;
* ``<`` + each proper prefix of a Hangul/Han term of at least ``MIN_STEM`` syllables
  (``<가치`` for ``가치관``), and ``<`` + the word of a single syllable plus a particle
  (``<집`` for ``집에``): a query word reaches a longer term by prefix through them;
* ``~`` + each part a Hangul query word may be found as inside a compound: its endings of two
  syllables and more, and its inner runs of ``INFIX_ANYWHERE`` syllables and more
  (``~배포`` and ``~중단배포`` for ``무중단배포``).

A query term's vector holds the term (weight idf), its ``<`` form (idf × partial), its own
prefixes of ``MIN_STEM`` syllables and more as plain terms (idf × partial: the index term is a
stem of the query word), its ``~`` form (idf × infix) and, for a Korean past form, ``<`` + its
verb's stem (idf × infix: ``<태어`` for ``태어났``, memtree.text.match.verb_stem), so the inner product adds what
memtree's soft term frequency adds, with one difference: memtree saturates ``Σ match × tf`` as
one term, the inner product saturates each form on its own. Search re-scores the candidates with
memtree's exact BM25 (memtree.index.milvus), so this only decides which chunks are candidates.

Dimensions are the CRC-32 of a form (as Milvus Lite's own BM25 hashes tokens): two forms may
share one in a large vocabulary, which can add a stray candidate, never change a final score.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Sequence

from memtree.text.match import (
    INFIX_ANYWHERE,
    INFIX_MIN,
    MIN_STEM,
    ONE_SYLLABLE_PARTICLES,
    is_cjk,
    is_hangul,
    verb_stem,
)

FORMS_VERSION = 2
"""Changes whenever the forms or their weights change: a collection built with others is rebuilt."""
PREFIX_MARK = "<"
INFIX_MARK = "~"
_DIM_LIMIT = 0xFFFFFFFF  # Milvus sparse dimensions are below 2^32 - 1
_PARTICLES = frozenset(ONE_SYLLABLE_PARTICLES)


def dim(form: str) -> int:
    """The sparse dimension of a term or form."""
    return zlib.crc32(form.encode("utf-8")) % _DIM_LIMIT


def forms(term: str) -> list[str]:
    """The ``<`` and ``~`` forms a query word can reach ``term`` by (none for Latin words)."""
    if not is_cjk(term):
        return []
    out = [PREFIX_MARK + term[:size] for size in range(MIN_STEM, len(term))]
    if len(term) >= 2 and term[1:] in _PARTICLES:
        out.append(PREFIX_MARK + term[0])
    if is_hangul(term) and len(term) > INFIX_MIN:
        inner: set[str] = set()
        for start in range(1, len(term) - 1):
            inner.add(term[start:])  # an ending of two syllables and more: where a compound's head noun is
            for stop in range(start + INFIX_ANYWHERE, len(term)):
                inner.add(term[start:stop])  # a run of three syllables and more, anywhere past the start
        out += [INFIX_MARK + part for part in sorted(inner) if len(part) >= INFIX_MIN]
    return out


def doc_vector(terms: Sequence[str], k1: float, b: float, avgdl: float) -> dict[int, float]:
    """A chunk's sparse vector: each term and form → its BM25 term-frequency part,
    ``tf·(k1 + 1) / (tf + k1·(1 − b + b·|d| / avgdl))`` with ``|d|`` the chunk's number of terms."""
    counts: Counter[str] = Counter(terms)
    reach: Counter[str] = Counter()
    for term, tf in counts.items():
        for form in forms(term):
            reach[form] += tf
    counts.update(reach)
    norm = k1 * (1.0 - b + b * len(terms) / avgdl) if avgdl else k1
    out: dict[int, float] = {}
    for form, tf in counts.items():
        d = dim(form)
        out[d] = out.get(d, 0.0) + tf * (k1 + 1.0) / (tf + norm)
    return out


def query_vector(
    qterms: Sequence[str], idfs: Sequence[float], partial: float, infix: float, boosts: Sequence[float] | None = None
) -> dict[int, float]:
    """The query's sparse vector: each term's exact, prefix and infix forms weighted by idf × strength."""
    out: dict[int, float] = {}

    def add(form: str, w: float) -> None:
        if w > 0:
            d = dim(form)
            out[d] = out.get(d, 0.0) + w

    for i, (q, idf) in enumerate(zip(qterms, idfs)):
        w = idf * (boosts[i] if boosts else 1.0)
        add(q, w)
        if not is_cjk(q):
            continue
        add(PREFIX_MARK + q, w * partial)
        for size in range(MIN_STEM, len(q)):
            add(q[:size], w * partial)
        if infix > 0 and len(q) >= INFIX_MIN and is_hangul(q):
            add(INFIX_MARK + q, w * infix)
            stem = verb_stem(q)
            if stem:  # a past form reaches its verb's other forms (태어났 → 태어난) through their prefix form
                add(PREFIX_MARK + stem, w * infix)
    return out


def joined(terms: Iterable[str]) -> str:
    """Terms as one field (memtree's terms hold no spaces)."""
    return " ".join(terms)
