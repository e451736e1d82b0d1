"""Notes: the Markdown truth — safe file I/O and the lock, chunks, entries, tree-index.json, the root, scopes.

Everything that reads or writes a tracked file goes through ``notes.store``.
May import: memtree.text (and memtree.errors, memtree.config).
"""
