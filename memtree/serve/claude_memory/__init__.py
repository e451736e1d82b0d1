"""Claude's memory tool (``memory_20250818``) served from a memtree root, for the ``anthropic`` SDK.

- ``tool``: :class:`MemtreeMemoryTool` and :class:`AsyncMemtreeMemoryTool`, the SDK's
  ``BetaAbstractMemoryTool`` subclasses (needs ``pip install 'memtree[anthropic]'``).
- ``paths``: where a ``/memories/...`` path lands in the root, and which are refused.
- ``commands``: the text semantics of the six commands (pure functions).
- ``view``: what ``view`` shows — a folder's listing with the tree's nodes, or a note's lines.
- ``files``: create, str_replace and insert, written memtree's way (sanitized, split, indexed).
- ``moves``: delete (archived) and rename (nodes move with their notes).
- ``tree``: tree-index.json kept in step with those writes.

``from memtree.serve.claude_memory import MemtreeMemoryTool`` works: the two classes are loaded from
``tool`` when first asked for, so the other modules import without the SDK.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AsyncMemtreeMemoryTool", "MemtreeMemoryTool"]


def __getattr__(name: str) -> Any:
    """The two tool classes, imported from ``tool`` (and so the SDK) only when asked for."""
    if name in __all__:
        from memtree.serve.claude_memory import tool

        return getattr(tool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
