"""Term ids for one index build: every index term numbered as the build first meets it.

Why: a build of 100k chunks handles millions of term occurrences. Kept as small ints in arrays
they are laid out as postings by numpy (memtree.index.segment.build_segment_ids) and counted per
note without hashing a string per occurrence again; each word of the text is looked up once, for
its term's id. The ids live as long as the build: a segment stores its terms sorted, by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from memtree.text import terms as text

NO_TERM = 0
"""The id a stopword's place gets: no term at all (``text.term`` gives it '')."""


class Vocabulary:
    """Index terms numbered for one build (``terms[id]``), and the id of every word met so far."""

    def __init__(self) -> None:
        self.terms: list[str] = [""]  # id → term; NO_TERM is ''
        self.ids: dict[str, int] = {"": NO_TERM}  # term → id
        self._word_ids: dict[str, int] = {}  # a word of text.words → its term's id

    def words(self, body: str) -> tuple[list[str], tuple[int, ...]]:
        """The words of ``body`` (``text.words``) and, aligned with them, each one's term id
        (``NO_TERM`` for a stopword): ``text.words_and_terms`` with ids for terms."""
        found = text.words(body)
        word_ids = self._word_ids
        if len(found) < 2:
            return found, tuple([self._word_id(w) for w in found])
        try:  # why itemgetter: one C-level pass, as a build looks up every word of every chunk here
            return found, itemgetter(*found)(word_ids)
        except KeyError:  # words this build has not met yet: number them, then look all up again
            for word in [w for w in dict.fromkeys(found) if w not in word_ids]:
                word_ids[word] = self.id(text.term(word))
            return found, itemgetter(*found)(word_ids)

    def _word_id(self, word: str) -> int:
        found = self._word_ids.get(word)
        if found is None:
            found = self._word_ids[word] = self.id(text.term(word))
        return found

    def id(self, term: str) -> int:
        """The id of ``term``, numbered now if it is new."""
        found = self.ids.get(term)
        if found is None:
            found = self.ids[term] = len(self.terms)
            self.terms.append(term)
        return found

    def of(self, terms: Sequence[str]) -> tuple[int, ...]:
        """The ids of ``terms``, in order."""
        try:
            if len(terms) > 1:
                return itemgetter(*terms)(self.ids)  # type: ignore[no-any-return]
            return tuple([self.ids[t] for t in terms])
        except KeyError:  # a term this build has not met yet
            return tuple([self.id(t) for t in terms])
