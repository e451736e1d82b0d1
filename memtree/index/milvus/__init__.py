"""``index.backend: milvus``: memtree's chunk index with a Milvus collection as its search engine (memtree[milvus]).

- ``index``: :class:`MilvusIndex` and ``make_index`` — the collection kept in step with memtree's
  segments, queried, and the local engine as the fallback (memtree.state builds it from settings).
- ``store``: connecting, the collection's schema, and syncing rows by content hash.
- ``forms``: memtree's matching rule as sparse vectors (no I/O).
- ``scores``: one query's answer — the collection's candidates re-scored with memtree's exact BM25.
- ``dense``: the semantic layer's vectors in the collection and its dense search.

Nothing is imported here: ``pymilvus`` loads only when a module above is.
"""
