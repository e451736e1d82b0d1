"""memtree's exceptions: one root, a few meaningful children.

    MemtreeError                 anything memtree reports to a user (CLI: one line, exit 2)
     ├── RootNotFound            no memory root: no --root, MEMTREE_ROOT or tree-index.json above
     ├── ConfigError             memtree.yaml unreadable or a setting of the wrong type
     ├── TreeError               tree-index.json: bad JSON (line, column), schema, unknown parent,
     │                           duplicate id, cycle, path outside the root, missing file
     ├── QueryError              a query with no searchable term, or options that make no sense
     │    └── BadName            a node id, note path or ref that can name nothing (NUL, a part
     │                           too long for a file name, absolute or '..' where not allowed)
     ├── QueryFileError          memtree eval: a query or spans file unreadable or invalid (file, line)
     ├── EmptyMemory             the root has no notes to search
     ├── OutsideRoot             a path that leads out of the root (`..`, absolute, a symlink out)
     ├── ChangedOnDisk           a note changed between memtree's read and its write (retried)
     ├── ReadOnlyRoot            a write refused by the file system (read-only, no permission)
 ├── StaleUndo               `memtree undo`: a file changed since the write it would revert
     └── EmbedUnavailable        memtree.embedding: the extra, the model or its files are missing
                                 (search downgrades to keywords; `index --embed` reports it)

Problems that do not stop a command — a non-UTF-8 file, a symlink loop — are returned as
warnings naming the file, never raised.
"""

from __future__ import annotations


class MemtreeError(Exception):
    """Base of every error memtree reports to a user."""


class RootNotFound(MemtreeError):
    """No memory root could be found or the given one does not exist."""


class ConfigError(MemtreeError):
    """memtree.yaml is unreadable or holds a value of the wrong type."""


class TreeError(MemtreeError):
    """tree-index.json is invalid; the message names the node or the line and column."""


class QueryError(MemtreeError):
    """The query cannot be searched (no searchable term) or the options are inconsistent."""


class BadName(QueryError):
    """A user-given node id, note path or ref that can name nothing (memtree.notes.store.check_name)."""


class EmptyMemory(MemtreeError):
    """The memory root holds no notes in the tiers searched."""


class OutsideRoot(MemtreeError):
    """A path that resolves outside the memory root (``..``, absolute, or a symlink out)."""


class ChangedOnDisk(MemtreeError):
    """A note changed after memtree read it and before its write landed; the write was not made."""


class ReadOnlyRoot(MemtreeError):
    """The file system refused a write (read-only, or no permission); nothing was written."""


class StaleUndo(MemtreeError):
    """A file an undo would restore changed since the write it reverts; nothing was written."""
