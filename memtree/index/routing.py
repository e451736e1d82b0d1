"""Keyword routing: which notes a query belongs to, by the tree's keywords (DESIGN §3.2).

Node keywords are tokenized like notes and kept as sorted terms, so a query term finds the nodes
whose keywords match it (by :func:`memtree.text.match.match`: exactly, by prefix for Hangul and Han, or
inside a Hangul compound) through :class:`memtree.text.match.SortedTerms`, not by a scan of the tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from memtree.config import INFIX_MATCH
from memtree.notes.tree import Tree
from memtree.text import terms as text
from memtree.text.match import PARTIAL, SortedTerms

MATCHES_KEPT = 4096
"""Query terms whose keyword matches an index keeps (the keywords do not change under it)."""


class Route(NamedTuple):
    """A node the query was routed to: its tree score and, per query term, how a keyword matched."""

    node: str
    score: float
    matches: dict[int, tuple[float, str]]  # query term index → (strength, keyword)
    via: str | None = None  # the category node climbed to, when reached by parent fallback

    @property
    def terms(self) -> dict[int, float]:
        """Query term index → match strength."""
        return {qi: s for qi, (s, _) in self.matches.items()}

    @property
    def keywords(self) -> tuple[str, ...]:
        """The keywords that matched, in query order."""
        return tuple(dict.fromkeys(kw for _, kw in self.matches.values()))


class KeywordIndex:
    """Node keywords as sorted terms, so a query term finds its nodes by bisection."""

    def __init__(self, tree: Tree, parts: tuple[list[str], list[tuple[str, str]]] | None = None) -> None:
        if parts is None:
            pairs: list[tuple[str, str, str]] = []  # (term, node id, keyword)
            for n in tree.nodes:
                for kw in n.keywords:
                    for t in dict.fromkeys(text.terms(kw)):
                        pairs.append((t, n.id, kw))
            pairs.sort()
            parts = [p[0] for p in pairs], [(p[1], p[2]) for p in pairs]
        self.terms, self.entries = parts
        self.tree = tree
        self.lookup = SortedTerms(self.terms)
        self._matched: dict[tuple[str, float, float], list[tuple[str, str, float]]] = {}

    def to_json(self) -> dict[str, Any]:
        """What the cache in .memtree/ keeps, keyed by the tree file's digest."""
        return {
            "digest": self.tree.digest,
            "tokenizer": text.TOKENIZER_VERSION,
            "terms": self.terms,
            "nodes": [e[0] for e in self.entries],
            "keywords": [e[1] for e in self.entries],
        }

    @classmethod
    def from_json(cls, tree: Tree, doc: Any) -> KeywordIndex | None:
        """The cached index when it was made from this very tree file, else None."""
        if (
            not isinstance(doc, dict)
            or doc.get("digest") != tree.digest
            or not tree.digest
            or doc.get("tokenizer") != text.TOKENIZER_VERSION
        ):
            return None
        return cls(tree, (doc["terms"], list(zip(doc["nodes"], doc["keywords"]))))

    def matches(self, q: str, partial: float = PARTIAL, infix: float = INFIX_MATCH) -> list[tuple[str, str, float]]:
        """(node id, keyword, strength) for every keyword term related to query term ``q``."""
        key = (q, partial, infix)
        found = self._matched.get(key)
        if found is None:
            entries = self.entries
            found = [
                (*entries[i], strength)
                for lo, hi, strength, _ in self.lookup.weighted(q, partial, infix)
                for i in range(lo, hi)
            ]
            if len(self._matched) >= MATCHES_KEPT:  # why: a long-running process sees endless words
                self._matched.clear()
            self._matched[key] = found
        return found


def route(
    index: KeywordIndex,
    qterms: Sequence[str],
    idf: Sequence[float],
    partial: float = PARTIAL,
    infix: float = INFIX_MATCH,
) -> dict[str, Route]:
    """Tree scores for nodes holding files.

    A node's score is ``weight × Σ idf(q)·match(q) / Σ idf(q)`` over the query terms (match 1.0
    exact, ``partial`` for a prefix match, ``infix`` inside a compound), clamped to [0, 1]. When no
    file node matches, the matching category nodes pass their score down to their descendants
    (parent fallback).
    """
    total = sum(idf) or 1.0
    best: dict[str, dict[int, tuple[float, str]]] = {}
    for qi, q in enumerate(qterms):
        for node_id, kw, s in index.matches(q, partial, infix):
            per_node = best.setdefault(node_id, {})
            if s > per_node.get(qi, (0.0, ""))[0]:
                per_node[qi] = (s, kw)
    tree = index.tree
    routes: dict[str, Route] = {}
    categories: list[Route] = []
    for node_id, per_q in best.items():
        node = tree.by_id[node_id]
        raw = sum(idf[qi] * s for qi, (s, _) in per_q.items()) / total
        r = Route(node_id, min(1.0, raw * node.weight), per_q)
        if node.path:
            routes[node_id] = r
        else:
            categories.append(r)
    if routes or not categories:
        return routes
    for cat in sorted(categories, key=lambda r: -r.score):
        for child in tree.descendants(cat.node):
            if child.path and child.id not in routes:
                routes[child.id] = Route(child.id, min(1.0, cat.score * child.weight), cat.matches, via=cat.node)
    return routes
