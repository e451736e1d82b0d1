"""Search: the query pipeline — terms, BM25 and tree routing, the blend, evidence and rejection, decay/recency/scope
adjustments, the semantic layer, the context block, and eval.

May import: memtree.text, memtree.notes, memtree.index, memtree.embedding.
"""
