"""Lifecycle: what happens to knowledge over time — decay survey and archive, distill, consolidate, the recall/
tier, usage counts, banks, and the status report.

May import: memtree.text, memtree.notes, memtree.index, memtree.search, memtree.write.
"""
