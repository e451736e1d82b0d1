"""Write: how knowledge enters the memory — retain (sanitize → route → dedup or conflict → write), similarity,
conflicts, daily logs, split, keeping the tree in step with bank/ (catalog), export/import, and check.

May import: memtree.text, memtree.notes, memtree.index.
"""

from memtree.write import sanitize as _sanitize  # noqa: F401  # why: registers the journal's redaction
