"""Index: what is derived from the notes and rebuildable — segments, BM25 (pure Python and numpy), the tree's
keyword index, the vector cache, and the persisted chunk index in ``.memtree/``; ``milvus/``: the same
index with a Milvus collection as its search engine (``index.backend: milvus``).

May import: memtree.text, memtree.notes.
"""
