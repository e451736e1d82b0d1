"""memtree: local, file-based long-term memory for AI agents."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: typing costs a forwarded CLI call ~1.6 ms

__version__ = "0.4.0"
__all__ = ["Hit", "MemTree", "MemtreeError", "SearchResult", "__version__"]

if TYPE_CHECKING:
    from memtree.api import MemTree
    from memtree.errors import MemtreeError
    from memtree.search.result import Hit, SearchResult


def __getattr__(name: str) -> object:
    # Lazy: `import memtree` stays cheap; the CLI imports only what a command needs.
    if name == "MemTree":
        from memtree.api import MemTree

        return MemTree
    if name in ("Hit", "SearchResult"):
        from memtree.search import result as search

        return getattr(search, name)
    if name == "MemtreeError":
        from memtree.errors import MemtreeError

        return MemtreeError
    raise AttributeError(f"module 'memtree' has no attribute {name!r}")
